"""Every operation of memkit's front ends, declared once: its parameters (name, type, range or
choices, default, help) and which front end offers it under which name (the CLI, the MCP server,
the HTTP API), or why one does not.

From this table are made the click options and arguments of the commands
(:func:`memkit.frontends.cli.common.cli_params`), the
MCP tools' input schemas and the HTTP API's request schemas and OpenAPI parameters
(:func:`schema`), and the one validation of a tool's arguments or a request's fields
(:func:`check`). tests/frontends/test_frontends.py checks that every front end offers every operation and
parameter of the table, or the table says why not.

A front end module: of the library it imports only the facade and :mod:`memkit.base`'s limits.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, Callable, Mapping

from ..base.limits import (
    MAX_ENTRY_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_QUERY_CHARS,
    MAX_SEARCH_RESULTS,
    MAX_SESSION_MESSAGE_CHARS,
    MAX_SYSTEM_PROMPT_CHARS,
    MAX_TRANSCRIPT_BYTES,
    SEARCH_MODES,
    SESSION_STRATEGIES,
)
from ..errors import InvalidValue

__all__ = ["ArgumentError", "FRONT_ENDS", "OPERATIONS", "Operation", "Param", "Style", "CLI_ONLY", "MAX_NAME_CHARS",
           "ROLES", "SESSION_ID", "TOPIC_NAME", "check", "expected", "operation", "parse_time", "schema", "shown",
           "time_value"]

FRONT_ENDS = ("cli", "mcp", "http")
MAX_NAME_CHARS = 200  #: a topic name, a session id, an entry id
MAX_FACT_CHARS = 200  #: a keyed fact's value, a person's line
ROLES = ("user", "assistant", "system", "tool")
#: a session id as the library writes it (letters, digits, '.', '_', '-'; no '..')
SESSION_ID = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]*$"
PATTERN_RULES = {SESSION_ID: "is not a session id: use letters, digits, '.', '_' or '-', starting with a letter "
                             "or digit (no '..')"}
#: options every command of the CLI has, and why the servers do not
CLI_ONLY = {"json_": "--json prints JSON for scripts; the servers always answer JSON"}


class ArgumentError(InvalidValue):
    """A tool argument or a request field that does not fit its operation's parameters."""


@dataclass(frozen=True)
class Param:
    """One parameter of an operation.

    ``names``: the name a front end gives it when not ``name`` (the CLI's is the click parameter's
    name). ``absent``: front ends that do not offer it, each with the reason. ``overrides``: fields
    that differ in one front end (each with its reason beside it in the table). ``cli``: the
    click option's flags (``argument``: a positional argument instead)."""

    name: str
    type: str  #: string, integer, number, boolean, array (of strings) or object (of strings)
    help: str
    required: bool = False
    default: Any = None
    low: float | None = None
    high: float | None = None
    max_length: int | None = None
    nonempty: bool = False  #: blank text is refused (at the HTTP edge; the MCP server leaves it to the library)
    choices: tuple[str, ...] | None = None
    format: str | None = None  #: date or date-time
    pattern: str | None = None
    item_length: int = 40  #: an array's item, an object's key
    max_items: int = 20
    value_length: int = 1000  #: an object's value
    where: str | None = None  #: "path": in the HTTP route's path (else its query or body)
    names: Mapping[str, str] = field(default_factory=dict)
    absent: Mapping[str, str] = field(default_factory=dict)
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cli: tuple[str, ...] = ()
    argument: bool = False
    nargs: int = 1
    metavar: str | None = None

    def name_in(self, front: str) -> str:
        return self.names.get(front, self.name)

    def offered(self, front: str) -> bool:
        return front not in self.absent

    def seen_by(self, front: str) -> "Param":
        """This parameter as ``front`` declares it (its overrides applied)."""
        return replace(self, **self.overrides[front]) if front in self.overrides else self


