"""Conversation sessions as files (memkit.sessions.folder) and their Vault verbs: the format, appends,
concurrency, listing, delete and prune, import and export, search, capture --save."""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from util import FakeEmbedder

from memkit import InvalidValue, MemkitError, Vault
from memkit.errors import SessionNotFound, TranscriptError
from memkit.formats.session import message_rows, parse_session

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_create_writes_a_readable_header_and_appends_blocks(vault):
    s = vault.conversations.new(system_prompt="You are Ana's travel assistant.\nBe brief.", title="Lisbon trip",
                             user="ana", tags=["travel"], metadata={"source": "voice-bot"}, session_id="lisbon",
                             now=T0)
    assert s.id == "lisbon" and s.file == "sessions/2026-03-01-lisbon.md"
    vault.conversations.append("lisbon", "user", "I want to go to Lisbon in March.", now=at(1))
    vault.conversations.append("lisbon", "assistant", "Booked: TAP on March 3rd.", important=True, now=at(2))
    vault.conversations.append("lisbon", "tool", '{"lisbon": "18C"}', name="weather", now=at(3))
    text = (vault.root / s.file).read_text()
    assert text == (
        "---\nid: lisbon\ncreated: 2026-03-01T09:00:00Z\ntitle: Lisbon trip\nuser: ana\ntags: [travel]\n"
        "metadata:\n  source: voice-bot\nsystem: |-\n  You are Ana's travel assistant.\n  Be brief.\n---\n"
        "# Lisbon trip\n"
        "\n### user · 2026-03-01T09:01:00Z\nI want to go to Lisbon in March.\n"
        "\n### assistant · 2026-03-01T09:02:00Z · important\nBooked: TAP on March 3rd.\n"
        "\n### tool · 2026-03-01T09:03:00Z · name=weather\n{\"lisbon\": \"18C\"}\n")
    loaded = vault.conversations.show("lisbon")
    assert loaded.system == "You are Ana's travel assistant.\nBe brief." and loaded.user == "ana"
    assert loaded.tags == ["travel"] and loaded.metadata == {"source": "voice-bot"}
    assert [(m.role, m.important, m.name) for m in loaded.messages] == [
        ("user", False, None), ("assistant", True, None), ("tool", False, "weather")]
    assert loaded.updated == "2026-03-01T09:03:00Z" and loaded.created == "2026-03-01T09:00:00Z"
    assert loaded.stage is None


def test_content_that_looks_like_a_heading_round_trips(vault):
    s = vault.conversations.new(now=T0)
    tricky = ("line one\n### user · 2026-01-01T00:00:00Z\n\\### assistant · 2026-01-01T00:00:00Z\n"
              "### not a heading\n\n```\ncode\n```")
    vault.conversations.append(s.id, "user", tricky, now=at(1))
    vault.conversations.append(s.id, "assistant", "ok", now=at(2))
    messages = vault.conversations.show(s.id).messages
    assert [m.content for m in messages] == [tricky, "ok"]


def test_a_person_may_edit_the_file(vault):
    s = vault.conversations.new(session_id="edit", now=T0)
    path = vault.root / s.file
    with open(path, "a", newline="") as fh:  # written by hand, Windows line ends, no final newline
        fh.write("\r\n### user · 2026-03-01T09:05:00Z · important\r\nmy own words\r\nsecond line")
    vault.conversations.append("edit", "assistant", "answer", now=at(6))
    messages = vault.conversations.show("edit").messages
    assert [(m.role, m.content, m.important) for m in messages] == [
        ("user", "my own words\nsecond line", True), ("assistant", "answer", False)]


def test_messages_are_read_in_time_order_after_a_union_merge(vault):
    s = vault.conversations.new(session_id="merged", now=T0)
    path = vault.root / s.file
    path.write_text(path.read_text() + "\n### user · 2026-03-01T09:03:00Z\nthird\n"
                    "\n### user · 2026-03-01T09:01:00Z\nfirst\n\n### assistant · 2026-03-01T09:02:00Z\nsecond\n")
    assert [m.content for m in vault.conversations.show("merged").messages] == ["first", "second", "third"]


