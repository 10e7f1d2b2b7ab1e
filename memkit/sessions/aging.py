"""Conversations that age: a saved session idle for ``session_summary_days`` (memkit.yaml, 3) is
condensed by the LLM into a summary with key points and emotional highlights (30-50 % of its size);
idle for ``session_core_days`` (7), into a core memory of 100-200 characters with its memory traces
(what is remembered clearly, vaguely, barely). ``memkit upkeep`` runs it (:mod:`memkit.upkeep.schedule`).

A compressed session file reads::

    ---
    id: lisbon
    created: 2026-11-24T10:03:12Z
    title: Lisbon trip
    stage: summary
    stage_at: 2026-11-27T04:00:00Z
    stage_ratio: 0.41
    raw: sessions/archive/raw/2026-11-24-lisbon.md
    updated: 2026-11-24T10:05:40Z
    ---
    # Lisbon trip

    ### summary · 2026-11-27T04:00:00Z · of=stage · covers=4 · sha=9b1e0c2d4a7f
    Maya is planning a week in Lisbon in March...

    Key points:
    - Booked TAP flight TP 571, March 3rd to 10th

- The header says the stage, when it was reached, the size of the stage text over the raw
  conversation's (message contents, in characters), where the raw conversation is, and the time of
  the last message it condensed. The stage text is plain text: a person may edit it, and the next
  stage is made from what they left (the core from the edited summary).
- **The raw conversation is never lost**: before the first compression the session file is copied
  byte for byte to ``sessions/archive/raw/<same name>`` (tracked in git like any vault file); the
  messages of a later compression (a session continued after it aged) are appended to it. Raw file
  plus the messages still in the session file are the whole conversation.
- The rewrite is atomic and holds the session file's lock (:meth:`memkit.sessions.folder.Sessions.rewrite`):
  a message saved while the LLM works is kept, after the stage text, and condensed by a later run.
  A file a person edited meanwhile is left alone (compressed by the next run).
- What the LLM wrote (summary, key points, core memory, traces) is redacted before it is written
  (:mod:`memkit.formats.redact`, memkit.yaml's ``redact:``): a secret said in the conversation and
  repeated by the LLM never lands in the session file.
- With no LLM nothing changes: the sessions due are only counted. A session whose messages hold
  fewer than :data:`MIN_CHARS` characters is too short to condense and stays as it is.

A service-layer module: sessions' files and the LLM.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ContextManager, Sequence

from ..errors import LLMError, MemkitError
from ..formats.session import (
    STAGE,
    Session,
    SessionMessage,
    SessionSummary,
    format_time,
    messages_sha,
    now_utc,
    parse_session,
    restage,
    time_key,
)
from ..llm import LLM, ask_json
from .folder import Sessions

log = logging.getLogger("memkit")

__all__ = ["STAGES", "AgingReport", "age_sessions", "due_stage", "MIN_CHARS"]

STAGES = ("summary", "core")  #: the stages after raw, in order
MIN_CHARS = 300  #: a conversation shorter than this (its messages' characters) is not condensed
CHUNK_CHARS = 24_000  #: the LLM reads a long conversation this much at a time
CORE_MAX = 200  #: a core memory's characters at most

SUMMARY_PROMPT = """\
You are the long-term memory of a personal assistant. A conversation between the user and the \
assistant ended {days} days ago; condense it into what is worth remembering: a short summary, the key \
points (decisions, facts about the user, names, numbers, dates, promises, open questions) and the \
emotional highlights (how the user felt, moments that mattered to them; an empty list when there \
were none). Write about {words} words in all: 30 to 50 percent of the conversation's length. Reply \
with JSON only: {{"summary": "...", "key_points": ["..."], "emotional_highlights": ["..."]}}"""

CORE_PROMPT = """\
You are the long-term memory of a personal assistant. A conversation between the user and the \
assistant ended {days} days ago; keep only its core, as a person remembers a talk from last week: \
one core memory of 100 to 200 characters, and the memory traces: what is remembered clearly, \
vaguely and barely (a few words each; empty lists allowed). Reply with JSON only: \
{{"core": "...", "clearly": ["..."], "vaguely": ["..."], "barely": ["..."]}}"""


