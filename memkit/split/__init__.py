"""Splitting a topic that grew too large into subtopics: clustering, naming, and the parts' files."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .split import SplitPart, SplitPlan, maybe_split, split_topic

__all__ = ["SplitPart", "SplitPlan", "maybe_split", "split_topic"]

__getattr__, __dir__ = face(__name__, {
    ".split": "SplitPart SplitPlan maybe_split split_topic",
})
