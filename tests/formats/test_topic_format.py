"""memkit.formats.topic, directly: bytes in, the same bytes out; single-line edits that touch no
other byte; problems and errors that name the line."""
from __future__ import annotations

import os
from datetime import date, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import InvalidValue, TopicParseError
from memkit.formats.markdown import decode_topic, encode_topic, is_cr_only, split_lines
from memkit.formats.safeyaml import load_yaml
from memkit.formats.topic import (
    MAX_TOPIC_BYTES,
    Topic,
    append_line,
    as_datetime,
    check_text,
    format_entry,
    newline_of,
    parse_entry_text,
    parse_topic_text,
    read_topic,
    remove_lines,
    set_frontmatter,
    text_hash,
    unified_diff,
    yaml_scalar,
)

FAST = settings(max_examples=30, deadline=None, derandomize=True)
NEWLINES = ("\n", "\r\n", "\r")
# a line of a topic file: any text but line breaks, NUL and surrogates
line_chars = st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00")
file_lines = st.lists(st.one_of(
    st.text(line_chars, max_size=30),
    st.sampled_from(["---", "# Heading", "- [fact] x #t (2026-01-02)", "```", "<!-- c", "-->", "  - nested",
                     "title: T", "1. one", "* star", "", "<<<<<<< a", "=======", ">>>>>>> b", "~~~"]),
), max_size=14)
words = st.text("abcdefghij klmnop", min_size=1, max_size=30).map(lambda s: " ".join(s.split())).filter(bool)


def parse(text: str, name: str = "cooking") -> Topic:
    return parse_topic_text(text, name, f"topics/{name}.md")


def _bytes(lines: list[str], nl: str, final: bool, bom: bool) -> bytes:
    text = nl.join(lines) + (nl if final and lines else "")
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")


# ---- bytes in, the same bytes out ----------------------------------------------------------------

@FAST
@given(file_lines, st.sampled_from(NEWLINES), st.booleans(), st.booleans())
def test_decode_then_encode_gives_the_same_bytes(lines, nl, final, bom):
    data = _bytes(lines, nl, final, bom)
    text, had_bom = decode_topic(data, "topics/t.md")
    assert had_bom is bom
    if nl == "\r":
        assert "\r" not in text  # CR-only lines are read as LF
    assert encode_topic(text, had_bom, is_cr_only(data.decode("utf-8"))) == data
    topic = parse_topic_text(text, "t", "topics/t.md", bom=had_bom)
    topic.cr = is_cr_only(data.decode("utf-8"))
    assert topic.data() == data


def test_read_topic_keeps_bom_crlf_and_cr_only_bytes(tmp_path):
    for name, data in [("lf", b"---\ntitle: A\n---\n- a\n"), ("crlf", b"\xef\xbb\xbf---\r\ntitle: A\r\n---\r\n- a\r\n"),
                       ("cr", b"---\rtitle: A\r---\r- a\r- b"), ("empty", b""), ("bom", b"\xef\xbb\xbf")]:
        path = tmp_path / f"{name}.md"
        path.write_bytes(data)
        topic = read_topic(path, name, f"topics/{name}.md")
        assert topic.data() == data
        assert topic.cr is (name == "cr")
        assert topic.stamp is not None and topic.stamp[0] == len(data)
        if data.strip(b"\xef\xbb\xbf"):
            assert topic.meta == {"title": "A"} and [e.text for e in topic.entries][:1] == ["a"]


@FAST
@given(file_lines, st.sampled_from(NEWLINES), st.booleans(), st.booleans(), words)
def test_append_keeps_every_byte_before_and_the_new_line_is_the_last_entry(lines, nl, final, bom, text):
    data = _bytes(lines, nl, final, bom)
    decoded, had_bom = decode_topic(data, "topics/t.md")
    topic = parse_topic_text(decoded, "t", "topics/t.md", bom=had_bom)
    topic.cr = is_cr_only(data.decode("utf-8"))
    line = format_entry(text, "fact", ("tag",), "2026-02-12")
    new = topic.data(topic.raw + topic.append_suffix(line))
    assert new.startswith(data)
    after = parse_topic_text(decode_topic(new, "t")[0], "t", "topics/t.md")
    last = after.entries[-1]
    assert (last.text, last.kind, last.tags, last.date) == (line[2:], "fact", ("tag",), "2026-02-12")
    if nl == "\r\n" and (len(lines) > 1 or (final and lines)):  # a file's style is its first line's ending
        assert new.endswith(b"\r\n") and b"\n" not in new.replace(b"\r\n", b"")


