"""Fields of an entry: ``(key: value)`` markers, keyed facts, and where a memory came from.

Markers are what memkit already writes at the end of an entry — ``(due 2026-12-01)``,
``(importance 0.8)`` — so a field is one more of them, readable and editable in any editor::

    - Moved to Porto last spring (city: Porto) (from lisbon-chat.txt) (2026-11-23)

- **Fields.** ``(key: value)``: ``key`` is a lowercase word (letters, digits, ``-``, ``_``; not one
  of memkit's own marker words), ``value`` any text without parentheses. ``search --where
  city=Porto`` filters on them.
- **Keyed facts.** Some memories are slots with one live value: ``topics/facts.md`` holds one line
  per key, ``- city: Porto (2026-11-27)``; such a line carries the field ``city: Porto`` by its shape.
  A new value replaces the line and the old one goes to archive.md with its date (the store does
  that; this module only reads and writes the lines).
- **Provenance.** ``(from SOURCE DAY)``: the conversation a digested entry came from, short — a
  session id's first 8 characters or a transcript's file name, and the conversation's day. The day
  is left out where it is the entry's own date and the source is plainly a conversation's — a file
  name with a transcript's suffix (``.txt``, ``.json``, ``.jsonl``, ``.md``, ``.log``) or a session
  id's 8 hex digits: ``(from chat.txt) (2026-12-06)``, one date. (A person's "(from Lisbon)" is text.)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..base.lazy_re import lazy
from ..errors import InvalidValue

FACTS_TOPIC = "facts"  #: the topic of the keyed facts (topics/facts.md)
#: marker words memkit gives a meaning of its own: never a field's key
RESERVED = frozenset({"ask", "due", "until", "urgency", "importance", "from", "people"})
MAX_KEY = 40

_KEY = r"[a-z][a-z0-9_-]{0,39}"
_KEY_RE = lazy(rf"^{_KEY}$")
_FIELD_RE = lazy(rf"\((?P<key>{_KEY}):\s*(?P<value>[^()\n]*?)\s*\)")
_FACT_LINE_RE = lazy(rf"^(?P<key>{_KEY}):\s+(?P<value>[^\n]*?)(?:\s*\((?P<day>\d{{4}}-\d{{2}}-\d{{2}})\))?\s*$")
_FROM_RE = lazy(r"\(from\s+(?P<source>[^\s()]+)(?:\s+(?P<day>\d{4}-\d{2}-\d{2}))?\)")
#: a source a ``(from …)`` marker may name without its day: a transcript's file name, a session id's beginning
DAYLESS_SOURCE = r"(?:[^\s()]+\.(?:txt|text|json|jsonl|md|log)|[0-9a-f]{8})"
_DAYLESS_RE = lazy(rf"^{DAYLESS_SOURCE}$")
#: a digest's ``(from SOURCE DAY)`` as it writes it (with its day, or a plain conversation's name without
#: it): what search, dedup and the context leave out of an entry's text (a person's "(from Lisbon)" in
#: prose, with no day, stays text)
PROVENANCE_MARKER = r"\(from\s+(?:[^\s()]+\s+\d{4}-\d{2}-\d{2}|" + DAYLESS_SOURCE + r")\)"
_STRIP_FROM_RE = lazy(r"[ \t]*" + PROVENANCE_MARKER)
_ENTRY_DATE_RE = lazy(r"\((\d{4}-\d{2}-\d{2})\)\s*$")
_PEOPLE_RE = lazy(r"\(people:\s*(?P<names>[^()\n]*?)\s*\)")


def check_key(key: str) -> str:
    """``key`` if it can name a field, else :class:`InvalidValue` saying what a key looks like."""
    if not _KEY_RE.match(key or ""):
        raise InvalidValue(f"invalid key {key!r}: use a lowercase word (letters, digits, '-', '_'), "
                           f"at most {MAX_KEY} characters, starting with a letter")
    if key in RESERVED:
        raise InvalidValue(f"{key!r} is one of memkit's own markers ({', '.join(sorted(RESERVED))}): choose another key")
    return key


def check_value(value: str) -> str:
    """A field's value on one line, without parentheses (they would end the marker)."""
    value = " ".join((value or "").split())
    if not value:
        raise InvalidValue("the value is empty: say what the key is set to")
    if "(" in value or ")" in value:
        raise InvalidValue(f"a value cannot hold parentheses: {value!r}")
    return value


