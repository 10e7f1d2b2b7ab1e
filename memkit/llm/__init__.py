"""The client of the OpenAI-compatible chat API that digests, splits and ages (or a command speaking JSON).

:class:`LLM` is the extension point: any object with ``chat(messages) -> str`` (``llm=`` of the
flows); :class:`TextChat` the one optional capability memkit uses.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .choice import LLMChoice
    from .client import LLM, TextChat, choose, guard, make_llm
    from .replies import ask_json, ask_text

__all__ = ["LLM", "LLMChoice", "TextChat", "ask_json", "ask_text", "choose", "guard", "make_llm"]

__getattr__, __dir__ = face(__name__, {
    ".choice": "LLMChoice",
    ".client": "LLM TextChat choose guard make_llm",
    ".replies": "ask_json ask_text",
})
