"""The answers of the keyed facts and people operations (``set``, ``get``, ``people``,
``add_person`` in :mod:`memkit.frontends.operations`), the same from the CLI's --json, the MCP
server and the HTTP API. A front end module: it uses the facade only."""
from __future__ import annotations

from typing import Any

from ..errors import EntryNotFound, InvalidValue
from ..vault import Vault

__all__ = ["add_person_answer", "get_answer", "people_answer", "set_answer"]


def set_answer(vault: Vault, key: str, value: str) -> dict[str, Any]:
    """``{key, value, old, changed, id}``."""
    return vault.facts.set(key, value).to_dict()


def get_answer(vault: Vault, key: str | None, history: bool = False) -> dict[str, Any]:
    """``{facts: [{key, value, day}]}`` without a key; ``{key, value, day}`` with one, and its
    ``history`` (``[{value, day, live}]``, oldest first) when asked. :raises EntryNotFound: a key with
    no value (and none ever, for the history)."""
    if key is None:
        if history:
            raise InvalidValue("history is a key's: name the key (`memkit get KEY --history`)")
        return {"facts": [f.to_dict() for f in vault.facts.all().values()]}
    fact = vault.facts.get(key)
    if not history:
        if fact is None:
            raise EntryNotFound(f"no value is set for {key!r} (`memkit get` lists the keys)")
        return fact.to_dict()
    values = vault.facts.history(key)
    now = fact.to_dict() if fact is not None else {"key": key, "value": None, "day": None}
    return dict(now, history=[v.to_dict() for v in values])


def people_answer(vault: Vault) -> dict[str, Any]:
    """``{people: [{name, relation, detail, about, line}]}``, in people.md's order."""
    return {"people": [p.to_dict() for p in vault.facts.people()]}


def add_person_answer(vault: Vault, name: str, relation: str | None, detail: str | None,
                      about: str | None) -> dict[str, Any]:
    """The person added, as read back from people.md."""
    return vault.facts.add_person(name, relation=relation, detail=detail, about=about).to_dict()
