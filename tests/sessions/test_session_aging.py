"""Conversations that age (issue 20.1): `memkit upkeep` condenses an idle session into a summary
(day 3), then a core memory (day 7), keeps the raw conversation in sessions/archive/raw/, prunes
old sessions, and loses no message appended meanwhile. The clock is injected, the LLM is the
loopback fake."""
from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner
from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder

from memkit import Vault
from memkit.frontends.cli.group import main

T0 = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc)
SUMMARY = {"summary": "Maya plans a week in Lisbon in March; the flight is booked.",
           "key_points": ["TAP flight TP 571 on March 3rd, back on the 10th", "Wants a quiet hotel in Alfama"],
           "emotional_highlights": ["Excited: first trip since the move"]}
CORE = {"core": "Maya booked a March week in Lisbon (TAP TP 571 on March 3rd, back on the 10th) and wanted a quiet hotel.",
        "clearly": ["the flight on March 3rd"], "vaguely": ["a hotel in Alfama"], "barely": ["why March"]}
CHAT = [("user", "I want to spend a week in Lisbon in March, it would be my first trip since the move."),
        ("assistant", "Lovely! Shall I look at flights from Berlin for the first week of March?"),
        ("user", "Yes please, mornings only, and I'd like to be back on the 10th."),
        ("assistant", "Booked: TAP flight TP 571 on March 3rd at 09:05, back on March 10th."),
        ("user", "Great. Remind me to look for a quiet hotel in Alfama, somewhere without street noise.")]


def answer(request: dict) -> str:
    system = str(request["messages"][0]["content"])
    return json.dumps(CORE if "core memory" in system else SUMMARY)


def make(tmp_path, fake: FakeLLM | None, yaml: str = "") -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    llm = f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n" if fake is not None else ""
    (root / "memkit.yaml").write_text(yaml + llm)
    return Vault(root, embedder=FakeEmbedder())


def chat(v: Vault, sid: str = "lisbon", start: datetime = T0) -> None:
    v.conversations.new(session_id=sid, title="Lisbon trip", now=start)
    for i, (role, text) in enumerate(CHAT):
        v.conversations.append(sid, role, text, now=start + timedelta(minutes=i))


def job(v: Vault, at: datetime, name: str = "session-aging"):
    return next(j for j in v.upkeep.run(now=at).jobs if j.name == name)


