"""``vault.links``: related memories (:mod:`memkit.search.related`) and the vault's ``[[links]]`` (:mod:`memkit.formats.links` says what one is):
backlinks, the broken ones, and renaming a topic with the links to it rewritten
(:mod:`memkit.store.rename`). A group of verbs :class:`memkit.vault.Vault` hands out, handed the
vault's runtime context (:class:`memkit.runtime.Runtime`)."""
from __future__ import annotations

from ..formats.links import Renamed
from ..formats.topic import Entry
from ..runtime import Runtime
from ..search import Related, related_to

__all__ = ["Links"]


class Links:
    """The links of one vault (``vault.links``): ``related``, ``backlinks``, ``broken``, ``rename``."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    def related(self, ref: str, *, k: int | None = None, private: bool = True) -> Related:
        """The memories most like entry ``ref`` (an id) or topic ``ref``, without a query: its own
        text goes through the two stages of a search (first stage, then the judge), the item
        itself left out (:mod:`memkit.search.related`). ``private=False`` leaves out the
        ``private: true`` topics, as a served search does.

        :raises TopicNotFound: no such entry or topic."""
        return related_to(self.runtime.searcher, ref, k=k, private=private)

    def backlinks(self, topic: str) -> list[Entry]:
        """The entries whose ``[[links]]`` name topic ``topic`` (a file's name alone, its path or an
        alias, as Obsidian resolves them; a link to a topic that was split names its parts).

        :raises TopicNotFound: no such topic."""
        name = self.store.topic(topic).name
        return [entry for entry, _link in self.store.links().backlinks(name)]

    def broken(self) -> list[tuple[Entry, str]]:
        """Every ``[[link]]`` that names no topic: (the entry it is in, its target)."""
        return [(entry, link.target) for entry, link in self.store.links().broken()]

    def rename(self, old: str, new: str) -> Renamed:
        """Rename topic ``old`` to ``new`` (a new folder too) and rewrite every ``[[link]]`` to it,
        as Obsidian does (:mod:`memkit.store.rename`). :raises TopicNotFound: no topic ``old``;
        :raises MemkitError: ``new`` exists already."""
        done = self.store.rename_topic(old, new)
        self.runtime.changed()  # a searcher built already re-checks the files at its next search
        return done
