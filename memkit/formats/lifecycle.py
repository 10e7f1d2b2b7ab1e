"""How memories age: expiry by kind or by date, follow-ups with a due date.

- An entry may end itself: ``- Parking spot is B14 (until 2026-12-31) (2026-11-20)``.
- A kind may have a lifetime (memkit.yaml ``expire:``, default ``context: 1d``,
  ``conversation: 30d``), counted from the entry's date; an undated entry of such a kind never
  expires by its kind (there is nothing to count from).
- A follow-up is an entry of kind ``pending``, optionally with ``(due YYYY-MM-DD)``, an urgency
  ``(urgency high|medium|low)`` and the question to ask ``(ask: …)``; its text is the background
  a person needs to pick the thread up again:
  ``- [pending] Job interview at Acme on Thursday, nervous about the design round (due
  2026-11-28) (urgency high) (ask: How did the Acme interview go?) (2026-11-23)``.
  A follow-up is kept 7 days (``expire: pending: 7d``) from its date, or until its due day when
  that is later.
- What matters to the person: ``(importance 0.8)``, between 0 and 1, written by the digest and
  editable like any text; an entry without one counts as ``DEFAULT_IMPORTANCE``.

Everything here reads an entry's text; nothing is stored anywhere else.
"""
from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Mapping

from ..base.lazy_re import lazy
from ..errors import InvalidValue
from .fields import PROVENANCE_MARKER
from .topic import KIND_RE, LIST_MARKER_RE, Entry

__all__ = ["until_date", "due_date", "expiry", "last_day", "is_pending", "PENDING", "urgency", "question",
           "importance", "URGENCIES", "DEFAULT_IMPORTANCE", "importance_marker", "follow_up_markers", "with_dates", "parse_day",
           "core_text"]

PENDING = "pending"
URGENCIES = ("high", "medium", "low")  #: most urgent first
DEFAULT_IMPORTANCE = 0.5  #: an entry without ``(importance X)``
_URGENCY_RE = lazy(r"\(urgency\s+(high|medium|low)\)", re.IGNORECASE)
_ASK_RE = lazy(r"\(ask:\s*([^()]+?)\s*\)", re.IGNORECASE)
_IMPORTANCE_RE = lazy(r"\(importance\s+(0(?:\.\d+)?|1(?:\.0+)?)\)", re.IGNORECASE)
_MARK_RE = lazy(r"\((until|due)\s+(\d{4}-\d{2}-\d{2})\)", re.IGNORECASE)
#: ``(until DATE)`` is a marker only at the end of an entry (before its own date): "Rented in Paris
#: (until 2019) and then…" in prose, or a comment in code, is text, not an end date
_UNTIL_END_RE = lazy(r"\(until\s+(\d{4}-\d{2}-\d{2})\)(?:\s*\(\d{4}-\d{2}-\d{2}\))?\s*$", re.IGNORECASE)
#: every marker memkit writes into an entry's text: a day it is due or ends, an urgency, a question, an
#: importance, the conversation it came from
_ANY_MARKER_RE = lazy(r"\((?:(?:due|until)\s+\d{4}-\d{2}-\d{2}|urgency\s+\w+|ask:[^()]*|importance\s+[\d.]+)\)"
                            "|" + PROVENANCE_MARKER, re.IGNORECASE)
#: the kinds memkit knows without being told (``[kind]`` of an entry); memkit.yaml's ``expire:`` may
#: name more (a kind of your own: ``expire: {recipe: never}``). A file may hold any ``[word]``.
KNOWN_KINDS = ("fact", "preference", "decision", "discovery", "event", "context", "observation", "pending",
               "conversation")
_TRAILING_DATE_RE = lazy(r"\s*\(\d{4}-\d{2}-\d{2}\)\s*$")
_TRAILING_TAGS_RE = lazy(r"(?:\s+#[^\W\d_][\w/-]*)+\s*$")


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


def urgency(entry: Entry) -> str | None:
    """A follow-up's ``(urgency high|medium|low)``, lowercased, or None."""
    m = _URGENCY_RE.search(entry.text)
    return m.group(1).lower() if m else None


def question(entry: Entry) -> str | None:
    """The question a follow-up suggests asking: ``(ask: …)``, or None."""
    m = _ASK_RE.search(entry.text)
    return m.group(1) if m else None


