"""``vault.facts``: the keyed facts of topics/facts.md and the people of people.md, one object
(:class:`Facts`) as ``vault.conversations`` is for the sessions.

Each verb is one call of :mod:`memkit.store.facts` or :mod:`memkit.store.people`; a write that
changed facts.md calls the ``wrote`` hook it was given (the facade's: index that file now).
"""
from __future__ import annotations

from datetime import date
from typing import Callable

from ..formats.fields import FACTS_TOPIC, Fact
from ..formats.people import Person
from .facts import FactChange, FactValue, all_facts, fact_history, get_fact, set_fact
from .people import add_person, load_people
from .store import Store

__all__ = ["Facts"]


class Facts:
    """Keyed facts (one live value per key, in topics/facts.md) and the people of people.md:
    ``vault.facts.set("city", "Porto")``, ``vault.facts.get("city")``, ``vault.facts.people()``."""

    def __init__(self, store: Store, wrote: Callable[[str], None]) -> None:
        self._store = store
        self._wrote = wrote

    def __repr__(self) -> str:
        return f"Facts({str(self._store.root)!r})"

    def set(self, key: str, value: str, *, today: date | None = None) -> FactChange:
        """Give ``key`` (``city``) one live value (``Porto``): its line in topics/facts.md, replaced
        where it stands; the old value goes to archive.md with its date (:meth:`history`).
        The value it has already writes nothing (``changed`` False). :raises InvalidValue: a bad key
        or value."""
        change = set_fact(self._store, key, value, today=today)
        if change.changed:
            self._wrote(FACTS_TOPIC)
        return change

    def get(self, key: str) -> Fact | None:
        """The live value of ``key`` (``.value``, ``.day``), or None when it has none."""
        return get_fact(self._store, key)

    def all(self) -> dict[str, Fact]:
        """Every key's live value, in the order of topics/facts.md."""
        return all_facts(self._store)

    def history(self, key: str) -> list[FactValue]:
        """Every value ``key`` had, oldest first, the live one last. :raises EntryNotFound: none ever."""
        return fact_history(self._store, key)

    def people(self) -> list[Person]:
        """The people of people.md (name, relation, detail, about), in order."""
        return load_people(self._store)

    def add_person(self, name: str, *, relation: str | None = None, detail: str | None = None,
                   about: str | None = None) -> Person:
        """Append ``- Name (relation: detail): about`` to people.md (created when missing).
        :raises InvalidValue: a bad name or relation, or the name is there already."""
        return add_person(self._store, name, relation=relation, detail=detail, about=about)
