"""memkit.formats.lifecycle: expiry by kind or date, follow-up markers, importance, and core text."""
from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import InvalidValue
from memkit.formats.lifecycle import (
    DEFAULT_IMPORTANCE,
    URGENCIES,
    core_text,
    due_date,
    expiry,
    follow_up_markers,
    importance,
    importance_marker,
    is_pending,
    last_day,
    parse_day,
    question,
    until_date,
    urgency,
    with_dates,
)
from memkit.formats.topic import parse_topic_text

FAST = settings(max_examples=30, deadline=None, derandomize=True)
LIFETIMES = {"context": 1, "conversation": 30, "pending": 7}
days = st.dates(min_value=date(2000, 1, 1), max_value=date(2100, 12, 31))
plain = st.text("abcdefgh xyz", min_size=1, max_size=30).map(lambda s: " ".join(s.split())).filter(bool)


def entry(line: str):
    (got,) = parse_topic_text(line + "\n", "t", "topics/t.md").entries
    return got


FOLLOW_UP = ("- [pending] Job interview at Acme on Thursday, nervous about the design round (due 2026-11-28) "
             "(urgency high) (ask: How did the Acme interview go?) (2026-11-23)")


def test_the_documented_follow_up():
    e = entry(FOLLOW_UP)
    assert is_pending(e)
    assert due_date(e) == date(2026, 11, 28)
    assert urgency(e) == "high"
    assert question(e) == "How did the Acme interview go?"
    assert importance(e.text) == DEFAULT_IMPORTANCE
    assert until_date(e) is None


def test_until_is_a_marker_only_at_the_end():
    assert until_date(entry("- Parking spot is B14 (until 2026-12-31) (2026-11-20)")) == date(2026, 12, 31)
    assert until_date(entry("- Parking spot is B14 (UNTIL 2026-12-31)")) == date(2026, 12, 31)
    assert until_date(entry("Rented in Paris (until 2019-01-01) and then moved.")) is None
    assert until_date(entry("- Spot (until 2026-02-30) (2026-11-20)")) is None  # not a day


@pytest.mark.parametrize("line, today, why", [
    ("- Parking spot is B14 (until 2026-12-31) (2026-11-20)", date(2026, 12, 31), None),  # its last day
    ("- Parking spot is B14 (until 2026-12-31) (2026-11-20)", date(2027, 1, 1), "expired: until 2026-12-31"),
    ("- [context] at home today (2026-11-20)", date(2026, 11, 20), None),
    ("- [context] at home today (2026-11-20)", date(2026, 11, 21), "expired: context entries are kept 1 day"),
    ("- [Conversation] talked (2026-11-01)", date(2026, 12, 1), "expired: conversation entries are kept 30 days"),
    ("- [context] undated, so never by its kind", date(2099, 1, 1), None),
    ("- [context] a date that is not one (2026-13-45)", date(2099, 1, 1), None),
    ("- [fact] a kind without a lifetime (2000-01-01)", date(2099, 1, 1), None),
    ("- [pending] call mum (2026-11-01)", date(2026, 11, 7), None),
    ("- [pending] call mum (2026-11-01)", date(2026, 11, 8), "expired: pending entries are kept 7 days"),
    ("- [pending] dentist (due 2026-12-01) (2026-11-01)", date(2026, 12, 1), None),  # kept to its due day
    ("- [pending] dentist (due 2026-12-01) (2026-11-01)", date(2026, 12, 2), "expired: due 2026-12-01 and not done"),
    ("- [context] ends sooner (until 2026-11-10) (2026-11-01)", date(2026, 11, 2), "expired: context entries are kept 1 day"),
    ("- [conversation] ends sooner (until 2026-11-10) (2026-11-01)", date(2026, 11, 11), "expired: until 2026-11-10"),
    ("A paragraph (until 2020-01-01)", date(2099, 1, 1), None),  # prose never expires
])
def test_expiry(line, today, why):
    assert expiry(entry(line), LIFETIMES, today) == why


@FAST
@given(days, st.integers(min_value=1, max_value=400), st.sampled_from(sorted(LIFETIMES)))
def test_an_entry_is_kept_exactly_its_kinds_lifetime(written, offset, kind):
    e = entry(f"- [{kind}] something ({written.isoformat()})")
    last, why = last_day(kind, written, e.text, LIFETIMES)
    assert last == written + timedelta(days=LIFETIMES[kind] - 1)
    today = written + timedelta(days=offset)
    assert (expiry(e, LIFETIMES, today) is not None) == (today > last)
    assert why.startswith(f"expired: {kind} entries are kept {LIFETIMES[kind]} day")


