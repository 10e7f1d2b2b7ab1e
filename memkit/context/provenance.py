"""Why memkit believes something: ``memkit why ID`` shows the lines of the conversation a memory
came from.

A digest ends each entry it writes with ``(from SOURCE DAY)`` (:func:`memkit.formats.fields.provenance_marker`):
a session's id (its first 8 characters) or a transcript's file name, and the conversation's day.
:func:`why` finds the entry (current, or in archive.md; an edited entry without the marker asks
the versions before it), then the conversation:

- a session in ``sessions/`` or ``sessions/archive/`` (its id, or a prefix of it, on that day), and
  the raw conversation of an aged session in ``sessions/archive/raw/`` (the session file then
  holds only its summary);
- a transcript in ``inbox/done/`` (where a digested one goes; ``NAME-2.txt``… when one of that name
  was there already), still in ``inbox/``, or where it lay in the vault when ``memkit digest FILE``
  read it (``.memkit/digested.json`` keeps that path; a file outside the vault is never read: the
  digest keeps a copy of it in ``inbox/done/``, redacted, which digested.json names instead).

Then it shows the messages that best support the entry — most of the entry's words in common
(:func:`memkit.formats.words.terms`), at most :data:`MAX_SHOWN`, and none that shares less than half
of the best one's — each with the line before it as context, with their line numbers in the file.
A service-layer module: reads files, writes nothing (what an assistant answers "why do you think
I'm vegetarian?" with: the ``why_memory`` tool).
"""
from __future__ import annotations

import glob
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..digest import load_digested
from ..errors import MemkitError, ProvenanceNotFound
from ..formats.fields import provenance, strip_provenance
from ..formats.lifecycle import core_text
from ..formats.session import NAME_RE, RAW_DIR
from ..formats.transcript import parse_transcript
from ..formats.words import terms
from ..sessions import Sessions
from ..store import Store
from ..upkeep import history

__all__ = ["Why", "WhyLine", "why", "MAX_SHOWN"]

MAX_SHOWN = 3  #: messages shown at most
CUT = 240  #: characters of a message shown on its line


@dataclass(frozen=True)
class WhyLine:
    """One line shown: a message that supports the entry (``match``), or the one before it (context)."""

    line: int  #: its line in the file (1-based)
    role: str
    text: str
    match: bool

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "role": self.role, "text": self.text, "match": self.match}


@dataclass
class Why:
    """Where a memory came from, and the lines of that conversation that say it."""

    id: str
    text: str  #: the entry's text
    topic: str
    status: str  #: ``current``, or why it left (archive.md)
    source: str  #: the marker's source: a session id's beginning or a transcript's name
    day: str | None  #: the marker's day
    file: str  #: the conversation's file, relative to the vault
    kind: str  #: ``session``, ``raw`` (an aged session's raw archive) or ``transcript``
    lines: list[WhyLine] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "topic": self.topic, "status": self.status, "source": self.source,
                "day": self.day, "file": self.file, "kind": self.kind, "lines": [w.to_dict() for w in self.lines]}

    def render(self) -> str:
        what = {"session": "session", "raw": "the raw archive of session", "transcript": "transcript"}[self.kind]
        status = "" if self.status == "current" else f" [{self.status}]"
        head = [f"{self.id} ({self.topic}){status}: {self.text}",
                f"from {what} {self.source}{' of ' + self.day if self.day else ''}: {self.file}"]
        if not self.lines:
            return "\n".join(head + ["  (no message of it shares the memory's words)"])
        width = max(len(str(w.line)) for w in self.lines)
        return "\n".join(head + [f"{'>' if w.match else ' '} {w.line:>{width}}  {w.role}: {w.text}"
                                 for w in self.lines])


@dataclass(frozen=True)
class _Row:
    line: int
    role: str
    content: str


def why(store: Store, ref: str) -> Why:
    """Where the entry ``ref`` (an id, or its first 4+ characters; current or archived) came from.

    :raises memkit.errors.EntryNotFound: no such entry.
    :raises ProvenanceNotFound: it names no conversation (written by hand, or before memkit recorded
        where memories came from), or its conversation is gone (what was looked for is named).
    """
    sessions = Sessions(store.root, store.state_dir, store.config)
    steps = history(store, ref)
    wanted = ref.strip().lower()
    at = next((i for i, s in enumerate(steps) if s.id.startswith(wanted)), len(steps) - 1)
    step = steps[at]
    marked = next((provenance(s.text) for s in reversed(steps[:at + 1]) if provenance(s.text)), None)
    if marked is None:
        raise ProvenanceNotFound(f"entry {step.id} names no conversation: this memory was written by hand or "
                                 "before provenance was recorded (a digest ends each entry with `(from SOURCE DAY)`)")
    source, day = marked
    if "/" in source or "\\" in source or source.startswith("."):  # a marker a person wrote: never a path
        raise ProvenanceNotFound(f"entry {step.id} came from {source!r}, which names no session or transcript file")
    looked: list[str] = []
    found = _session_rows(store, sessions, source, day, looked) or \
        (_session_rows(store, sessions, source, None, []) if day and _undated(steps[:at + 1]) else []) or \
        _transcript_rows(store, source, looked)
    if not found:
        raise ProvenanceNotFound(f"entry {step.id} came from {source}{' of ' + day if day else ''}, but that "
                                 f"conversation is gone: looked for {', '.join(looked)}")
    # the file that says it best (an aged session: its raw archive, or the messages saved since)
    scored = [(_best(rows, step.text), file, kind) for file, kind, rows in found]
    (score, lines), file, kind = max(scored, key=lambda x: x[0][0])
    return Why(step.id, step.text, step.topic, step.status, source, day, file, kind, lines)