@dataclass
class AgingReport:
    """What :func:`age_sessions` did (or, with no LLM, found due)."""

    done: list[dict[str, Any]] = field(default_factory=list)  #: {session, file, stage, ratio, raw}
    due: dict[str, int] = field(default_factory=dict)  #: stage -> sessions due (with no LLM: left)
    short: int = 0  #: sessions too short to condense
    failed: list[tuple[str, str]] = field(default_factory=list)  #: (session file, why)
    llm: bool = True  #: an LLM was configured

    def line(self) -> str:
        """One line: what was compressed, or why nothing was."""
        short = f"; {self.short} too short to condense" if self.short else ""
        failed = f"; {len(self.failed)} failed ({self.failed[0][0]}: {self.failed[0][1]})" if self.failed else ""
        if not self.llm and self.due:
            due = ", ".join(f"{n} to {stage}" for stage, n in self.due.items())
            return f"{sum(self.due.values())} due ({due}) but no LLM is configured: skipped{short}"
        if not self.done:
            return f"no conversation is due{short}{failed}"
        parts = [f"{d['session']} -> {d['stage']} ({d['ratio']:.0%} of its size)" for d in self.done]
        return f"{len(self.done)} compressed: {', '.join(parts)}; raw kept in sessions/archive/raw/{short}{failed}"


def due_stage(session: Session, now: datetime, summary_days: int, core_days: int) -> str | None:
    """The stage ``session`` should reach now (None: nothing to do): by the days since its last
    message; a session at that stage already is due again only when messages came after it."""
    if not session.messages and session.stage_block is None:
        return None
    idle = now_utc(now) - time_key(session.idle_since)
    target = "core" if core_days and idle >= timedelta(days=core_days) else \
        "summary" if summary_days and idle >= timedelta(days=summary_days) else None
    if target is None:
        return None
    if session.messages or session.stage_block is None:  # raw messages to condense
        return target
    rank = {None: 0, "summary": 1, "core": 2}
    return target if rank.get(target, 0) > rank.get(session.stage, 0) else None


def age_sessions(sessions: Sessions, llm: LLM | None, *, now: datetime, summary_days: int, core_days: int,
                 lock: ContextManager[Any] | None = None) -> AgingReport:
    """Bring every saved session (not the archived ones) to its stage (see the module docstring).

    :param now: the moment (aware; a naive one is UTC).
    :param lock: held around each rewrite (the vault's write lock), not while the LLM works.
    """
    report = AgingReport(llm=llm is not None)
    sessions.sweep_temp()  # what a compression killed mid-write left (raw/ included)
    for path, session in sessions.each("not aged"):
        stage = due_stage(session, now, summary_days, core_days)
        if stage is None:
            continue
        if _raw_chars(sessions, session, path) < MIN_CHARS:
            report.short += 1
            continue
        report.due[stage] = report.due.get(stage, 0) + 1
        if llm is None:
            continue
        try:
            report.done.append(_compress(sessions, path, session.id, stage, llm, now, lock))
        except (LLMError, MemkitError) as exc:
            report.failed.append((session.file, str(exc)))
    return report


def _raw_chars(sessions: Sessions, session: Session, path: Path) -> int:
    """The size of the whole conversation: its raw file's messages (once it aged) and its own."""
    size = sum(len(m.content) for m in session.messages)
    raw = sessions.raw_file(path) if session.stage_block is not None else None
    if raw is not None:
        kept = {(m.role, m.time) for m in session.messages}
        size += sum(len(m.content) for m in sessions.load_path(raw, archived=True).messages
                    if (m.role, m.time) not in kept)
    return size


def _compress(sessions: Sessions, path: Path, sid: str, stage: str, llm: LLM, now: datetime,
              lock: ContextManager[Any] | None) -> dict[str, Any]:
    base, stamp = sessions.read_for_rewrite(path)
    # parsed from the very bytes kept as raw and rewritten: a message appended after them is
    # neither condensed nor dropped (the rewrite carries it over)
    try:
        text = base.decode("utf-8")
    except UnicodeDecodeError:
        raise MemkitError("not valid UTF-8") from None
    session = parse_session(text, sessions.rel(path), sid)
    previous = session.stage_block.text if session.stage_block is not None else None
    days = max(0, (now_utc(now) - time_key(session.updated)).days)
    raw_size = _raw_chars(sessions, session, path)
    # the LLM's summary, core and traces go into a git-tracked file: never a secret (docs/privacy.md)
    condensed = sessions.config.redact.apply(_condense(llm, stage, previous, session.messages, days, raw_size)).text
    with lock if lock is not None else contextlib.nullcontext():
        raw = sessions.keep_raw(path, base, session.messages)
        covers = (session.stage_block.covers if session.stage_block is not None else 0) + len(session.messages)
        when = format_time(now_utc(now))
        ratio = round(len(condensed) / max(raw_size, 1), 2)
        fields = {"stage": stage, "stage_at": when, "stage_ratio": f"{ratio:g}", "raw": sessions.rel(raw),
                  "updated": session.updated}
        sha = messages_sha(session.messages) if session.messages or session.stage_block is None else \
            session.stage_block.sha  # the core of a summary condenses the same messages
        block = SessionSummary(condensed, when, covers, sha, STAGE)
        sessions.rewrite(path, restage(text, session.file, fields, block), base, stamp)
    return {"session": session.id, "file": session.file, "stage": stage, "ratio": ratio, "raw": sessions.rel(raw),
            "chars": len(condensed), "raw_chars": raw_size}