def test_last_day_never_and_one_day():
    assert last_day(None, date(2026, 1, 1), "plain", LIFETIMES) == (None, "")
    assert last_day("context", None, "undated", LIFETIMES) == (None, "")
    assert last_day("context", date(2026, 1, 1), "x", LIFETIMES) == (date(2026, 1, 1), "expired: context entries are kept 1 day")


@FAST
@given(plain, st.one_of(st.none(), days), st.one_of(st.none(), st.sampled_from(URGENCIES + ("HIGH", "Low", "extreme"))),
       st.one_of(st.none(), st.text(max_size=40)), days)
def test_follow_up_markers_read_back(body, due, urg, ask, written):
    markers = follow_up_markers(due.isoformat() if due else None, urg, ask)
    e = entry(f"- [pending] {body} {markers} ({written.isoformat()})")
    assert due_date(e) == due
    assert urgency(e) == (urg.lower() if urg and urg.lower() in URGENCIES else None)
    asked = " ".join((ask or "").replace("(", "").replace(")", "").split())
    assert question(e) == (asked or None)
    assert core_text(e.text) == core_text(body)


def test_follow_up_markers_examples():
    assert follow_up_markers("2026-11-28", "HIGH", "How (was) it?") == "(due 2026-11-28) (urgency high) (ask: How was it?)"
    assert follow_up_markers(None, "extreme", "()") == ""
    assert follow_up_markers() == ""


@FAST
@given(st.floats(min_value=-10, max_value=10, allow_nan=False))
def test_importance_marker_reads_back_clamped(value):
    marker = importance_marker(value)
    got = importance(f"Moved to Porto {marker} (2026-11-21)")
    assert 0.0 <= got <= 1.0
    assert got == float(marker[len("(importance "):-1])
    assert abs(got - min(1.0, max(0.0, value))) <= 0.051


@pytest.mark.parametrize("text, want", [
    ("x (importance 0.8)", 0.8), ("x (IMPORTANCE 1)", 1.0), ("x (importance 1.0)", 1.0), ("x (importance 0)", 0.0),
    ("x (importance 1.5)", DEFAULT_IMPORTANCE), ("x (importance -0.2)", DEFAULT_IMPORTANCE),
    ("x importance 0.9", DEFAULT_IMPORTANCE), ("", DEFAULT_IMPORTANCE),
])
def test_importance(text, want):
    assert importance(text) == want


def test_with_dates():
    today = date(2026, 1, 1)
    assert with_dates("a  b\n c", None, due=date(2026, 1, 2), until=date(2026, 1, 3), today=today) == (
        "a b c (due 2026-01-02) (until 2026-01-03)", "pending")
    assert with_dates("a", "fact", due=date(2026, 1, 2), today=today) == ("a (due 2026-01-02)", "fact")
    assert with_dates("a", None, until=today, today=today) == ("a (until 2026-01-01)", None)
    assert with_dates("a  b", None, today=today) == ("a  b", None)
    with pytest.raises(InvalidValue, match="until 2025-12-31 is in the past"):
        with_dates("a", None, until=date(2025, 12, 31), today=today)


@FAST
@given(plain, days, days)
def test_with_dates_reads_back(text, due, until):
    today = min(until, date(2000, 1, 1))
    marked, kind = with_dates(text, None, due=due, until=until, today=today)
    e = entry(f"- [{kind}] {marked}")
    assert (due_date(e), until_date(e), kind) == (due, until, "pending")


def test_parse_day():
    assert parse_day(" 2026-03-01 ", "--due") == date(2026, 3, 1)
    for bad in ("2026-02-30", "tomorrow", "", "2026/03/01"):
        with pytest.raises(InvalidValue, match=r"--due must be a date like 2026-03-01, got"):
            parse_day(bad, "--due")


def test_core_text_examples():
    assert core_text("- [fact] Moved to Porto (importance 0.8) (2026-11-21)") == core_text("Moved to Porto.") == "moved to porto"
    assert core_text(FOLLOW_UP) == "job interview at acme on thursday, nervous about the design round"
    assert core_text("- Rented in Paris (until 2019-01-01) and then moved #home #city (2026-01-01)") == \
        "rented in paris and then moved"
    assert core_text("") == ""
    assert core_text("  STRASSE  Zürich!! ") == "strasse zürich"
