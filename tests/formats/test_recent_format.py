"""memkit.formats.recent: index.txt lines (``time|topic|summary``), newest first, and relative times."""
from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.formats.recent import RecentTopic, parse_recent, relative_time, render_recent

FAST = settings(max_examples=30, deadline=None, derandomize=True)
T = datetime(2026, 2, 12, 14, 30, 0)

topics = st.sampled_from(["cooking", "garden", "home-lab", "a", "cooking-rice", "x2"])
times = st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(2200, 1, 1)).map(lambda d: d.replace(microsecond=0))
items = st.builds(RecentTopic, times, topics, st.text(max_size=60))


def test_the_documented_line():
    item = RecentTopic(T, "cooking", "rice recipes and oven timing")
    assert item.line() == "2026-02-12T14:30:00|cooking|rice recipes and oven timing"
    assert parse_recent(item.line() + "\n") == [item]
    assert item.to_dict() == {"updated": "2026-02-12T14:30:00", "topic": "cooking",
                              "summary": "rice recipes and oven timing"}


def test_a_summary_stays_on_its_line_and_in_its_field():
    item = RecentTopic(T, "cooking", "rice | paella\nsecond line\r\nthird\rfourth\u2028fifth\x85sixth   spaced")
    line = item.line()
    assert "\n" not in line and "\r" not in line and line.count("|") == 2
    assert parse_recent(line) == [RecentTopic(T, "cooking", "rice / paella second line third fourth fifth sixth spaced")]


@FAST
@given(st.lists(items, max_size=12), st.integers(min_value=0, max_value=15))
def test_render_then_parse_gives_the_newest_line_of_each_topic(rows, limit):
    text = render_recent(rows, limit)
    assert text == "" or text.endswith("\n")
    got = parse_recent(text)
    assert len(got) == len(text.splitlines()) <= limit
    assert [g.updated for g in got] == sorted((g.updated for g in got), reverse=True)
    assert len({g.topic for g in got}) == len(got)  # one line per topic
    newest = {}
    for r in rows:
        if r.topic not in newest or r.updated > newest[r.topic].updated:
            newest[r.topic] = r
    for g in got:
        want = newest[g.topic]
        assert g.updated == want.updated
        assert g.summary == " ".join(want.summary.replace("|", "/").split())
    assert render_recent(got, limit) == text  # rendering what was read changes nothing


def test_render_keeps_the_first_of_equal_times_and_the_limit():
    a = RecentTopic(T, "a", "first")
    b = RecentTopic(T, "b", "second")
    older = RecentTopic(T - timedelta(days=1), "a", "older a")
    assert render_recent([older, a, b], 10) == f"{a.line()}\n{b.line()}\n"
    assert render_recent([a, b], 1) == f"{a.line()}\n"
    assert render_recent([a, b], 0) == ""
    assert render_recent([], 5) == ""


@pytest.mark.parametrize("text", [
    "", "\n\n", "garbage", "not a time|cooking|x", "2026-02-30T10:00:00|cooking|x", "2026-02-12|cooking|x",
    "2026-02-12T14:30:00", "# a comment", "\x00\x00", "2026-02-12T14:30:00Z|cooking|x",
])
def test_lines_that_are_not_index_lines_are_ignored(text):
    assert parse_recent(text) == []


def test_parse_reads_crlf_cr_and_padding_and_missing_summaries():
    text = ("2026-02-12T14:30:00|cooking|rice\r\n"
            "  2026-02-11T09:00:00 | garden |  tomatoes | and | more  \r"
            "2026-02-10T08:00:00|bare\n"
            "junk\n")
    assert parse_recent(text) == [
        RecentTopic(T, "cooking", "rice"),
        RecentTopic(datetime(2026, 2, 11, 9), "garden", "tomatoes | and | more"),
        RecentTopic(datetime(2026, 2, 10, 8), "bare", ""),
    ]


def test_unicode_summaries_survive():
    item = RecentTopic(T, "reise", "Zürich → 東京, ☕ every morning")
    assert parse_recent(render_recent([item], 5)) == [item]


@pytest.mark.parametrize("delta, words", [
    (timedelta(seconds=-1), "in the future"),
    (timedelta(0), "just now"),
    (timedelta(seconds=59), "just now"),
    (timedelta(seconds=60), "1 minute ago"),
    (timedelta(minutes=59), "59 minutes ago"),
    (timedelta(hours=1), "1 hour ago"),
    (timedelta(hours=23, minutes=59), "23 hours ago"),
    (timedelta(days=1), "yesterday"),
    (timedelta(days=2), "2 days ago"),
    (timedelta(days=13), "13 days ago"),
    (timedelta(days=14), "2 weeks ago"),
    (timedelta(days=59), "8 weeks ago"),
    (timedelta(days=60), "2 months ago"),
    (timedelta(days=364), "12 months ago"),
    (timedelta(days=365), "1 year ago"),
    (timedelta(days=3650), "10 years ago"),
])
def test_relative_time(delta, words):
    assert relative_time(T - delta, T) == words
