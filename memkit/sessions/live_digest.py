"""A conversation that never goes idle (an always-on voice assistant) digested as it goes: every
``digest_every_messages`` new messages (memkit.yaml) the messages the LLM has not seen yet are
digested into memory entries, as ``memkit digest`` does a transcript.

How far each session was digested is derived data in ``.memkit/session-digest.json``: per session
id, the time of the last message digested and the hashes of the messages digested at that very
second (``{"upto": "2026-11-24T10:05:00Z", "at_upto": [...], "messages": 40, "at": ...}``). The
messages after that mark are the new ones; messages a compression condensed are older than the
mark, so aging never makes them new again. Losing the file only means the next digest reads the
whole session again; the digest then adds nothing twice (its near-duplicate check).

Two writers saving messages at once digest once: the digest holds ``.memkit/session-digest.lock``
(taken without waiting; whoever does not get it leaves the batch to the holder or the next
message). A service-layer module: files only; the digest itself is the caller's callback.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..base.fsutil import atomic_write, file_lock
from ..errors import LLMError, MemkitError, VaultLocked
from ..formats.session import Session, SessionMessage, format_time, now_utc, time_key
from .folder import Sessions

log = logging.getLogger("memkit")

__all__ = ["STATE", "Digested", "new_messages", "digest_new", "digest_quietly", "mark_digested", "to_jsonl"]

STATE = "session-digest.json"  #: under .memkit/
LOCK = "session-digest.lock"
TAIL_CHARS = 4096  #: a session's end read first (plus 256 a message due) to find its new messages; more if needed


@dataclass
class Digested:
    """One batch of a session's messages digested."""

    session: str
    messages: int  #: how many new messages were sent to the LLM
    added: int  #: memory entries written
    report: Any = None  #: the digest's own report

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "messages": self.messages, "added": self.added}


def _key(m: SessionMessage) -> str:
    return hashlib.sha256(f"{m.role}\0{m.content}".encode("utf-8", errors="surrogatepass")).hexdigest()[:12]


def _load(state_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((state_dir / STATE).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # derived data: the next digest reads the whole session


def new_messages(state_dir: Path, session: Session) -> list[SessionMessage]:
    """The messages of ``session`` not digested yet (after its mark), in time order."""
    mark = _load(state_dir).get(session.id)
    if not isinstance(mark, dict) or not isinstance(mark.get("upto"), str):
        return list(session.messages)
    upto = time_key(mark["upto"])
    seen = set(mark.get("at_upto") or [])
    return [m for m in session.messages if time_key(m.time) > upto or (time_key(m.time) == upto and _key(m) not in seen)]


def _mark(state_dir: Path, session: Session, done: Sequence[SessionMessage], now: str) -> None:
    data = _load(state_dir)
    last = max(time_key(m.time) for m in done)
    old = data.get(session.id) if isinstance(data.get(session.id), dict) else {}
    at_last = [_key(m) for m in done if time_key(m.time) == last]
    if isinstance(old, dict) and old.get("upto") and time_key(str(old["upto"])) == last:
        at_last += [k for k in old.get("at_upto") or [] if k not in at_last]
    data[session.id] = {"upto": format_time(last), "at_upto": at_last,
                        "messages": int(old.get("messages") or 0) + len(done) if isinstance(old, dict) else len(done),
                        "at": now}
    state_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(state_dir / STATE, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def to_jsonl(messages: Sequence[SessionMessage]) -> str:
    """Messages as the JSONL a digest reads."""
    return "".join(json.dumps({"role": m.role, "content": m.content}, ensure_ascii=False) + "\n" for m in messages)


def digest_new(sessions: Sessions, state_dir: Path, session_id: str, every: int,
               digest: Callable[[str, str], Any], *, force: bool = False, now: Any = None) -> Digested | None:
    """Digest ``session_id``'s new messages when there are at least ``every`` (any, with
    ``force``); None when not due, or when another writer is digesting it right now.

    :param digest: called with (JSONL of the new messages, a name for reports); returns the digest's
        report (its ``written`` counts the entries added).
    :raises LLMError, MemkitError: from the digest (nothing is marked then).
    """
    try:
        with file_lock(state_dir / LOCK, timeout=0):
            path, archived = sessions.find(session_id)
            chars = TAIL_CHARS + every * 256
            while True:  # only the end of a long session is read: the new messages are there
                session, earlier = sessions.load_tail(path, chars, archived)
                new = new_messages(state_dir, session)
                if not earlier or len(new) < len(session.messages):
                    break
                chars *= 4
            if not new or (len(new) < every and not force):
                return None
            total = earlier + len(session.messages)
            report = digest(to_jsonl(new), f"{session.file} (messages {total - len(new) + 1}-{total})")
            _mark(state_dir, session, new, format_time(now_utc(now)))
            added = len(getattr(report, "written", []) or [])
            return Digested(session.id, len(new), added, report)
    except VaultLocked:
        return None


def mark_digested(state_dir: Path, session: Session, *, now: Any = None, wait: float = 10.0) -> int:
    """Record the messages of ``session`` not digested yet as digested (the whole session was
    just digested by hand): the automatic digest then starts after them. How many were marked;
    none when a digest of new messages held the mark for ``wait`` seconds (a warning: it may send
    them again, which adds nothing twice)."""
    try:
        with file_lock(state_dir / LOCK, timeout=wait):
            new = new_messages(state_dir, session)
            if new:
                _mark(state_dir, session, new, format_time(now_utc(now)))
            return len(new)
    except VaultLocked:
        log.warning("session %s: digested, but an automatic digest held its mark; it may send these messages "
                    "again (adding nothing twice)", session.id)
        return 0


def digest_quietly(sessions: Sessions, state_dir: Path, session_id: str, every: int,
                   digest: Callable[[str, str], Any]) -> Digested | None:
    """:func:`digest_new` for a message just saved: a failure is logged, never raised (the
    message is saved; the next message or ``memkit upkeep`` tries again)."""
    with contextlib.suppress(VaultLocked):
        try:
            return digest_new(sessions, state_dir, session_id, every, digest)
        except (LLMError, MemkitError) as exc:
            log.warning("session %s: digest of the new messages failed (%s); tried again later", session_id, exc)
    return None
