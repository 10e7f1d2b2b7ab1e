"""What an assistant puts in its prompt: the memory block (`memkit context`), the proactive nudge, and
where a memory came from (`memkit why`: the lines of the conversation that said it)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .block import build_context, reset_session
    from .nudge import Nudge, proactive
    from .provenance import Why, why
    from .render import Context

__all__ = ["Context", "Nudge", "Why", "build_context", "proactive", "reset_session", "why"]

__getattr__, __dir__ = face(__name__, {
    ".block": "build_context reset_session",
    ".nudge": "Nudge proactive",
    ".provenance": "Why why",
    ".render": "Context",
})