def _render(messages: Sequence[SessionMessage]) -> str:
    return "\n".join(f"{m.role}{' (' + m.name + ')' if m.name else ''}: {m.content}" for m in messages)


def _chunks(messages: Sequence[SessionMessage]) -> list[str]:
    out: list[str] = []
    part: list[SessionMessage] = []
    size = 0
    for m in messages:
        if part and size + len(m.content) > CHUNK_CHARS:
            out.append(_render(part))
            part, size = [], 0
        part.append(m)
        size += len(m.content) + 20
    if part:
        out.append(_render(part))
    return [c[-CHUNK_CHARS * 2:] for c in out]


def _condense(llm: LLM, stage: str, previous: str | None, messages: Sequence[SessionMessage], days: int,
              raw_size: int) -> str:
    """The stage text: the summary (made chunk by chunk, each from the note so far), or the core
    (from the summary so far: the previous stage text a person may have edited, or one made now)."""
    note = previous
    chunks = _chunks(messages)
    if stage == "summary" or len(chunks) > 1:
        words = max(15, int(raw_size * 0.4 / 6))
        for chunk in chunks:
            prompt = (f"What was remembered of it so far:\n{note}\n\nThe conversation since:\n{chunk}" if note else
                      f"The conversation:\n{chunk}")
            note = _summary(llm, SUMMARY_PROMPT.format(days=days, words=words), prompt)
        if stage == "summary":
            return note or ""
        chunks = []
    prompt = "\n\n".join(p for p in (f"What was remembered of it:\n{note}" if note else "",
                                     f"The conversation:\n{chunks[0]}" if chunks else "") if p)
    return _core(llm, CORE_PROMPT.format(days=days), prompt)


def _strings(value: Any, key: str) -> list[str]:
    items = value.get(key) or []
    if not isinstance(items, list):
        raise ValueError(f"{key!r} must be a list of strings")
    return [" ".join(str(x).split()) for x in items if str(x).strip()]


def _summary(llm: LLM, system: str, prompt: str) -> str:
    def check(value: Any) -> str:
        if not isinstance(value, dict) or not isinstance(value.get("summary"), str) or not value["summary"].strip():
            raise ValueError('expected {"summary": "...", "key_points": [...], "emotional_highlights": [...]}')
        text = value["summary"].strip()
        for title, key in (("Key points", "key_points"), ("Emotional highlights", "emotional_highlights")):
            items = _strings(value, key)
            if items:
                text += f"\n\n{title}:\n" + "\n".join(f"- {x}" for x in items)
        return text
    result: str = ask_json(llm, [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                           validate=check)
    return result


def _core(llm: LLM, system: str, prompt: str) -> str:
    def check(value: Any) -> str:
        if not isinstance(value, dict) or not isinstance(value.get("core"), str) or not value["core"].strip():
            raise ValueError('expected {"core": "...", "clearly": [...], "vaguely": [...], "barely": [...]}')
        core = " ".join(value["core"].split())
        if len(core) > CORE_MAX:  # a core memory is short: cut at a word
            core = core[:CORE_MAX - 1].rsplit(" ", 1)[0].rstrip(" ,;.") + "…"
        traces = [f"Remembered {key}: {'; '.join(items)}" for key in ("clearly", "vaguely", "barely")
                  if (items := _strings(value, key))]
        return core + ("\n\n" + "\n".join(traces) if traces else "")
    result: str = ask_json(llm, [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                           validate=check)
    return result