def test_git_union_merge_keeps_both_clones_appends(tmp_path):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x")

    def git(cwd, *args):
        subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "pull.rebase=false", *args], cwd=cwd,
                       check=True, capture_output=True, env=env)

    origin = Vault.init(tmp_path / "origin")
    origin.conversations.new(session_id="shared", now=T0)
    origin.conversations.append("shared", "user", "hello", now=at(1))
    git(origin.root, "init", "-q")
    git(origin.root, "add", "-A")
    git(origin.root, "commit", "-qm", "start")
    git(tmp_path, "clone", "-q", str(origin.root), "laptop")
    git(tmp_path, "clone", "-q", str(origin.root), "phone")
    laptop, phone = Vault(tmp_path / "laptop"), Vault(tmp_path / "phone")
    laptop.conversations.append("shared", "assistant", "from the laptop", now=at(2))
    phone.conversations.append("shared", "user", "from the phone", now=at(3))
    git(laptop.root, "commit", "-qam", "laptop")
    git(laptop.root, "push", "-q", "origin", "HEAD:refs/heads/laptop")
    git(phone.root, "commit", "-qam", "phone")
    git(phone.root, "pull", "--no-rebase", "-q", "origin", "laptop")
    assert [m.content for m in phone.conversations.show("shared").messages] == ["hello", "from the laptop", "from the phone"]


def _append_many(args):
    root, writer, count = args
    v = Vault(root)
    for i in range(count):
        v.conversations.append("busy", "user", f"writer {writer} message {i}\nsecond line of {writer}/{i}")


def test_eight_writers_appending_at_once_lose_nothing(vault):
    vault.conversations.new(session_id="busy")
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(8) as pool:
        pool.map(_append_many, [(str(vault.root), w, 40) for w in range(8)])
    messages = vault.conversations.show("busy").messages
    assert len(messages) == 320
    assert sorted(m.content for m in messages) == sorted(
        f"writer {w} message {i}\nsecond line of {w}/{i}" for w in range(8) for i in range(40))


def test_ids_lookup_and_errors(vault):
    a = vault.conversations.new(now=T0)
    assert len(a.id) == 8 and all(c in "0123456789abcdef" for c in a.id)
    assert vault.conversations.show(a.id[:4]).id == a.id  # a unique prefix
    assert vault.conversations.show(Path(a.file).name).id == a.id  # the file name
    with pytest.raises(SessionNotFound, match="no session 'nope'"):
        vault.conversations.show("nope")
    for bad in ("../x", "a/b", "", ".hidden", "x" * 81):
        with pytest.raises(InvalidValue, match="invalid session id"):
            vault.conversations.new(session_id=bad)
    vault.conversations.new(session_id="taken")
    with pytest.raises(MemkitError, match="exists already"):
        vault.conversations.new(session_id="taken")
    with pytest.raises(InvalidValue, match="invalid role 'robot'"):
        vault.conversations.append(a.id, "robot", "hi")


def test_a_conversation_id_is_also_a_context_session(vault):
    s = vault.conversations.new(session_id="chat-42")
    vault.conversations.append(s.id, "user", "hi")
    ctx = vault.context("hi", session=s.id)
    assert ctx.session == "chat-42"
    assert (vault.root / s.file).read_text().count("### ") == 1  # the context keeps its state elsewhere


def test_symlinks_are_never_followed(tmp_path, vault):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2026-01-01-evil.md").write_text("---\nid: evil\n---\n")
    (vault.root / "sessions").symlink_to(outside)
    with pytest.raises(MemkitError, match="symlink to a folder outside the vault"):
        vault.conversations.list()
    (vault.root / "sessions").unlink()
    (vault.root / "sessions").mkdir()
    (vault.root / "sessions" / "2026-01-01-link.md").symlink_to(outside / "2026-01-01-evil.md")
    with pytest.raises(MemkitError, match="symlink"):
        vault.conversations.append("link", "user", "hi")
    assert (outside / "2026-01-01-evil.md").read_text() == "---\nid: evil\n---\n"


def test_a_bad_header_names_the_file_and_line(vault):
    (vault.root / "sessions").mkdir()
    (vault.root / "sessions" / "2026-01-01-bad.md").write_text("---\nid: bad\ntitle: [unclosed\n---\n")
    vault.conversations.new(session_id="good")
    with pytest.raises(MemkitError, match=r"sessions/2026-01-01-bad.md line \d: the header is not valid YAML"):
        vault.conversations.show("bad")
    assert [i.id for i in vault.conversations.list()] == ["good"]  # one bad file never hides the others


