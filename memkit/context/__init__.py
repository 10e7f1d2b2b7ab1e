"""What an assistant puts in its prompt: the memory block (`memkit context`) and the proactive nudge."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .block import Context, build_context, reset_session
    from .nudge import Nudge, proactive

__all__ = ["Context", "Nudge", "build_context", "proactive", "reset_session"]

__getattr__, __dir__ = face(__name__, {
    ".block": "Context build_context reset_session",
    ".nudge": "Nudge proactive",
})
