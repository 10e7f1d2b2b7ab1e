"""memkit.formats.names: topic names can never leave topics/, session file names never leave their folder."""
from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import TopicNameError
from memkit.formats.names import (
    MAX_NAME,
    check_topic_name,
    in_topic,
    is_topic_filename,
    session_file_name,
    slugify,
    topic_relpath,
    topic_stem,
)

SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
FAST = settings(max_examples=30, deadline=None, derandomize=True)


@pytest.mark.parametrize("name", [
    "../../etc/passwd", "..", "../x", "a/../b", "/etc/passwd", "a//b", "a/.obsidian/b", "a/", "a\\b", "..\\..\\windows",
    ".hidden", ".md.md", "x\x00y", "C:\\x",
])
def test_names_that_could_leave_topics_are_refused(name):
    with pytest.raises(TopicNameError) as exc:
        check_topic_name(name)
    assert "'..'" in str(exc.value) or "'/'" in str(exc.value) or "letters" in str(exc.value)


@pytest.mark.parametrize("name, canonical", [
    ("work/harbor", "work/harbor"), ("Work/Harbor Project", "work/harbor-project"), ("a/b/c.md", "a/b/c"),
])
def test_a_topic_in_a_folder_is_named_by_its_path(name, canonical):
    assert check_topic_name(name) == canonical
    assert in_topic(canonical, "work") == canonical.startswith("work/")
    assert in_topic("Work/Harbor Project", "work") and in_topic("work/harbor", "work/harbor")
    assert not in_topic("workshop/x", "work")


@pytest.mark.parametrize("name", ["", "   ", ".md", " .md "])
def test_empty_names_are_refused(name):
    with pytest.raises(TopicNameError, match="empty"):
        check_topic_name(name)


@pytest.mark.parametrize("name", ["CON", "con", "Nul", "aux.md", "com1", "LPT9", " prn "])
def test_reserved_device_names_are_refused(name):
    with pytest.raises(TopicNameError, match="reserved"):
        check_topic_name(name)


def test_the_length_limit_counts_characters_and_says_the_limit():
    assert check_topic_name("a" * MAX_NAME) == "a" * MAX_NAME
    with pytest.raises(TopicNameError, match=rf"65 characters long; the limit is {MAX_NAME}"):
        check_topic_name("a" * (MAX_NAME + 1))
    with pytest.raises(TopicNameError, match="characters long"):
        check_topic_name("ü" * 10_000)


@pytest.mark.parametrize("name, canonical", [
    ("Home Lab", "home-lab"), ("  Cooking.md ", "cooking"), ("ñandú", "nandu"), ("-a-", "a"),
    ("a--b", "a-b"), ("Café Crème", "cafe-creme"), ("cooking-rice", "cooking-rice"),
])
def test_case_spaces_and_accents_are_forgiven(name, canonical):
    assert check_topic_name(name) == canonical


@pytest.mark.parametrize("name", ["日本語", "🙂", "!!!", "---"])
def test_names_without_a_latin_letter_or_digit_are_refused(name):
    with pytest.raises(TopicNameError, match="letters, digits"):
        check_topic_name(name)


@FAST
@given(st.text(max_size=80))
def test_a_checked_name_is_a_slug_that_stays_in_topics(name):
    try:
        got = check_topic_name(name)
    except TopicNameError:
        return
    assert SLUG_RE.match(got) and len(got) <= MAX_NAME
    rel = topic_relpath(got)
    for path in (PurePosixPath(rel), PureWindowsPath(rel)):
        assert path.parent.name == "topics" and ".." not in path.parts
    assert check_topic_name(got) == got  # canonical names are fixed points


@FAST
@given(st.text(max_size=200), st.integers(min_value=5, max_value=80))
def test_slugify_always_gives_a_safe_slug_or_nothing(text, max_len):
    got = slugify(text, max_len=max_len)
    assert got == "" or SLUG_RE.match(got)
    assert len(got) <= max_len + len("-topic")
    if got:
        assert check_topic_name(got) == got


def test_slugify_examples():
    assert slugify("Home Lab!") == "home-lab"
    assert slugify("con") == "con-topic"
    assert slugify("x" * 100) == "x" * MAX_NAME
    assert slugify("ab-cd", max_len=3) == "ab"  # no trailing '-' after the cut
    assert slugify("¡¿") == ""


def test_topic_stem_and_relpath():
    assert topic_stem("  cooking.md ") == "cooking"
    assert topic_stem("cooking") == "cooking"
    assert topic_relpath("cooking") == "topics/cooking.md"


@pytest.mark.parametrize("filename, ok", [
    ("cooking.md", True), (".cooking.md.1234.tmp", False), (".md", False), ("x.md", True),
    (".swp.md", False), ("cooking.md~", False), ("cooking.txt", False), ("", False), ("md", False),
])
def test_is_topic_filename(filename, ok):
    assert is_topic_filename(filename) is ok


def test_in_topic_counts_subtopics_only():
    assert in_topic("cooking", "cooking")
    assert in_topic("cooking-rice", "cooking")
    assert not in_topic("cookingrice", "cooking")
    assert not in_topic("cook", "cooking")


@FAST
@given(st.text(max_size=120), st.sampled_from([".json", ".md", ".jsonl"]))
def test_session_file_names_never_leave_their_folder(session, suffix):
    got = session_file_name(session, session, suffix)
    assert "/" not in got and "\\" not in got and "\x00" not in got
    assert not got.startswith(".") and got.endswith(suffix)
    assert PurePosixPath(got).name == got and PureWindowsPath(got).name == got
    assert session_file_name(session, session, suffix) == got  # stable


def test_session_file_names_keep_distinct_ids_apart():
    assert session_file_name("a b", "a b", ".json") != session_file_name("a-b", "a-b", ".json")
    assert session_file_name("../../x", "../../x", ".json").startswith("x-")
    assert session_file_name("...", "...", ".json").startswith("session-")
    assert session_file_name("\ud800", "\ud800", ".md").startswith("session-")  # a lone surrogate is hashed, not refused
    long = session_file_name("y" * 500, "y" * 500, ".json")
    assert len(long) <= 40 + 1 + 12 + len(".json")


@pytest.mark.parametrize("name, char, like", [("сooking", "с", "c"), ("cоoking", "о", "o"), ("Рets", "Р", "P"),
                                              ("trаvel-notes", "а", "a"), ("κitchen", "κ", "k")])
def test_a_cyrillic_or_greek_look_alike_is_refused_naming_the_letter(name, char, like):
    """Issue 41 item 17: `сooking` (a Cyrillic `с`) was taken as the topic `ooking`, and a file of
    that name stood beside `cooking`; a typed name is refused, naming the letter it imitates."""
    with pytest.raises(TopicNameError, match=f"'{char}' is .*looks like the Latin '{like}' but is not"):
        check_topic_name(name)
    assert slugify(name) == slugify(name.replace(char, like))  # an LLM's proposal: normalised


def test_a_letter_with_no_latin_form_is_named():
    with pytest.raises(TopicNameError, match="'г' is CYRILLIC SMALL LETTER GHE, not a Latin letter; use Latin letters"):
        check_topic_name("notes готовка")
    assert check_topic_name("Crème brûlée") == "creme-brulee"
