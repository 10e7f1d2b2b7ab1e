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
    LLMError,
    MemkitError,
    ModelError,
    TopicNameError,
    TopicNotFound,
    TopicParseError,
    VaultExists,
    VaultNotFound,
)
from .topic import Entry, Topic
from .search import Hit
from .vault import TopicInfo, Vault, find_vault

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
    "MemkitError",
    "ConfigError",
    "EntryNotFound",
    "LLMError",
    "ModelError",
    "TopicNameError",
    "TopicNotFound",
    "TopicParseError",
    "VaultExists",
    "VaultNotFound",
]
