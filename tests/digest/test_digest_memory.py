"""Memory that stays true (issue 26, items 1-4): a fact stated twice is stored once, what a person
forgot, edited away or marked done stays gone, a conversation captured again is read from where
the last digest ended, supersedes are shown the entries they replace, and an empty reply never
marks a transcript digested. The LLM is the loopback fake; the embedder the bag-of-words fake."""
from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from click.testing import CliRunner, Result
from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder, loopback_llm, vault_with, write

from memkit import LLMError, Vault
from memkit.digest.digest import digest_file, load_digested
from memkit.frontends.cli.group import main

NOW = datetime(2026, 11, 21, 18, 0, 0)


def cli(vault: Vault, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, ["--vault", str(vault.root), *args], input=input,
                              obj={"vault_obj": vault}, catch_exceptions=False)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def said(request: dict) -> str:
    """The part of the conversation the LLM is asked to digest (not the earlier context)."""
    m = re.search(r"<transcript>\n(.*)\n</transcript>", last_user_message(request), re.S)
    return m.group(1) if m else ""


def scripted(rules: dict[str, dict], updates: list | None = None):
    """An LLM that concludes ``rules[word]`` for each word the transcript part mentions, as a real one
    would from the same words; the update question is answered with ``updates``."""
    def answer(request: dict) -> str:
        if "outdated" in last_user_message(request):
            return json.dumps({"updates": updates or []})
        text = said(request)
        return json.dumps({"conclusions": [c for word, c in rules.items() if word in text], "new_topic": None})
    return answer


def transcripts(fake: FakeLLM) -> list[str]:
    return [said(r) for r in fake.requests if said(r)]


# ---- 1. duplicates --------------------------------------------------------------------------

def test_four_transcripts_saying_the_same_leave_one_entry(tmp_path):
    vault = vault_with(tmp_path, {})
    porto = {"kind": "fact", "text": "Moved to Porto", "importance": 0.8}
    interview = {"kind": "pending", "text": "Job interview at Acme on Thursday", "due": "2026-11-28",
                 "urgency": "high", "ask": "How did the Acme interview go?", "importance": 0.9}
    with FakeLLM(scripted({"Porto": porto, "Acme": interview})) as fake:
        for i in range(4):
            path = write(tmp_path / f"t{i}.txt", f"Maya: we moved to Porto, and the Acme interview is on Thursday ({i})\n")
            report = digest_file(vault.searcher, path, loopback_llm(fake), now=NOW)
            assert len(report.written) == (2 if i == 0 else 0), report.skipped
    texts = [e.text for e in vault.entries()]
    assert sum("Moved to Porto" in t for t in texts) == 1
    assert sum("Job interview at Acme" in t for t in texts) == 1
    assert "[fact] Moved to Porto (importance 0.8) (from t0.txt) (2026-11-21)" in texts  # the first said it


def test_add_twice_returns_the_entry_there(tmp_path):
    vault = vault_with(tmp_path, {})
    first = vault.add("Prefers oat milk in coffee", topic="food")
    again = vault.add("prefers  oat milk in coffee", topic="food")
    assert again.duplicate and not first.duplicate and again.id == first.id and again.line == first.line
    assert again.to_dict()["duplicate"] is True
    assert [e.text for e in vault.entries("food")] == [first.text]
    other = vault.add("Prefers oat milk in coffee", topic="drinks")  # another topic: written
    assert not other.duplicate
    forced = vault.add("Prefers oat milk in coffee", topic="food", allow_duplicate=True)
    assert not forced.duplicate and len(vault.entries("food")) == 2


def test_cli_add_twice_says_so(tmp_path):
    vault = vault_with(tmp_path, {})
    ok(cli(vault, "add", "Allergic to tree nuts"))
    out = ok(cli(vault, "add", "Allergic to tree nuts")).output
    assert out.startswith("already in general as ") and "not added again" in out
    assert (vault.topics_dir / "general.md").read_text().count("Allergic to tree nuts") == 1
    assert json.loads(ok(cli(vault, "add", "Allergic to tree nuts", "--json")).output)["duplicate"] is True
    ok(cli(vault, "add", "Allergic to tree nuts", "--allow-duplicate"))
    assert (vault.topics_dir / "general.md").read_text().count("Allergic to tree nuts") == 2


# ---- 2. what was forgotten, edited or done stays so ----------------------------------------

CAT = {"kind": "event", "text": "Adopted a cat called Miso", "importance": 0.7}
MOVE = {"kind": "fact", "text": "Moved to Porto last week"}