def field_marker(key: str, value: str) -> str:
    return f"({check_key(key)}: {check_value(value)})"


def fields(text: str, topic: str | None = None) -> dict[str, str]:
    """The fields an entry's text carries: its ``(key: value)`` markers and, in the facts topic, the
    ``key: value`` of the line itself. A key given twice keeps its last value."""
    found = {m.group("key"): m.group("value") for m in _FIELD_RE.finditer(text)
             if m.group("key") not in RESERVED and m.group("value")}
    if topic == FACTS_TOPIC:
        fact = parse_fact(text)
        if fact is not None:
            found[fact.key] = fact.value
    return found


@dataclass(frozen=True)
class Fact:
    """One line of topics/facts.md."""

    key: str
    value: str
    day: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"key": self.key, "value": self.value, "day": self.day}


def parse_fact(text: str) -> Fact | None:
    """The keyed fact an entry's text states (``city: Porto (2026-11-27)``), or None."""
    found = _FACT_LINE_RE.match(text.strip())
    if not found or found.group("key") in RESERVED or not found.group("value"):
        return None
    value = strip_provenance(found.group("value")).strip()  # `city: Porto (from chat.txt) (DAY)`: a digest's
    return Fact(found.group("key"), value, found.group("day")) if value else None


def fact_text(key: str, value: str) -> str:
    """An entry's text for a keyed fact (the store adds the day)."""
    return f"{check_key(key)}: {check_value(value)}"


def provenance_marker(source: str, day: str | None = None, *, entry_day: str | None = None) -> str:
    """``(from SOURCE DAY)``: a session id is cut to its first 8 characters, a file to its name.
    ``entry_day``: the date the entry is written with; where ``day`` is that day and the source is
    plainly a conversation's (:data:`DAYLESS_SOURCE`), the day is said once, by the entry's date:
    ``(from chat.txt)``."""
    short = source.replace("\\", "/").rsplit("/", 1)[-1]
    if re.fullmatch(r"[0-9a-f]{8}-[0-9a-f-]{27}", short):
        short = short[:8]
    short = re.sub(r"[\s()]+", "-", short).strip("-") or "unknown"
    if day and day == entry_day and _DAYLESS_RE.match(short):
        return f"(from {short})"
    return f"(from {short} {day})" if day else f"(from {short})"


def provenance(text: str) -> tuple[str, str | None] | None:
    """(source, day) of an entry's ``(from …)`` marker, or None; a marker that leaves its day out
    (``(from chat.txt) (2026-12-06)``) is of the entry's date."""
    found = _FROM_RE.search(text)
    if not found:
        return None
    source, day = found.group("source"), found.group("day")
    if day is None and _DAYLESS_RE.match(source):
        dated = _ENTRY_DATE_RE.search(text)
        day = dated.group(1) if dated else None
    return source, day


def strip_provenance(text: str) -> str:
    """``text`` without its ``(from SOURCE DAY)`` marker (what an embedding, the judge and the
    context block read)."""
    return _STRIP_FROM_RE.sub("", text) if "(from" in text else text


def people_marker(names: list[str] | tuple[str, ...]) -> str:
    """``(people: Ana, Tom Reyes)``: who a digested entry is about."""
    clean = [" ".join(n.replace("(", " ").replace(")", " ").replace(",", " ").split()) for n in names]
    return "(people: " + ", ".join(n for n in clean if n) + ")"


def people_of(text: str) -> tuple[str, ...]:
    """The names of an entry's ``(people: …)`` marker."""
    found = _PEOPLE_RE.search(text)
    return tuple(n.strip() for n in found.group("names").split(",") if n.strip()) if found else ()