def importance(text: str) -> float:
    """``(importance X)`` of an entry's text (0..1), else :data:`DEFAULT_IMPORTANCE`."""
    m = _IMPORTANCE_RE.search(text) if "(importance" in text.lower() else None
    return float(m.group(1)) if m else DEFAULT_IMPORTANCE


def importance_marker(value: float) -> str:
    """``(importance X)`` for a value, clamped to 0..1, one decimal."""
    return f"(importance {min(1.0, max(0.0, round(value, 1))):.1f})"


def follow_up_markers(due: str | None = None, urgency_: str | None = None, ask: str | None = None) -> str:
    """The markers a follow-up's text ends with: ``(due D) (urgency U) (ask: Q)``, those given;
    a question loses its parentheses (a marker cannot hold them)."""
    parts = []
    if due:
        parts.append(f"(due {due})")
    if urgency_ and urgency_.lower() in URGENCIES:
        parts.append(f"(urgency {urgency_.lower()})")
    if ask:
        text = " ".join(ask.replace("(", "").replace(")", "").split())
        if text:
            parts.append(f"(ask: {text})")
    return " ".join(parts)


def is_pending(entry: Entry) -> bool:
    """Whether the entry is a follow-up (kind ``pending``)."""
    return entry.kind == PENDING


def last_day(kind: str | None, written: date | None, text: str, lifetimes: Mapping[str, int | None]
             ) -> tuple[date | None, str]:
    """The last day an entry is kept, and why (the reason archive.md records once it has passed):
    its own ``(until DATE)``, or its date plus its kind's lifetime, whichever comes first (a
    follow-up due later than that is kept until its due day); ``(None, "")`` when it never expires.

    :param written: the entry's own date (None: undated, never expires by its kind).
    """
    best: tuple[date | None, str] = (None, "")
    days = lifetimes.get(kind or "") if kind else None
    if days is not None and written is not None:
        best = (written + timedelta(days=days - 1), f"expired: {kind} entries are kept {days} day{'s' if days != 1 else ''}")
        due = _marked(text, "due") if kind == PENDING and "(due" in text.lower() else None
        if due is not None and best[0] is not None and due > best[0]:
            best = (due, f"expired: due {due.isoformat()} and not done")
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


def with_dates(text: str, kind: str | None, *, due: date | None = None, until: date | None = None,
               today: date | None = None) -> tuple[str, str | None]:
    """The text and kind of an entry with a due day (a follow-up: ``(due DATE)``, kind ``pending``
    unless another is given) and/or a last day (``(until DATE)``: it expires after it).

    :raises InvalidValue: ``until`` is in the past (the memory would expire at once).
    """
    if until is not None and until < (today or date.today()):
        raise InvalidValue(f"until {until} is in the past: the memory would expire at once (give a later day)")
    for label, day in (("due", due), ("until", until)):
        if day is not None:
            text = f"{' '.join(text.split())} ({label} {day.isoformat()})"
    if due is not None and kind is None:
        kind = PENDING
    return text, kind


def parse_day(value: str, what: str) -> date:
    """A ``YYYY-MM-DD`` option value. :raises InvalidValue: naming ``what``."""
    try:
        return date.fromisoformat(str(value).strip())
    except ValueError:
        raise InvalidValue(f"{what} must be a date like 2026-03-01, got {value!r}") from None


def core_text(text: str) -> str:
    """What a memory says, for telling whether two say the same: its text without the list marker,
    the ``[kind]``, the trailing tags and date, and the markers (``(due …)``, ``(until …)``,
    ``(urgency …)``, ``(ask: …)``, ``(importance …)``, ``(from … DAY)``), spaces and case folded, end punctuation
    dropped. ``- [fact] Moved to Porto (importance 0.8) (2026-11-21)`` and ``Moved to Porto.``
    have the same core."""
    return plain_text(text).strip(" .;,!").casefold()


def plain_text(text: str) -> str:
    """A memory's words as written (case kept): its text without the list marker, the ``[kind]``,
    the trailing tags and date, and memkit's markers (see :func:`core_text`)."""
    text = LIST_MARKER_RE.sub("", text.strip(), count=1)
    text = KIND_RE.sub("", text, count=1)
    text = _TRAILING_DATE_RE.sub("", text)
    text = _TRAILING_TAGS_RE.sub("", _ANY_MARKER_RE.sub(" ", _TRAILING_TAGS_RE.sub("", text)))
    return " ".join(text.split())
