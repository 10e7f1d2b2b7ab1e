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

__all__ = ["until_date", "due_date", "expiry", "is_pending", "PENDING"]

PENDING = "pending"
_MARK_RE = re.compile(r"\((until|due)\s+(\d{4}-\d{2}-\d{2})\)", re.IGNORECASE)


def _marked(text: str, word: str) -> date | None:
    for m in _MARK_RE.finditer(text):
        if m.group(1).lower() == word:
            try:
                return date.fromisoformat(m.group(2))
            except ValueError:
                return None
    return None


def until_date(entry: Entry) -> date | None:
    """The entry's own last day: ``(until YYYY-MM-DD)``."""
    return _marked(entry.text, "until")


def due_date(entry: Entry) -> date | None:
    """A follow-up's due day: ``(due YYYY-MM-DD)``."""
    return _marked(entry.text, "due")


def is_pending(entry: Entry) -> bool:
    """Whether the entry is a follow-up (kind ``pending``)."""
    return entry.kind == PENDING


def expiry(entry: Entry, lifetimes: Mapping[str, int | None], today: date) -> str | None:
    """Why ``entry`` has expired by ``today`` (the reason archive.md records), or None if it has not.

    :param lifetimes: kind -> days (``Config.expire``); a kind not listed never expires.
    """
    until = until_date(entry)
    if until is not None and until < today:
        return f"expired: until {until.isoformat()}"
    days = lifetimes.get(entry.kind or "") if entry.kind else None
    if days is None or not entry.date:
        return None
    try:
        written = date.fromisoformat(entry.date)
    except ValueError:
        return None
    if written + timedelta(days=days) <= today:
        return f"expired: {entry.kind} entries are kept {days} day{'s' if days != 1 else ''}"
    return None
