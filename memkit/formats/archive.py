"""archive.md, the vault's memory of what left a topic: one line per entry, with the day, the topic,
why (``forgotten``, ``done``, ``expired: …``, ``edited, now ID``, ``superseded by ID: text``,
``compacted into ID``…) and the line as it was. Its format, read and written here; the store
appends to it (:meth:`memkit.store.store.Store.archive`)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..base.lazy_re import lazy
from .topic import LIST_MARKER_RE, Entry, text_hash

__all__ = ["ARCHIVE", "ARCHIVE_HEADER", "ArchiveItem", "ArchivedEntry", "parse_archive", "archive_line"]

ARCHIVE = "archive.md"
ARCHIVE_HEADER = (
    "# Archive\n\nEntries removed by `memkit forget` or superseded by a digest. "
    "Move a line back to its topic to undo.\n\n"
)


@dataclass(frozen=True)
class ArchiveItem:
    """A line leaving a topic for archive.md: the entry, its original text, and why."""

    entry: Entry
    original: str
    reason: str


@dataclass(frozen=True)
class ArchivedEntry:
    """One line of archive.md: when and from which topic an entry left, why, and the line itself."""

    day: str
    topic: str
    reason: str  #: ``forgotten``, ``done``, ``expired: …``, ``edited, now ID``, ``superseded by ID: text``…
    original: str  #: the entry's line as it was in its topic

    @property
    def text(self) -> str:
        """The entry's text (the line without its list marker)."""
        return LIST_MARKER_RE.sub("", self.original, count=1)

    @property
    def id(self) -> str:
        """The id the entry had."""
        return text_hash(self.text)[:8]

    @property
    def successor(self) -> str | None:
        """The id of the entry that replaced it (an edit, a compaction, a digest update), if any."""
        m = _POINTER_RE.match(self.reason)
        return m.group(1) if m else None


_ARCHIVE_RE = lazy(r"^- (\d{4}-\d{2}-\d{2}) from (\S+) \((.*?)\): (.*)$")
_ARCHIVE_LONG_RE = lazy(r"^- (\d{4}-\d{2}-\d{2}) from (\S+) \((superseded by .*)\): ((?:[-*+]|\d{1,9}[.)]) .*)$")
_POINTER_RE = lazy(r"^(?:edited, now|compacted into|superseded by|replaced by) ([0-9a-f]{8})\b")


def parse_archive(text: str) -> list[ArchivedEntry]:
    """The entries of archive.md, oldest first (lines that are not archive entries are skipped)."""
    out = []
    for line in text.splitlines():
        m = _ARCHIVE_LONG_RE.match(line) or _ARCHIVE_RE.match(line)
        if m:
            out.append(ArchivedEntry(m.group(1), m.group(2), m.group(3), m.group(4)))
    return out


def archive_line(item: ArchiveItem, now: datetime) -> str:
    """The archive.md line of an item: ``- 2026-02-12 from cooking (forgotten): - the line``."""
    return f"- {now.date().isoformat()} from {item.entry.topic} ({item.reason}): {item.original}"
