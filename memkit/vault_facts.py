"""Vault's keyed facts and people: ``vault.set("city", "Porto")``, ``vault.get("city")``,
``vault.people()`` (:mod:`memkit.store.facts`, :mod:`memkit.store.people`), and where a memory came
from: ``vault.why(id)`` (:mod:`memkit.context.provenance`). :class:`memkit.vault.Vault` inherits
them, so that the facade itself holds only its composition and the flows' entry points."""
from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from .formats.fields import FACTS_TOPIC, Fact
from .formats.people import Person
from .store import (
    FactChange,
    FactValue,
    Store,
    add_person,
    all_facts,
    fact_history,
    get_fact,
    load_people,
    set_fact,
)

if TYPE_CHECKING:
    from .context import Why
    from .formats.topic import Topic

__all__ = ["VaultFacts"]


class VaultFacts:
    """Keyed facts (one live value per key, in topics/facts.md) and the people of people.md."""

    store: Store

    def _wrote(self, topic: str, path: Path | None = None, parsed: Topic | None = None) -> None:
        raise NotImplementedError  # the Vault's

    def set(self, key: str, value: str, *, today: date | None = None) -> FactChange:
        """Give ``key`` (``city``) one live value (``Porto``): its line in topics/facts.md, replaced
        where it stands; the old value goes to archive.md with its date (:meth:`fact_history`).
        The value it has already writes nothing (``changed`` False). :raises InvalidValue: a bad key
        or value."""
        change = set_fact(self.store, key, value, today=today)
        if change.changed:
            self._wrote(FACTS_TOPIC)
        return change

    def get(self, key: str) -> Fact | None:
        """The live value of ``key`` (``.value``, ``.day``), or None when it has none."""
        return get_fact(self.store, key)

    def facts(self) -> dict[str, Fact]:
        """Every key's live value, in the order of topics/facts.md."""
        return all_facts(self.store)

    def fact_history(self, key: str) -> list[FactValue]:
        """Every value ``key`` had, oldest first, the live one last. :raises EntryNotFound: none ever."""
        return fact_history(self.store, key)

    def people(self) -> list[Person]:
        """The people of people.md (name, relation, detail, about), in order."""
        return load_people(self.store)

    def add_person(self, name: str, *, relation: str | None = None, detail: str | None = None,
                   about: str | None = None) -> Person:
        """Append ``- Name (relation: detail): about`` to people.md (created when missing).
        :raises InvalidValue: a bad name or relation, or the name is there already."""
        return add_person(self.store, name, relation=relation, detail=detail, about=about)

    def why(self, ref: str) -> Why:
        """Where a memory came from: the conversation its ``(from …)`` marker names (a session, an aged
        session's raw archive, a transcript in inbox/done/) and the lines of it that say the memory
        (see :mod:`memkit.context.provenance`; ``ref``: its id, current or archived).

        :raises EntryNotFound: no such entry. :raises ProvenanceNotFound: it names no conversation,
            or that conversation is gone."""
        from .context import why
        return why(self.store, ref)
