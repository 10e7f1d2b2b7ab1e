"""The topic file format: parsing entries, and edits that preserve every other byte."""
from __future__ import annotations

import re
import string
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import TopicParseError
from memkit.formats.markdown import decode_topic, is_list_line, split_lines
from memkit.formats.topic import (
    append_line,
    format_entry,
    parse_entry_text,
    parse_topic_text,
    read_topic,
    remove_lines,
    set_frontmatter,
)

SAMPLE = """\
---
title: Cooking
summary: rice recipes and oven timing
# a comment the person wrote
aliases: [kitchen]
created: 2026-02-10T09:15:00
updated: 2026-02-12T14:30:00
---
# Cooking

- Prefers bomba rice for paella (2026-02-12)
- [decision] Uses homemade chicken broth, never stock cubes #broth (2026-02-12)
* Allergic to tree nuts (2026-02-10)

I tried three ovens last winter and the
gas one browns the crust best.

## Baking
<!-- todo: sourdough
notes -->
- [Discovery] Rye starter doubles in 6 hours #sourdough #rye
  which is faster than wheat
    - nested: feed 1:5:5
"""


def parse(text: str):
    return parse_topic_text(text, "cooking", "topics/cooking.md")


def test_parse_entries_kinds_tags_dates():
    topic = parse(SAMPLE)
    assert topic.meta["title"] == "Cooking"
    assert topic.meta["aliases"] == ["kitchen"]
    got = [(e.line, e.end_line, e.kind, e.tags, e.date, e.is_list) for e in topic.entries]
    assert got == [
        (11, 11, None, (), "2026-02-12", True),
        (12, 12, "decision", ("broth",), "2026-02-12", True),
        (13, 13, None, (), "2026-02-10", True),
        (15, 16, None, (), None, False),
        (21, 22, "discovery", ("sourdough", "rye"), None, True),
        (23, 23, None, (), None, True),
    ]
    prose = topic.entries[3]
    assert prose.text == "I tried three ovens last winter and the gas one browns the crust best."
    assert topic.entries[4].text.endswith("which is faster than wheat")
    assert topic.entries[1].body == "Uses homemade chicken broth, never stock cubes #broth"


def test_ids_are_stable_short_hashes_of_normalised_text():
    a = parse("- Likes  Tea\n").entries[0]
    b = parse("* likes tea\n").entries[0]
    assert a.id == b.id and len(a.id) == 8
    assert a.id != parse("- likes coffee\n").entries[0].id


def test_headings_comments_rules_fences_are_structure():
    text = "# T\n\n---\n<!-- c -->\n```\ncode line\n```\n## H\n"
    topic = parse(text)
    assert [e.text for e in topic.entries] == ["code line"]


def test_no_frontmatter_and_empty_file():
    assert parse("").entries == []
    assert parse("- one\n").entries[0].text == "one"
    assert parse("---\n---\n").meta == {}


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("---\ntitle: [unclosed\n---\n- x\n", 3, "frontmatter is not valid YAML"),
        ("---\ntitle: a\nsummary: b: c\n---\n", 3, "frontmatter is not valid YAML"),
        ("---\ntitle: x\n- entry\n", 1, "never closed"),
        ("---\n- a\n- b\n---\n", 2, "must be a mapping"),
        ("---\ntitle: T\nupdated: 2024-13-45\n---\n- x\n", 3, "a value that cannot be read"),  # was a crash
    ],
)
def test_malformed_frontmatter_names_file_and_line(text, line, message):
    topic = parse(text)  # a problem to report, not an error: the body is still read
    (problem,) = topic.problems
    assert problem.kind == "frontmatter" and problem.line == line and problem.blocks_writes
    assert message in problem.message
    assert problem.message.startswith(f"topics/cooking.md line {line}:")
    assert topic.write_problem() is problem and topic.meta == {}


def test_non_utf8_names_line():
    with pytest.raises(TopicParseError, match=r"line 2: not valid UTF-8"):
        decode_topic(b"- ok\n- caf\xe9\n", "topics/x.md")


def test_bom_is_stripped_and_reported():
    text, bom = decode_topic("\ufeff- a\n".encode(), "x.md")
    assert bom and text == "- a\n"


def test_append_keeps_everything_else():
    new = append_line(SAMPLE, "- added")
    assert new == SAMPLE + "- added\n"
    crlf = SAMPLE.replace("\n", "\r\n")
    assert append_line(crlf, "- added") == crlf + "- added\r\n"
    assert append_line("- a", "- b") == "- a\n- b\n"  # the person's last line gets its newline, then ours
    assert append_line("", "- b") == "- b\n"


