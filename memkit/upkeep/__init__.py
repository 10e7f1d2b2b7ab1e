"""Memory that ages well: tidy, edits with history, follow-ups, compaction, statistics, the checks, and the scheduled jobs (``vault.upkeep``: :class:`Upkeep`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .check import CheckReport, Finding, check_vault
    from .schedule import UpkeepReport
    from .service import Upkeep
    from .upkeep import ChangeReport, FollowUp, HistoryStep, TidyReport, Versions, edit_entry, history, pending

__all__ = ["ChangeReport", "CheckReport", "Finding", "FollowUp", "HistoryStep", "TidyReport", "Upkeep", "UpkeepReport", "Versions",
           "check_vault", "edit_entry", "history", "pending"]

__getattr__, __dir__ = face(__name__, {
    ".check": "CheckReport Finding check_vault",
    ".schedule": "UpkeepReport",
    ".service": "Upkeep",
    ".upkeep": "ChangeReport FollowUp HistoryStep TidyReport Versions edit_entry history pending",
})
