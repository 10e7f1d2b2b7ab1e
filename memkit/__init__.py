"""memkit: file-first, plain-text long-term memory for LLM assistants.

>>> from memkit import Vault
>>> vault = Vault("vault")                       # doctest: +SKIP
>>> vault.add("Prefers bomba rice", topic="cooking")  # doctest: +SKIP
>>> vault.search("what rice do I use")           # doctest: +SKIP
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the names below are, for type checkers; at run time each loads when first used
    from .config import Config, load_config
    from .context import Context, Why
    from .digest import Captured, DigestReport, InboxResult
    from .embeddings import Embedder
    from .errors import (
        AmbiguousEntry,
        ConfigError,
        EntryNotFound,
        InvalidValue,
        LLMError,
        MemkitError,
        ModelError,
        ProvenanceNotFound,
        SessionAmbiguous,
        SessionConflict,
        SessionNotFound,
        TopicNameError,
        TopicNotFound,
        TopicNotWritable,
        TopicParseError,
        VaultExists,
        VaultNotFound,
    )
    from .formats.recent import RecentTopic
    from .formats.session import PruneReport, Session, SessionInfo, SessionMessage
    from .formats.topic import Entry, Topic
    from .git import GitSetup
    from .index import IndexReport
    from .llm import LLM, TextChat
    from .search import Hit, Related
    from .sessions import Conversations, SessionHit, Window
    from .split import SplitPart, SplitPlan
    from .store import Facts, TopicInfo
    from .upkeep import ChangeReport, CheckReport, Finding, FollowUp, HistoryStep, TidyReport, Upkeep
    from .vault import Vault, find_vault

#: where each public name lives: ``import memkit`` loads nothing else, and ``from memkit import Vault``
#: loads what Vault needs, never the digest, the LLM client or the sessions (issue 16.5: a command
#: imports only what it uses)
_WHERE = {
    "Config": ".config",
    "load_config": ".config",
    "ConfigError": ".errors",
    "EntryNotFound": ".errors",
    "AmbiguousEntry": ".errors",
    "InvalidValue": ".errors",
    "LLMError": ".errors",
    "MemkitError": ".errors",
    "ModelError": ".errors",
    "ProvenanceNotFound": ".errors",
    "SessionConflict": ".errors",
    "SessionNotFound": ".errors",
    "SessionAmbiguous": ".errors",
    "TopicNameError": ".errors",
    "TopicNotFound": ".errors",
    "TopicNotWritable": ".errors",
    "TopicParseError": ".errors",
    "VaultExists": ".errors",
    "VaultNotFound": ".errors",
    "Captured": ".digest",
    "Embedder": ".embeddings",
    "LLM": ".llm",
    "TextChat": ".llm",
    "Conversations": ".sessions",
    "Facts": ".store",
    "Upkeep": ".upkeep",
    "CheckReport": ".upkeep",
    "Finding": ".upkeep",
    "Context": ".context",
    "DigestReport": ".digest",
    "InboxResult": ".digest",
    "GitSetup": ".git",
    "IndexReport": ".index",
    "RecentTopic": ".formats.recent",
    "Hit": ".search",
    "Related": ".search",
    "PruneReport": ".formats.session",
    "Session": ".formats.session",
    "SessionInfo": ".formats.session",
    "SessionMessage": ".formats.session",
    "SessionHit": ".sessions",
    "Window": ".sessions",
    "SplitPart": ".split",
    "SplitPlan": ".split",
    "TopicInfo": ".store",
    "Entry": ".formats.topic",
    "Topic": ".formats.topic",
    "ChangeReport": ".upkeep",
    "FollowUp": ".upkeep",
    "HistoryStep": ".upkeep",
    "Why": ".context",
    "TidyReport": ".upkeep",
    "Vault": ".vault",
    "find_vault": ".vault",
}

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
    "Related",
    "Context",
    "DigestReport",
    "InboxResult",
    "Captured",
    "Conversations",
    "Facts",
    "Upkeep",
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
    "Why",
    "Session",
    "SessionInfo",
    "SessionMessage",
    "SessionHit",
    "Window",
    "PruneReport",
    # the extension points: an embedding model or an LLM of your own
    "Embedder",
    "LLM",
    "TextChat",
    "MemkitError",
    "ConfigError",
    "EntryNotFound",
    "AmbiguousEntry",
    "InvalidValue",
    "LLMError",
    "ModelError",
    "ProvenanceNotFound",
    "SessionConflict",
    "SessionNotFound",
    "SessionAmbiguous",
    "TopicNameError",
    "TopicNotFound",
    "TopicNotWritable",
    "TopicParseError",
    "VaultExists",
    "VaultNotFound",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name], __name__), name)
    globals()[name] = value  # once: the next look-up is an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
