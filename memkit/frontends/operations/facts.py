"""The table's keyed facts (one live value per key, in topics/facts.md) and the people memories are
about (people.md): set, get, people, add a person (:mod:`memkit.frontends.operations`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...errors import EntryNotFound, InvalidValue
from ...vault import Vault
from .kit import MAX_FACT_CHARS, MAX_NAME_CHARS, NULL_STR, WRITE, Operation, Param, Route, Tool, listed, obj, ref, same
from .shared import KEY

__all__ = ["FACTS", "get_fact"]


def get_fact(vault: Vault, key: str | None = None, history: bool = False) -> dict[str, Any]:
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


def _add_person(vault: Vault, name: str, relation: str | None = None, detail: str | None = None,
                about: str | None = None) -> Any:
    return vault.facts.add_person(name, relation=relation, detail=detail, about=about)


FACTS: tuple[Operation, ...] = (
    Operation("set", (
        KEY,
        Param("value", "string", "Its value now, one line without parentheses; the old one goes to archive.md with "
              "its date.", required=True, max_length=MAX_FACT_CHARS, nonempty=True, argument=True, metavar="VALUE"),
    ), ("set",),
    Tool("set_fact", "Set a keyed fact",
         "Some memories are slots with one live value: the user's city, the wifi name, the current project. "
         "set_fact gives the key (a lowercase word) its value now; the old value moves to archive.md with its "
         "date (get_fact with history lists them). Use it instead of add_memory for such a slot. Returns "
         "key, value, old (the value it replaced, or null), changed (false: it had that value) and id.",
         dict(WRITE, idempotent_hint=True)),
    (Route("POST", "/facts", "Give a key (the user's city, the wifi name) its one live value: its "
          "line in topics/facts.md is replaced where it stands, the old value kept in archive.md with its date.",
          obj(["key", "value", "old", "changed", "id"], key={"type": "string"}, value={"type": "string"},
          old=NULL_STR, changed={"type": "boolean", "description": "false: it had that value"},
          id=NULL_STR, redacted={"type": "integer", "description": "Secrets replaced by "
          "[redacted] in the value (absent when none; docs/privacy.md)."}), errors=(400, 409), operation_id="set_fact"),),
    call=lambda vault, key, value: vault.facts.set(key, value)),
    Operation("get", (
        replace(KEY, help="The key (none: every key with its value).", required=False, metavar="[KEY]"),
        Param("history", "boolean", "Every value the key had, oldest first, with its day.", default=False,
              cli=("--history",)),
    ), ("get",),
    Tool("get_fact", "Get a keyed fact",
         "The live value of a key set with set_fact (key, value, day); without a key, every key with its value "
         "(facts). history adds every value the key had, oldest first ([{value, day, live}]). A key with no "
         "value is an error naming it."),
    (Route("GET", "/facts", "A key's live value (404: none), with history=true every value it had; "
          "without a key, every key with its value.",
          {"oneOf": [ref("Fact"), obj(["facts"], facts={"type": "array", "items": ref("Fact")})]}, errors=(400, 404), operation_id="get_fact"),),
    call=get_fact, answer=same),
    Operation("people", (), ("people",),
    Tool("list_people", "List the people",
         "The people the user's memories are about (people.md): name, relation to the user (self, family, "
         "friend, colleague…), detail and about (a line about them). search_memories' person and relation "
         "filter on them."),
    (Route("GET", "/people", "The people memories are about (people.md), in its order."),),
    call=lambda vault: vault.facts.people(), answer=listed("people", "Person")),
    Operation("add_person", (
        Param("name", "string", "The person's name as the memories write it ('Ana', 'Tom Reyes').", required=True,
              max_length=MAX_NAME_CHARS, nonempty=True, argument=True, metavar="NAME"),
        Param("relation", "string", "Their relation to the user, one word: self, family, partner, friend, "
              "colleague…", max_length=40, nonempty=True, cli=("--relation",), metavar="WORD"),
        Param("detail", "string", "What the relation is more precisely ('sister').", max_length=MAX_NAME_CHARS,
              nonempty=True, cli=("--detail",), metavar="TEXT"),
        Param("about", "string", "A line about them.", max_length=MAX_FACT_CHARS, nonempty=True, cli=("--about",),
              metavar="TEXT"),
    ), ("people", "add"),
    Tool("add_person", "Add a person",
         "Add someone the user talks about to people.md: name, relation to the user (one word: family, "
         "friend, colleague…), detail ('sister') and a line about them. Then '@Name' in a memory's text "
         "says it is about them. Returns the person as written.",
         WRITE),
    (Route("POST", "/people", "Append a person to people.md (created when missing).",
          ref("Person"), ok=201, errors=(400, 409)),),
    call=_add_person),
)
