"""What is never stored (issue 30.4): secrets redacted on every write path, checked on disk; private
topics kept out of the servers' searches and of the context; a git-crypt vault still works.

Every write test greps the whole vault folder (topics, sessions, inbox, .memkit/) for the secret.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from fake_llm import FakeLLM
from util import FakeEmbedder, loopback_llm, write

from memkit import Vault
from memkit.errors import ConfigError
from memkit.frontends.cli.group import main

SECRET = "hunter22"
KEY = "sk-proj-abcdefghijklmnopqrstuvwx1234"
CARD = "4111 1111 1111 1111"


def on_disk(root: Path, *secrets: str) -> list[str]:
    """Every file under the vault (hidden ones too) holding one of ``secrets``."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {s}" for s in secrets if s.encode() in data]
    return found


def make(tmp_path: Path, config: str = "") -> Vault:
    vault = Vault.init(tmp_path / "v", profile=False)
    if config:
        (vault.root / "memkit.yaml").write_text(config)
    return Vault(vault.root, embedder=FakeEmbedder())


def cli(root: Path, *args: str, input: str | None = None) -> str:  # noqa: A002
    result = CliRunner().invoke(main, ["--vault", str(root), *args], input=input)
    assert result.exit_code == 0, result.output
    return result.output


# ---- settings ---------------------------------------------------------------------------------

def test_redact_settings_default_on_and_checked_at_load(tmp_path):
    vault = make(tmp_path)
    assert vault.config.redact.defaults == ["api-key", "password", "card", "iban"]
    (vault.root / "memkit.yaml").write_text('redact:\n  patterns: ["door code (\\\\d+)", "(unclosed"]\n')
    with pytest.raises(ConfigError, match=r"line 2: redact.patterns: pattern 2 \('\(unclosed'\) is not a regular"):
        Vault(vault.root)
    (vault.root / "memkit.yaml").write_text("redact:\n  defaults: [card, pin]\n")
    with pytest.raises(ConfigError, match="redact.defaults: 'pin' is not one of api-key, password, card, iban"):
        Vault(vault.root)


def test_own_patterns_and_defaults_turned_off(tmp_path):
    vault = make(tmp_path, 'redact:\n  defaults: []\n  patterns: ["door code (\\\\d+)"]\n')
    entry = vault.add(f"the door code 7731, the wifi password is {SECRET}")
    assert entry.text.startswith("the door code [redacted], the wifi password is hunter22")
    assert entry.redacted == 1


# ---- every write path --------------------------------------------------------------------------

def test_cli_add_and_edit_redact_and_say_so(tmp_path):
    root = make(tmp_path).root
    out = cli(root, "add", f"the wifi password is {SECRET}", "--topic", "home")
    assert "the wifi password is [redacted]" in out and "(1 secret redacted)" in out
    data = json.loads(cli(root, "add", f"key {KEY} and card {CARD}", "--json"))
    assert data["redacted"] == 2 and "key [redacted] and card [redacted]" in data["text"]
    assert "redacted" not in json.loads(cli(root, "add", "Prefers bomba rice", "--json"))
    out = cli(root, "edit", data["id"], f"the new key is {KEY}")
    assert "the new key is [redacted]" in out and "(1 secret redacted)" in out
    again = cli(root, "add", f"the wifi password is {SECRET}", "--topic", "home")  # the same, once redacted
    assert "already in home" in again and "(1 secret redacted)" in again
    assert on_disk(root, SECRET, KEY, "4111") == []


def test_library_add_from_stdin_and_a_split_keep_the_count(tmp_path):
    vault = make(tmp_path, "topic_split_threshold_lines: 5\n")
    for i in range(5):
        vault.add(f"Garden note {i}: tomatoes need water {i}", topic="garden")
    entry = vault.add(f"Garden shed pin is 4821 and the tomatoes like sun {SECRET}", topic="garden")
    assert entry.redacted == 1 and entry.topic.startswith("garden")
    assert on_disk(vault.root, "4821") == []


def test_sessions_new_append_and_import_redact(tmp_path):
    vault = make(tmp_path)
    conv = vault.conversations.new(system_prompt=f"You are helpful. The admin password is {SECRET}",
                                   session_id="s1")
    message = vault.conversations.append("s1", "user", f"my card is {CARD}")
    assert message.redacted == 1 and message.content == "my card is [redacted]"
    assert message.to_dict()["redacted"] == 1
    out = cli(vault.root, "session", "add", "s1", "user", f"and the key {KEY}")
    assert "(1 secret redacted)" in out
    lines = [json.dumps({"role": "user", "content": f"password: {SECRET}"}),
             json.dumps({"role": "assistant", "content": "noted"})]
    data = "\n".join(lines).encode()
    (first,) = vault.conversations.import_(data, name="chat.jsonl", session_id="imp")
    assert first.added == 2 and first.redacted == 1 and first.to_dict()["redacted"] == 1
    (again,) = vault.conversations.import_(data, name="chat.jsonl", session_id="imp")  # nothing new
    assert again.added == 0
    assert on_disk(vault.root, SECRET, KEY, "4111") == [], conv.file


