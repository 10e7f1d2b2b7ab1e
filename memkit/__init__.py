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
# what Vault's methods return
from .capture import Captured
from .check import CheckReport, Finding
from .context import Context
from .digest import DigestReport, InboxResult
from .gitsync import GitSetup
from .index import IndexReport
from .recent import RecentTopic
from .search import Hit
from .session_format import PruneReport, Session, SessionInfo, SessionMessage
from .session_search import SessionHit
from .session_window import Window
from .split import SplitPart, SplitPlan
from .store import TopicInfo
from .topic import Entry, Topic
from .upkeep import ChangeReport, FollowUp, HistoryStep, TidyReport
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
    "RecentTopic",
    "Hit",
    "Context",
    "DigestReport",
    "InboxResult",
    "Captured",
    "IndexReport",
    "SplitPlan",
    "SplitPart",
    "CheckReport",
    "Finding",
    "GitSetup",
    "TidyReport",
    "ChangeReport",
    "FollowUp",
    "HistoryStep",
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
