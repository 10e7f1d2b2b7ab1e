"""Vault's folders, links and related memories: ``Vault.adopt(folder)`` (a notes folder as it is), ``vault.related(id_or_topic)`` (:mod:`memkit.search.related`),
``vault.backlinks(topic)`` and ``vault.broken_links()`` (:mod:`memkit.store.links`).
:class:`memkit.vault.Vault` inherits them, so that the facade itself stays short."""
from __future__ import annotations

import os
from typing import TypeVar

from .formats.topic import Entry
from .search import Related, Searcher, related_to
from .store import Renamed, Store, link_graph, rename_topic

__all__ = ["VaultLinks"]

V = TypeVar("V", bound="VaultLinks")


class VaultLinks:
    """``[[links]]`` between memories, and what is like a memory."""

    store: Store

    def __init__(self, path: str | os.PathLike[str]) -> None:  # pragma: no cover - the Vault's
        raise NotImplementedError

    @property
    def searcher(self) -> Searcher:  # pragma: no cover - the Vault's
        raise NotImplementedError

    @classmethod
    def adopt(cls: type[V], path: str | os.PathLike[str]) -> V:
        """Make an existing folder of markdown notes (an Obsidian vault, a notes repo) a vault, as
        it is: its notes at any depth are the topics (``topics_folder: .``), and no file already
        there is written, renamed or removed (new: memkit.yaml, index.txt, a .gitignore when it has
        none). docs/folders.md.

        :raises VaultExists: if ``path`` already holds a vault.
        """
        return cls(Store.adopt(path).root)

    def related(self, ref: str, *, k: int | None = None, private: bool = True) -> Related:
        """The memories most like entry ``ref`` (an id) or topic ``ref``, without a query: its own
        text goes through the two stages of a search (first stage, then the judge), the item
        itself left out (:mod:`memkit.search.related`). ``private=False``: as in :meth:`search`.

        :raises TopicNotFound: no such entry or topic."""
        return related_to(self.searcher, ref, k=k, private=private)

    def backlinks(self, topic: str) -> list[Entry]:
        """The entries whose ``[[links]]`` name topic ``topic`` (a file's name alone, its path or an
        alias, as Obsidian resolves them; a link to a topic that was split names its parts).

        :raises TopicNotFound: no such topic."""
        name = self.store.topic(topic).name
        return [entry for entry, _link in link_graph(self.store).backlinks(name)]

    def broken_links(self) -> list[tuple[Entry, str]]:
        """Every ``[[link]]`` that names no topic: (the entry it is in, its target)."""
        return [(entry, link.target) for entry, link in link_graph(self.store).broken()]

    def rename(self, old: str, new: str) -> Renamed:
        """Rename topic ``old`` to ``new`` (a new folder too) and rewrite every ``[[link]]`` to it,
        as Obsidian does (:mod:`memkit.store.rename`). :raises TopicNotFound: no topic ``old``;
        :raises MemkitError: ``new`` exists already."""
        done = rename_topic(self.store, old, new)
        self.changed()
        return done

    def changed(self) -> None:  # pragma: no cover - the Vault's
        raise NotImplementedError