def test_list_is_newest_first_and_cached_by_stat(vault):
    for n, sid in enumerate(["a1", "b2", "c3"]):
        vault.conversations.new(session_id=sid, now=at(n))
    vault.conversations.append("a1", "user", "latest", now=at(10))
    infos = vault.conversations.list()
    assert [(i.id, i.messages, i.title) for i in infos] == [("a1", 1, "latest"), ("c3", 0, "c3"), ("b2", 0, "b2")]
    cache = json.loads((vault.store.state_dir / "session-list.json").read_text())
    assert sorted(cache["files"]) == ["2026-03-01-a1.md", "2026-03-01-b2.md", "2026-03-01-c3.md"]
    fresh = Vault(vault.root)  # a new process reads the cache; a changed file is read again
    fresh.conversations.append("b2", "user", "newer", now=at(20))
    assert [i.id for i in fresh.conversations.list()][0] == "b2"
    fresh.conversations.delete("c3")  # a file that is gone leaves the cache
    assert [i.id for i in fresh.conversations.list()] == ["b2", "a1"]
    assert sorted(json.loads((vault.store.state_dir / "session-list.json").read_text())["files"]) == [
        "2026-03-01-a1.md", "2026-03-01-b2.md"]


def test_delete_and_prune(vault):
    vault.conversations.new(session_id="old", now=T0)
    vault.conversations.append("old", "user", "long ago", now=at(1))
    vault.conversations.new(session_id="recent", now=T0 + timedelta(days=40))
    now = T0 + timedelta(days=45)
    dry = vault.conversations.prune(dry_run=True, now=now)
    assert dry.days == 30 and [i.id for i in dry.sessions] == ["old"] and (vault.root / "sessions/2026-03-01-old.md").exists()
    report = vault.conversations.prune(now=now)
    assert report.action == "archived" and report.sessions[0].file == "sessions/archive/2026-03-01-old.md"
    assert [i.id for i in vault.conversations.list()] == ["recent"]
    assert [i.id for i in vault.conversations.list(archived=True)] == ["old"]
    assert vault.conversations.show("old").archived  # still readable…
    with pytest.raises(MemkitError, match="archived"):  # … but not continued until moved back
        vault.conversations.append("old", "user", "hi")
    gone = vault.conversations.prune(3, delete=True, now=now)
    assert [i.id for i in gone.sessions] == ["recent"] and vault.conversations.list() == []
    assert vault.conversations.delete("old").id == "old" and vault.conversations.list(archived=True) == []


def test_prune_follows_expire_conversation(tmp_path):
    v = Vault.init(tmp_path / "w")
    (v.root / "memkit.yaml").write_text("expire:\n  conversation: never\n")
    v = Vault(v.root)
    v.conversations.new(session_id="kept", now=T0)
    assert v.conversations.prune(now=T0 + timedelta(days=999)).days is None and len(v.conversations.list()) == 1


def test_export_and_import_round_trip(vault):
    vault.conversations.new(session_id="src", system_prompt="Be kind.", now=T0)
    vault.conversations.append("src", "user", "hello\nthere", now=at(1))
    vault.conversations.append("src", "assistant", "hi", important=True, now=at(2))
    data = vault.conversations.export("src")
    assert [json.loads(line) for line in data.splitlines()] == [
        {"role": "system", "content": "Be kind.", "time": "2026-03-01T09:00:00Z"},
        {"role": "user", "content": "hello\nthere", "time": "2026-03-01T09:01:00Z"},
        {"role": "assistant", "content": "hi", "time": "2026-03-01T09:02:00Z", "important": True}]
    (imported,) = vault.conversations.import_(data.encode(), session_id="copy")
    copy = vault.conversations.show("copy")
    assert imported.added == 2 and copy.system == "Be kind." and copy.created == "2026-03-01T09:00:00Z"
    assert [m.to_dict() | {"line": 0} for m in copy.messages] == [m.to_dict() | {"line": 0} for m in vault.conversations.show("src").messages]
    again = vault.conversations.import_(data.encode(), session_id="copy")  # nothing new
    assert again[0].added == 0 and not again[0].created