def test_set_frontmatter_edits_only_its_line():
    when = datetime(2026, 3, 1, 8, 0, 0)
    new = set_frontmatter(SAMPLE, {"updated": when})
    assert new == SAMPLE.replace("updated: 2026-02-12T14:30:00", "updated: 2026-03-01T08:00:00")
    added = set_frontmatter(SAMPLE, {"parent": "food"})
    assert added == SAMPLE.replace("updated: 2026-02-12T14:30:00\n", "updated: 2026-02-12T14:30:00\nparent: food\n")
    crlf = SAMPLE.replace("\n", "\r\n")
    assert set_frontmatter(crlf, {"updated": when}) == crlf.replace("2026-02-12T14:30:00", "2026-03-01T08:00:00")
    assert set_frontmatter("- no frontmatter\n", {"updated": when}) == "- no frontmatter\n"


def test_remove_lines():
    assert remove_lines("a\nb\nc\n", 2, 2) == ("a\nc\n", "b\n")
    assert remove_lines("a\nb\nc", 3, 3) == ("a\nb", "c")
    assert remove_lines("a\r\nb\r\nc", 3, 3) == ("a\r\nb", "c")
    assert remove_lines("a\n", 1, 1) == ("", "a\n")


def test_format_entry():
    assert format_entry("Likes  tea", "preference", ["drinks", "#tea"], "2026-01-02") == (
        "- [preference] Likes tea #drinks #tea (2026-01-02)"
    )
    assert format_entry("Likes tea #tea", None, ["tea"], None) == "- Likes tea #tea"


# ---- property-based round trips over odd files ---------------------------------------------

line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x00"), max_size=30
)
odd_line = st.one_of(
    line_text,
    st.sampled_from(["", "- item", "* star item", "# Heading", "<!-- c", "-->", "```", "  - nested",
                     "prose words", "---", "- [fact] x #t (2026-01-01)", "   ", "\t- tab"]),
)


@st.composite
def odd_files(draw):
    lines = draw(st.lists(odd_line, max_size=25))
    if draw(st.booleans()):
        keys = draw(st.lists(st.sampled_from(["title: T", "# comment", "zeta: 1", "updated: 2026-01-01T00:00:00",
                                              "alpha: [a, b]", "summary: s"]), max_size=5))
        lines = ["---", *keys, "---", *lines]
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    text = nl.join(lines)
    if lines and draw(st.booleans()):
        text += nl
    return text


@settings(max_examples=120, deadline=None)
@given(odd_files(), st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=20).filter(str.strip))
def test_append_then_parse_round_trip(text, words):
    try:
        before = parse(text)
    except TopicParseError:
        return
    line = format_entry(words)
    new = append_line(text, line)
    assert new.startswith(text)  # every byte the person wrote is still there, in place
    after = parse(new)
    assert after.entries[-1].text == " ".join(words.split())
    # the old entries are unchanged (an item could absorb nothing: the new line is a list item)
    assert [e.text for e in after.entries[: len(before.entries)]] == [e.text for e in before.entries]


@settings(max_examples=120, deadline=None)
@given(odd_files())
def test_remove_each_entry_changes_only_its_lines(text):
    try:
        topic = parse(text)
    except TopicParseError:
        return
    lines = split_lines(text)
    assert "".join(lines) == text
    for entry in topic.entries:
        new, removed = remove_lines(text, entry.line, entry.end_line)
        kept = lines[: entry.line - 1] + lines[entry.end_line:]
        assert removed.rstrip("\r\n") == "".join(lines[entry.line - 1: entry.end_line]).rstrip("\r\n")
        assert new.rstrip("\r\n") == "".join(kept).rstrip("\r\n")
        assert "".join(kept).startswith(new.rstrip("\r\n"))


@settings(max_examples=100, deadline=None)
@given(odd_files())
def test_set_frontmatter_touches_one_line(text):
    try:
        if parse(text).problems:
            return
    except TopicParseError:
        return
    when = datetime(2030, 1, 2, 3, 4, 5)
    new = set_frontmatter(text, {"updated": when})
    old_lines, new_lines = split_lines(text), split_lines(new)
    if new == text:
        return
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b]
    if len(new_lines) == len(old_lines):  # every line setting updated (a union merge can leave two), no other
        assert changed and all(new_lines[i].startswith("updated: 2030-01-02T03:04:05") for i in changed)
        assert all(old_lines[i].startswith("updated") for i in changed)
    else:  # the key was added just before the closing ---
        assert len(new_lines) == len(old_lines) + 1
        assert parse(new).meta["updated"] == when


