"""What a digest did (:class:`DigestReport`) and what was digested before: ``.memkit/digested.json``
records each transcript's hash and its messages' (a conversation captured again once it went on is
read from where the last digest ended)."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from ..base.fsutil import atomic_write, file_lock
from ..formats.transcript import Message
from ..store import Store
from .supersede import MAX_SUPERSEDES

__all__ = ["DigestReport", "digested_path", "digested_prefix", "load_digested", "messages_sha", "remember",
           "transcript_sha"]


@dataclass
class DigestReport:
    """What a digest wrote where, what it skipped and why."""

    transcript: str
    sha: str
    written: list[tuple[str, str]] = field(default_factory=list)  #: (topic, entry line)
    skipped: list[tuple[str, str]] = field(default_factory=list)  #: (text, reason)
    superseded: list[tuple[str, str, str]] = field(default_factory=list)  #: (topic, old text, new text)
    #: (topic, old text, new text, why kept): entries the LLM called outdated that the new one does not bear on
    refused: list[tuple[str, str, str, str]] = field(default_factory=list)
    many_supersedes: bool = False  #: a dry run: more than MAX_SUPERSEDES; the real digest stops and asks
    judged: list[tuple[str, str]] = field(default_factory=list)  #: (entry line, why it matters that much)
    new_topics: list[str] = field(default_factory=list)
    split: list[str] = field(default_factory=list)  #: topics split afterwards
    already_digested: bool = False
    dry_run: bool = False
    diff: str = ""
    read_from: int = 0  #: messages skipped as digested before (a conversation that went on)
    count: int = 0  #: messages in the conversation
    prefix: str = ""  #: :func:`messages_sha` of them
    redacted: int = 0  #: secrets replaced by ``[redacted]`` in the conclusions (docs/privacy.md)
    facts: list[dict[str, Any]] = field(default_factory=list)  #: keyed facts set: {key, value, old, changed, id}

    def to_dict(self) -> dict[str, Any]:
        return {
            "transcript": self.transcript, "sha": self.sha, "already_digested": self.already_digested,
            "dry_run": self.dry_run, "read_from": self.read_from,
            "written": [{"topic": t, "line": line} for t, line in self.written],
            "skipped": [{"text": t, "reason": r} for t, r in self.skipped],
            "superseded": [{"topic": t, "old": o, "new": n} for t, o, n in self.superseded],
            "refused": [{"topic": t, "old": o, "new": n, "why": w} for t, o, n, w in self.refused],
            "judged": [{"line": line, "why": why} for line, why in self.judged],
            "new_topics": self.new_topics, "split": self.split, "diff": self.diff, "redacted": self.redacted,
            "facts": self.facts,
        }

    def summary(self) -> str:
        if self.already_digested:
            return f"{self.transcript}: already digested; nothing added"
        verb = "would write" if self.dry_run else "wrote"
        parts = [f"{self.transcript}: {verb} {len(self.written)} entr{'y' if len(self.written) == 1 else 'ies'}"]
        if self.read_from:
            parts[0] += f" from the {self.count - self.read_from} message(s) after the {self.read_from} digested before"
        if self.superseded:
            parts.append(f"archived {len(self.superseded)} outdated")
        if self.many_supersedes:
            parts.append(f"more than {MAX_SUPERSEDES} outdated: the digest stops and asks for --allow-many-supersedes")
        if self.refused:
            parts.append(f"kept {len(self.refused)} the LLM called outdated (not outdated by anything said here)")
        if self.skipped:
            parts.append(f"skipped {len(self.skipped)}")
        if self.new_topics:
            parts.append(f"new topic(s): {', '.join(self.new_topics)}")
        if self.redacted:
            parts.append(f"{self.redacted} secret{'' if self.redacted == 1 else 's'} redacted")
        if any(f["changed"] for f in self.facts):
            parts.append("set " + ", ".join(f"{f['key']}: {f['value']}" for f in self.facts if f["changed"]))
        return ", ".join(parts)

def transcript_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

def digested_path(store: Store) -> Path:
    return store.state_dir / "digested.json"

def load_digested(store: Store) -> dict[str, Any]:
    """The transcripts digested so far: sha -> {transcript, at, added}."""
    try:
        data = json.loads(digested_path(store).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}

def messages_sha(messages: Sequence[Message]) -> str:
    """A hash of the messages themselves (their roles and texts, whatever file format held them)."""
    data = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", errors="surrogatepass")).hexdigest()

def digested_prefix(digested: dict[str, Any], messages: Sequence[Message]) -> int:
    """How many of ``messages``, from the first, a digest already read: the conversation captured
    again once it went on (0: none; ``len(messages)``: all of it)."""
    sizes = sorted({int(r["messages"]) for r in digested.values() if isinstance(r, dict)
                    and isinstance(r.get("messages"), int) and 0 < r["messages"] <= len(messages)}, reverse=True)
    prefixes = {r.get("prefix") for r in digested.values() if isinstance(r, dict)}
    return next((n for n in sizes if messages_sha(messages[:n]) in prefixes), 0)

def remember(store: Store, report: DigestReport, now: datetime) -> None:
    """Record the transcript as digested: its hash, and its messages' count and hash (a longer
    capture of the same conversation is then read from where this one ended); a file inside the
    vault, its path (``memkit why`` reads it again)."""
    path = digested_path(store)
    with file_lock(store.state_dir / "digested.lock"):
        data = load_digested(store)
        data[report.sha] = {"transcript": os.path.basename(report.transcript), "at": now.isoformat(),
                            "added": len(report.written), "messages": report.count, "prefix": report.prefix}
        where = Path(report.transcript).resolve()
        if where.is_file() and store.is_inside(where):  # where `memkit why` finds it again
            data[report.sha]["path"] = store.rel(where)
        atomic_write(path, json.dumps(data, indent=1, ensure_ascii=False))