def test_import_openai_messages_with_tool_calls(vault):
    data = json.dumps([
        {"role": "user", "content": [{"type": "text", "text": "weather in Lisbon?"}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Lisbon\"}"}}]},
        {"role": "tool", "name": "weather", "content": "18C"},
        {"role": "Ana", "content": "thanks"},
    ]).encode()
    (imported,) = vault.conversations.import_(data, now=T0)
    got = [(m.role, m.content, m.name) for m in imported.session.messages]
    assert got == [("user", "weather in Lisbon?", None), ("assistant", '→ weather({"city":"Lisbon"})', None),
                   ("tool", "18C", "weather"), ("user", "thanks", "Ana")]


def test_import_a_claude_code_transcript_keeps_times(vault):
    lines = [
        {"type": "user", "sessionId": "0c5e-aa", "timestamp": "2026-03-01T10:00:00.000Z", "parentUuid": None,
         "message": {"role": "user", "content": "fix the build"}},
        {"type": "assistant", "sessionId": "0c5e-aa", "timestamp": "2026-03-01T10:00:05.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Done: missing import."},
                                                       {"type": "tool_use", "name": "Edit", "input": {}}]}},
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    (imported,) = vault.conversations.import_(data, name="t.jsonl")
    s = imported.session
    assert s.id == "0c5e-aa" and s.metadata == {"source": "claude-code"}
    assert [(m.role, m.content, m.time) for m in s.messages] == [
        ("user", "fix the build", "2026-03-01T10:00:00Z"), ("assistant", "Done: missing import.", "2026-03-01T10:00:05Z")]


def test_import_a_chatgpt_export(vault):
    def node(nid, parent, role, text, t):
        return {"id": nid, "parent": parent, "children": [],
                "message": {"author": {"role": role}, "create_time": t,
                            "content": {"content_type": "text", "parts": [text]}}}

    export = [{"title": "Sourdough", "create_time": 1772355600.0, "id": "conv-1", "current_node": "n3",
               "mapping": {"root": {"id": "root", "parent": None, "children": ["n1"], "message": None},
                           "n1": node("n1", "root", "user", "how long to proof?", 1772355601.0),
                           "n2": node("n2", "n1", "assistant", "an abandoned branch", 1772355602.0),
                           "n3": node("n3", "n1", "assistant", "About 12 hours in the fridge.", 1772355603.0)}},
              {"title": "Second", "create_time": 1772355700.0, "id": "conv-2", "mapping": {
                  "a": node("a", None, "user", "hello", 1772355701.0)}}]
    results = vault.conversations.import_(json.dumps(export).encode())
    assert [(r.session.id, r.session.title, r.added) for r in results] == [("conv-1", "Sourdough", 2),
                                                                           ("conv-2", "Second", 1)]
    assert [m.content for m in results[0].session.messages] == ["how long to proof?", "About 12 hours in the fridge."]
    assert results[0].session.created == "2026-03-01T09:00:00Z"


def test_a_chatgpt_conversation_without_an_id_is_found_again_by_its_content(vault):
    """Issue 41 item 9: an export whose conversations have no id made a second session on every
    re-import; the conversation is named by its content, so a re-import adds only what is new."""
    def export(*texts):
        mapping = {f"n{i}": {"parent": f"n{i - 1}" if i else None, "children": [f"n{i + 1}"] if i + 1 < len(texts) else [],
                             "message": {"author": {"role": "user" if i % 2 == 0 else "assistant"},
                                         "create_time": 1772355601.0 + i,
                                         "content": {"content_type": "text", "parts": [text]}}}
                   for i, text in enumerate(texts)}
        return json.dumps([{"title": "Paella", "create_time": 1772355600.0, "mapping": mapping},
                           {"title": "Other", "create_time": 1772355700.0, "mapping": {
                               "a": {"parent": None, "children": [], "message": {
                                   "author": {"role": "user"}, "create_time": 1772355701.0,
                                   "content": {"content_type": "text", "parts": ["something else"]}}}}}]).encode()

    first = vault.conversations.import_(export("which rice?", "Bomba."))
    assert [r.created for r in first] == [True, True]
    assert first[0].session.id != first[1].session.id and first[0].session.id.startswith("chatgpt-")
    again = vault.conversations.import_(export("which rice?", "Bomba."))
    assert [(r.session.id, r.added, r.created) for r in again] == [(r.session.id, 0, False) for r in first]
    grown = vault.conversations.import_(export("which rice?", "Bomba.", "and the broth?"))
    assert (grown[0].session.id, grown[0].added) == (first[0].session.id, 1)
    assert len(list((vault.root / "sessions").glob("*.md"))) == 2