def test_new_user_flow_capture_forget_continue_capture(tmp_path):
    """capture --now, forget, the conversation goes on, capture --now: the forgotten memory stays
    forgotten, and the LLM reads only what was said since."""
    with FakeLLM(scripted({"Miso": CAT, "Porto": MOVE})) as fake:
        root = Vault.init(tmp_path / "v", profile=False).root
        write(root / "memkit.yaml", f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 5}}\n")
        vault = Vault(root, embedder=FakeEmbedder())
        chat = write(tmp_path / "chat.txt", "Maya: I adopted a cat called Miso\nAssistant: Lovely!\n")
        out = ok(cli(vault, "capture", str(chat), "--now")).output
        assert "wrote 1 entry" in out and "Miso" in vault.topic("general").raw
        ok(cli(vault, "forget", "--match", "Miso"))
        with open(chat, "a", encoding="utf-8") as fh:
            fh.write("Maya: Miso loves the new flat: we moved to Porto last week\nAssistant: Congratulations!\n")
        out = ok(cli(vault, "capture", str(chat), "--now")).output
        assert "wrote 1 entry" in out, out
        general = vault.topic("general").raw
        assert "Moved to Porto last week" in general and "Miso" not in general
        last = transcripts(fake)[-1]
        assert "I adopted a cat" not in last and "moved to Porto" in last  # only the new part was read
        earlier = last_user_message(fake.requests[-2] if "outdated" in last_user_message(fake.requests[-1])
                                    else fake.requests[-1])
        assert "<earlier>" in earlier and "I adopted a cat" in earlier  # shown as context only
        # the same conversation captured a third time, unchanged: nothing more is asked
        asked = len(fake.requests)
        ok(cli(vault, "capture", str(chat), "--now"))
        assert len(fake.requests) == asked and "Miso" not in vault.topic("general").raw


def test_forgotten_edited_and_done_never_come_back(tmp_path):
    vault = vault_with(tmp_path, {})
    rules = {"Miso": CAT, "Lisbon": {"kind": "fact", "text": "Lives in Lisbon, in Arroios"},
             "Acme": {"kind": "pending", "text": "Job interview at Acme", "due": "2026-11-28", "urgency": "high"}}
    chat = write(tmp_path / "t.txt", "Maya: Miso, our cat, likes Lisbon. The Acme interview is Thursday.\n")
    with FakeLLM(scripted(rules)) as fake:
        assert len(digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW).written) == 3
        vault.forget(match="Miso")
        vault.edit(vault.store.find(match="Arroios").id, "Lives in Lisbon, in Graça")
        vault.upkeep.done(match="Acme")
        report = digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW, force=True)
        asked = len(transcripts(fake))
    assert asked == 2  # force: read again
    assert report.written == []
    reasons = sorted(r for _, r in report.skipped)
    assert [r.split(" on ")[0] for r in reasons] == ["done", "edited away", "forgotten"]
    assert all("(archive.md): not added again" in r for r in reasons)
    texts = " ".join(e.text for e in vault.entries())
    assert "Miso" not in texts and "Arroios" not in texts and "Acme" not in texts and "Graça" in texts


def test_a_forgotten_memory_reworded_slightly_stays_forgotten(tmp_path):
    vault = vault_with(tmp_path, {"pets": "- [event] Adopted a grey cat called Miso in Lisbon (2026-01-01)\n"})
    vault.forget(match="Miso")
    again = {"kind": "event", "text": "Adopted a grey cat called Miso in Lisbon."}
    with FakeLLM(scripted({"Miso": again})) as fake:
        report = digest_file(vault.searcher, write(tmp_path / "t.txt", "Maya: Miso!\n"), loopback_llm(fake), now=NOW)
    assert report.written == [] and report.skipped[0][1].startswith("forgotten on ")


def test_a_different_conversation_is_read_whole(tmp_path):
    vault = vault_with(tmp_path, {})
    with FakeLLM(scripted({"Miso": CAT, "Porto": MOVE})) as fake:
        digest_file(vault.searcher, write(tmp_path / "a.txt", "Maya: I adopted a cat called Miso\n"),
                    loopback_llm(fake), now=NOW)
        digest_file(vault.searcher, write(tmp_path / "b.txt", "Maya: I adopted a dog\nMaya: we moved to Porto last week\n"),
                    loopback_llm(fake), now=NOW)
        assert "I adopted a dog" in transcripts(fake)[-1]


# ---- 4. an empty reply is no answer ---------------------------------------------------------

def test_an_empty_reply_never_marks_a_transcript_digested(tmp_path):
    vault = vault_with(tmp_path, {})
    chat = write(tmp_path / "t.txt", "Maya: I adopted a cat called Miso\n")
    with FakeLLM(["{}", "{}"]) as fake:
        with pytest.raises(LLMError, match="no \"conclusions\""):
            digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW)
    assert load_digested(vault.store) == {}
    with FakeLLM(scripted({"Miso": CAT})) as fake:  # next time it is read again
        assert len(digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW).written) == 1
    assert len(load_digested(vault.store)) == 1


def test_capture_now_with_an_empty_reply_keeps_the_transcript_queued(tmp_path):
    with FakeLLM(["{}"]) as fake:
        root = Vault.init(tmp_path / "v", profile=False).root
        write(root / "memkit.yaml", f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 5}}\n")
        vault = Vault(root, embedder=FakeEmbedder())
        chat = write(tmp_path / "chat.txt", "Maya: I adopted a cat called Miso\n")
        result = cli(vault, "capture", str(chat), "--now")
        assert result.exit_code == 1 and "stays queued" in result.output
        assert [p.name for p in (root / "inbox").iterdir() if p.is_file()] and not (root / "inbox" / "done").exists()
    with FakeLLM(scripted({"Miso": CAT})) as fake:
        write(root / "memkit.yaml", f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 5}}\n")
        vault = Vault(root, embedder=FakeEmbedder())
        assert "wrote 1 entry" in ok(cli(vault, "capture", str(chat), "--now")).output