@dataclass(frozen=True)
class Operation:
    """One operation: its parameters and its name in each front end (``absent``: why not there)."""

    name: str
    params: tuple[Param, ...]
    cli: tuple[str, ...] | None  #: the command, with its group
    mcp: str | None  #: the tool
    http: tuple[tuple[str, str], ...]  #: the routes (method, path)
    absent: Mapping[str, str] = field(default_factory=dict)

    def offered(self, front: str) -> list[Param]:
        """The parameters ``front`` offers, as it declares them."""
        return [p.seen_by(front) for p in self.params if p.offered(front)]


# ---- the shared parameters ---------------------------------------------------------------------------

TOPIC_NAME = ("Topic name: lowercase words joined by '-', e.g. 'cooking' or 'home-lab' "
              "(list_topics shows the existing ones).")


def _topic(help: str, **kw: Any) -> Param:  # noqa: A002
    return Param("topic", "string", help, max_length=MAX_NAME_CHARS, nonempty=True, cli=("--topic", "-t"),
                 metavar="TOPIC", overrides={"cli": {"help": help.replace(f" {TOPIC_NAME}", "")}},  # `memkit topics`
                 **kw)


def _entry_id(help: str, **kw: Any) -> Param:  # noqa: A002
    return Param("id", "string", help, max_length=MAX_NAME_CHARS, nonempty=True, names={"cli": "entry_id"},
                 argument=True, metavar="[ID]",
                 # a model names an entry by the id search_memories gave it: required there
                 overrides={"mcp": {"required": True}}, **kw)


_MATCH = Param("match", "string", "Or: text the entry contains (it must be the only one).",
               max_length=MAX_QUERY_CHARS, nonempty=True, cli=("--match", "-m"), metavar="TEXT",
               absent={"mcp": "a model names an entry by its id (search_memories gives it)"})
_KIND = Param("kind", "string", "Only entries of this [kind]: fact, preference, decision, discovery, event, context, "
                                "observation…", max_length=40, nonempty=True, cli=("--kind",), metavar="KIND")
_SESSION_PATH = Param("session", "string", "The session id (from start_session or list_sessions), or its file name.",
                      required=True, max_length=MAX_NAME_CHARS, nonempty=True, pattern=SESSION_ID, where="path",
                      names={"cli": "session_id"}, argument=True, metavar="ID")
_AT = Param("at", "string", "Run as if at this moment, 'YYYY-MM-DD HH:MM' local time (default: now).", max_length=40,
            format="date-time", cli=("--at",), metavar="TIME")


_PERSON = Param("person", "string", "Only memories about this person: a name or @handle of people.md (@mentions and "
                "'(people: …)' markers; 'me': the user, whose memories also include those naming no one).",
                max_length=MAX_NAME_CHARS, nonempty=True, cli=("--with",), metavar="NAME")
_RELATION = Param("relation", "string", "Only memories about a person of this relation in people.md: family, friend, "
                  "colleague, self…", max_length=40, nonempty=True, cli=("--relation",), metavar="WORD")
_WHERE = Param("where", "array", "Only entries carrying these fields, each 'key=value': a '(key: value)' marker or a "
               "line of topics/facts.md; all must match.", item_length=MAX_FACT_CHARS, max_items=10,
               cli=("--where",), metavar="KEY=VALUE",
               overrides={"cli": {"help": "Only entries carrying the field KEY: VALUE (a '(key: value)' marker or a "
                                          "line of topics/facts.md); repeat for several."}})
_KEY = Param("key", "string", "The key: a lowercase word (letters, digits, '-', '_'), e.g. 'city' or 'wifi'.",
             required=True, max_length=40, nonempty=True, argument=True, metavar="KEY")


def _query(help: str) -> Param:  # noqa: A002
    return Param("query", "string", help, required=True, max_length=MAX_QUERY_CHARS, nonempty=True,
                 names={"http": "q"}, argument=True)


# ---- the table -------------------------------------------------------------------------------------

