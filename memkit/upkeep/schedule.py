"""The scheduled jobs: what ``memkit upkeep`` runs at once and ``memkit watch`` once a day.

Jobs, in order, each reporting one line of what it did:

- ``tidy``: expired entries move to archive.md (:func:`memkit.upkeep.upkeep.tidy`).
- ``session-digest``: a session with ``digest_every_messages`` new messages (memkit.yaml; 0: off)
  is digested, only what the LLM has not seen (:mod:`memkit.sessions.live_digest`); so is a session about
  to be compressed, whatever its count, so aging never drops what was not digested.
- ``session-aging``: sessions idle ``session_summary_days`` become a summary, ``session_core_days``
  a core memory; the raw conversation is kept in ``sessions/archive/raw/``
  (:mod:`memkit.sessions.aging`).
- ``session-prune``: sessions idle longer than ``expire: conversation`` move to
  ``sessions/archive/``.
- ``distill``: after ``distill_after`` new conclusions (memkit.yaml; counted from the digests
  recorded in ``.memkit/digested.json`` since the last rewrite) the pinned profile is distilled
  again: written at once with ``distill_apply: true``, else kept as a proposal in
  ``.memkit/review/profile.json`` that ``memkit distill --proposed`` shows and applies as it
  was reviewed (no second LLM call). Without an LLM the job is skipped and says so.

What the jobs last did is derived data in ``.memkit/upkeep.json`` (last run; the last rewrite of
the profile); losing it only makes the next run count from scratch. Every function takes the
clock as an argument: tests and the watcher inject it.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from ..base.fsutil import atomic_write, file_lock
from ..digest import load_digested
from ..errors import LLMError, MemkitError
from ..llm import LLM
from ..sessions import Sessions, age_sessions, digest_new, due_stage, new_messages
from ..store import Store
from .upkeep import ChangeReport, distill, propose_profile, tidy

log = logging.getLogger("memkit")

__all__ = ["UpkeepReport", "Job", "run_upkeep", "upkeep_due", "load_proposal", "apply_proposal", "PROPOSAL"]

STATE = "upkeep.json"
PROPOSAL = "review/profile.json"  #: under .memkit/: the profile rewrite waiting for review
TIME = "%Y-%m-%dT%H:%M:%S"


@dataclass
class Job:
    """One job's outcome."""

    name: str
    did: str  #: one line: what it did, or why it did nothing
    changed: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.name, "did": self.did, "changed": self.changed, **self.details}


@dataclass
class UpkeepReport:
    """What ``memkit upkeep`` did."""

    at: datetime
    jobs: list[Job] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "jobs": [j.to_dict() for j in self.jobs]}

    def lines(self) -> list[str]:
        return [f"{j.name}: {j.did}" for j in self.jobs]


def run_upkeep(store: Store, llm: LLM | None, *, now: datetime | None = None,
               digest: Callable[[str, str], Any] | None = None) -> UpkeepReport:
    """Run every scheduled job once (see the module docstring).

    :param now: the moment (naive: local time).
    :param digest: digests a session's new messages: called with (JSONL, a name); None: not done.
    """
    now = (now or datetime.now()).replace(microsecond=0)
    report = UpkeepReport(now)
    with file_lock(store.state_dir / "upkeep.lock"):
        state = _load(store)
        sessions = Sessions(store.root, store.state_dir, store.config)
        report.jobs.append(_tidy(store, now))
        report.jobs.append(_session_digest(store, sessions, llm, digest, now))
        report.jobs.append(_session_aging(store, sessions, llm, now))
        report.jobs.append(_session_prune(store, sessions, now))
        report.jobs.append(_distill(store, llm, now, state))
        state["last_run"] = now.strftime(TIME)
        _save(store, state)
    return report


def upkeep_due(store: Store, now: datetime) -> bool:
    """Whether the daily run is due: not run yet today, and ``upkeep_hour`` has come."""
    last = _load(store).get("last_run")
    if isinstance(last, str) and last[:10] >= now.date().isoformat():
        return False
    return now.hour >= store.config.upkeep_hour


def _tidy(store: Store, now: datetime) -> Job:
    report = tidy(store, today=now.date())
    n = len(report.expired)
    if not n:
        return Job("tidy", "nothing has expired")
    return Job("tidy", f"{n} expired entr{'y' if n == 1 else 'ies'} moved to archive.md", True,
               {"expired": [dict(e.to_dict(), reason=r) for e, r in report.expired]})


def _session_digest(store: Store, sessions: Sessions, llm: LLM | None, digest: Callable[[str, str], Any] | None,
                    now: datetime) -> Job:
    every = store.config.digest_every_messages
    if every <= 0:
        return Job("session-digest", "off (digest_every_messages: 0)")
    config = store.config
    due: list[tuple[str, bool]] = []
    for path in sessions.paths():
        try:
            session = sessions.load_path(path)
        except MemkitError:
            continue
        new = new_messages(store.state_dir, session)
        aging = due_stage(session, now.astimezone(), config.session_summary_days, config.session_core_days)
        if len(new) >= every or (new and aging is not None):
            due.append((session.id, len(new) < every))
    if not due:
        return Job("session-digest", f"no session has {every} new messages")
    if llm is None or digest is None:
        return Job("session-digest", f"{len(due)} session(s) due but no LLM is configured: skipped")
    done: list[dict[str, Any]] = []
    failed: list[str] = []
    for sid, force in due:
        try:
            result = digest_new(sessions, store.state_dir, sid, every, digest, force=force, now=now.astimezone())
        except (LLMError, MemkitError) as exc:
            failed.append(f"{sid}: {exc}")
            continue
        if result is not None:
            done.append(result.to_dict())
    did = ", ".join(f"{d['session']} ({d['messages']} new messages, {d['added']} memories)" for d in done)
    did = f"digested {did}" if done else "nothing digested"
    if failed:
        did += f"; failed: {failed[0]}" + (f" (and {len(failed) - 1} more)" if len(failed) > 1 else "")
    return Job("session-digest", did, bool(done), {"digested": done})


