"""``vault.upkeep``: memory that ages well, one object (:class:`Upkeep`) as ``vault.conversations``
is for the sessions: expiry (``tidy``), follow-ups (``pending``, ``done``), versions (``history``,
``versions``, ``git_history``), the vault's problems (``check``), compaction and the profile (``compact``, ``distill``), the counts (``stats``), the
inbox's digest (``waiting_transcripts``, ``process_inbox``) and the scheduled jobs (``run``, ``due``).

Each verb is one call of :mod:`memkit.upkeep.upkeep`, :mod:`memkit.upkeep.schedule` or
:mod:`memkit.digest`, given what it needs from the vault's :class:`memkit.runtime.Runtime`.
"""
from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..digest import InboxResult, digest_text, process_inbox
from ..formats.topic import Entry
from ..llm import LLMChoice
from ..runtime import Runtime
from .check import CheckReport, check_vault
from .schedule import UpkeepReport, apply_proposal, run_upkeep, upkeep_due
from .upkeep import (
    ChangeReport,
    FollowUp,
    HistoryStep,
    TidyReport,
    Versions,
    compact,
    distill,
    done,
    git_log,
    history,
    pending,
    stats,
    tidy,
)

__all__ = ["Upkeep"]


class Upkeep:
    """The verbs of memory that ages (see the module docstring): ``vault.upkeep.tidy()``,
    ``vault.upkeep.pending()``, ``vault.upkeep.run()``…"""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    def __repr__(self) -> str:
        return f"Upkeep({str(self._rt.store.root)!r})"

    def tidy(self, *, dry_run: bool = False, today: date | None = None) -> TidyReport:
        """Move expired entries (their ``(until DATE)`` or their kind's lifetime) to archive.md."""
        report = tidy(self._rt.store, today=today, dry_run=dry_run)
        if not dry_run:
            self._rt.changed()
        return report

    def pending(self, *, today: date | None = None) -> list[FollowUp]:
        """The follow-ups (kind ``pending``), most urgent first."""
        return pending(self._rt.store, today=today)

    def done(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None) -> Entry:
        """Archive a follow-up as resolved (``done``); returns it."""
        entry = done(self._rt.store, self._rt.store.find(ref, match=match, topic=topic))
        self._rt.wrote(entry.topic)
        return entry

    def history(self, ref: str) -> list[HistoryStep]:
        """Every version of an entry, oldest first (``ref``: the id of any version)."""
        return history(self._rt.store, ref)

    def versions(self, ref: str) -> Versions:
        """Every version of an entry, oldest first, and the git log of the newest (``ref``: the id of
        any version): what ``memkit history``, the MCP tool ``memory_history`` and ``GET
        /history/{id}`` answer. :raises EntryNotFound: no version has that id."""
        steps = self.history(ref)
        return Versions(steps, self.git_history(steps[-1]) if steps else [])

    def git_history(self, step: HistoryStep) -> list[str]:
        """``git log`` lines of the commits that added or removed a version's text (when the vault
        is a git repository)."""
        return git_log(self._rt.store, step.text, step.topic)

    def check(self, *, fix: bool = False) -> CheckReport:
        """Every problem in the vault with file and line (see :mod:`memkit.upkeep.check`); ``fix``
        repairs the safe ones first (duplicates to archive.md, duplicate keys, index.txt, the index)."""
        report = check_vault(self._rt.store, self._rt.searcher, fix=fix)
        if fix:
            self._rt.changed()
        return report

    def stats(self) -> dict[str, Any]:
        """Counts: entries per topic and kind, follow-ups, expired entries, archive, index, inbox."""
        return stats(self._rt.store, self._rt.searcher)

    def compact(self, topic: str, *, before: date, llm: LLMChoice = "auto", dry_run: bool = False) -> ChangeReport:
        """Condense ``topic``'s entries dated before ``before`` into fewer, denser ones (LLM)."""
        report = compact(self._rt.store, self._rt.llm(llm), topic, before=before, dry_run=dry_run)
        if not dry_run:
            self._rt.changed()
        return report

    def distill(self, *, llm: LLMChoice = "auto", dry_run: bool = False, proposed: bool = False) -> ChangeReport:
        """Rewrite the pinned profile from the vault's durable entries (LLM).

        :param proposed: write the rewrite ``memkit upkeep`` proposed instead (as reviewed: no LLM
            call; the proposal goes once written).
        """
        store = self._rt.store
        report = apply_proposal(store, dry_run=dry_run) if proposed else \
            distill(store, self._rt.llm(llm), dry_run=dry_run)
        if not dry_run:
            self._rt.changed()
        return report

    def waiting_transcripts(self) -> list[Path]:
        """The transcripts in inbox/ waiting for a digest."""
        return self._rt.store.inbox.waiting()

    def process_inbox(self, *, llm: LLMChoice = "auto") -> list[InboxResult]:
        """Digest the transcripts in inbox/ that have been idle for ``session_timeout_minutes``
        (``llm``: ``"auto"`` memkit.yaml's, None none, or an LLM client)."""
        try:
            return process_inbox(self._rt.searcher, self._rt.llm(llm))
        finally:
            self._rt.changed()

    def run(self, *, now: datetime | None = None, llm: LLMChoice = "auto") -> UpkeepReport:
        """Run every scheduled job once: expiry tidy, sessions digested every
        ``digest_every_messages``, conversations aged (summary, core) and pruned, the profile's
        re-distillation when due (see :mod:`memkit.upkeep.schedule`)."""
        client = self._rt.llm(llm)

        def digest(text: str, name: str) -> Any:
            try:
                return digest_text(self._rt.searcher, text, client, name=name)
            finally:
                self._rt.changed()

        report = run_upkeep(self._rt.store, client, now=now, digest=digest)
        if any(j.changed for j in report.jobs):
            self._rt.changed()
        return report

    def due(self, now: datetime | None = None) -> bool:
        """Whether the daily upkeep is due (not run today, and ``upkeep_hour`` has come)."""
        return upkeep_due(self._rt.store, now or datetime.now())
