"""What the servers (MCP, HTTP) show of ``private: true`` topics: nothing, unless asked by name.

A private topic is left out of the servers' searches and of the context by the library
(``Vault.search(private=False)``, the context); its listings — the topics, index.txt's recent
topics, the pending follow-ups — are left out here, for both servers alike. Reading a private topic
by its name still works (as the search's ``topic=`` filter does): that is asking for it by name.
The command line shows everything: the person at the shell owns the vault.
"""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

from ..vault import Vault

T = TypeVar("T")


def without_private(vault: Vault, items: Sequence[T], topic_of: Callable[[T], str]) -> list[T]:
    """``items`` but those of a private topic (or of a part it was split into: ``name-…``)."""
    private = vault.store.private_topics()
    if not private:
        return list(items)
    return [item for item in items
            if not any(topic_of(item) == name or topic_of(item).startswith(name + "-") for name in private)]
