"""`memkit session …` and `memkit search --sessions` end to end on real files (CliRunner)."""
from __future__ import annotations

import json

from memkit import Vault
from memkit.frontends.cli.group import main


def run(runner, vault, *args, input=None):
    return runner.invoke(main, ["--vault", str(vault.root), *args], input=input)


def test_new_add_list_show_load(runner, vault):
    result = run(runner, vault, "session", "new", "--title", "Lisbon trip", "--system", "You are a travel assistant.",
                 "--tag", "travel", "--meta", "source=cli", "-q")
    assert result.exit_code == 0, result.output
    sid = result.output.strip()
    assert len(sid) == 8
    assert run(runner, vault, "session", "add", sid, "user", "I fly to Lisbon on March 3rd").exit_code == 0
    assert run(runner, vault, "session", "add", sid, "assistant", "--important", "--", "Noted.").exit_code == 0
    piped = run(runner, vault, "session", "add", sid, "user", "-", input="which hotel?\nthe cheap one\n")
    assert piped.exit_code == 0 and piped.output.startswith(f"added user message to {sid} (")
    listing = run(runner, vault, "session", "list")
    assert listing.exit_code == 0 and listing.output.split()[0] == sid and "3 messages" in listing.output
    assert "Lisbon trip" in listing.output
    shown = run(runner, vault, "session", "show", sid)
    assert "### assistant · " in shown.output and "· important\nNoted.\n" in shown.output
    assert "tags: [travel]" in shown.output and "source: cli" in shown.output
    data = json.loads(run(runner, vault, "session", "show", sid, "--json").output)
    assert data["messages"][2]["content"] == "which hotel?\nthe cheap one"
    loaded = run(runner, vault, "session", "load", sid, "--tokens", "25")
    assert loaded.exit_code == 0
    assert loaded.stdout.splitlines() == ["system: You are a travel assistant.", "user: which hotel?", "the cheap one"]
    assert "older left out" in loaded.stderr
    as_json = json.loads(run(runner, vault, "session", "load", sid, "--json").output)
    assert as_json["strategy"] == "simple" and len(as_json["messages"]) == 4


def test_load_with_summary_and_no_llm_says_so(runner, vault):
    vault.conversations.new(session_id="s1")
    for i in range(30):
        vault.conversations.append("s1", "user", f"message {i} " + "word " * 30)
    result = run(runner, vault, "session", "load", "s1", "--tokens", "100", "--strategy", "summary")
    assert result.exit_code == 0
    assert "memkit: note: no LLM configured: summary fell back to simple windowing" in result.stderr


def test_errors_are_one_line(runner, vault):
    for args, message in [
        (("session", "add", "a b", "user", "hi"), "memkit: error: invalid session id 'a b': use letters, digits"),
        (("session", "new", "--id", "../x"), "memkit: error: invalid session id '../x'"),
        (("session", "show", "nope"), "memkit: error: no session 'nope'"),
        (("session", "new", "--meta", "oops"), "memkit: error: --meta takes KEY=VALUE, got 'oops'"),
    ]:
        result = run(runner, vault, *args)
        assert result.exit_code in (1, 2) and result.output.startswith(message), (args, result.output)
        assert len(result.output.strip().splitlines()) == 1
    result = run(runner, vault, "session", "show", "nope", "--json")
    assert json.loads(result.output) == {"error": "no session 'nope' in sessions/ (`memkit session list` shows them)",
                                         "code": 1}