def test_append_line_examples():
    assert append_line("", "- b") == "- b\n"
    assert append_line("- a", "- b") == "- a\n- b\n"  # the missing final newline first
    assert append_line("- a\r\n", "- b") == "- a\r\n- b\r\n"
    assert append_line("```\ncode\n", "- b") == "```\ncode\n```\n- b\n"  # never inside an open fence
    assert append_line("---\n```\n---\n", "- b") == "---\n```\n---\n- b\n"  # a fence in frontmatter is no fence


# ---- single-line edits -----------------------------------------------------------------------

@FAST
@given(st.lists(st.text(line_chars, max_size=12), min_size=1, max_size=8), st.sampled_from(("\n", "\r\n")),
       st.booleans(), st.data())
def test_remove_lines_takes_exactly_those_lines(lines, nl, final, data):
    text = nl.join(lines) + (nl if final else "")
    n = len(split_lines(text))
    if n == 0:
        return
    first = data.draw(st.integers(1, n))
    last = data.draw(st.integers(first, n))
    new, removed = remove_lines(text, first, last)
    parts = split_lines(text)
    assert removed == "".join(parts[first - 1:last])
    kept = "".join(parts[:first - 1] + parts[last:])
    assert new == kept or (not removed.endswith("\n") and new + nl == kept)
    assert "".join(split_lines(text)) == text


def test_removing_the_unterminated_last_line_of_a_mixed_newline_file():
    assert remove_lines("a\nb\r\nc", 3, 3) == ("a\nb", "c")


def test_set_frontmatter_on_crlf_with_bom_and_comment_touches_one_line():
    text = "\ufeff---\r\ntitle: x # keep\r\nother: 1\r\n---\r\n- a\r\n"
    got = set_frontmatter(text, {"title": "New: y", "updated": datetime(2026, 1, 2, 3, 4, 5)})
    assert got == "\ufeff---\r\ntitle: \"New: y\" # keep\r\nother: 1\r\nupdated: 2026-01-02T03:04:05\r\n---\r\n- a\r\n"
    topic = parse(got[1:])
    assert topic.meta["title"] == "New: y" and topic.meta["updated"] == datetime(2026, 1, 2, 3, 4, 5)


@pytest.mark.parametrize("text", ["- a\n", "", "---\ntitle: never closed\n- a\n"])
def test_set_frontmatter_leaves_a_file_without_closed_frontmatter_alone(text):
    assert set_frontmatter(text, {"title": "x"}) == text


LETTER_FIRST = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=30).filter(
    lambda s: s[:1].isalpha() and s == s.strip())


@FAST
@given(LETTER_FIRST)
def test_a_string_written_by_set_frontmatter_reads_back_as_itself(value):
    text = set_frontmatter("---\ntitle: old\n---\n- a\n", {"title": value})
    assert str(parse(text).meta["title"]) == value


@pytest.mark.parametrize("value", ["007", "0777", "1_000", "0x1F", "1.5e+3", "0b101"])
def test_a_title_of_digits_reads_back_as_written(value):
    assert str(load_yaml(f"title: {yaml_scalar(value)}")["title"]) == value


def test_yaml_scalar_examples():
    assert yaml_scalar(datetime(2026, 1, 2, 3, 4, 5, 6)) == "2026-01-02T03:04:05"
    assert yaml_scalar(True) == "true" and yaml_scalar(3) == "3"
    assert yaml_scalar("Cooking rice") == "Cooking rice"
    for value in ("yes", "No", "null", "~", "a: b", "ends:", "#x", "Zürich", "", "'q'", "- x"):
        assert load_yaml(f"k: {yaml_scalar(value)}")["k"] == value


# ---- entries -------------------------------------------------------------------------------------

@FAST
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60),
       st.one_of(st.none(), st.sampled_from(["fact", "Decision", "pending"])),
       st.lists(st.sampled_from(["broth", "Rye", "café", "x-1"]), max_size=3),
       st.dates(min_value=date(1900, 1, 1), max_value=date(2999, 12, 31)))
def test_format_entry_then_parse_reads_kind_tags_and_date(text, kind, tags, day):
    if not text.split():
        return
    line = format_entry(text, kind, tags, day.isoformat())
    assert "\n" not in line and "\r" not in line and line.startswith("- ")
    entries = parse(line + "\n").entries
    assert len(entries) == 1
    e = entries[0]
    assert e.text == line[2:] and e.is_list and e.line == e.end_line == 1
    assert e.date == day.isoformat() or text.rstrip().endswith(")")
    if kind:
        assert e.kind == kind.lower()
    assert {t.lower() for t in tags} <= set(e.tags)
    assert e.hash == text_hash(e.text) and e.id == e.hash[:8]