OPERATIONS: tuple[Operation, ...] = (
    Operation("search", (
        _query("What to look for: a question, keywords, a name or a part number."),
        Param("k", "integer", "How many results at most (default: memkit.yaml's max_memories_per_search).",
              low=1, high=MAX_SEARCH_RESULTS, cli=("-k",), metavar="N",
              overrides={"mcp": {"default": 10}}),  # a model reads more candidates than a person at the shell
        _topic(f"Only this topic and its subtopics (topic-*). {TOPIC_NAME}"),
        _KIND,
        Param("tag", "string", "Only entries with this #tag (without the '#').", max_length=40, nonempty=True,
              cli=("--tag",), metavar="TAG"),
        Param("since", "string", "Only entries dated on or after this day, YYYY-MM-DD.", max_length=10,
              format="date", cli=("--since",), metavar="DATE"),
        _PERSON, _RELATION, _WHERE,
        Param("linked", "string", "Only this topic and the topics it links to or is linked from by [[links]] "
              "(a topic's name, its file's name alone, or an alias).", max_length=MAX_NAME_CHARS, nonempty=True,
              cli=("--linked",), metavar="TOPIC"),
        Param("mode", "string", "hybrid: words and meaning fused; vector or lexical: one side only.",
              choices=SEARCH_MODES, default="hybrid", cli=("--mode",)),
        Param("min_importance", "number", "Only entries whose (importance X) is at least this, 0..1 (none given "
              "counts as 0.5).", low=0, high=1, cli=("--min-importance",), metavar="X"),
        Param("fast", "boolean", "Skip the second stage (the judge transformer re-scoring the best candidates): "
              "faster, weaker on questions worded unlike their answer.", default=False, cli=("--fast",)),
        Param("threshold", "number", "Minimum cosine similarity (exact rare-word matches pass anyway). Default: "
              "memkit.yaml or the model's calibrated value.", low=-1, high=1, cli=("--threshold",), metavar="X",
              absent={"mcp": "a tuning knob for a person; a served vault uses memkit.yaml's",
                      "http": "a tuning knob for a person; a served vault uses memkit.yaml's"}),
        Param("no_threshold", "boolean", "No threshold: always return the k best.", default=False, cli=("--all",),
              absent={"mcp": "each hit says whether it passed the threshold (confident)",
                      "http": "each hit says whether it passed the threshold (confident)"}),
        Param("sessions", "boolean", "Search the messages of past conversations (sessions/) instead of the "
              "memories.", default=False, cli=("--sessions",),
              absent={"mcp": "search_sessions does it", "http": "GET /sessions/search does it"}),
    ), ("search",), "search_memories", (("GET", "/search"),)),
    Operation("add", (
        Param("text", "string", "The memory: one self-contained sentence.",
              required=True, max_length=MAX_ENTRY_CHARS, nonempty=True, argument=True),
        _topic(f"Where it belongs (default: general; created if new). {TOPIC_NAME}"),
        Param("kind", "string", "One word memkit knows: fact, preference, decision, discovery, event, context, "
              "observation, pending, conversation, or one memkit.yaml's expire: names (else an error).",
              max_length=40, nonempty=True, cli=("--kind",), metavar="KIND"),
        Param("tags", "array", "#tags, one word each, without the '#'.", names={"cli": "tags"}, cli=("--tag",),
              metavar="TAG", overrides={"cli": {"help": "A #tag; repeat for several."}}),
        Param("due", "string", "A follow-up due this day, YYYY-MM-DD: adds '(due DAY)' (kind pending unless "
              "given); it is listed with the pending follow-ups.", max_length=10, format="date", cli=("--due",),
              metavar="DATE"),
        Param("until", "string", "The memory expires after this day, YYYY-MM-DD: adds '(until DAY)'.",
              max_length=10, format="date", cli=("--until",), metavar="DATE"),
        Param("allow_duplicate", "boolean", "Write it even when the topic holds the same text already (compared "
              "as the digest does: kind, tags, markers, case and end punctuation aside).",
              default=False, cli=("--allow-duplicate",),
              absent={"mcp": "a model or a client must not write the same memory twice",
                      "http": "a model or a client must not write the same memory twice"}),
    ), ("add",), "add_memory", (("POST", "/add"),)),
    Operation("edit", (
        Param("id", "string", "The entry id, e.g. '3f2a9c1e'.", max_length=MAX_NAME_CHARS, nonempty=True,
              overrides={"mcp": {"required": True}},  # a model names an entry by its id
              absent={"cli": "[ID] TEXT: one positional pair (args)"}),
        _MATCH,
        _topic("Look only in this topic.", absent={"mcp": "a model names an entry by its id"}),
        Param("text", "string", "The new text, one self-contained sentence (its kind and tags stay unless it "
              "gives its own).", required=True, max_length=MAX_ENTRY_CHARS, nonempty=True,
              absent={"cli": "[ID] TEXT: one positional pair (args)"}),
        Param("args", "array", "[ID] TEXT: the entry's id (without --match) and the new text.", required=True,
              argument=True, nargs=-1, metavar="[ID] TEXT",
              absent={"mcp": "named arguments id and text", "http": "named fields id and text"}),
    ), ("edit",), "edit_memory", (("POST", "/edit"),)),
    Operation("forget", (
        _entry_id("The entry id, e.g. '3f2a9c1e'."),
        _MATCH,
        _topic("Look only in this topic (the same line in two topics).",
               absent={"mcp": "a model names an entry by its id"}),
        Param("all", "boolean", "An entry written several times (after a merge): remove every copy.", default=False,
              names={"cli": "all_"}, cli=("--all",),
              absent={"mcp": "a model forgets the one entry it names"}),
    ), ("forget",), "forget_memory", (("POST", "/forget"),)),
    Operation("done", (
        _entry_id("The follow-up's id, e.g. '3f2a9c1e' (from pending_follow_ups)."),
        replace(_MATCH, help="Or: text the follow-up contains (it must be the only one)."),
        _topic("Look only in this topic.", absent={"mcp": "a model names a follow-up by its id"}),
    ), ("done",), "mark_done", (("POST", "/pending/done"),)),
    Operation("set", (
        _KEY,
        Param("value", "string", "Its value now, one line without parentheses; the old one goes to archive.md with "
              "its date.", required=True, max_length=MAX_FACT_CHARS, nonempty=True, argument=True, metavar="VALUE"),
    ), ("set",), "set_fact", (("POST", "/facts"),)),
    Operation("get", (
        replace(_KEY, help="The key (none: every key with its value).", required=False, metavar="[KEY]"),
        Param("history", "boolean", "Every value the key had, oldest first, with its day.", default=False,
              cli=("--history",)),
    ), ("get",), "get_fact", (("GET", "/facts"),)),
    Operation("people", (), ("people",), "list_people", (("GET", "/people"),)),
    Operation("add_person", (
        Param("name", "string", "The person's name as the memories write it ('Ana', 'Tom Reyes').", required=True,
              max_length=MAX_NAME_CHARS, nonempty=True, argument=True, metavar="NAME"),
        Param("relation", "string", "Their relation to the user, one word: self, family, partner, friend, "
              "colleague…", max_length=40, nonempty=True, cli=("--relation",), metavar="WORD"),
        Param("detail", "string", "What the relation is more precisely ('sister').", max_length=MAX_NAME_CHARS,
              nonempty=True, cli=("--detail",), metavar="TEXT"),
        Param("about", "string", "A line about them.", max_length=MAX_FACT_CHARS, nonempty=True, cli=("--about",),
              metavar="TEXT"),
    ), ("people", "add"), "add_person", (("POST", "/people"),)),
    Operation("context", (
        Param("message", "string", "The user's latest message (may be empty).",
              required=True, max_length=MAX_MESSAGE_CHARS, argument=True),
        Param("session", "string", "A conversation session's id (started if there is none): its last turns "
              "join the block (the caller saves the messages), memories accumulate and a detected topic sticks "
              "across calls that share it. Without it the block is for this message alone.", max_length=MAX_NAME_CHARS,
              nonempty=True, cli=("--session", "-s"), metavar="ID"),
        Param("budget_tokens", "integer", "The most tokens the block may take (~4 characters a token); the "
              "instructions are always kept.", low=1, high=100_000, default=2000, names={"cli": "budget"},
              cli=("--budget",), metavar="N"),
        Param("reset", "boolean", "Forget the session's accumulated memories and topic first (its conversation "
              "stays).", default=False, cli=("--reset",)),
        Param("clear", "boolean", "End the conversation's window first: later blocks show only the messages saved "
              "after now; the conversation file keeps them all.", default=False, cli=("--clear",)),
        Param("markers", "boolean", "Show the entries' markers ((importance 0.8), (people: Ana), (city: Porto)…), "
              "which the block leaves out by default.", default=False, cli=("--markers",)),
    ), ("context",), "get_context", (("POST", "/context"),)),
    Operation("topics", (), ("topics",), "list_topics", (("GET", "/topics"),)),
    Operation("show", (
        Param("topic", "string", TOPIC_NAME, required=True, max_length=MAX_NAME_CHARS, nonempty=True, where="path",
              names={"mcp": "name"}, argument=True),
    ), ("show",), "read_topic", (("GET", "/topics/{topic}"),)),
    Operation("recent", (
        Param("rebuild", "boolean", "Regenerate index.txt from the topic files.", default=False, cli=("--rebuild",),
              absent={"mcp": "index.txt is a person's repair; every write keeps it current",
                      "http": "index.txt is a person's repair; every write keeps it current"}),
    ), ("recent",), "recent_topics", (("GET", "/recent"),)),
    Operation("why", (
        Param("id", "string", "The entry id, e.g. '3f2a9c1e' (from search_memories or read_topic; an archived "
              "entry's too).", required=True, max_length=MAX_NAME_CHARS, nonempty=True, where="path",
              names={"cli": "entry_id"}, argument=True, metavar="ID"),
    ), ("why",), "why_memory", (("GET", "/why/{id}"),)),
    Operation("related", (
        Param("ref", "string", "An entry id (from search_memories or read_topic) or a topic name: what the memories "
              "must be like.", required=True, max_length=MAX_NAME_CHARS, nonempty=True, argument=True,
              metavar="ID|TOPIC"),
        Param("k", "integer", "How many at most (default: memkit.yaml's max_memories_per_search).",
              low=1, high=MAX_SEARCH_RESULTS, cli=("-k",), metavar="N"),
    ), ("related",), "related_memories", (("GET", "/related"),)),
    Operation("pending", (), ("pending",), "pending_follow_ups", (("GET", "/pending"),)),
    Operation("proactive", (
        Param("now", "string", "The moment asked about, 'YYYY-MM-DD HH:MM' local time (default: now).",
              max_length=40, format="date-time", names={"mcp": "at", "cli": "at"}, cli=("--at",),
              metavar="TIME"),
        Param("last_conversation", "string", "When the person last talked to the assistant (default: the latest "
              "context session's time).", max_length=40, format="date-time",
              absent={"cli": "the shell asks about the vault's own sessions",
                      "mcp": "the server knows the latest context session"}),
        Param("draft", "boolean", "Draft an opening line with the LLM memkit.yaml configures (false: never ask "
              "it).", default=True,
              absent={"cli": "said inverted: --no-llm (no_llm)", "mcp": "the model drafts its own line"}),
        Param("no_llm", "boolean", "Give the suggested question; do not ask the LLM for an opening line.",
              default=False, cli=("--no-llm",),
              absent={"mcp": "the model drafts its own line", "http": "said as draft=false"}),
    ), ("proactive",), "proactive", (("GET", "/proactive"),)),
    Operation("upkeep", (_AT,), ("upkeep",), "run_upkeep", (("POST", "/upkeep"),)),
    Operation("stats", (), ("stats",), None, (("GET", "/stats"),),
              absent={"mcp": "counts are for a person or a dashboard, not for a model's answers"}),
    Operation("index", (
        Param("full", "boolean", "Parse and embed every file again, not only the changed ones.", default=False,
              cli=("--full",)),
        Param("judge", "boolean", "Also store the judge's vector of every entry that has none (with a progress "
              "bar; searches embed the ones they meet, and the watcher and the servers fill them as they run).",
              default=False, cli=("--judge",),
              absent={"http": "a POST /index job runs in the background: it fills them too"}),
    ), ("index",), None, (("POST", "/index"),),
        absent={"mcp": "the MCP server indexes changed files before each search"}),
    Operation("digest_transcript", (
        Param("text", "string", "The conversation.", required=True, max_length=MAX_TRANSCRIPT_BYTES, nonempty=True),
        Param("dry_run", "boolean", "Only compute the change; write nothing.", default=False),
    ), None, "digest_transcript", (),
        absent={"cli": "memkit digest reads transcript files (TRANSCRIPT...)",
                "http": "a served vault digests inbox/ (--watch) and saved sessions"}),
    Operation("list_sessions", (
        Param("limit", "integer", "The most recently updated sessions only, at most this many.", low=1,
              high=100_000, cli=("--limit",), metavar="N"),
        Param("archived", "boolean", "The pruned (archived) sessions instead.", default=False, cli=("--archived",)),
    ), ("session", "list"), "list_sessions", (("GET", "/sessions"),)),
    Operation("start_session", (
        Param("session", "string", "An id to use (letters, digits, '.', '_', '-'); default: a new random one.",
              max_length=80, nonempty=True, pattern=SESSION_ID, names={"cli": "session_id"}, cli=("--id",),
              metavar="ID"),
        Param("title", "string", "A short title (default: the first user message's beginning).", max_length=200,
              nonempty=True, cli=("--title",), metavar="TEXT"),
        Param("system_prompt", "string", "The system prompt of the conversation, kept with it.",
              max_length=MAX_SYSTEM_PROMPT_CHARS, cli=("--system",), metavar="TEXT"),
        Param("user", "string", "Who the conversation is with.", max_length=200, nonempty=True, cli=("--user",),
              metavar="NAME"),
        Param("tags", "array", "Tags.", cli=("--tag",), metavar="TAG",
              overrides={"cli": {"help": "A tag (repeatable)."}}),
        Param("metadata", "object", "Anything else to keep in the session's header: text values by name.",
              names={"cli": "meta"}, cli=("--meta",), metavar="KEY=VALUE",
              overrides={"cli": {"type": "array", "help": "Metadata KEY=VALUE (repeatable)."}}),  # pairs at the shell
        Param("quiet", "boolean", "Print only the id.", default=False, cli=("-q", "--quiet"),
              absent={"mcp": "the answer is JSON", "http": "the answer is JSON"}),
    ), ("session", "new"), "start_session", (("POST", "/sessions"),)),
    Operation("save_message", (
        _SESSION_PATH,
        Param("role", "string", "user, assistant, system or tool.", required=True, max_length=20, nonempty=True,
              argument=True, metavar="ROLE",
              overrides={"cli": {"choices": ROLES}}),  # elsewhere the library says what is wrong (as the CLI did)
        Param("content", "string", "The message (appended to the session's file at once; nothing is rewritten).",
              required=True, max_length=MAX_SESSION_MESSAGE_CHARS,
              names={"cli": "text"}, argument=True, metavar="[TEXT]",
              overrides={"cli": {"required": False}}),  # stdin
        Param("important", "boolean", "A decision or key fact: kept word for word when the history is condensed.",
              default=False, cli=("--important",)),
        Param("name", "string", "A tool's or speaker's name.", max_length=80, nonempty=True, cli=("--name",),
              metavar="NAME"),
        Param("time", "string", "The message's own time, ISO 8601 (default: now; without an offset: UTC).",
              max_length=40, format="date-time", cli=("--time",), metavar="TIME"),
    ), ("session", "add"), "save_message", (("POST", "/sessions/{session}/messages"),)),
    Operation("load_session", (
        _SESSION_PATH,
        Param("max_tokens", "integer", "The budget (~4 characters a token).", low=1, high=10_000_000, default=4096,
              cli=("--tokens",), metavar="N"),
        Param("strategy", "string", "simple: the newest messages that fit; summary: older ones condensed by the "
              "LLM; hybrid: important and system messages kept, routine ones condensed (default: memkit.yaml's "
              "session_strategy).", choices=SESSION_STRATEGIES, cli=("--strategy",)),
    ), ("session", "load"), "load_session", (("GET", "/sessions/{session}"), ("POST", "/sessions/{session}/window"))),
    Operation("search_sessions", (
        _query("What to look for."),
        Param("k", "integer", "How many messages at most.", low=1, high=MAX_SEARCH_RESULTS, default=5,
              cli=("-k",), metavar="N"),
        replace(_SESSION_PATH, help="Only this session.", required=False, where=None, argument=False,
                cli=("--session",)),
        Param("role", "string", "Only messages of this role.", choices=ROLES, cli=("--role",)),
        Param("since", "string", "Only messages of this day or later, YYYY-MM-DD.", max_length=10, format="date",
              cli=("--since",), metavar="DATE"),
    ), ("session", "search"), "search_sessions", (("GET", "/sessions/search"),)),
)
_BY_NAME = {op.name: op for op in OPERATIONS}