def test_frontmatter_agrees_with_python_frontmatter_on_the_sample_vault():
    """memkit reads frontmatter itself (byte-preserving edits, a bounded YAML loader); on ordinary
    files it must read the same metadata as python-frontmatter, the format's reference reader."""
    import frontmatter

    files = sorted((Path(__file__).resolve().parents[2] / "vault" / "topics").glob("*.md"))
    assert len(files) >= 10
    for path in files:
        ours = read_topic(path, path.stem, f"topics/{path.name}")
        theirs = frontmatter.loads(path.read_text(encoding="utf-8-sig"))
        assert ours.meta == theirs.metadata, path.name
        assert theirs.content.strip() in ours.raw


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_lines_in_a_fenced_block_are_not_list_entries(fence: str) -> None:
    text = f"# T\n\n- real entry\n{fence}python\n- not an entry\n* nor this\n{fence}\n- another real one\n"
    topic = parse_topic_text(text, "t", "topics/t.md")
    listed = [e.text for e in topic.entries if e.is_list]
    assert listed == ["real entry", "another real one"]
    code = [e for e in topic.entries if not e.is_list]
    assert len(code) == 1 and "not an entry" in code[0].text  # the block's text stays searchable, as one


def test_a_fence_closes_only_with_the_same_character_and_length() -> None:
    text = "````\n- in code\n```\n- still code\n~~~\n````\n- outside\n"
    topic = parse_topic_text(text, "t", "topics/t.md")
    assert [e.text for e in topic.entries if e.is_list] == ["outside"]


def test_many_unclosed_fences_parse_in_linear_time() -> None:
    text = "````\n```\n" * 20000  # no fence of four ever closes; a naive scan is quadratic
    topic = parse_topic_text(text, "t", "topics/t.md")
    assert topic.entries is not None


def test_set_frontmatter_sets_every_copy_of_a_key_and_keeps_comments() -> None:
    from memkit.formats.topic import set_frontmatter

    text = ("---\ntitle: T\nupdated: 2026-01-01T00:00:00  # bumped by hand\n"
            "updated: 2026-01-02T00:00:00\n---\n- a\n")
    new = set_frontmatter(text, {"updated": datetime(2026, 3, 1, 8)})
    assert new == ("---\ntitle: T\nupdated: 2026-03-01T08:00:00  # bumped by hand\n"
                   "updated: 2026-03-01T08:00:00\n---\n- a\n")
    assert parse_topic_text(new, "t", "topics/t.md").meta["updated"] == datetime(2026, 3, 1, 8)


def test_a_heading_underline_is_not_a_merge_marker() -> None:
    import shutil as sh

    from memkit.git.sync import merge_topic

    if sh.which("git") is None:
        pytest.skip("git is not installed")
    merged, left = merge_topic(b"# T\n- a\n", b"# T\n- a\nNotes\n=======\n- o\n", b"# T\n- t\n")
    assert (merged, left) == (b"# T\n- t\nNotes\n=======\n- o\n", 0)



# the list pattern before 2026-11-28 (lazy: ~7 µs a line), and the thematic-break pattern
_FORMER_LIST = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])[ \t]+(\S.*?)\s*$")
_BREAK = re.compile(r"^\s{0,3}([-*_=])(\s*\1){2,}\s*$")


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(list("-*+1.)9 \t\r\x0b\x0c\x1c\x85\xa0\u2028\u3000ab#é(") + ["  ", "- ", "1. "]),
                max_size=30))
def test_list_items_read_as_with_the_former_pattern(parts):
    """A line (no \\n in it) is a list item, with the same text, as the former pattern read it."""
    line = "".join(parts).rstrip("\r\n")
    former = _FORMER_LIST.match(line)
    assert is_list_line(line + "\n") == (former is not None and _BREAK.match(line) is None)
    if is_list_line(line + "\n"):
        entries = parse_topic_text(line + "\n", "t", "topics/t.md").entries
        assert [e.text for e in entries] == [former.group(2).strip()]


_FORMER_TAG = re.compile(r"(?:^|(?<=\s))#([^\W\d_][\w/-]*)", re.UNICODE)  # the tag pattern before 2026-11-28


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(list("#a1_/-é日 \t\x85\xa0\u2028.,(x") + ["##", " #", "#tag", "a#b"]), max_size=30))
def test_tags_read_as_with_the_former_pattern(parts):
    """Every text's tags are the ones the former pattern found, in order, lower-cased, once each."""
    text = "".join(parts)
    former = tuple(dict.fromkeys(t.lower() for t in _FORMER_TAG.findall(text)))
    assert parse_entry_text(text)[1] == former