def test_digest_force_reads_a_transcript_again(tmp_path):
    with FakeLLM(scripted({"Miso": CAT})) as fake:
        root = Vault.init(tmp_path / "v", profile=False).root
        write(root / "memkit.yaml", f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 5}}\n")
        vault = Vault(root, embedder=FakeEmbedder())
        chat = write(tmp_path / "chat.txt", "Maya: I adopted a cat called Miso\n")
        ok(cli(vault, "digest", str(chat)))
        assert "already digested" in ok(cli(vault, "digest", str(chat))).output
        assert len(transcripts(fake)) == 1
        out = ok(cli(vault, "digest", "--force", str(chat))).output
        assert len(transcripts(fake)) == 2 and "already in general" in out


# ---- 3. supersedes are shown what they replace ---------------------------------------------

def outdating(rules: dict[str, dict], stale: str):
    """An LLM that concludes as :func:`scripted` and, asked which shown entries are outdated, names
    those that mention ``stale`` (as a real one would, if it is shown them)."""
    concluded = scripted(rules)

    def answer(request: dict) -> str:
        prompt = last_user_message(request)
        if "outdated" not in prompt:
            return concluded(request)
        shown = re.findall(r"^\s+\[([0-9a-f]{8})\] (.*)$", prompt, re.M)
        return json.dumps({"updates": [{"new": 1, "outdated": [i for i, text in shown if stale in text]}]})
    return answer


def test_moved_to_porto_supersedes_lives_in_lisbon(tmp_path):
    """No word in common: the entry is shown because it is its topic's entry of its kind."""
    vault = vault_with(tmp_path, {})
    vault.add("Lives in Lisbon, in Arroios")
    vault.add("Works as a nurse at Santa Maria hospital")
    with FakeLLM(outdating({"Porto": {"kind": "fact", "text": "Moved to Porto"}}, "Lisbon")) as fake:
        report = digest_file(vault.searcher, write(tmp_path / "t.txt", "Maya: we moved to Porto\n"),
                             loopback_llm(fake), now=NOW)
        shown = [last_user_message(r) for r in fake.requests if "outdated" in last_user_message(r)]
    assert shown and "Lives in Lisbon, in Arroios" in shown[0]
    assert [(t, old.split(" (")[0], new) for t, old, new in report.superseded] == \
        [("general", "Lives in Lisbon, in Arroios", "Moved to Porto")]
    texts = [e.text for e in vault.entries()]
    assert not any("Lisbon" in t for t in texts) and any("Moved to Porto" in t for t in texts)
    assert "Lives in Lisbon, in Arroios" in (vault.root / "archive.md").read_text()


def test_the_readmes_moved_to_seattle_supersedes_lives_in_portland(tmp_path):
    vault = vault_with(tmp_path, {"home": "- Lives in Portland Oregon with partner (2025-05-01)\n"
                                          "- Home office has a standing desk (2025-05-01)\n"})
    rules = {"Seattle": {"kind": "event", "text": "Moved to Seattle", "topic": "home"}}
    with FakeLLM(outdating(rules, "Portland")) as fake:
        report = digest_file(vault.searcher, write(tmp_path / "t.txt", "Maya: we moved to Seattle\n"),
                             loopback_llm(fake), now=NOW)
    assert [old for _, old, _ in report.superseded] == ["Lives in Portland Oregon with partner (2025-05-01)"]
    assert "Portland" not in vault.topic("home").raw and "Moved to Seattle" in vault.topic("home").raw
    assert "standing desk" in vault.topic("home").raw  # shown, not outdated: kept


def test_update_candidates_come_from_the_vaults_search(tmp_path, monkeypatch):
    """The candidates are what the public search answers for the conclusion (a better search stage,
    here one that knows a new boss replaces the old, serves the digest too)."""
    from memkit.search.searcher import Searcher
    vault = vault_with(tmp_path, {"work": "- [fact] Manager is Priya Raman (2025-09-17)\n"})
    real = Searcher.search

    def smarter(self, query, **kw):
        if query == "Reports to Tom Berg now" and not kw.get("words_first"):
            return real(self, "Manager Priya", **kw)
        return real(self, query, **kw)

    monkeypatch.setattr(Searcher, "search", smarter)
    rules = {"Tom": {"kind": "fact", "text": "Reports to Tom Berg now"}}
    with FakeLLM(outdating(rules, "Priya")) as fake:
        report = digest_file(vault.searcher, write(tmp_path / "t.txt", "Maya: my boss is Tom now\n"),
                             loopback_llm(fake), now=NOW)
    assert [old for _, old, _ in report.superseded] == ["[fact] Manager is Priya Raman (2025-09-17)"]