def test_format_entry_without_a_day_is_always_an_entry():
    assert len(parse(format_entry("--") + "\n").entries) == 1


def test_format_entry_defuses_comment_markers_and_refuses_control_characters():
    line = format_entry("a <!-- b --> c")
    assert "<!--" not in line and "-->" not in line
    topic = parse("<!-- left open\n" + line + "\n- after\n")
    assert [e.text for e in topic.entries][-1] == "after"
    for bad in ("a\x00b", "a\x01b", "a\x1bb", "a\udcffb", "\x7f"):
        with pytest.raises(InvalidValue, match="memkit writes plain UTF-8 text only"):
            format_entry(bad)
    assert check_text("tab\tand newline\n ok") == "tab\tand newline\n ok"


def test_parse_entry_text_and_unicode_tags():
    assert parse_entry_text("[Decision] Uses broth #Broth #café #東京 C# (2026-02-12)") == (
        "decision", ("broth", "café", "東京"), "2026-02-12")
    assert parse_entry_text("no kind #1 #_x (2026-02-12) later") == (None, (), None)


def test_very_long_lines_and_unicode_entries():
    long = "x" * 200_000
    topic = parse(f"- {long}\n- Zürich → 東京 ☕ #reise\n")
    assert [len(e.text) for e in topic.entries] == [200_000, len("Zürich → 東京 ☕ #reise")]
    assert topic.entries[1].tags == ("reise",)


def test_entries_and_their_lines_in_lf_and_crlf_alike():
    text = "---\ntitle: T\n---\n# T\n\n- a\n  continued\n\nA paragraph\nof two lines.\n```\n- code\n```\n- b\n"
    want = [("a continued", 6, 7, True), ("A paragraph of two lines.", 9, 10, False), ("- code", 12, 12, False),
            ("b", 14, 14, True)]
    for nl in ("\n", "\r\n"):
        topic = parse(text.replace("\n", nl))
        assert [(e.text, e.line, e.end_line, e.is_list) for e in topic.entries] == want
        assert newline_of(topic.raw) == nl


# ---- problems and errors that name the line --------------------------------------------------

@pytest.mark.parametrize("text, kind, line, says", [
    ("---\ntitle: x\n- a\n", "frontmatter", 1, "line 1: frontmatter opened with '---' is never closed"),
    ("---\ntitle: [x\n---\n- a\n", "frontmatter", 3, "line 3: frontmatter is not valid YAML"),
    ("---\r\ntitle: x\r\nbad: [\r\n---\r\n- a\r\n", "frontmatter", 4, "line 4: frontmatter is not valid YAML"),
    ("---\ntitle: x\nbad: :\n---\n- a\n", "frontmatter", 3, "line 3: frontmatter is not valid YAML"),
    ("---\n- a\n- b\n---\n- c\n", "frontmatter", 2, "line 2: frontmatter must be a mapping"),
    ("---\ntitle: !!python/name:os.system\n---\n- c\n", "frontmatter", 2, "line 2: frontmatter is not valid YAML"),
    ("---\ntitle: a\ntitle: b\n---\n- c\n", "duplicate-key", 3, "line 3: frontmatter key 'title' is written 2 times"),
    ("- a\n<<<<<<< HEAD\n- b\n=======\n- c\n>>>>>>> other\n", "conflict", 2, "line 2: unresolved merge conflict"),
])
def test_problems_name_the_file_and_line_and_entries_are_still_read(text, kind, line, says):
    topic = parse(text)
    (problem,) = topic.problems
    assert (problem.kind, problem.line) == (kind, line)
    assert problem.message.startswith(f"topics/cooking.md {says}")
    assert topic.entries  # memkit reads around it
    assert (topic.write_problem() is not None) is (kind != "duplicate-key")


@pytest.mark.parametrize("text, line, opened", [
    ("---\ntitle: Broken\nsummary: [unclosed\n---\n- a\n", 4, 3),  # noticed at the closing '---'
    ("---\ntitle: x\nsummary: {a: 1\nkept: 2\n---\n- a\n", 4, 3),
    ("---\ntitle: x\n<<<<<<< HEAD\nsummary: [a\n=======\nsummary: b\n>>>>>>> other\n---\n- a\n", 6, 4),
])
def test_an_unclosed_bracket_is_named_where_it_opened(text, line, opened):
    (problem,) = [p for p in parse(text).problems if p.kind == "frontmatter"]
    assert problem.line == line
    assert f"started on line {opened})" in problem.message, problem.message


