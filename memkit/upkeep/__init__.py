"""Memory that ages well: tidy, edits with history, follow-ups, compaction, statistics, the checks, and the scheduled jobs."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .check import CheckReport, Finding, check_vault
    from .schedule import UpkeepReport, apply_proposal, run_upkeep, upkeep_due
    from .upkeep import (
        ChangeReport,
        FollowUp,
        HistoryStep,
        TidyReport,
        compact,
        distill,
        done,
        edit_entry,
        git_log,
        history,
        pending,
        stats,
        tidy,
    )

__all__ = ["ChangeReport", "CheckReport", "Finding", "FollowUp", "HistoryStep", "TidyReport", "UpkeepReport", "apply_proposal", "check_vault", "compact", "distill", "done", "edit_entry", "git_log", "history", "pending", "run_upkeep", "stats", "tidy", "upkeep_due"]

__getattr__, __dir__ = face(__name__, {
    ".check": "CheckReport Finding check_vault",
    ".schedule": "UpkeepReport apply_proposal run_upkeep upkeep_due",
    ".upkeep": "ChangeReport FollowUp HistoryStep TidyReport compact distill done edit_entry git_log history pending stats tidy",
})