def test_capture_into_inbox_and_session_redacts(tmp_path):
    vault = make(tmp_path)
    payload = f"User: the garage password is {SECRET}\nAssistant: I will not repeat it. {KEY}\n".encode()
    result = vault.capture(stdin=payload, session="cap1", save=True)
    assert result.redacted == 2 and result.to_dict()["redacted"] == 2
    assert "(2 secrets redacted)" in result.summary()
    inbox = (vault.root / result.file).read_text()
    assert "[redacted]" in inbox
    assert result.saved is not None and result.saved["added"] == 2
    assert on_disk(vault.root, SECRET, KEY) == []


def test_capture_cli_says_how_many(tmp_path):
    root = make(tmp_path).root
    out = cli(root, "capture", "--session", "c2", input="User: my IBAN is DE89370400440532013000\n")
    assert "(1 secret redacted)" in out
    assert on_disk(root, "DE89370400440532013000") == []


def test_digest_redacts_conclusions_before_writing(tmp_path):
    vault = make(tmp_path)
    transcript = write(tmp_path / "t.txt", "Maya: the router password is hunter22\nAssistant: ok\n")
    conclusions = [{"kind": "fact", "text": f"The router password is {SECRET}", "topic": None},
                   {"kind": "fact", "text": f"Maya's OpenAI key is {KEY}", "topic": None}]

    def answer(request):
        if "outdated" in request["messages"][-1]["content"]:
            return json.dumps({"updates": []})
        return json.dumps({"conclusions": conclusions, "new_topic": None})

    with FakeLLM(answer) as fake:
        report = vault.digest(transcript, llm=loopback_llm(fake))
    assert report.redacted == 2 and report.to_dict()["redacted"] == 2
    assert "2 secrets redacted" in report.summary()
    assert [line for _, line in report.written][0].startswith("- [fact] The router password is [redacted]")
    transcript.unlink()  # the person's own file, outside the vault anyway
    assert on_disk(vault.root, SECRET, KEY) == []


def test_context_session_state_never_keeps_a_secret(tmp_path):
    vault = make(tmp_path)
    vault.add("Prefers bomba rice", topic="cooking")
    vault.context(f"remember the wifi password is {SECRET} and the rice", session="ctx")
    assert list((vault.root / ".memkit").rglob("*.json"))
    assert on_disk(vault.root, SECRET) == []


# ---- private topics -----------------------------------------------------------------------------

PRIVATE = ("---\ntitle: Health\nprivate: true\n---\n# Health\n\n"
           "- Takes sertraline for anxiety every morning (2026-01-02)\n")
OPEN = "# Cooking\n\n- Takes the sourdough out every morning (2026-01-02)\n"


def private_vault(tmp_path: Path) -> Vault:
    vault = make(tmp_path)
    write(vault.topics_dir / "health.md", PRIVATE)
    write(vault.topics_dir / "cooking.md", OPEN)
    vault.recent(rebuild=True)
    return Vault(vault.root, embedder=FakeEmbedder())


def test_library_and_cli_search_show_private_topics(tmp_path):
    vault = private_vault(tmp_path)
    assert {h.topic for h in vault.search("every morning", mode="lexical", k=5)} == {"health", "cooking"}
    assert {h.topic for h in vault.search("every morning", mode="lexical", k=5, private=False)} == {"cooking"}
    assert [h.topic for h in vault.search("every morning", mode="lexical", topic="health", private=False)] == \
        ["health"]
    out = cli(vault.root, "search", "sertraline", "--mode", "lexical")
    assert "sertraline" in out  # the person at the shell owns the vault


def test_mcp_leaves_private_topics_out_unless_named(tmp_path):
    from memkit.frontends.mcp.server import Memory, TypedTools

    tools = TypedTools(Memory.open(private_vault(tmp_path)))
    hits = tools.call("search_memories", {"query": "every morning", "mode": "lexical"}).structured["hits"]
    assert [h["topic"] for h in hits] == ["cooking"]
    hits = tools.call("search_memories", {"query": "sertraline", "mode": "lexical"}).structured["hits"]
    assert hits == []
    named = tools.call("search_memories", {"query": "sertraline", "mode": "lexical", "topic": "health"})
    assert [h["topic"] for h in named.structured["hits"]] == ["health"]
    context = tools.call("get_context", {"message": "what do I take every morning, sertraline?"}).structured
    assert "sertraline" not in json.dumps(context)
    added = tools.call("add_memory", {"text": f"The safe pin is 9911 and password is {SECRET}"}).structured
    assert added["redacted"] == 2


class Client:
    """JSON requests to a server on loopback."""

    def __init__(self, server) -> None:
        self.host, self.port = server.socket.getsockname()[:2]

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        import http.client

        con = http.client.HTTPConnection(self.host, self.port, timeout=60)
        con.request(method, path, body=None if body is None else json.dumps(body).encode(),
                    headers={"Content-Type": "application/json"} if body is not None else {})
        resp = con.getresponse()
        answer = json.loads(resp.read())
        con.close()
        return resp.status, answer


