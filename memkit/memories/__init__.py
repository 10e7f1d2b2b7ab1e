"""A memory's own verbs: adding one (to the right part of a split topic, splitting a topic it pushes too far) and its links (related memories, backlinks, renames)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .adding import add_entry
    from .links import Links

__all__ = ["Links", "add_entry"]

__getattr__, __dir__ = face(__name__, {
    ".adding": "add_entry",
    ".links": "Links",
})