def test_import_errors_name_the_file_and_line(vault):
    with pytest.raises(TranscriptError, match="chat.jsonl line 2: not valid JSON Lines"):
        vault.conversations.import_(b'{"role": "user", "content": "a"}\n{oops\n', name="chat.jsonl")
    with pytest.raises(TranscriptError, match="x.txt: the file is empty"):
        vault.conversations.import_(b"  \n", name="x.txt")


def test_rows_for_the_index_and_back(vault):
    s = vault.conversations.new(session_id="rows", now=T0)
    vault.conversations.append("rows", "user", "first message", now=at(1))
    vault.conversations.append("rows", "assistant", "", now=at(2))  # empty: not a row
    vault.conversations.append("rows", "assistant", "second\nmessage", now=at(3))
    path = vault.root / s.file
    rows = message_rows(path.read_text())
    lines = path.read_text().splitlines()
    assert [(lines[n - 1], text) for n, text in rows] == [
        ("### user · 2026-03-01T09:01:00Z", "first message"), ("### assistant · 2026-03-01T09:03:00Z", "second\nmessage")]
    from memkit.sessions.folder import Sessions
    from memkit.sessions.search import SessionSearch
    hit = SessionSearch(Sessions(vault.root, vault.store.state_dir, vault.config), None).locate(path, rows[1][0])
    assert hit is not None and (hit.session, hit.role, hit.text, hit.time) == (
        "rows", "assistant", "second\nmessage", "2026-03-01T09:03:00Z")


def test_search_sessions_by_meaning_and_words(tmp_path):
    Vault.init(tmp_path / "s")
    v = Vault(tmp_path / "s", embedder=FakeEmbedder())
    v.conversations.new(session_id="trip", now=T0)
    v.conversations.append("trip", "user", "I fly to Lisbon on March 3rd with TAP", now=at(1))
    v.conversations.append("trip", "assistant", "Enjoy the pastel de nata", now=at(2))
    v.conversations.new(session_id="bread", now=T0)
    v.conversations.append("bread", "user", "my sourdough starter smells of acetone", now=at(3))
    hits = v.conversations.search("when do I fly to Lisbon", k=2)
    assert (hits[0].session, hits[0].role, hits[0].time) == ("trip", "user", "2026-03-01T09:01:00Z")
    assert [h.session for h in v.conversations.search("sourdough", k=5)] == ["bread"]
    assert v.conversations.search("sourdough", session="trip") == []
    v.conversations.new(session_id="trip-2", now=T0)  # its file name starts with trip's: not trip's subtopic
    v.conversations.append("trip-2", "user", "I fly to Lisbon again in May", now=at(5))
    assert {h.session for h in v.conversations.search("fly to Lisbon", k=5, session="trip")} == {"trip"}
    v.conversations.append("bread", "user", "sourdough again", now=at(4))  # a changed file is read again
    assert len(v.conversations.search("sourdough", k=5)) == 2
    with pytest.raises(InvalidValue, match="empty"):
        v.conversations.search("  ")


def test_capture_can_save_the_session_too(tmp_path, vault):
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "I moved to Porto"},
                                {"role": "assistant", "content": "Noted!"}]))
    result = vault.capture(path=chat, session="porto-move", save=True)
    assert result.saved == {"id": "porto-move", "file": result.saved["file"], "title": "I moved to Porto",
                            "added": 2, "created": True, "messages": 2}
    chat.write_text(json.dumps([{"role": "user", "content": "I moved to Porto"},
                                {"role": "assistant", "content": "Noted!"},
                                {"role": "user", "content": "and I started a new job"}]))
    again = vault.capture(path=chat, session="porto-move", save=True)
    assert again.saved["added"] == 1 and "saved as session porto-move" in again.summary()
    assert [m.content for m in vault.conversations.show("porto-move").messages][-1] == "and I started a new job"


def test_parse_session_without_a_header():
    s = parse_session("### user · 2026-03-01T09:00:00Z\nhi\n", "sessions/x.md", "x")
    assert s.created == "2026-03-01T09:00:00Z" and [m.content for m in s.messages] == ["hi"]


