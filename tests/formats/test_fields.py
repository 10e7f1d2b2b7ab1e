"""memkit.formats.fields: (key: value) markers, keyed facts, provenance and people markers."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memkit.errors import InvalidValue
from memkit.formats.fields import (
    FACTS_TOPIC,
    check_key,
    fact_text,
    field_marker,
    fields,
    parse_fact,
    people_marker,
    people_of,
    provenance,
    provenance_marker,
)


def test_fields_are_the_key_value_markers_but_not_memkits_own():
    text = "Moved to Porto (city: Porto) (ask: how is it?) (due 2026-12-01) (wifi-name: Casa 5G) (2026-11-23)"
    assert fields(text) == {"city": "Porto", "wifi-name": "Casa 5G"}
    assert fields("Note: buy milk") == {}  # a line's own "key: value" is a field only in the facts topic
    assert fields("city: Porto (2026-11-27)", topic=FACTS_TOPIC) == {"city": "Porto"}


def test_a_fact_line_reads_back():
    assert parse_fact("city: Porto (2026-11-27)").value == "Porto"
    assert parse_fact("current-project: memkit docs").day is None
    assert parse_fact("Prefers bomba rice") is None
    assert parse_fact("due: tomorrow") is None  # a marker word is never a key
    assert fact_text("city", "  Porto \n") == "city: Porto"


@pytest.mark.parametrize("key", ["City", "1st", "", "a" * 41, "due", "from", "has space", "../x"])
def test_a_bad_key_is_refused_with_what_a_key_looks_like(key):
    with pytest.raises(InvalidValue):
        check_key(key)


def test_a_value_cannot_break_its_marker():
    with pytest.raises(InvalidValue, match="parentheses"):
        field_marker("city", "Porto (north)")
    with pytest.raises(InvalidValue, match="empty"):
        field_marker("city", "  ")


def test_provenance_is_short():
    assert provenance_marker("3f1c2a9e-7b1d-4c55-9a0e-1f2e3d4c5b6a", "2026-11-23") == "(from 3f1c2a9e 2026-11-23)"
    assert provenance_marker("inbox/done/chat (1).txt", "2026-11-21") == "(from chat-1-.txt 2026-11-21)"
    assert provenance("Vegetarian since 2020 (from 3f1c2a9e 2026-11-23) (2026-11-23)") == ("3f1c2a9e", "2026-11-23")
    assert provenance("no marker") is None


def test_people_markers_round_trip():
    marker = people_marker(["Ana", "Tom (Reyes)", "", "Bea, jr"])
    assert marker == "(people: Ana, Tom Reyes, Bea jr)"
    assert people_of(f"Dinner plans {marker} (2026-11-23)") == ("Ana", "Tom Reyes", "Bea jr")


@settings(max_examples=100, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True), st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 .,:'-]{0,30}", fullmatch=True))
def test_a_field_marker_reads_back(key, value):
    if key in ("ask", "due", "until", "urgency", "importance", "from", "people"):
        return
    value = " ".join(value.split())
    assert fields(f"Some entry {field_marker(key, value)} (2026-11-23)") == {key: value}
