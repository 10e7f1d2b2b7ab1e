"""memkit: file-first, plain-text long-term memory for LLM assistants.

>>> from memkit import Vault
>>> vault = Vault("vault")                       # doctest: +SKIP
>>> vault.add("Prefers bomba rice", topic="cooking")  # doctest: +SKIP
>>> vault.search("what rice do I use")           # doctest: +SKIP
"""
from __future__ import annotations

from .config import Config, load_config
from .errors import (
    ConfigError,
    EntryNotFound,
    InvalidValue,
    LLMError,
    MemkitError,
    ModelError,
    SessionNotFound,
    TopicNameError,
    TopicNotFound,
    TopicNotWritable,
    TopicParseError,
    VaultExists,
    VaultNotFound,
)
from .context import Context
from .digest import DigestReport
from .index import IndexReport
from .search import Hit
from .session_format import PruneReport, Session, SessionInfo, SessionMessage
from .session_search import SessionHit
from .session_window import Window
from .split import SplitPlan
from .store import TopicInfo
from .topic import Entry, Topic
from .vault import Vault, find_vault

__version__ = "0.1.0"

__all__ = [
    "Vault",
    "find_vault",
    "Config",
    "load_config",
    "Entry",
    "Topic",
    "TopicInfo",
    "Hit",
    "Context",
    "DigestReport",
    "IndexReport",
    "SplitPlan",
    "Session",
    "SessionInfo",
    "SessionMessage",
    "SessionHit",
    "Window",
    "PruneReport",
    "MemkitError",
    "ConfigError",
    "EntryNotFound",
    "InvalidValue",
    "LLMError",
    "ModelError",
    "SessionNotFound",
    "TopicNameError",
    "TopicNotFound",
    "TopicNotWritable",
    "TopicParseError",
    "VaultExists",
    "VaultNotFound",
]