def test_capture_save_of_a_claude_code_hook_keeps_the_transcripts_times(tmp_path, vault):
    transcript = tmp_path / "cc.jsonl"
    lines = [{"type": "user", "sessionId": "cc-1", "timestamp": "2026-03-01T10:00:00Z", "parentUuid": None,
              "message": {"role": "user", "content": "rename the module"}},
             {"type": "assistant", "sessionId": "cc-1", "timestamp": "2026-03-01T10:00:09Z",
              "message": {"role": "assistant", "content": [{"type": "text", "text": "Renamed."}]}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    hook = json.dumps({"session_id": "cc-1", "transcript_path": str(transcript), "hook_event_name": "Stop"})
    result = vault.capture(stdin=hook.encode(), save=True)
    assert result.saved["id"] == "cc-1" and result.saved["added"] == 2
    assert [(m.role, m.time) for m in vault.conversations.show("cc-1").messages] == [
        ("user", "2026-03-01T10:00:00Z"), ("assistant", "2026-03-01T10:00:09Z")]


def test_an_exact_write_never_lands_in_a_session_its_id_prefixes(tmp_path):
    """An API's clients name their own sessions: "user1" must not write into "user12"."""
    v = Vault(Vault.init(tmp_path / "s", profile=False).root, embedder=FakeEmbedder())
    v.conversations.new(session_id="user12", now=T0)
    v.conversations.append("user12", "user", "a person typing a prefix", now=at(1), exact=True)
    with pytest.raises(SessionNotFound):  # reads: one client must not read another's history
        v.conversations.window("user1", exact=True)
    with pytest.raises(SessionNotFound):
        v.conversations.search("prefix", session="user1", exact=True)
    assert v.conversations.append("user1", "user", "my plan is Porto", exact=True).created  # its own, new session
    assert [m.content for m in v.conversations.show("user12").messages] == ["a person typing a prefix"]
    assert [m.content for m in v.conversations.show("user1").messages] == ["my plan is Porto"]
    assert v.conversations.window("user12", exact=True).total == 1


def test_searching_one_session_compares_its_name_as_it_is(tmp_path):
    """Session ids keep dots, underscores and capitals: "a.b" is not "a-b", "Trip" is not "trip"."""
    v = Vault(Vault.init(tmp_path / "s", profile=False).root, embedder=FakeEmbedder())
    for i, sid in enumerate(("a.b", "a-b", "Trip", "trip", "User_1")):
        v.conversations.new(session_id=sid, now=T0)
        v.conversations.append(sid, "user", f"hotel booking in lisbon said in session {sid}", now=at(i + 1))
    for sid in ("a.b", "a-b", "Trip", "trip", "User_1"):
        assert {h.session for h in v.conversations.search("hotel booking lisbon", k=10, session=sid)} == {sid}, sid


def test_a_message_to_an_id_with_no_session_starts_it_as_the_context_does(tmp_path):
    """Issue 41 item 6: `session add` to an unknown id failed where `context --session` creates it."""
    from memkit.errors import SessionAmbiguous, SessionNotFound

    v = Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())
    first = v.conversations.append("trip-porto", "user", "Book Porto for May", exact=True)
    assert first.created and first.to_dict()["created"] is True
    again = v.conversations.append("trip-porto", "assistant", "Booked")
    assert not again.created and "created" not in again.to_dict()
    assert [m.content for m in v.conversations.show("trip-porto").messages] == ["Book Porto for May", "Booked"]
    assert v.conversations.show("trip-porto").file.startswith("sessions/")
    with pytest.raises(InvalidValue, match="invalid session id 'a b': use letters, digits"):
        v.conversations.append("a b", "user", "hi")
    with pytest.raises(InvalidValue, match="invalid role"):  # refused before a session is started
        v.conversations.append("fresh", "robot", "hi")
    with pytest.raises(SessionNotFound):
        v.conversations.show("fresh")
    v.conversations.new(session_id="trip-lisbon")
    with pytest.raises(SessionAmbiguous, match="ambiguous"):  # a prefix two share: not a new session
        v.conversations.append("trip", "user", "hi")
    assert v.conversations.append("trip-l", "user", "prefix, not exact").created is False  # the library's prefix
