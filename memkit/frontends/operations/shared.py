"""The parameters several operations of the table share (:mod:`memkit.frontends.operations`):
a topic, an entry's id or text, a session's id, a moment, the search's filters on people and fields."""
from __future__ import annotations

from typing import Any

from ...base.limits import MAX_QUERY_CHARS
from .kit import MAX_FACT_CHARS, MAX_NAME_CHARS, SESSION_ID, Param

__all__ = ["AT", "KEY", "KIND", "MATCH", "PERSON", "RELATION", "SESSION_PATH", "TOPIC_NAME", "WHERE", "entry_id_param", "path_entry_id_param",
           "query_param", "topic_param"]

TOPIC_NAME = ("Topic name: lowercase words joined by '-', e.g. 'cooking' or 'home-lab' "
              "(list_topics shows the existing ones).")


def topic_param(help: str, **kw: Any) -> Param:  # noqa: A002
    return Param("topic", "string", help, max_length=MAX_NAME_CHARS, nonempty=True, cli=("--topic", "-t"),
                 metavar="TOPIC", overrides={"cli": {"help": help.replace(f" {TOPIC_NAME}", "")}},  # `memkit topics`
                 **kw)


def entry_id_param(help: str, **kw: Any) -> Param:  # noqa: A002
    return Param("id", "string", help, max_length=MAX_NAME_CHARS, nonempty=True, names={"cli": "entry_id"},
                 argument=True, metavar="[ID]",
                 # a model names an entry by the id search_memories gave it: required there
                 overrides={"mcp": {"required": True}}, **kw)


def path_entry_id_param(help: str) -> Param:  # noqa: A002
    """An entry's id that an operation needs (an archived entry's too): a CLI argument, the HTTP path's ``{id}``."""
    return Param("id", "string", help, required=True, max_length=MAX_NAME_CHARS, nonempty=True, where="path",
                 names={"cli": "entry_id"}, argument=True, metavar="ID")


MATCH = Param("match", "string", "Or: text the entry contains (it must be the only one).",
               max_length=MAX_QUERY_CHARS, nonempty=True, cli=("--match", "-m"), metavar="TEXT",
               absent={"mcp": "a model names an entry by its id (search_memories gives it)"})
KIND = Param("kind", "string", "Only entries of this [kind]: fact, preference, decision, discovery, event, context, "
                                "observation…", max_length=40, nonempty=True, cli=("--kind",), metavar="KIND")
SESSION_PATH = Param("session", "string", "The session id (from start_session or list_sessions), or its file name.",
                      required=True, max_length=MAX_NAME_CHARS, nonempty=True, pattern=SESSION_ID, where="path",
                      names={"cli": "session_id"}, argument=True, metavar="ID")
AT = Param("at", "string", "Run as if at this moment, 'YYYY-MM-DD HH:MM' local time (default: now).", max_length=40,
            format="date-time", cli=("--at",), metavar="TIME")


PERSON = Param("person", "string", "Only memories about this person: a name or @handle of people.md (@mentions and "
                "'(people: …)' markers; 'me': the user, whose memories also include those naming no one).",
                max_length=MAX_NAME_CHARS, nonempty=True, cli=("--with",), metavar="NAME")
RELATION = Param("relation", "string", "Only memories about a person of this relation in people.md: family, friend, "
                  "colleague, self…", max_length=40, nonempty=True, cli=("--relation",), metavar="WORD")
WHERE = Param("where", "array", "Only entries carrying these fields, each 'key=value': a '(key: value)' marker or a "
               "line of topics/facts.md; all must match.", item_length=MAX_FACT_CHARS, max_items=10,
               cli=("--where",), metavar="KEY=VALUE",
               overrides={"cli": {"help": "Only entries carrying the field KEY: VALUE (a '(key: value)' marker or a "
                                          "line of topics/facts.md); repeat for several."}})
KEY = Param("key", "string", "The key: a lowercase word (letters, digits, '-', '_'), e.g. 'city' or 'wifi'.",
             required=True, max_length=40, nonempty=True, argument=True, metavar="KEY")


def query_param(help: str) -> Param:  # noqa: A002
    return Param("query", "string", help, required=True, max_length=MAX_QUERY_CHARS, nonempty=True,
                 names={"http": "q"}, argument=True)
