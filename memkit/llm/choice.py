"""Which LLM a flow uses, as the facade and the services take it (no client is loaded to name it)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Union

if TYPE_CHECKING:
    from .client import LLM

__all__ = ["LLMChoice"]

#: ``"auto"`` the one memkit.yaml configures (none if it configures none), None no LLM, or an LLM client
LLMChoice = Union["LLM", None, Literal["auto"]]