def test_a_merge_conflict_reads_both_sides_and_duplicate_timestamps_keep_newest_updated():
    topic = parse("- a\n<<<<<<< HEAD\n- b\n=======\n- c\n>>>>>>> other\n- d\n")
    assert [e.text for e in topic.entries] == ["a", "b", "c", "d"]
    topic = parse("---\nupdated: 2026-01-01\nupdated: 2026-02-01\ncreated: 2025-05-01\ncreated: 2025-01-01\n---\n")
    assert topic.meta["updated"] == datetime(2026, 2, 1) and topic.meta["created"] == datetime(2025, 1, 1)


@pytest.mark.parametrize("data, line, says", [
    (b"- a\n- b\n- \xff\n", 3, "not valid UTF-8 (byte 0xff)"),
    (b"\xef\xbb\xbf- a\r\n\xc3(\r\n", 2, "not valid UTF-8 (byte 0xc3)"),
    (b"- a\n\n- b\x00c\n", 3, "contains NUL bytes"),
    (b"- a\r- b\r\x00", 3, "contains NUL bytes"),  # CR-only lines are counted too
])
def test_unreadable_bytes_name_the_file_and_line(data, line, says):
    with pytest.raises(TopicParseError) as exc:
        decode_topic(data, "topics/t.md")
    assert exc.value.line == line and exc.value.path == "topics/t.md"
    assert str(exc.value).startswith(f"topics/t.md line {line}: {says}")


def test_read_topic_refuses_special_missing_and_huge_files(tmp_path):
    with pytest.raises(TopicParseError, match="cannot read"):
        read_topic(tmp_path / "missing.md", "missing", "topics/missing.md")
    big = tmp_path / "big.md"
    with open(big, "wb") as f:
        f.truncate(MAX_TOPIC_BYTES + 1)
    with pytest.raises(TopicParseError, match="split it into smaller topics"):
        read_topic(big, "big", "topics/big.md")
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.md"
        os.mkfifo(fifo)
        with pytest.raises(TopicParseError, match="^topics/fifo.md: "):
            read_topic(fifo, "fifo", "topics/fifo.md")  # refused, never waited on


# ---- small pieces ------------------------------------------------------------------------------

def test_topic_title_summary_and_updated():
    topic = parse("---\nsummary: '  rice\n  and oven  '\nupdated: 2026-02-10T09:00:00\n---\n- x (2026-02-12)\n",
                  "home-lab")
    assert topic.title == "Home lab" and topic.summary == "rice and oven"
    assert topic.updated() == datetime(2026, 2, 12)
    assert parse("---\ncreated: 2026-03-01\n---\n- x (2026-02-12)\n").updated() == datetime(2026, 3, 1)
    assert topic.to_dict()["file"] == "topics/home-lab.md"


@pytest.mark.parametrize("value, want", [
    (datetime(2026, 1, 1, 10, 0, 0, 5), datetime(2026, 1, 1, 10)), (date(2026, 1, 1), datetime(2026, 1, 1)),
    ("2026-01-01T10:00:00Z", datetime(2026, 1, 1, 10)), (" 2026-01-01 ", datetime(2026, 1, 1)),
    ("junk", None), (None, None), (5, None),
])
def test_as_datetime(value, want):
    assert as_datetime(value) == want


def test_unified_diff_as_git_prints_it():
    assert unified_diff("a\nb", "a\nc\n", "topics/x.md") == (
        "--- a/topics/x.md\n+++ b/topics/x.md\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n")
    assert unified_diff(None, "a\n", "topics/x.md").startswith("--- /dev/null\n+++ b/topics/x.md\n")
    assert unified_diff("a\n", None, "topics/x.md").startswith("--- a/topics/x.md\n+++ /dev/null\n")
    assert unified_diff("same", "same", "p") == ""


def test_split_lines_keeps_crlf_with_its_line():
    assert split_lines("a\r\nb\nc") == ["a\r\n", "b\n", "c"]
    assert split_lines("") == []
    assert split_lines("\n") == ["\n"]


def test_a_topic_named_like_a_path_is_only_a_label_here():
    topic = parse_topic_text("- a\n", "../../etc/passwd", "topics/x.md", Path("topics/x.md"))
    assert topic.entries[0].topic == "../../etc/passwd" and topic.to_dict()["file"] == "topics/x.md"


@pytest.mark.parametrize("text", ["", "\n", "\n\n\n", "   \n\t\n", "---\n---\n", "---\n---\n# Title\n", "<!-- x -->\n"])
def test_empty_files_have_no_entries_and_no_problems(text):
    topic = parse(text)
    assert topic.entries == [] and topic.problems == [] and topic.meta == {}
    assert topic.raw == text and topic.data() == text.encode()
