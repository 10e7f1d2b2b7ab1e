"""The derived index under .memkit/: the SQLite sidecar, the .npy matrix, the in-memory view, and the judge's vectors."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .columns import column_mask, tag_mask
    from .index import Index
    from .judge_vectors import JUDGE_DIR, JudgeVectors
    from .report import IndexReport, Progress
    from .sources import SessionSource
    from .view import NO_DAY, TRIM_MIN_ROWS, IndexView, trim_memory

__all__ = ["column_mask", "tag_mask", "Index", "IndexReport", "IndexView", "JUDGE_DIR", "JudgeVectors", "NO_DAY", "Progress", "SessionSource", "TRIM_MIN_ROWS", "trim_memory"]

__getattr__, __dir__ = face(__name__, {
    ".columns": "column_mask tag_mask",
    ".index": "Index",
    ".report": "IndexReport Progress",
    ".judge_vectors": "JUDGE_DIR JudgeVectors",
    ".sources": "SessionSource",
    ".view": "IndexView NO_DAY TRIM_MIN_ROWS trim_memory",
})
