"""index.txt: the recent-topics index (``2026-02-12T14:30:00|cooking|rice recipes``, newest first)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


@dataclass(frozen=True)
class RecentTopic:
    """One line of index.txt."""

    updated: datetime
    topic: str
    summary: str

    def to_dict(self) -> dict[str, str]:
        """``{"updated", "topic", "summary"}`` as ``memkit recent --json`` prints it."""
        return {"updated": self.updated.isoformat(), "topic": self.topic, "summary": self.summary}

    def line(self) -> str:
        summary = " ".join(self.summary.replace("|", "/").split())
        return f"{self.updated.strftime(TIME_FORMAT)}|{self.topic}|{summary}"


def parse_recent(text: str) -> list[RecentTopic]:
    """Parse index.txt; lines that are not ``time|topic|summary`` are ignored."""
    items = []
    for raw in text.splitlines():
        parts = raw.strip().split("|", 2)
        if len(parts) < 2:
            continue
        try:
            when = datetime.strptime(parts[0].strip(), TIME_FORMAT)
        except ValueError:
            continue
        items.append(RecentTopic(when, parts[1].strip(), parts[2].strip() if len(parts) > 2 else ""))
    return items


def render_recent(items: Iterable[RecentTopic], limit: int) -> str:
    """index.txt text: one line per topic, newest first, at most ``limit`` lines."""
    seen: dict[str, RecentTopic] = {}
    for item in sorted(items, key=lambda r: r.updated, reverse=True):  # stable: ties keep their order
        seen.setdefault(item.topic, item)
    lines = [item.line() for item in list(seen.values())[:limit]]
    return "".join(line + "\n" for line in lines)


def relative_time(then: datetime, now: datetime | None = None) -> str:
    """Human relative time: ``just now``, ``5 minutes ago``, ``yesterday``, ``3 weeks ago``."""
    now = now or datetime.now()
    seconds = (now - then).total_seconds()
    if seconds < 0:
        return "in the future"
    if seconds < 60:
        return "just now"
    minutes = int(seconds // 60)
    if minutes < 60:
        return _plural(minutes, "minute")
    hours = minutes // 60
    if hours < 24:
        return _plural(hours, "hour")
    days = hours // 24
    if days == 1:
        return "yesterday"
    if days < 14:
        return _plural(days, "day")
    if days < 60:
        return _plural(days // 7, "week")
    if days < 365:
        return _plural(days // 30, "month")
    return _plural(days // 365, "year")


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'} ago"
