"""Finding memories: words (BM25) and vectors fused, the judge's second stage, and topic detection from the hits."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .hits import Hit, hit_at
    from .query import Mode, Query, Threshold
    from .related import Related, related_to
    from .route import detect_topic, is_confident, split_target
    from .safety import bears_on, is_safety_note
    from .searcher import Searcher

__all__ = ["Related", "related_to", "Hit", "Mode", "Query", "Searcher", "Threshold", "bears_on", "detect_topic", "hit_at",
           "is_confident", "is_safety_note", "split_target"]

__getattr__, __dir__ = face(__name__, {
    ".query": "Mode Query Threshold",
    ".related": "Related related_to",
    ".route": "detect_topic is_confident split_target",
    ".safety": "bears_on is_safety_note",
    ".hits": "Hit hit_at",
    ".searcher": "Searcher",
})
