"""The runtime context every service is handed: the store, the embedder, a lazy searcher, the LLM factory and the write hooks."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .runtime import Runtime
    from .serving import Serving

__all__ = ["Runtime", "Serving"]

__getattr__, __dir__ = face(__name__, {
    ".runtime": "Runtime",
    ".serving": "Serving",
})
