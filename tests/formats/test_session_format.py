"""memkit.formats.session: session files (YAML header, ``### role · time`` blocks) written and read back."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import InvalidValue, MemkitError
from memkit.formats.session import (
    ROLES,
    SessionMessage,
    SessionSummary,
    check_role,
    check_session_id,
    format_time,
    is_session_filename,
    last_block,
    locate_row,
    message_rows,
    messages_sha,
    parse_session,
    parse_session_tail,
    parse_time,
    render_header,
    render_message,
    render_summary,
    restage,
    split_blocks,
)

FAST = settings(max_examples=30, deadline=None, derandomize=True)
FILE = "sessions/2026-11-24-3f2a9c1e.md"
T0 = datetime(2026, 11, 24, 10, 3, 12, tzinfo=timezone.utc)

MESSAGES = [
    SessionMessage("user", "I want to go to Lisbon in March.", "2026-11-24T10:03:12Z"),
    SessionMessage("assistant", "Booked: TAP flight on March 3rd, back on the 9th.", "2026-11-24T10:03:20Z", important=True),
    SessionMessage("tool", '{"lisbon": "18°C, sunny"}', "2026-11-24T10:03:25Z", name="weather"),
]


def header() -> str:
    return render_header("3f2a9c1e", "2026-11-24T10:03:12Z", title="Planning  the Lisbon trip",
                         system="You are Ana's travel assistant.\nBe brief.", user="ana", tags=["travel"],
                         metadata={"source": "voice-bot"})


def session_text(messages=MESSAGES) -> str:
    return header() + "".join(render_message(m) for m in messages)


def test_the_documented_file_reads_back():
    summary = SessionSummary("Ana is planning a March trip.", "2026-11-25T08:00:00Z", 2, messages_sha(MESSAGES[:2]), "summary")
    text = session_text() + render_summary(summary)
    assert text.startswith("---\nid: 3f2a9c1e\ncreated: 2026-11-24T10:03:12Z\ntitle: Planning the Lisbon trip\n")
    assert "\n---\n# Planning the Lisbon trip\n\n### user · 2026-11-24T10:03:12Z\n" in text
    assert "### summary · 2026-11-25T08:00:00Z · of=summary · covers=2 · sha=" in text
    s = parse_session(text, FILE, "3f2a9c1e")
    assert (s.id, s.file, s.title, s.created, s.user, s.tags) == (
        "3f2a9c1e", FILE, "Planning the Lisbon trip", "2026-11-24T10:03:12Z", "ana", ["travel"])
    assert s.system == "You are Ana's travel assistant.\nBe brief."
    assert s.metadata == {"source": "voice-bot"}
    assert [(m.role, m.content, m.time, m.important, m.name) for m in s.messages] == [
        (m.role, m.content, m.time, m.important, m.name) for m in MESSAGES]
    assert [m.line for m in s.messages] == [15, 18, 21]
    assert text.splitlines()[14] == "### user · 2026-11-24T10:03:12Z"
    assert s.summaries == [SessionSummary(summary.text, summary.time, 2, summary.sha, "summary", 24)]
    assert s.updated == "2026-11-24T10:03:25Z" and s.problems == []
    assert s.info().messages == 3


contents = st.text(st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=80)
tricky = st.sampled_from(["### user · 2026-11-24T10:03:12Z", "\\### assistant · 2026-11-24T10:03:12Z · important",
                          "### Bob · 2026-11-24T10:03:12Z", "### summary · x", "---", "# title", "", "  indented",
                          "### user ·2026", "\\\\### tool · 2026-11-24T10:03:12Z"])
bodies = st.lists(st.one_of(contents, tricky), max_size=4).map("\n".join)


@FAST
@given(st.lists(st.tuples(st.sampled_from(ROLES), bodies, st.booleans(),
                          st.one_of(st.none(), st.sampled_from(["weather", "Ana", "x_1"]))), max_size=5),
       st.sampled_from(["\n", "\r\n"]))
def test_messages_round_trip_whatever_their_content(rows, nl):
    messages = [SessionMessage(role, content, format_time(T0 + timedelta(seconds=i)), important, name)
                for i, (role, content, important, name) in enumerate(rows)]
    text = session_text(messages)
    if nl == "\r\n":
        text = text.replace("\n", "\r\n")
    s = parse_session(text, FILE, "3f2a9c1e")
    want = [(m.role, m.content.strip("\r\n").replace("\r\n", "\n"), m.time, m.important, m.name) for m in messages]
    assert [(m.role, m.content, m.time, m.important, m.name) for m in s.messages] == want
    lines = text.split("\n")
    for m in s.messages:
        assert lines[m.line - 1].startswith(f"### {m.role} · {m.time}")
    assert s.problems == []
    assert [c for _, c in message_rows(text)] == [w[1] for w in want if w[1].strip()]


header_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)


@FAST
@given(st.one_of(st.none(), header_text.filter(lambda s: s.strip())),
       st.one_of(st.none(), st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\r"),
                                    max_size=80).filter(lambda s: s.strip())),
       st.one_of(st.none(), header_text.filter(lambda s: s.strip())),
       st.lists(st.text("abcxyz-", min_size=1, max_size=10), max_size=3),
       st.dictionaries(st.text("abcdef_", min_size=1, max_size=8), header_text, max_size=3))
def test_the_header_round_trips(title, system, user, tags, metadata):
    text = render_header("abc.1_x-2", "2026-11-24T10:03:12Z", title=title, system=system, user=user, tags=tags,
                         metadata=metadata)
    s = parse_session(text, FILE, "abc.1_x-2")
    assert s.title == (" ".join(title.split()) or None if title else None)
    assert s.system == system and s.user == user and s.tags == tags
    assert s.metadata == metadata
    assert s.created == "2026-11-24T10:03:12Z" and s.messages == []
    assert split_blocks(text, FILE)[2] == []


def test_headings_that_cannot_be_read_whole_are_kept_with_a_problem_naming_the_line():
    text = ("---\nid: x\n---\n# t\n\n### Bob · 2026-11-24T10:03:12Z\nhi\n\n### user · yesterday\nho\n\n"
            "### summary · 2026-11-24T10:03:12Z · of=summary\nnone\n")
    s = parse_session(text, FILE, "x")
    assert [(m.role, m.name, m.content, m.time, m.line) for m in s.messages] == [
        ("user", "Bob", "hi", "2026-11-24T10:03:12Z", 6), ("user", None, "ho", "2026-11-24T10:03:12Z", 9)]
    assert s.problems == [
        "line 6: unknown role 'Bob': read as a user message named Bob",
        "line 9: 'yesterday' is not a time (2026-11-24T10:03:12Z): read with the time before it",
        "line 12: a summary without covers=N; ignored (made again when needed)",
    ]


@pytest.mark.parametrize("text, says", [
    ("---\nid: x\n", "line 1: the header (---) is never closed"),
    ("---\nid: x\nbad: :\ntitle: y\n---\n", "line 3: the header is not valid YAML"),
    ("---\r\nid: x\r\nbad: [\r\n---\r\n", "line 4: the header is not valid YAML"),
    ("---\nid: x\ntitle: [a\n---\n", "line 4: the header is not valid YAML: did not find expected ',' or ']' "
                                       "(while parsing a flow sequence started on line 3)"),
    ("---\n- a\n---\n", "line 2: the header must be 'key: value' lines"),
    ("---\nid: !!python/name:os.system\n---\n", "line 2: the header is not valid YAML"),
])
def test_a_header_that_cannot_be_read_names_the_file_and_line(text, says):
    with pytest.raises(MemkitError) as exc:
        parse_session(text, FILE, "x")
    assert str(exc.value).startswith(f"{FILE} {says}")
    assert last_block(text) is None
    assert message_rows(text + "\n### user · 2026-11-24T10:03:12Z\nstill found\n")[-1][1] == "still found"


def test_no_header_bom_empty_and_messages_out_of_order():
    text = ("\ufeff# Loose\n\n### user · 2026-11-24T10:05:00Z\nsecond\n\n### assistant · 2026-11-24T10:04:00+00:00\nfirst\n")
    s = parse_session(text, FILE, "x")
    assert [m.content for m in s.messages] == ["first", "second"]  # in time order
    assert s.created == "2026-11-24T10:04:00+00:00" and s.title is None and s.display_title == "second"
    empty = parse_session("", FILE, "x")
    assert (empty.messages, empty.created, empty.display_title) == ([], "", "x")


def test_unknown_header_keys_are_metadata_and_stage_keys_are_read():
    text = ("---\nid: x\ncreated: 2026-11-24T10:03:12Z\nmood: calm\nmetadata: {source: bot}\nstage: summary\n"
            "stage_at: 2026-12-01T00:00:00Z\nstage_ratio: 0.25\nraw: sessions/archive/raw/x.md\n"
            "updated: 2026-11-25T00:00:00Z\n---\n")
    s = parse_session(text, FILE, "x")
    assert s.metadata == {"source": "bot", "mood": "calm"}
    assert (s.stage, s.stage_at, s.stage_ratio, s.raw, s.updated) == (
        "summary", "2026-12-01T00:00:00Z", 0.25, "sessions/archive/raw/x.md", "2026-11-25T00:00:00Z")


def test_split_blocks_last_block_tail_and_locate_row():
    text = session_text()
    head, preamble, blocks = split_blocks(text, FILE)
    assert head + preamble + "\n".join(blocks) == text
    assert blocks[0] == "### user · 2026-11-24T10:03:12Z\nI want to go to Lisbon in March.\n"
    assert text[last_block(text):].startswith("### tool · 2026-11-24T10:03:25Z · name=weather\n")
    assert last_block("\ufeff" + text) == last_block(text) + 1
    assert last_block(header()) is None
    tail, earlier = parse_session_tail(text, FILE, "3f2a9c1e", len(blocks[-1]) + 1)
    assert earlier == 2 and [m.content for m in tail.messages] == [MESSAGES[2].content]
    assert tail.messages[0].line == parse_session(text, FILE, "3f2a9c1e").messages[2].line
    whole, none_before = parse_session_tail(text, FILE, "3f2a9c1e", len(text))
    assert none_before == 0 and len(whole.messages) == 3
    s = parse_session(text, FILE, "3f2a9c1e")
    assert locate_row(s, 18) == s.messages[1] and locate_row(s, 17) is None


def test_restage_keeps_the_header_lines_and_title_and_leaves_one_block():
    text = session_text().replace("created: 2026-11-24T10:03:12Z\n", "created: 2026-11-24T10:03:12Z\nstage: old\n")
    block = SessionSummary("Lisbon in March, TAP.", "2026-12-01T00:00:00Z", 3, "", "stage")
    fields = {"stage": "summary", "stage_at": "2026-12-01T00:00:00Z", "stage_ratio": "0.2",
              "raw": "sessions/archive/raw/x.md", "updated": "2026-11-24T10:03:25Z"}
    got = restage(text, FILE, fields, block)
    head, preamble, blocks = split_blocks(got, FILE)
    assert "stage: old" not in head and "stage: summary\n" in head
    assert "system: |-\n  You are Ana's travel assistant.\n  Be brief.\n" in head
    assert preamble == "# Planning the Lisbon trip\n\n"
    s = parse_session(got, FILE, "3f2a9c1e")
    assert s.messages == [] and s.stage == "summary" and s.stage_block.text == block.text
    assert s.info().messages == 3
    assert restage(got, FILE, fields, block) == got  # staging again changes nothing
    bare = restage("### user · 2026-11-24T10:03:12Z\nhi\n", FILE, fields, block)
    assert bare.startswith("---\nid: 3f2a9c1e\n") and parse_session(bare, FILE, "3f2a9c1e").stage == "summary"


@pytest.mark.parametrize("value", ["3f2a9c1e", "claude-0b1c.2_x", "a" * 80, "  padded  "])
def test_session_ids_that_are_allowed(value):
    assert check_session_id(value) == value.strip()


@pytest.mark.parametrize("value", ["", "../../etc/passwd", "a/b", "a\\b", ".hidden", "a..b", "-x", "a" * 81,
                                   "x.md", "x y", "ü", "a\x00"])
def test_session_ids_that_are_refused(value):
    with pytest.raises(InvalidValue, match="invalid session id"):
        check_session_id(value)


def test_roles_and_file_names():
    assert check_role(" Assistant ") == "assistant"
    with pytest.raises(InvalidValue, match="use one of user, assistant, system, tool"):
        check_role("summary")
    assert is_session_filename("2026-11-24-3f2a9c1e.md")
    assert not is_session_filename(".2026-11-24-3f2a9c1e.md.tmp")
    assert not is_session_filename("2026-11-24.md") and not is_session_filename("notes.md")


@FAST
@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.one_of(
    st.none(), st.just(timezone.utc), st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-720, 720)))))
def test_format_then_parse_time_is_the_same_instant_to_the_second(when):
    text = format_time(when)
    assert len(text) == 20 and text.endswith("Z")
    aware = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    assert parse_time(text) == aware.replace(microsecond=0)
    assert format_time(parse_time(text)) == text


def test_parse_time_refuses_what_is_not_a_time():
    with pytest.raises(ValueError):
        parse_time("yesterday")


def test_messages_sha_sees_role_time_and_content():
    base = messages_sha(MESSAGES)
    assert base == messages_sha(list(MESSAGES)) and len(base) == 12
    for changed in (SessionMessage("user", MESSAGES[0].content, "2026-11-24T10:03:13Z"),
                    SessionMessage("system", MESSAGES[0].content, MESSAGES[0].time),
                    SessionMessage("user", MESSAGES[0].content + ".", MESSAGES[0].time)):
        assert messages_sha([changed, *MESSAGES[1:]]) != base
    assert messages_sha([SessionMessage("user", "\ud800", "t")])  # a lone surrogate does not crash it