def test_http_leaves_private_topics_out_unless_named(tmp_path):
    from memkit.frontends.http.api import HTTPServer

    vault = private_vault(tmp_path)
    with HTTPServer(vault, port=0) as server:
        c = Client(server)
        status, answer = c.call("GET", "/search?q=every+morning&mode=lexical")
        assert status == 200 and [h["topic"] for h in answer["hits"]] == ["cooking"]
        status, answer = c.call("GET", "/search?q=sertraline&mode=lexical&topic=health")
        assert [h["topic"] for h in answer["hits"]] == ["health"]
        status, answer = c.call("POST", "/context", {"message": "sertraline every morning"})
        assert status == 200 and "sertraline" not in json.dumps(answer) and "health" not in answer["text"]
        status, answer = c.call("POST", "/add", {"text": f"my key is {KEY}"})
        assert status in (200, 201) and answer["redacted"] == 1
        status, answer = c.call("POST", "/sessions", {"session": "h1"})
        status, answer = c.call("POST", "/sessions/h1/messages", {"role": "user", "content": f"card {CARD}"})
        assert status in (200, 201) and answer["redacted"] == 1
    assert on_disk(vault.root, KEY, "4111") == []


def test_context_leaves_private_topics_out(tmp_path):
    vault = private_vault(tmp_path)
    ctx = vault.context("sertraline every morning", session="s")
    assert "sertraline" not in ctx.text and "health" not in ctx.text
    assert all(h.topic != "health" for h in ctx.memories) and ctx.topic != "health"
    assert "sourdough" in ctx.text


# ---- a vault encrypted at rest (git-crypt): the decrypted checkout works -------------------------

GIT_CRYPT = "topics/** filter=git-crypt diff=git-crypt\nsessions/** filter=git-crypt diff=git-crypt\n"


def test_a_git_crypt_vault_loads_adds_searches_and_keeps_its_attributes(tmp_path):
    vault = make(tmp_path)
    attributes = vault.root / ".gitattributes"
    attributes.write_text(attributes.read_text() + GIT_CRYPT)
    subprocess.run(["git", "init", "-q", str(vault.root)], check=True)
    vault = Vault(vault.root, embedder=FakeEmbedder())
    vault.add("Prefers bomba rice for paella", topic="cooking")
    assert [h.topic for h in vault.search("bomba rice", mode="lexical")] == ["cooking"]
    vault.git_setup()
    text = attributes.read_text()
    assert text.count("topics/** filter=git-crypt diff=git-crypt") == 1
    assert "sessions/** filter=git-crypt diff=git-crypt" in text
    assert ".memkit/" in (vault.root / ".gitignore").read_text()  # derived data stays local, never committed
    assert cli(vault.root, "search", "bomba", "--mode", "lexical").count("bomba") >= 1


def test_the_servers_listings_leave_private_topics_out(tmp_path):
    """list_topics / GET /topics, recent topics and pending follow-ups show no private topic; reading
    it by name still works (asking by name); the CLI lists it."""
    from memkit.frontends.http.api import HTTPServer
    from memkit.frontends.mcp.server import Memory, TypedTools

    vault = private_vault(tmp_path)
    vault.add("Book the blood test (due 2026-01-10)", topic="health", kind="pending")
    vault.add("Buy rye flour (due 2026-01-10)", topic="cooking", kind="pending")
    tools = TypedTools(Memory.open(vault))
    assert [t["name"] for t in tools.call("list_topics", {}).structured["topics"]] == ["cooking"]
    assert [r["topic"] for r in tools.call("recent_topics", {}).structured["recent"]] == ["cooking"]
    assert [f["topic"] for f in tools.call("pending_follow_ups", {}).structured["pending"]] == ["cooking"]
    assert "sertraline" in json.dumps(tools.call("read_topic", {"name": "health"}).structured)
    with HTTPServer(vault, port=0) as server:
        c = Client(server)
        assert [t["name"] for t in c.call("GET", "/topics")[1]["topics"]] == ["cooking"]
        assert [r["topic"] for r in c.call("GET", "/recent")[1]["recent"]] == ["cooking"]
        assert [f["topic"] for f in c.call("GET", "/pending")[1]["pending"]] == ["cooking"]
    assert "health" in cli(vault.root, "topics")


def test_a_sessions_user_tags_and_metadata_and_a_persons_line_are_redacted(tmp_path):
    """Issue 41.11: every write path redacts, the session header's user, tags and metadata and a
    person's line in people.md included."""
    vault = make(tmp_path)
    vault.conversations.new(session_id="m1", user=f"maya password: {SECRET}", tags=[f"key {KEY}"],
                            metadata={"note": f"card {CARD}", "nested": [f"the wifi password is {SECRET}"]})
    person = vault.facts.add_person("Ana", relation="family", detail="sister", about=f"her door code is 4821, key {KEY}")
    assert person.about == "her door code is [redacted], key [redacted]"
    assert on_disk(vault.root, SECRET, KEY, "4111", "4821") == []
