"""How memories age: expiry by kind or by date, follow-ups with a due date.

- An entry may end itself: ``- Parking spot is B14 (until 2026-12-31) (2026-11-20)``.
- A kind may have a lifetime (memkit.yaml ``expire:``, default ``context: 1d``,
  ``conversation: 30d``), counted from the entry's date; an undated entry of such a kind never
  expires by its kind (there is nothing to count from).
- A follow-up is an entry of kind ``pending``, optionally with ``(due YYYY-MM-DD)``:
  ``- [pending] Ask how the job interview went (due 2026-11-28) (2026-11-23)``.

Everything here reads an entry's text; nothing is stored anywhere else.
"""
from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Mapping

from .topic import Entry

__all__ = ["until_date", "due_date", "expiry", "last_day", "is_pending", "PENDING"]

PENDING = "pending"
_MARK_RE = re.compile(r"\((until|due)\s+(\d{4}-\d{2}-\d{2})\)", re.IGNORECASE)
#: ``(until DATE)`` is a marker only at the end of an entry (before its own date): "Rented in Paris
#: (until 2019) and then…" in prose, or a comment in code, is text, not an end date
_UNTIL_END_RE = re.compile(r"\(until\s+(\d{4}-\d{2}-\d{2})\)(?:\s*\(\d{4}-\d{2}-\d{2}\))?\s*$", re.IGNORECASE)


def _marked(text: str, word: str) -> date | None:
    for m in _MARK_RE.finditer(text):
        if m.group(1).lower() == word:
            try:
                return date.fromisoformat(m.group(2))
            except ValueError:
                return None
    return None


def until_date(entry: Entry) -> date | None:
    """The entry's own last day: ``(until YYYY-MM-DD)`` at its end."""
    return _until(entry.text)


def _until(text: str) -> date | None:
    m = _UNTIL_END_RE.search(text)
    if not m:
        return None
    try:
        return date.fromisoformat(m.group(1))
    except ValueError:
        return None


def due_date(entry: Entry) -> date | None:
    """A follow-up's due day: ``(due YYYY-MM-DD)``."""
    return _marked(entry.text, "due")


def is_pending(entry: Entry) -> bool:
    """Whether the entry is a follow-up (kind ``pending``)."""
    return entry.kind == PENDING


def last_day(kind: str | None, written: date | None, text: str, lifetimes: Mapping[str, int | None]
             ) -> tuple[date | None, str]:
    """The last day an entry is kept, and why (the reason archive.md records once it has passed):
    its own ``(until DATE)``, or its date plus its kind's lifetime, whichever comes first;
    ``(None, "")`` when it never expires.

    :param written: the entry's own date (None: undated, never expires by its kind).
    """
    best: tuple[date | None, str] = (None, "")
    days = lifetimes.get(kind or "") if kind else None
    if days is not None and written is not None:
        best = (written + timedelta(days=days - 1), f"expired: {kind} entries are kept {days} day{'s' if days != 1 else ''}")
    until = _until(text) if "(until" in text.lower() else None
    if until is not None and (best[0] is None or until < best[0]):
        best = (until, f"expired: until {until.isoformat()}")
    return best


def expiry(entry: Entry, lifetimes: Mapping[str, int | None], today: date) -> str | None:
    """Why ``entry`` has expired by ``today`` (the reason archive.md records), or None if it has not.

    :param lifetimes: kind -> days (``Config.expire``); a kind not listed never expires.

    Only list items expire: a prose paragraph or a code block a person wrote is never tidied away.
    """
    if not entry.is_list:
        return None
    try:
        written = date.fromisoformat(entry.date) if entry.date else None
    except ValueError:
        written = None
    day, why = last_day(entry.kind, written, entry.text, lifetimes)
    return why if day is not None and day < today else None
