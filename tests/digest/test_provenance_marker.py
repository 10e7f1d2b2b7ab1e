"""Issue 30.3: each digested entry says the conversation it came from, ``(from SOURCE DAY)`` before
its date, and the marker changes nothing else: duplicates are still duplicates, what was forgotten
stays forgotten, search, the judge and the context block do not read it, `memkit edit` keeps it."""
from __future__ import annotations

import json
from datetime import date, datetime, timezone

from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder, loopback_llm, vault_with, write

from memkit import Vault
from memkit.digest.digest import digest_file, session_source
from memkit.embeddings.judge import judge_text
from memkit.formats.fields import provenance, strip_provenance
from memkit.formats.lifecycle import core_text

NOW = datetime(2026, 11, 21, 18, 0, 0)
CAT = [{"kind": "fact", "text": "Has a cat named Miso", "topic": "home"}]


def responder(conclusions):
    def answer(request):
        if "outdated" in request["messages"][-1]["content"]:
            return json.dumps({"updates": []})
        return json.dumps({"conclusions": conclusions, "new_topic": None})
    return answer


def home(tmp_path):
    return vault_with(tmp_path, {"home": "- Lives in Portland Oregon with partner (2025-05-01)\n"})


def test_a_transcript_file_names_itself_and_the_day(tmp_path):
    v = home(tmp_path)
    chat = write(tmp_path / "in" / "chat 1.txt", "Maya: our cat is called Miso\n")
    with FakeLLM(responder(CAT)) as fake:
        report = digest_file(v.searcher, chat, loopback_llm(fake), now=NOW)
    assert [line for _, line in report.written] == ["- [fact] Has a cat named Miso (from chat-1.txt) (2026-11-21)"]
    entry = next(e for e in v.entries() if "Miso" in e.text)
    assert provenance(entry.text) == ("chat-1.txt", "2026-11-21")


def test_the_same_conclusion_from_another_conversation_is_still_a_duplicate(tmp_path):
    v = home(tmp_path)
    with FakeLLM(responder(CAT)) as fake:
        digest_file(v.searcher, write(tmp_path / "a.txt", "Maya: the cat is Miso\n"), loopback_llm(fake), now=NOW)
        again = digest_file(v.searcher, write(tmp_path / "b.txt", "Maya: Miso the cat\n"), loopback_llm(fake), now=NOW)
        forced = digest_file(v.searcher, tmp_path / "a.txt", loopback_llm(fake), now=NOW, force=True)
    assert again.written == [] and again.skipped == [("Has a cat named Miso", "already in home")]
    assert forced.written == []
    assert sum("Miso" in e.text for e in v.entries()) == 1


def test_forgotten_stays_forgotten_whatever_conversation_says_it_again(tmp_path):
    v = home(tmp_path)
    with FakeLLM(responder(CAT)) as fake:
        digest_file(v.searcher, write(tmp_path / "a.txt", "Maya: the cat is Miso\n"), loopback_llm(fake), now=NOW)
        entry = next(e for e in v.entries() if "Miso" in e.text)
        v.forget(entry.id)
        again = digest_file(v.searcher, write(tmp_path / "b.txt", "Maya: Miso!\n"), loopback_llm(fake), now=NOW)
    assert again.written == [] and "forgotten" in again.skipped[0][1]


def test_the_marker_is_no_part_of_what_an_entry_says():
    line = "- [fact] Has a cat named Miso (importance 0.8) (from 3f1c2a9e 2026-11-23) #pets (2026-11-23)"
    assert core_text(line) == core_text("Has a cat named Miso.")
    assert judge_text(line[2:]) == "Has a cat named Miso pets"
    assert strip_provenance("Has a cat (from chat.txt) (2026-11-23)") == "Has a cat (2026-11-23)"
    # a person's own "(from …)" without a day is their text
    assert core_text("Brought olive oil (from Lisbon)") == "brought olive oil (from lisbon)"


def test_the_context_block_and_the_words_index_leave_it_out(tmp_path):
    v = vault_with(tmp_path, {"pets": "- Has a cat named Miso (from 3f1c2a9e 2026-11-23) (2026-11-23)\n"})
    block = v.context("what is my cat called?").text
    assert "Has a cat named Miso" in block and "3f1c2a9e" not in block and "(from" not in block
    assert v.search("3f1c2a9e", mode="lexical") == []  # the source's name is no word of the memory


def test_edit_keeps_the_marker(tmp_path):
    v = vault_with(tmp_path, {"pets": "- [fact] Has a cat named Miso (from 3f1c2a9e 2026-11-23) (2026-11-23)\n"})
    entry = next(iter(v.entries()))
    edited = v.edit(entry.id, "Has a grey cat named Miso")
    assert provenance(edited.text) == ("3f1c2a9e", "2026-11-23")
    assert "(from 3f1c2a9e 2026-11-23)" in (v.root / "topics" / "pets.md").read_text()


def test_a_session_digest_names_the_session_and_its_day(tmp_path):
    assert session_source("sessions/2026-11-24-voice.md (messages 3-9)") == ("voice", "2026-11-24")
    assert session_source("sessions/archive/2026-11-24-3f1c2a9e-77aa.md") == ("3f1c2a9e-77aa", "2026-11-24")
    assert session_source("transcript") is None and session_source("notes.txt") is None

    def answer(request):
        prompt = last_user_message(request)
        if "outdated" in prompt:
            return json.dumps({"updates": []})
        said = [{"kind": "fact", "text": "Maya's bike is a green Brompton", "topic": None}] if "Brompton" in prompt else []
        return json.dumps({"conclusions": said, "new_topic": None})

    with FakeLLM(answer) as fake:
        root = Vault.init(tmp_path / "v", profile=False).root
        (root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n")
        v = Vault(root, embedder=FakeEmbedder())
        sid = "3f1c2a9e-0b7d-4c1e-9a51-6d2f8e4b7c10"
        v.conversations.new(session_id=sid, now=datetime(2026, 11, 23, 9, tzinfo=timezone.utc))
        v.conversations.append(sid, "user", "My bike is a green Brompton.", now=datetime(2026, 11, 23, 9, 1, tzinfo=timezone.utc))
        v.conversations.digest(sid)
    entry = next(e for e in v.entries() if "Brompton" in e.text)
    assert provenance(entry.text) == ("3f1c2a9e", "2026-11-23")
    assert entry.date == date.today().isoformat()  # the entry's own date stays the digest's day