def operation(name: str) -> Operation:
    """The operation named ``name`` (the table's name, not a front end's)."""
    return _BY_NAME[name]


# ---- JSON schemas (the MCP tools' input, the HTTP requests') -------------------------------------------

def _property(p: Param, front: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": p.type, "description": p.help}
    if p.type in ("integer", "number"):
        out.update({k: v for k, v in (("minimum", p.low), ("maximum", p.high)) if v is not None})
    elif p.type == "string":
        if p.max_length is not None:
            out["maxLength"] = p.max_length
        if p.nonempty and (front != "mcp" or p.required):
            out["minLength"] = 1
        if p.choices is not None:
            out["enum"] = list(p.choices)
        if p.format is not None:
            out["format"] = p.format
        if p.pattern is not None and front != "mcp":
            out["pattern"] = p.pattern
    elif p.type == "array":
        out.update(items={"type": "string", "maxLength": p.item_length}, maxItems=p.max_items)
    elif p.type == "object":
        out.update(maxProperties=p.max_items, propertyNames={"maxLength": p.item_length},
                   additionalProperties={"type": "string", "maxLength": p.value_length})
    if not p.required:
        out["default"] = p.default
    return out


def schema(op: str | Operation, front: str, where: str | None = None) -> dict[str, Any]:
    """The JSON schema of ``op``'s parameters as ``front`` (mcp or http) offers them: for http,
    ``where`` "path" is the route's path parameters, anything else the others (its query or body)."""
    operation_ = operation(op) if isinstance(op, str) else op
    params = [p for p in operation_.offered(front)
              if where is None or (p.where == "path") == (where == "path")]
    return {"type": "object", "additionalProperties": False,
            "required": [p.name_in(front) for p in params if p.required],
            "properties": {p.name_in(front): _property(p, front) for p in params}}


# ---- the validation ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Style:
    """How a front end names what it refuses: ``invalid`` and ``what`` ("invalid field X",
    "unknown field 'X'"); ``prefix`` before a missing one; ``edge``: blank text, a pattern and a
    date format are refused here (the HTTP API), or left to the library, whose message the CLI shares
    (the MCP server)."""

    invalid: str = "invalid field"
    what: str = "field"
    prefix: str = ""
    edge: bool = True


def shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def expected(kind: str) -> str:
    return {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "array": "a list of strings", "object": "an object of strings"}[kind]


def _is(kind: str, value: Any) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return isinstance(value, {"string": str, "boolean": bool, "array": list, "object": dict}[kind])


def check(spec: dict[str, Any], data: Any, style: Style = Style()) -> dict[str, Any]:
    """Validate ``data`` against a schema made by :func:`schema`; returns it with the defaults
    filled in. :raises ArgumentError: one line naming the parameter and what is allowed."""
    if not isinstance(data, dict):
        raise ArgumentError(f"the body must be a JSON object, got {shown(data)}")
    props: dict[str, Any] = spec["properties"]
    unknown = sorted(set(data) - set(props))
    if unknown:
        raise ArgumentError(f"unknown {style.what} {unknown[0]!r} (expected: {', '.join(props) or 'none'})")
    for name in spec.get("required", []):
        if data.get(name) is None:
            raise ArgumentError(f"{style.prefix}missing required {style.what} {name!r}")
    out: dict[str, Any] = {}
    for name, prop in props.items():
        value = data.get(name)
        out[name] = prop.get("default") if value is None else _value(name, prop, value, style)
    return out


def _value(name: str, prop: dict[str, Any], value: Any, style: Style) -> Any:
    def bad(problem: str) -> ArgumentError:
        return ArgumentError(f"{style.invalid} {name}: {problem}")

    kind = prop["type"]
    if not _is(kind, value):
        raise bad(f"expected {expected(kind)}, got {shown(value)}")
    if kind in ("integer", "number"):
        value = int(value) if kind == "integer" else float(value)
        if "minimum" in prop and value < prop["minimum"]:
            raise bad(f"{value} is below the minimum {prop['minimum']}{_range(prop)}")
        if "maximum" in prop and value > prop["maximum"]:
            raise bad(f"{value} is above the maximum {prop['maximum']}{_range(prop)}")
    elif kind == "string":
        _text(value, prop, style, bad)
    elif kind == "array":
        if len(value) > prop["maxItems"]:
            raise bad(f"{len(value)} items, the limit is {prop['maxItems']}")
        for item in value:
            rule = f"each item must be a string of at most {prop['items']['maxLength']} characters"
            if not isinstance(item, str):
                raise bad(f"expected a list of strings, got {shown(item)}: {rule}")
            if len(item) > prop["items"]["maxLength"]:
                raise bad(f"{rule}, got {shown(item)}")
    elif kind == "object":
        if len(value) > prop["maxProperties"]:
            raise bad(f"{len(value)} keys, the limit is {prop['maxProperties']}")
        for key, item in value.items():
            if len(key) > prop["propertyNames"]["maxLength"] or not isinstance(item, str) \
                    or len(item) > prop["additionalProperties"]["maxLength"]:
                raise bad(f"each key must be at most {prop['propertyNames']['maxLength']} characters and each "
                          f"value a string of at most {prop['additionalProperties']['maxLength']}, "
                          f"got {shown({key: item})}")
    return value


def _range(prop: dict[str, Any]) -> str:
    return f" (allowed: {prop['minimum']}..{prop['maximum']})" if "minimum" in prop and "maximum" in prop else ""


def _text(value: str, prop: dict[str, Any], style: Style, bad: Callable[[str], ArgumentError]) -> None:
    if len(value) > prop.get("maxLength", len(value)):
        raise bad(f"{len(value):,} characters, the limit is {prop['maxLength']:,}")
    if "enum" in prop and value not in prop["enum"]:
        raise bad(f"{shown(value)} is not one of {', '.join(prop['enum'])}")
    if not style.edge:
        return  # blank text, an id's pattern and a date's format: the library says it, as at the shell
    if len(value.strip()) < prop.get("minLength", 0):
        raise bad("it is empty")
    if "pattern" in prop and not re.fullmatch(prop["pattern"], value):
        raise bad(f"{shown(value)} {PATTERN_RULES[prop['pattern']]}")
    if prop.get("format") == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            raise bad(f"expected a date like 2026-03-01, got {shown(value)}") from None
    if prop.get("format") == "date-time":
        try:
            parse_time(value)
        except ValueError:
            raise bad(f"expected a time like 2026-03-01T18:30 (years 1900 to 9000), got {shown(value)}") from None


def time_value(value: str | None, what: str = "time") -> datetime | None:
    """A tool's or an option's ISO 8601 time (None: none given).

    :raises InvalidValue: not one, said naming ``what``."""
    if value is None:
        return None
    try:
        return parse_time(value.strip())
    except ValueError:
        raise InvalidValue(f"{what} must be an ISO 8601 time like 2026-03-01T18:30, got {value!r}") from None


def parse_time(value: str) -> datetime:
    """An ISO 8601 time ('Z' for UTC too), years 1900 to 9000 (converted to UTC or local time
    later: no overflow there). :raises ValueError: not one."""
    when = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    if not 1900 <= when.year <= 9000:
        raise ValueError("out of range")
    return when
