"""The client of the OpenAI-compatible chat API that digests, splits and ages (or a command speaking JSON)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .client import LLM, ask_json, ask_text, make_llm

__all__ = ["LLM", "ask_json", "ask_text", "make_llm"]

__getattr__, __dir__ = face(__name__, {
    ".client": "LLM ask_json ask_text make_llm",
})