def _undated(steps: list[Any]) -> bool:
    """Whether the marker says no day of its own (``(from 3f1c2a9e)``: the entry's date, which an
    edit since may have changed): the session is then looked for on any day too."""
    text = next((s.text for s in reversed(steps) if provenance(s.text)), "")
    return not re.search(r"\(from\s+[^\s()]+\s+\d{4}-\d{2}-\d{2}\)", text)


# ---- finding the conversation -----------------------------------------------------------------

def _session_rows(store: Store, sessions: Sessions, source: str, day: str | None,
                  looked: list[str]) -> list[tuple[str, str, list[_Row]]]:
    """The files of the session ``source`` (an id's beginning, on ``day``) with their messages: once
    it aged, its raw archive first, then the session file (the messages saved since)."""
    looked.append(f"a session {source}* of {day or 'any day'} in sessions/ and sessions/archive/ "
                  "(and its raw archive in sessions/archive/raw/)")
    paths: list[tuple[Path, bool]] = []
    for archived in (False, True):
        for path in sessions.paths(archived):
            m = NAME_RE.match(path.name)
            if m and (m.group(2).startswith(source) or path.name == source) and (day is None or m.group(1) == day
                                                                                 or path.name == source):
                paths.append((path, archived))
    raw_dir = sessions.archive_dir / RAW_DIR
    candidates: list[tuple[Path, str]] = []
    for path, _archived in paths[:1]:
        candidates.append((path, "session"))
        raw = sessions.raw_file(path)
        if raw is not None:
            candidates.insert(0, (raw, "raw"))
    if not paths and raw_dir.is_dir() and not raw_dir.is_symlink():  # the session is gone, its raw archive not
        for raw in sorted(raw_dir.glob(f"{glob.escape(day) if day else '*'}-{glob.escape(source)}*.md")):
            candidates.append((raw, "raw"))
            break
    return [(store.rel(p), kind, _session_file_rows(sessions, p)) for p, kind in candidates]


def _session_file_rows(sessions: Sessions, path: Path) -> list[_Row]:
    try:
        session = sessions.load_path(path, archived=True)
    except MemkitError:
        return []
    return [_Row(m.line + 1 if m.line else 0, m.role, m.content) for m in session.messages]


def _transcript_rows(store: Store, source: str, looked: list[str]) -> list[tuple[str, str, list[_Row]]]:
    """The messages of the transcript named ``source``: in inbox/done/ (or a ``NAME-N.ext`` there,
    the same name digested again), or still in inbox/."""
    inbox = store.inbox_dir
    name = Path(source)
    looked.append(f"{store.rel(inbox / 'done' / source)} and {store.rel(inbox / source)} (or where it was digested "
                  "in the vault)")
    if name.name != source or source.startswith("."):
        return []
    done = inbox / "done"
    paths = [done / source]
    if done.is_dir():
        paths += sorted(done.glob(f"{glob.escape(name.stem)}-[0-9]*{glob.escape(name.suffix)}"))
    paths.append(inbox / source)
    # a transcript digested where it lay in the vault (`memkit digest chat.txt`): .memkit/digested.json says where
    paths += [store.root / str(r["path"]) for r in load_digested(store).values()
              if isinstance(r, dict) and r.get("transcript") == source and isinstance(r.get("path"), str)]
    found = []
    for p in dict.fromkeys(paths):
        if p.is_file() and not p.is_symlink() and store.is_inside(p):
            found.append((store.rel(p), "transcript", _file_rows(p)))
    return found


def _file_rows(path: Path) -> list[_Row]:
    """A transcript's messages (as the digest read them) and the line each starts on."""
    try:
        data = path.read_bytes()
        messages = parse_transcript(data, path.name)
        lines = data.decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError, MemkitError):
        return []
    flat = [" ".join(line.split()) for line in lines]
    rows, at = [], 0
    for m in messages:
        probe = m.content[:40]
        escaped = json.dumps(probe)[1:-1], json.dumps(probe, ensure_ascii=False)[1:-1]
        line = next((i for i in range(at, len(flat)) if probe in flat[i] or any(e in flat[i] for e in escaped)), None)
        if line is not None:
            at = line + 1
        rows.append(_Row(line + 1 if line is not None else 0, m.role, m.content))
    return rows


# ---- the lines that say it --------------------------------------------------------------------

def _words(text: str) -> set[str]:
    return {w for w in terms(text) if not w.isdigit()}


def _best(rows: list[_Row], entry: str) -> tuple[int, list[WhyLine]]:
    """The messages that share most of the entry's words (see the module docstring), each after the
    message before it, in file order; and how many words the best one shares."""
    wanted = _words(core_text(strip_provenance(entry)))
    scored = [(len(wanted & _words(r.content)), i) for i, r in enumerate(rows)]
    scored = [(s, i) for s, i in scored if s > 0]
    if not scored:
        return 0, []
    top = max(s for s, _ in scored)
    chosen = sorted(sorted(scored, key=lambda x: (-x[0], rows[x[1]].role != "user", x[1]))[:MAX_SHOWN], key=lambda x: x[1])
    shown: dict[int, WhyLine] = {}
    for s, i in chosen:
        if 2 * s < top:
            continue
        if i > 0 and i - 1 not in shown:
            shown[i - 1] = _line(rows[i - 1], False)
        shown[i] = _line(rows[i], True)
    return top, [shown[i] for i in sorted(shown)]


def _line(row: _Row, match: bool) -> WhyLine:
    text = " ".join(row.content.split())
    return WhyLine(row.line, row.role, text if len(text) <= CUT else text[:CUT - 1] + "…", match)