def test_export_import_delete_prune(runner, vault, tmp_path):
    vault.conversations.new(session_id="src", system_prompt="Be kind.")
    vault.conversations.append("src", "user", "hello")
    out = tmp_path / "src.jsonl"
    assert run(runner, vault, "session", "export", "src", "-o", str(out)).exit_code == 0
    assert json.loads(out.read_text().splitlines()[1])["content"] == "hello"
    imported = run(runner, vault, "session", "import", str(out), "--id", "copy", "--title", "A copy")
    assert imported.exit_code == 0 and imported.output.startswith("imported copy (sessions/")
    assert "1 message added, A copy" in imported.output
    assert Vault(vault.root).conversations.show("copy").system == "Be kind."
    pruned = run(runner, vault, "session", "prune", "--days", "0", "--dry-run")
    assert pruned.exit_code == 0 and pruned.output.splitlines()[-1] == "2 sessions would be archived (idle more than 0 days)"
    deleted = run(runner, vault, "session", "delete", "copy")
    assert deleted.output.startswith("deleted sessions/") and "copy.md (1 message)" in deleted.output
    assert [i.id for i in Vault(vault.root).conversations.list()] == ["src"]


def test_search_sessions_from_the_cli(runner, vault):
    vault.conversations.new(session_id="trip")
    vault.conversations.append("trip", "user", "I fly to Lisbon on March 3rd with TAP")
    vault.conversations.append("trip", "assistant", "Bring an umbrella")
    result = run(runner, vault, "search", "--sessions", "Lisbon flight", "--json")
    assert result.exit_code == 0, result.output
    hits = json.loads(result.output)
    assert hits[0]["session"] == "trip" and hits[0]["role"] == "user" and hits[0]["line"] > 0
    plain = run(runner, vault, "session", "search", "umbrella")
    assert plain.exit_code == 0 and "trip" in plain.output and "Bring an umbrella" in plain.output
    none = run(runner, vault, "search", "--sessions", "zzzqqq")
    assert none.exit_code == 0 and "no messages match" in none.output


def test_capture_save(runner, vault, tmp_path):
    chat = tmp_path / "chat.txt"
    chat.write_text("User: I moved to Porto\nAssistant: Noted!\n")
    result = run(runner, vault, "capture", str(chat), "--session", "porto", "--save")
    assert result.exit_code == 0 and "saved as session porto (sessions/" in result.output
    assert [m.role for m in Vault(vault.root).conversations.show("porto").messages] == ["user", "assistant"]


def test_digest_a_session_with_the_loopback_llm(runner, tmp_path):
    from fake_llm import FakeLLM

    def answer(request):
        if "outdated" in request["messages"][-1]["content"]:
            return json.dumps({"updates": []})
        assert "user: I moved to Porto in May" in request["messages"][-1]["content"]
        return json.dumps({"conclusions": [{"kind": "fact", "text": "Moved to Porto in May", "topic": None}],
                           "new_topic": None})

    with FakeLLM(answer) as fake:
        vault = Vault.init(tmp_path / "d")
        (vault.root / "memkit.yaml").write_text(f"llm: {{base_url: \"{fake.base_url}\", model: m, timeout_s: 5}}\n")
        vault = Vault(vault.root)
        vault.conversations.new(session_id="move", system_prompt="You are kind.")
        vault.conversations.append("move", "user", "I moved to Porto in May")
        vault.conversations.append("move", "assistant", "Congratulations!")
        dry = run(runner, vault, "session", "digest", "move", "--dry-run")
        assert dry.exit_code == 0, dry.output
        assert "+- [fact] Moved to Porto in May" in dry.output and "would write 1 entry" in dry.output
        done = run(runner, vault, "session", "digest", "move")
        assert done.exit_code == 0 and "wrote 1 entry" in done.output
        assert "Moved to Porto in May" in (vault.root / "topics" / "general.md").read_text()
        again = run(runner, vault, "session", "digest", "move")
        assert "already digested" in again.output


def test_empty_message_text_is_refused(runner, vault):
    vault.conversations.new(session_id="e")
    result = run(runner, vault, "session", "add", "e", "user", "-", input="  \n")
    assert result.exit_code == 2 and result.output.startswith("memkit: error: the message text is empty")
    result = run(runner, vault, "session", "add", "e", "user", input="")  # no text, nothing piped
    assert result.exit_code == 2 and "no message text: give it as an argument" in result.output