def test_a_session_becomes_a_summary_on_day_3_then_a_core_memory_on_day_7_and_the_raw_is_kept(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        path = v.root / "sessions" / "2026-11-24-lisbon.md"
        original = path.read_bytes()
        assert job(v, T0 + timedelta(days=2)).did == "no conversation is due"
        assert not fake.requests and path.read_bytes() == original

        day3 = job(v, T0 + timedelta(days=3, hours=1))
        text = path.read_text()
        assert day3.changed and day3.did.startswith("1 compressed: lisbon -> summary (")
        assert "stage: summary\nstage_at: 2026-11-27T11:00:00Z\n" in text
        assert "raw: sessions/archive/raw/2026-11-24-lisbon.md\nupdated: 2026-11-24T10:04:00Z\n" in text
        assert "Key points:\n- TAP flight TP 571 on March 3rd, back on the 10th" in text
        assert "Emotional highlights:\n- Excited: first trip since the move" in text
        assert "### user" not in text and "title: Lisbon trip" in text and "# Lisbon trip" in text
        raw = v.root / "sessions" / "archive" / "raw" / "2026-11-24-lisbon.md"
        assert raw.read_bytes() == original  # the raw conversation, byte for byte
        s = v.conversations.show("lisbon")
        assert s.stage == "summary" and s.updated == "2026-11-24T10:04:00Z" and s.messages == []
        raw_chars = sum(len(t) for _, t in CHAT)
        assert s.stage_ratio == round(len(s.stage_block.text) / raw_chars, 2) and 0.3 <= s.stage_ratio <= 0.6
        assert "30 to 50 percent" in fake.requests[0]["messages"][0]["content"]
        assert "TP 571 on March 3rd at 09:05" in last_user_message(fake.requests[0])
        assert job(v, T0 + timedelta(days=4)).did == "no conversation is due"  # at its stage: nothing

        # a person edits the summary: the core is made from what they left
        path.write_text(text.replace("Wants a quiet hotel in Alfama", "Wants a quiet hotel in Graça"))
        asked = len(fake.requests)
        day7 = job(v, T0 + timedelta(days=8))
        assert day7.did.startswith("1 compressed: lisbon -> core (")
        assert "a quiet hotel in Graça" in last_user_message(fake.requests[asked])
        s = v.conversations.show("lisbon")
        assert s.stage == "core" and s.stage_at == "2026-12-02T10:00:00Z"
        core = s.stage_block.text
        assert 100 <= len(core.split("\n")[0]) <= 200
        assert "Remembered clearly: the flight on March 3rd\nRemembered vaguely: a hotel in Alfama" in core
        assert raw.read_bytes() == original  # nothing lost, nothing added
        assert [m.content for m in v.conversations.show_raw("lisbon").messages] == [t for _, t in CHAT]
        # the listing says the stage; a continued conversation starts with what is remembered
        assert v.conversations.list()[0].stage == "core"
        window = v.conversations.window("lisbon", 500)
        assert window.messages[0].content.startswith("Earlier in this conversation") and "TAP TP 571" in \
            window.messages[0].content


def test_no_llm_skips_compression_and_changes_nothing(tmp_path):
    v = make(tmp_path, None)
    chat(v)
    chat(v, "short-one")
    v.conversations.append("short-one", "user", "x" * 10, now=T0)
    tiny = v.conversations.new(session_id="tiny", now=T0)
    v.conversations.append(tiny.id, "user", "hi", now=T0)
    before = {p.name: p.read_bytes() for p in (v.root / "sessions").iterdir()}
    lines = v.upkeep.run(now=T0 + timedelta(days=8)).lines()
    assert "session-aging: 2 due (2 to core) but no LLM is configured: skipped; 1 too short to condense" in lines
    assert {p.name: p.read_bytes() for p in (v.root / "sessions").iterdir()} == before
    assert not (v.root / "sessions" / "archive").exists()


def test_a_session_continued_after_it_aged_is_compressed_again_and_its_raw_file_grows(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        job(v, T0 + timedelta(days=3, hours=1))
        later = T0 + timedelta(days=5)
        v.conversations.append("lisbon", "user", "Found one: Casa do Largo, a guest house in Graça.", now=later)
        s = v.conversations.show("lisbon")
        assert s.stage == "summary" and len(s.messages) == 1 and s.updated == "2026-11-29T10:00:00Z"
        assert job(v, later + timedelta(days=1)).did == "no conversation is due"
        again = job(v, later + timedelta(days=3, hours=1))
        assert again.did.startswith("1 compressed: lisbon -> summary")
        prompt = last_user_message(fake.requests[-1])
        assert "What was remembered of it so far:\nMaya plans a week" in prompt and "Casa do Largo" in prompt
        assert "TP 571 on March 3rd at 09:05" not in prompt  # only what it has not condensed
    raw = v.root / "sessions" / "archive" / "raw" / "2026-11-24-lisbon.md"
    kept = [m.content for m in v.conversations.show_raw("lisbon").messages]
    assert kept == [t for _, t in CHAT] + ["Found one: Casa do Largo, a guest house in Graça."]
    assert raw.read_text().count("Casa do Largo") == 1
    assert v.conversations.show("lisbon").messages == []


def test_a_message_saved_while_the_llm_compresses_is_kept(tmp_path):
    """The LLM answers slowly; meanwhile other writers save messages. Each lands in the compressed
    file (after the stage text) or in the raw one: none is lost."""
    saved: list[str] = []
    stop = threading.Event()

    def writer(root):
        other = Vault(root, embedder=FakeEmbedder())
        i = 0
        while not stop.is_set():
            text = f"late message {i}"
            other.conversations.append("lisbon", "user", text, now=T0 + timedelta(minutes=30, seconds=i))
            saved.append(text)
            i += 1

    def slow(request: dict) -> str:
        if len(saved) < 3:
            threading.Event().wait(0.3)
        return answer(request)

    with FakeLLM(slow) as fake:
        v = make(tmp_path, fake)
        chat(v)
        t = threading.Thread(target=writer, args=(v.root,))
        t.start()
        try:
            while len(saved) < 2:
                threading.Event().wait(0.01)
            result = job(v, T0 + timedelta(days=3, hours=1))
        finally:
            stop.set()
            t.join(timeout=10)
    assert result.changed, result.did
    live = [m.content for m in v.conversations.show("lisbon").messages]
    raw = (v.root / "sessions" / "archive" / "raw" / "2026-11-24-lisbon.md").read_text()
    assert live and all(raw.count(f"\n{t}\n") + live.count(t) == 1 for t in saved)  # each exactly once
    assert [m.content for m in v.conversations.show_raw("lisbon").messages] == [t for _, t in CHAT] + saved
    assert v.conversations.show("lisbon").stage == "summary"


def test_a_session_a_person_edits_during_compression_is_left_alone(tmp_path):
    def edit_then_answer(request: dict) -> str:
        p = tmp_path / "v" / "sessions" / "2026-11-24-lisbon.md"
        p.write_text(p.read_text().replace("mornings only", "mornings only, window seat"))
        return answer(request)

    with FakeLLM(edit_then_answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        result = job(v, T0 + timedelta(days=3, hours=1))
    assert not result.changed and "1 failed (sessions/2026-11-24-lisbon.md:" in result.did
    text = (v.root / "sessions" / "2026-11-24-lisbon.md").read_text()
    assert "window seat" in text and "stage:" not in text


def test_upkeep_prunes_sessions_idle_past_expire_conversation(tmp_path):
    v = make(tmp_path, None, "session_summary_days: 0\nsession_core_days: 0\n")
    chat(v)
    chat(v, "recent", T0 + timedelta(days=25))
    pruned = job(v, T0 + timedelta(days=31), "session-prune")
    assert pruned.did == "1 session idle over 30 days moved to sessions/archive/"
    assert (v.root / "sessions" / "archive" / "2026-11-24-lisbon.md").exists()
    assert [i.id for i in v.conversations.list()] == ["recent"]
    assert job(v, T0 + timedelta(days=31)).did == "no conversation is due"  # aging off (0 days)


def test_the_cli_upkeep_says_what_each_job_did(tmp_path):
    v = make(tmp_path, None)
    chat(v)
    result = CliRunner().invoke(main, ["--vault", str(v.root), "upkeep", "--at", "2026-11-28 12:00"],
                                catch_exceptions=False)
    assert result.exit_code == 0
    assert result.output.splitlines()[1:4] == [
        "session-digest: off (digest_every_messages: 0)",
        "session-aging: 1 due (1 to summary) but no LLM is configured: skipped",
        "session-prune: no session idle over 30 days"]


@pytest.mark.parametrize("yaml, message", [
    ("session_summary_days: -1\n", "session_summary_days must be a whole number, 0 or more, not -1"),
    ("digest_every_messages: x\n", "digest_every_messages must be a whole number, 0 or more, not 'x'"),
])
def test_bad_aging_settings_are_named(tmp_path, yaml, message):
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text(yaml)
    result = CliRunner().invoke(main, ["--vault", str(root), "upkeep"])
    assert result.exit_code != 0 and message in result.output


def test_session_show_raw_and_list_say_where_the_conversation_is(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        job(v, T0 + timedelta(days=3, hours=1))
    v.conversations.append("lisbon", "user", "Back from Lisbon!", now=T0 + timedelta(days=12))
    run = CliRunner()
    listed = run.invoke(main, ["--vault", str(v.root), "session", "list"], catch_exceptions=False)
    assert listed.output.rstrip().endswith("Lisbon trip  (summary)")
    raw = run.invoke(main, ["--vault", str(v.root), "session", "show", "lisbon", "--raw"], catch_exceptions=False)
    assert raw.stdout == (v.root / "sessions" / "archive" / "raw" / "2026-11-24-lisbon.md").read_text()
    assert raw.stderr == "(1 message saved since: `memkit session show lisbon`)\n"
    whole = run.invoke(main, ["--vault", str(v.root), "session", "show", "lisbon", "--raw", "--json"])
    assert [m["content"] for m in json.loads(whole.stdout)["messages"]][-2:] == [CHAT[-1][1], "Back from Lisbon!"]
    shown = run.invoke(main, ["--vault", str(v.root), "session", "show", "lisbon"])
    assert "stage: summary" in shown.stdout and "Key points:" in shown.stdout


def test_restage_keeps_every_header_line_a_person_wrote_and_replaces_only_the_stage_keys():
    from memkit.formats.session import STAGE, SessionSummary, parse_session, restage

    text = ("---\nid: lisbon\ncreated: 2026-11-24T10:00:00Z\nsystem: |-\n  You are Ana's assistant.\n"
            "  stage: not a key, a line of the prompt\nmood: happy  # a person's own key\n"
            "stage: summary\nstage_at: 2026-11-27T10:00:00Z\n---\n# Lisbon\n\nA note by hand.\n\n"
            "### user · 2026-11-24T10:00:00Z\nhi\n")
    block = SessionSummary("The core.", "2026-12-01T10:00:00Z", 1, "abc", STAGE)
    out = restage(text, "sessions/2026-11-24-lisbon.md", {"stage": "core", "stage_at": "2026-12-01T10:00:00Z"},
                  block)
    assert out == ("---\nid: lisbon\ncreated: 2026-11-24T10:00:00Z\nsystem: |-\n  You are Ana's assistant.\n"
                   "  stage: not a key, a line of the prompt\nmood: happy  # a person's own key\n"
                   "stage: core\nstage_at: 2026-12-01T10:00:00Z\n---\n# Lisbon\n\nA note by hand.\n\n"
                   "### summary · 2026-12-01T10:00:00Z · of=stage · covers=1 · sha=abc\nThe core.\n")
    s = parse_session(out, "sessions/2026-11-24-lisbon.md", "lisbon")
    assert s.stage == "core" and s.messages == [] and s.stage_block.text == "The core."
    assert s.metadata == {"mood": "happy"} and s.system.endswith("a line of the prompt")


def test_a_session_first_seen_after_a_week_goes_straight_to_its_core(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        result = job(v, T0 + timedelta(days=10))
        assert result.did.startswith("1 compressed: lisbon -> core (")
        assert len(fake.requests) == 1 and "keep only its core" in fake.requests[0]["messages"][0]["content"]
        assert "TP 571 on March 3rd at 09:05" in last_user_message(fake.requests[0])
    assert v.conversations.show("lisbon").stage == "core"
    assert [m.content for m in v.conversations.show_raw("lisbon").messages] == [t for _, t in CHAT]


def test_an_aged_conversation_is_still_found_by_its_summary(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        before = v.conversations.search("TAP flight TP 571", k=1)[0]
        assert (before.session, before.role) == ("lisbon", "assistant")  # the message itself
        job(v, T0 + timedelta(days=3, hours=1))
    hits = v.conversations.search("TAP flight TP 571", k=3)
    assert hits[0].session == "lisbon" and hits[0].role == "summary"
    assert hits[0].text.startswith("Maya plans a week in Lisbon in March")


def test_an_imported_old_history_is_idle_from_its_import_not_from_its_messages_dates(tmp_path):
    """Issue 41 item 9: the first upkeep after importing a 2024 history moved it all to
    sessions/archive/ as idle over 30 days (and would have condensed it): idleness counts from
    when memkit imported it (the header's `imported:`), never from a file's mtime."""
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        old = datetime(2024, 5, 1, 9, 0, tzinfo=timezone.utc)
        data = "".join(json.dumps({"role": role, "content": text, "time": (old + timedelta(minutes=i)).isoformat()}) + "\n"
                       for i, (role, text) in enumerate(CHAT)).encode()
        (imported,) = v.conversations.import_(data, session_id="old-trip", now=T0)
        path = v.root / imported.session.file
        assert "imported: 2026-11-24T10:00:00Z\n" in path.read_text()
        assert imported.session.idle_since == "2026-11-24T10:00:00Z"
        assert job(v, T0 + timedelta(days=1)).did == "no conversation is due"
        assert job(v, T0 + timedelta(days=1), "session-prune").did == "no session idle over 30 days"
        assert path.exists() and not (v.root / "sessions" / "archive" / path.name).exists()
        assert v.conversations.prune(now=T0 + timedelta(days=31)).sessions[0].id == "old-trip"


def test_a_temp_file_a_killed_compression_left_in_raw_is_swept(tmp_path):
    """Issue 41 item 17: a writer killed between its temp file and the rename left
    `.NAME.md.XXXXXXXX.tmp` in sessions/archive/raw/ for good; the next aging removes it (an
    hour old: a live writer's is seconds old) and leaves everything else alone."""
    import os
    import time

    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        chat(v)
        raw = v.root / "sessions" / "archive" / "raw"
        raw.mkdir(parents=True)
        stale, fresh, other = (raw / ".2026-11-24-lisbon.md.3fa9c1d2.tmp", v.root / "sessions" / ".x.md.ab12cd34.tmp",
                               raw / "notes.tmp")
        for path in (stale, fresh, other):
            path.write_text("half a write")
        os.utime(stale, (time.time() - 7200, time.time() - 7200))
        os.utime(other, (time.time() - 7200, time.time() - 7200))
        job(v, T0 + timedelta(days=4))
        assert not stale.exists() and fresh.exists() and other.exists()
        assert sorted(p.name for p in raw.iterdir()) == ["2026-11-24-lisbon.md", "notes.tmp"]
