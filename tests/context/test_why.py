"""Issue 30.3: `memkit why ID` — the lines of the conversation a memory came from: a transcript in
inbox/done/, a session, an aged session's raw archive; clear errors when there is none."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder, loopback_llm, write

from memkit import ProvenanceNotFound, Vault
from memkit.digest.digest import process_inbox
from memkit.errors import EntryNotFound
from memkit.sessions import age_sessions

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)
VEGETARIAN = "Eats vegetarian Monday to Friday; meat and fish only at weekends"
CHAT = ("Maya: Morning! Can you plan dinners for next week?\n"
        "Assistant: Sure. Any constraints?\n"
        "Maya: I eat vegetarian Monday to Friday now, meat and fish only at the weekends.\n"
        "Assistant: Got it, vegetarian on weekdays.\n"
        "Maya: And Lina hates mushrooms.\n")


def answer(request: dict) -> str:
    prompt = last_user_message(request)
    if "outdated" in prompt:
        return json.dumps({"updates": []})
    if "condense it into" in request["messages"][0]["content"]:  # aging's summary
        return json.dumps({"summary": "Planned the week's dinners; Maya eats vegetarian on weekdays.",
                           "key_points": ["vegetarian on weekdays"], "emotional_highlights": []})
    said = [{"kind": "preference", "text": VEGETARIAN, "topic": None}] if "vegetarian" in prompt else []
    return json.dumps({"conclusions": said, "new_topic": None})


def make(tmp_path, fake) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n")
    return Vault(root, embedder=FakeEmbedder())


def vegetarian(v: Vault):
    return next(e for e in v.entries() if "vegetarian" in e.text)


def test_a_transcript_digested_from_the_inbox(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        write(v.root / "inbox" / "dinner.txt", CHAT)
        (done,) = process_inbox(v.searcher, loopback_llm(fake), idle_minutes=0)
    assert done.error is None and (v.root / "inbox" / "done" / "dinner.txt").is_file()
    entry = vegetarian(v)
    why = v.why(entry.id)
    assert (why.id, why.kind, why.file, why.source, why.status) == (entry.id, "transcript", "inbox/done/dinner.txt",
                                                                    "dinner.txt", "current")
    # the message that says it most, after the one before it ("Got it, vegetarian on weekdays" shares too little)
    assert [(w.line, w.role, w.match) for w in why.lines] == [(2, "Assistant", False), (3, "Maya", True)]
    assert why.lines[1].text == "I eat vegetarian Monday to Friday now, meat and fish only at the weekends."
    shown = why.render()
    assert shown.splitlines()[1] == f"from transcript dinner.txt of {why.day}: inbox/done/dinner.txt"
    assert "> 3  Maya: I eat vegetarian Monday to Friday now" in shown
    assert why.to_dict()["lines"][1]["line"] == 3


def test_json_lines_transcripts_give_their_lines_too(tmp_path):
    lines = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi, what's up?"},
             {"role": "user", "content": "I eat vegetarian Monday to Friday, meat and fish at weekends"}]
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        write(v.root / "inbox" / "c.jsonl", "".join(json.dumps(m) + "\n" for m in lines))
        process_inbox(v.searcher, loopback_llm(fake), idle_minutes=0)
    why = v.why(vegetarian(v).id)
    assert [(w.line, w.role, w.match) for w in why.lines] == [(2, "assistant", False), (3, "user", True)]


def test_a_session_and_once_it_aged_its_raw_archive(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        sid = "3f1c2a9e-0b7d-4c1e-9a51-6d2f8e4b7c10"
        v.conversations.new(session_id=sid, now=T0)
        for i, line in enumerate(CHAT.splitlines()):
            role, text = line.split(": ", 1)
            v.conversations.append(sid, "user" if role == "Maya" else "assistant", text * 2,
                                   now=T0 + timedelta(minutes=i), digest=False)
        v.conversations.digest(sid)
        entry = vegetarian(v)
        assert "(from 3f1c2a9e 2026-11-23)" in entry.text
        why = v.why(entry.id[:6])
        session_file = v.root / "sessions" / f"2026-11-23-{sid}.md"
        assert (why.kind, why.file, why.source, why.day) == ("session", f"sessions/2026-11-23-{sid}.md", "3f1c2a9e",
                                                             "2026-11-23")
        best = next(w for w in why.lines if w.match)
        assert best.role == "user" and session_file.read_text().splitlines()[best.line - 1].startswith("I eat vegetarian")

        sessions = v.conversations.folder
        report = age_sessions(sessions, loopback_llm(fake), now=T0 + timedelta(days=4), summary_days=3, core_days=7)
        assert [d["stage"] for d in report.done] == ["summary"]
    assert "I eat vegetarian" not in session_file.read_text()  # the session holds its summary now
    aged = v.why(entry.id)
    raw = v.root / "sessions" / "archive" / "raw" / session_file.name
    assert (aged.kind, aged.file) == ("raw", f"sessions/archive/raw/{session_file.name}")
    best = next(w for w in aged.lines if w.match)
    assert raw.read_text().splitlines()[best.line - 1].startswith("I eat vegetarian")
    assert "from the raw archive of session 3f1c2a9e of 2026-11-23" in aged.render()


def test_an_archived_memory_still_says_where_it_came_from(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        write(v.root / "inbox" / "dinner.txt", CHAT)
        process_inbox(v.searcher, loopback_llm(fake), idle_minutes=0)
    entry = vegetarian(v)
    v.forget(entry.id)
    why = v.why(entry.id)
    assert why.status.startswith("forgotten") and why.file == "inbox/done/dinner.txt"


def test_a_memory_written_by_hand_names_no_conversation(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
    entry = v.add("Allergic to tree nuts", topic="health")
    with pytest.raises(ProvenanceNotFound, match="written by hand or before provenance was recorded"):
        v.why(entry.id)
    with pytest.raises(EntryNotFound, match="no entry"):
        v.why("ffffffff")


def test_a_conversation_that_is_gone_is_named(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
    v.add("Eats vegetarian on weekdays (from 3f1c2a9e 2026-11-23)", topic="food")
    v.add("Hates mushrooms (from dinner.txt 2026-11-23)", topic="food")
    gone = next(e for e in v.entries() if "vegetarian" in e.text)
    with pytest.raises(ProvenanceNotFound, match=r"came from 3f1c2a9e of 2026-11-23, but that conversation is gone: "
                                                 r"looked for a session 3f1c2a9e\* of 2026-11-23 in sessions/"):
        v.why(gone.id)
    file_gone = next(e for e in v.entries() if "mushrooms" in e.text)
    with pytest.raises(ProvenanceNotFound, match="inbox/done/dinner.txt and inbox/dinner.txt"):
        v.why(file_gone.id)


def test_a_marker_naming_a_path_is_never_followed(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
    write(tmp_path / "secret.txt", "Maya: I eat vegetarian\n")
    v.add("Eats vegetarian (from ../../secret.txt 2026-11-23)", topic="food")
    with pytest.raises(ProvenanceNotFound, match="names no session or transcript file"):
        v.why(vegetarian(v).id)


def test_a_transcript_digested_where_it_lay_in_the_vault_and_a_copy_of_one_outside(tmp_path):
    """A file outside the vault is never read by `memkit why`: the digest keeps a copy of it in
    inbox/done/ (issue 41.3), which is what `why` reads."""
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        write(v.root / "chats" / "dinner.txt", CHAT)
        v.digest(v.root / "chats" / "dinner.txt", llm=loopback_llm(fake))
        why = v.why(vegetarian(v).id)
        assert (why.kind, why.file) == ("transcript", "chats/dinner.txt")
        outside = write(tmp_path / "elsewhere" / "lunch.txt", CHAT.replace("Monday", "Mon."))
        v.forget(vegetarian(v).id)
        (v.root / "archive.md").unlink()  # forgotten and gone from the archive: it may come back
        v.digest(outside, llm=loopback_llm(fake))
    digested = json.loads((v.root / ".memkit" / "digested.json").read_text())
    assert {r["transcript"]: r.get("path") for r in digested.values()} == {"dinner.txt": "chats/dinner.txt",
                                                                          "lunch.txt": "inbox/done/lunch.txt"}
    outside.write_text("Maya: something else entirely\n")  # never read: the copy is
    why = v.why(vegetarian(v).id)
    assert (why.kind, why.file) == ("transcript", "inbox/done/lunch.txt") and any("Mon." in w.text for w in why.lines)