def _session_aging(store: Store, sessions: Sessions, llm: LLM | None, now: datetime) -> Job:
    config = store.config
    result = age_sessions(sessions, llm, now=now.astimezone(), summary_days=config.session_summary_days,
                          core_days=config.session_core_days, lock=store.lock())
    return Job("session-aging", result.line(), bool(result.done),
               {"compressed": result.done, "due": result.due, "too_short": result.short,
                "failed": [{"file": f, "why": w} for f, w in result.failed]})


def _session_prune(store: Store, sessions: Sessions, now: datetime) -> Job:
    with store.lock():
        pruned = sessions.prune(now=now.astimezone())
    if pruned.days is None:
        return Job("session-prune", "off (expire: conversation: never)")
    n = len(pruned.sessions)
    if not n:
        return Job("session-prune", f"no session idle over {pruned.days} days")
    return Job("session-prune", f"{n} session{'' if n == 1 else 's'} idle over {pruned.days} days moved to "
               "sessions/archive/", True, {"pruned": [i.to_dict() for i in pruned.sessions]})


def _distill(store: Store, llm: LLM | None, now: datetime, state: dict[str, Any]) -> Job:
    every = store.config.distill_after
    if every <= 0:
        return Job("distill", "off (distill_after: 0)")
    since = str(state.get("distilled") or "")
    new = sum(int(d.get("added") or 0) for d in load_digested(store).values()
              if isinstance(d, dict) and str(d.get("at") or "") > since)
    if new < every:
        return Job("distill", f"not due: {new} of {every} new conclusions since the last rewrite", False,
                   {"new_conclusions": new})
    if llm is None:
        return Job("distill", f"due ({new} new conclusions) but no LLM is configured: skipped", False,
                   {"new_conclusions": new})
    try:
        lines = propose_profile(store, llm)
        if store.config.distill_apply:
            change = distill(store, llm, lines=lines)
            did = f"profile rewritten after {new} new conclusions: +{len(change.added)} -{len(change.removed)}"
        else:
            change = distill(store, llm, lines=lines, dry_run=True)
            _write_proposal(store, lines, change, now)
            did = (f"profile rewrite proposed after {new} new conclusions: review it with "
                   "`memkit distill --proposed --dry-run`, apply it with `memkit distill --proposed`")
    except (LLMError, MemkitError) as exc:
        return Job("distill", f"failed: {exc}", False, {"new_conclusions": new})
    state["distilled"] = now.strftime(TIME)
    return Job("distill", did, True, {"new_conclusions": new, "diff": change.diff})


def _write_proposal(store: Store, lines: list[str], change: ChangeReport, now: datetime) -> None:
    path = store.state_dir / PROPOSAL
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"at": now.strftime(TIME), "lines": lines, "diff": change.diff},
                                  indent=1, ensure_ascii=False) + "\n")


def load_proposal(store: Store) -> dict[str, Any] | None:
    """The profile rewrite waiting for review (``at``, ``lines``, ``diff``), or None."""
    path = store.state_dir / PROPOSAL
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise MemkitError(f"{store.rel(path)} cannot be read ({exc}); delete it and run `memkit upkeep` again") from exc
    if not isinstance(data, dict) or not isinstance(data.get("lines"), list) or \
            not all(isinstance(x, str) for x in data["lines"]):
        raise MemkitError(f"{store.rel(path)} is not a profile proposal; delete it and run `memkit upkeep` again")
    return data


def apply_proposal(store: Store, *, dry_run: bool = False) -> ChangeReport:
    """Write the proposed profile (as it was proposed: no LLM is asked); the proposal goes.

    :raises MemkitError: when there is no proposal.
    """
    data = load_proposal(store)
    if data is None:
        raise MemkitError("no profile rewrite is waiting for review (`memkit upkeep` proposes one after "
                          "distill_after new conclusions; `memkit distill` asks for one now)")
    change = distill(store, None, lines=data["lines"], dry_run=dry_run)
    if not dry_run:
        (store.state_dir / PROPOSAL).unlink(missing_ok=True)
    return change


def _state_path(store: Store) -> Path:
    return store.state_dir / STATE


def _load(store: Store) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(store).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}  # derived data: the next run counts from scratch


def _save(store: Store, state: dict[str, Any]) -> None:
    try:
        atomic_write(_state_path(store), json.dumps(state, indent=1) + "\n")
    except OSError as exc:
        log.warning("could not record the upkeep run in %s (%s)", store.rel(_state_path(store)), exc)
