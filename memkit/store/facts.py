"""Keyed facts: memories that are slots with one live value (the user's city, the wifi name).

They live in ``topics/facts.md``, one line per key (``- city: Porto (2026-11-27)``), a topic like any
other: searchable, editable by hand, synced with git. Setting a key that has a value replaces that
line where it stands; the old line goes to archive.md (``replaced by NEWID``), so
:func:`fact_history` — and ``memkit get KEY --history`` — shows every value the key had, with
its dates. Setting the value a key already has writes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from ..errors import EntryNotFound, TopicNotFound
from ..formats.fields import FACTS_TOPIC, Fact, check_key, check_value, fact_text, parse_fact
from ..formats.topic import Entry, format_entry, text_hash
from .store import Store


@dataclass(frozen=True)
class FactChange:
    """What :func:`set_fact` did: the key, its value now and the one it replaced (None if new)."""

    key: str
    value: str
    old: str | None
    entry: Entry | None  #: the line now holding the value (None in a dry run)
    changed: bool = True
    redacted: int = 0  #: secrets replaced by ``[redacted]`` in the value given (docs/privacy.md)

    def to_dict(self) -> dict[str, Any]:
        data = {"key": self.key, "value": self.value, "old": self.old, "changed": self.changed,
                "id": self.entry.id if self.entry is not None else None}
        return dict(data, redacted=self.redacted) if self.redacted else data


def _current(store: Store, key: str) -> list[Entry]:
    """The facts.md lines that state ``key`` (more than one only where a person wrote a second)."""
    try:
        entries = store.topic(FACTS_TOPIC).entries
    except TopicNotFound:
        return []
    return [e for e in entries if e.is_list and (f := parse_fact(e.text)) is not None and f.key == key]


def get_fact(store: Store, key: str) -> Fact | None:
    """The live value of ``key`` (the last line stating it, if a person wrote two), or None."""
    found = _current(store, check_key(key))
    return parse_fact(found[-1].text) if found else None


def all_facts(store: Store) -> dict[str, Fact]:
    """Every key's live value, in the order of facts.md."""
    try:
        entries = store.topic(FACTS_TOPIC).entries
    except TopicNotFound:
        return {}
    out: dict[str, Fact] = {}
    for entry in entries:
        fact = parse_fact(entry.text) if entry.is_list else None
        if fact is not None:
            out[fact.key] = fact
    return out


def set_fact(store: Store, key: str, value: str, *, today: date | None = None, source: str | None = None) -> FactChange:
    """Give ``key`` the value ``value``: a new line in facts.md, or the key's line replaced where it
    stands (the old one to archive.md, ``replaced by NEWID``). Every other line of the key (a second
    one a person wrote) goes to archive.md too, so one value stays live. ``source``: the
    ``(from SOURCE DAY)`` marker of the conversation it came from (a digest's), written after the
    value (``city: Porto (from chat.txt) (2026-12-06)``: ``memkit why`` finds the conversation)."""
    hidden = store.config.redact.apply(check_value(value))  # what is never stored (docs/privacy.md)
    key, value = check_key(key), check_value(hidden.text)
    current = _current(store, key)
    old = parse_fact(current[-1].text) if current else None
    if old is not None and old.value == value and len(current) == 1:
        return FactChange(key, value, value, current[-1], changed=False, redacted=hidden.count)
    day = (today or date.today()).isoformat()
    now = datetime.combine(today, datetime.now().time()).replace(microsecond=0) if today else \
        datetime.now().replace(microsecond=0)
    text = fact_text(key, value) + (f" {source}" if source else "")
    if not current:
        entry = store.add(text, topic=FACTS_TOPIC, when=now, allow_duplicate=True).entry
        return FactChange(key, value, None, entry, redacted=hidden.count)
    line = format_entry(text, None, (), day)
    new_id = text_hash(line[2:])[:8]
    reasons = {e.hash: f"replaced by {new_id}" for e in current}
    _, removed = store.replace_entries(FACTS_TOPIC, current, [line], reasons, now, in_place=True)
    if not removed:
        raise EntryNotFound(f"the line of {key!r} changed while setting it; try again")
    written = next((e for e in store.topic(FACTS_TOPIC).entries if e.hash == text_hash(line[2:])), None)
    return FactChange(key, value, old.value if old else None, written, redacted=hidden.count)


@dataclass(frozen=True)
class FactValue:
    """One value a key had: the value, the day it was set, and whether it is the live one."""

    value: str
    day: str | None
    live: bool

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "day": self.day, "live": self.live}


def fact_history(store: Store, key: str) -> list[FactValue]:
    """Every value ``key`` had, oldest first: the archived lines of facts.md, then the live one."""
    key = check_key(key)
    out = []
    for archived in store.archived():
        fact = parse_fact(archived.text) if archived.topic == FACTS_TOPIC else None
        if fact is not None and fact.key == key:
            out.append(FactValue(fact.value, fact.day or archived.day, False))
    live = get_fact(store, key)
    if live is not None:
        out.append(FactValue(live.value, live.day, True))
    if not out:
        raise EntryNotFound(f"no value was ever set for {key!r} (`memkit get` lists the keys)")
    return out
