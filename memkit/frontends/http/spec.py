"""The HTTP API's contract (:mod:`memkit.frontends.http.api`): each route's parameters, body and answers as
JSON Schema, the OpenAPI 3.1 document made from them, and the validation of requests against the
same schemas, so what the server accepts and what the document says cannot drift apart.

No web framework here: plain dicts and functions (the server module imports Starlette).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Mapping

from ... import __version__
from ...errors import MemkitError
from ...base.limits import MAX_ENTRY_CHARS, MAX_QUERY_CHARS, MAX_SEARCH_RESULTS, MAX_SESSION_MESSAGE_CHARS, SEARCH_MODES

__all__ = ["Operation", "OPERATIONS", "RequestError", "check", "openapi", "query_args", "MAX_MESSAGE_CHARS",
           "MAX_NAME_CHARS", "MAX_BODY_BYTES", "MAX_MESSAGE_BODY_BYTES"]

MAX_MESSAGE_CHARS = 20_000  #: /context's message (as the MCP server's get_context)
MAX_NAME_CHARS = 200  #: a topic name, a session id, an entry id
MAX_BODY_BYTES = 256 * 1024  #: a request body larger than this is refused (413)
#: POST /sessions/{session}/messages: a session message may be a pasted document (MAX_SESSION_MESSAGE_CHARS)
MAX_MESSAGE_BODY_BYTES = 8 * 1024 * 1024

# ---- request schemas: the validation and the OpenAPI description come from the same dicts ----------

def _str(description: str, max_length: int, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, "maxLength": max_length, **extra}


TOPIC = "A topic name: lowercase words joined by '-' (e.g. cooking, home-lab)."

SEARCH_PARAMS: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["q"],
    "properties": {
        "q": _str("What to look for: a question, keywords, a name.", MAX_QUERY_CHARS, minLength=1),
        "k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS,
              "description": "Results at most (default: memkit.yaml's max_memories_per_search)."},
        "topic": _str(f"Only this topic and its subtopics. {TOPIC}", MAX_NAME_CHARS, minLength=1),
        "kind": _str("Only entries of this [kind].", 40, minLength=1),
        "tag": _str("Only entries with this #tag (without '#').", 40, minLength=1),
        "since": _str("Only entries dated on or after this day.", 10, format="date"),
        "mode": {"type": "string", "enum": list(SEARCH_MODES), "default": "hybrid",
                 "description": "hybrid: words and meaning fused; vector or lexical: one side only."},
        "min_importance": {"type": "number", "minimum": 0, "maximum": 1,
                           "description": "Only entries whose (importance X) is at least this."},
        "fast": {"type": "boolean", "default": False,
                 "description": "Skip the second stage (the judge re-scoring the best candidates)."},
    },
}
ADD_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["text"],
    "properties": {
        "text": _str("The memory: one self-contained sentence.", MAX_ENTRY_CHARS, minLength=1),
        "topic": _str(f"Where it goes (default: general; created if new). {TOPIC}", MAX_NAME_CHARS, minLength=1),
        "kind": _str("One word: fact, preference, decision, event, pending…", 40, minLength=1),
        "tags": {"type": "array", "items": _str("A tag, one word, without '#'.", 40), "maxItems": 20,
                 "description": "#tags."},
        "due": _str("A follow-up due this day: adds '(due DAY)' (kind pending unless given).", 10, format="date"),
        "until": _str("The memory expires after this day: adds '(until DAY)'.", 10, format="date"),
    },
}
CONTEXT_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["message"],
    "properties": {
        "message": _str("The user's latest message (may be empty).", MAX_MESSAGE_CHARS),
        "session": _str("A conversation id: memories accumulate across calls that share it.", MAX_NAME_CHARS,
                        minLength=1),
        "budget_tokens": {"type": "integer", "minimum": 1, "maximum": 100_000, "default": 2000,
                          "description": "The most tokens the block may take (~4 characters a token)."},
        "reset": {"type": "boolean", "default": False,
                  "description": "Forget the session's accumulated memories and topic first."},
    },
}
DONE_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "id": _str("The follow-up's id (a unique prefix of 4 characters or more).", MAX_NAME_CHARS, minLength=1),
        "match": _str("Or: text the follow-up contains (it must be the only one).", MAX_QUERY_CHARS, minLength=1),
        "topic": _str(f"Look only in this topic. {TOPIC}", MAX_NAME_CHARS, minLength=1),
    },
}
FORGET_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "id": _str("The entry's id (a unique prefix of 4 characters or more).", MAX_NAME_CHARS, minLength=1),
        "match": _str("Or: text the entry contains (it must be the only one).", MAX_QUERY_CHARS, minLength=1),
        "topic": _str(f"Look only in this topic. {TOPIC}", MAX_NAME_CHARS, minLength=1),
        "all": {"type": "boolean", "default": False,
                "description": "An entry written several times (after a merge): remove every copy."},
    },
}
EDIT_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["text"],
    "properties": {
        "id": _str("The entry's id (a unique prefix of 4 characters or more).", MAX_NAME_CHARS, minLength=1),
        "match": _str("Or: text the entry contains (it must be the only one).", MAX_QUERY_CHARS, minLength=1),
        "topic": _str(f"Look only in this topic. {TOPIC}", MAX_NAME_CHARS, minLength=1),
        "text": _str("The new text (its kind and tags stay unless it gives its own).", MAX_ENTRY_CHARS, minLength=1),
    },
}
TOPIC_PATH: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["topic"],
    "properties": {"topic": _str(TOPIC, MAX_NAME_CHARS, minLength=1)},
}
PROACTIVE_PARAMS: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "now": _str("The moment asked about, local time (default: the server's clock).", 40, format="date-time"),
        "last_conversation": _str("When the person last talked to the assistant (default: the latest context "
                                  "session's time).", 40, format="date-time"),
        "draft": {"type": "boolean", "default": True,
                  "description": "Draft an opening line with the LLM memkit.yaml configures (false: never ask it)."},
    },
}
#: a session id as the library writes it (letters, digits, '.', '_', '-'; no '..'): nothing else
#: can name a file in sessions/, so any other value is refused before the library sees it
SESSION_ID = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9._-]*$"
PATTERN_RULES = {SESSION_ID: "is not a session id: use letters, digits, '.', '_' or '-', starting with a letter "
                             "or digit (no '..')"}
SESSION = _str("A session: its id or its file name, exactly (GET /sessions lists them).", 100,
               minLength=1, pattern=SESSION_ID)
ROLES = ["user", "assistant", "system", "tool"]

SESSION_PATH: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["session"], "properties": {"session": SESSION},
}
SESSIONS_PARAMS: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "limit": {"type": "integer", "minimum": 1, "maximum": 100_000,
                  "description": "The most recently updated sessions only, at most this many."},
        "archived": {"type": "boolean", "default": False, "description": "The pruned (archived) sessions instead."},
    },
}
START_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "session": _str("An id to use (letters, digits, '.', '_', '-'); default: a new random one.", 80,
                        minLength=1, pattern=SESSION_ID),
        "title": _str("A short title (default: the first user message's beginning).", 200, minLength=1),
        "system_prompt": _str("The system prompt of the conversation, kept with it.", MAX_MESSAGE_CHARS),
        "user": _str("Who the conversation is with.", 200, minLength=1),
        "tags": {"type": "array", "items": _str("A tag.", 40), "maxItems": 20, "description": "Tags."},
        "metadata": {"type": "object", "maxProperties": 20, "propertyNames": {"maxLength": 40},
                     "additionalProperties": {"type": "string", "maxLength": 1000},
                     "description": "Anything else to keep in the session's header: text values by name."},
    },
}
MESSAGE_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["role", "content"],
    "properties": {
        "role": _str(f"{', '.join(ROLES[:-1])} or {ROLES[-1]}.", 20, minLength=1),
        "content": _str("The message (appended to the session's file at once; nothing is rewritten).",
                        MAX_SESSION_MESSAGE_CHARS),
        "important": {"type": "boolean", "default": False, "description": "A decision or key fact: kept word for "
                      "word when the history is condensed."},
        "name": _str("A tool's or speaker's name.", 80, minLength=1),
        "time": _str("The message's own time, ISO 8601 (default: now; without an offset: UTC).", 40,
                     format="date-time"),
    },
}
LOAD_PARAMS: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "max_tokens": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 4096,
                       "description": "The budget (~4 characters a token)."},
        "strategy": {"type": "string", "enum": ["simple", "summary", "hybrid"],
                     "description": "simple: the newest messages that fit; summary: older ones condensed by the LLM; "
                                    "hybrid: important and system messages kept, routine ones condensed (default: "
                                    "memkit.yaml's session_strategy)."},
    },
}
SESSION_SEARCH_PARAMS: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["q"],
    "properties": {
        "q": _str("What to look for.", MAX_QUERY_CHARS, minLength=1),
        "k": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS, "default": 5,
              "description": "Results at most."},
        "session": SESSION,
        "role": {"type": "string", "enum": ROLES, "description": "Only messages of this role."},
        "since": _str("Only messages of this day or later.", 10, format="date"),
    },
}
UPKEEP_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"at": _str("Run as if at this moment, local time (default: now).", 40, format="date-time")},
}
INDEX_BODY: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {"full": {"type": "boolean", "default": False,
                            "description": "Parse and embed every file again, not only the changed ones."}},
}

# ---- response schemas (components) -----------------------------------------------------------------

_NULL_STR = {"type": ["string", "null"]}
ENTRY = {
    "type": "object", "required": ["id", "text", "topic", "kind", "tags", "date", "file", "line"],
    "properties": {"id": {"type": "string"}, "text": {"type": "string"}, "topic": {"type": "string"},
                   "kind": _NULL_STR, "tags": {"type": "array", "items": {"type": "string"}},
                   "date": {"type": ["string", "null"], "format": "date"}, "file": {"type": "string"},
                   "line": {"type": "integer"},
                   "duplicate": {"type": "boolean", "description": "An add found the same text in the topic "
                                 "already: this is that entry, not written again (absent otherwise)."}},
}
COMPONENTS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error", "status"], "additionalProperties": False,
              "properties": {"error": {"type": "string", "description": "What is wrong, in one line."},
                             "status": {"type": "integer"}}},
    "Entry": ENTRY,
    "Hit": {"allOf": [{"$ref": "#/components/schemas/Entry"}, {
        "type": "object", "required": ["score", "cosine", "lexical", "confident"],
        "properties": {"score": {"type": "number"}, "cosine": {"type": "number"}, "lexical": {"type": "number"},
                       "confident": {"type": "boolean", "description": "false: below the similarity "
                                     "threshold; this is only one of the closest entries"},
                       "judge": {"type": "number", "description": "the judge's cosine (the second search "
                                 "stage re-scored this hit; absent when it did not run)"}}}]},
    "FollowUp": {"allOf": [{"$ref": "#/components/schemas/Entry"}, {
        "type": "object", "required": ["due", "overdue_days"],
        "properties": {"due": {"type": ["string", "null"], "format": "date"},
                       "overdue_days": {"type": ["integer", "null"]},
                       "urgency": {"type": ["string", "null"], "enum": ["high", "medium", "low", None]},
                       "question": {"type": ["string", "null"], "description": "A follow-up question to ask."}}}]},
    "Context": {"type": "object", "required": ["text", "tokens", "recent", "memories"],
                "properties": {"text": {"type": "string", "description": "The block for the system prompt."},
                               "tokens": {"type": "integer"}, "session": _NULL_STR, "topic": _NULL_STR,
                               "recent": {"type": "array"}, "memories": {"type": "array"},
                               "omitted": {"type": "object"}}},
    "TopicInfo": {"type": "object", "required": ["name", "entries", "updated", "summary", "file"],
                  "properties": {"name": {"type": "string"}, "entries": {"type": "integer", "description": "How many."},
                                 "updated": {"type": "string", "description": "ISO time, local."},
                                 "summary": {"type": "string"}, "file": {"type": "string"}}},
    "Topic": {"type": "object", "required": ["name", "split_into"],
              "properties": {"name": {"type": "string"}, "title": {"type": "string"}, "summary": {"type": "string"},
                             "file": {"type": "string"},
                             "entries": {"type": "array", "items": {"$ref": "#/components/schemas/Entry"}},
                             "split_into": {"type": "array", "items": {"type": "string"},
                                            "description": "The subtopics a split made of it (a topic split away "
                                                           "has only name and split_into)."}}},
    "Recent": {"type": "object", "required": ["updated", "topic", "summary"],
               "properties": {"updated": {"type": "string"}, "topic": {"type": "string"},
                              "summary": {"type": "string"}}},
    "Job": {"type": "object", "required": ["name", "running"],
            "properties": {"name": {"type": "string", "enum": ["index"]}, "running": {"type": "boolean"},
                           "started": _NULL_STR, "finished": _NULL_STR,
                           "report": {"type": ["object", "null"], "description": "The last run's report."},
                           "error": _NULL_STR}},
    "Nudge": {"type": "object", "required": ["now", "reason", "follow_up", "question", "opening"],
              "properties": {"now": {"type": "boolean", "description": "A good moment to bring something up."},
                             "reason": {"type": "string", "description": "Why, or why not, in one line."},
                             "follow_up": {"oneOf": [{"$ref": "#/components/schemas/FollowUp"}, {"type": "null"}]},
                             "question": _NULL_STR, "opening": {"type": ["string", "null"], "description":
                                                                "The opening line the LLM drafted (null: no LLM)."},
                             "last_conversation": _NULL_STR, "quiet_until": _NULL_STR}},
    "Session": {"type": "object", "required": ["id", "file", "title", "created", "updated"],
                "properties": {"id": {"type": "string"}, "file": {"type": "string"}, "title": _NULL_STR,
                               "created": {"type": "string"}, "updated": {"type": "string"}, "system": _NULL_STR,
                               "user": _NULL_STR, "tags": {"type": "array", "items": {"type": "string"}},
                               "metadata": {"type": "object"}, "stage": _NULL_STR, "archived": {"type": "boolean"}}},
    "SessionInfo": {"type": "object", "required": ["id", "file", "title", "created", "updated", "messages"],
                    "properties": {"id": {"type": "string"}, "file": {"type": "string"}, "title": {"type": "string"},
                                   "created": {"type": "string"}, "updated": {"type": "string"},
                                   "messages": {"type": "integer", "description": "How many."}, "user": _NULL_STR,
                                   "tags": {"type": "array", "items": {"type": "string"}},
                                   "bytes": {"type": "integer"}, "archived": {"type": "boolean"},
                                   "stage": _NULL_STR}},
    "Message": {"type": "object", "required": ["role", "content", "time"],
                "properties": {"role": {"type": "string", "enum": ROLES}, "content": {"type": "string"},
                               "time": {"type": "string", "description": "ISO 8601, UTC."},
                               "important": {"type": "boolean"}, "name": {"type": "string"},
                               "line": {"type": "integer"}}},
    "Window": {"type": "object", "required": ["session", "strategy", "messages", "tokens", "max_tokens", "total",
                                              "omitted"],
               "properties": {"session": {"type": "string"}, "strategy": {"type": "string"},
                              "requested": {"type": "string"}, "tokens": {"type": "integer"},
                              "max_tokens": {"type": "integer"},
                              "total": {"type": "integer", "description": "Messages in the session."},
                              "omitted": {"type": "integer", "description": "Messages left out."},
                              "summarised": {"type": "integer"}, "summary_cached": {"type": "boolean"},
                              "note": {"type": ["string", "null"], "description": "A fallback, said in words."},
                              "messages": {"type": "array", "items": {"$ref": "#/components/schemas/Message"},
                                           "description": "Oldest first: the system prompt, a summary of older "
                                                          "messages when one was made, the newest that fit."}}},
    "SessionHit": {"type": "object", "required": ["session", "file", "line", "time", "role", "text", "score"],
                   "properties": {"session": {"type": "string"}, "title": {"type": "string"},
                                  "file": {"type": "string"}, "line": {"type": "integer"}, "time": {"type": "string"},
                                  "role": {"type": "string"}, "text": {"type": "string"}, "score": {"type": "number"},
                                  "cosine": {"type": "number"}, "lexical": {"type": "number"}}},
    "Upkeep": {"type": "object", "required": ["at", "jobs"],
               "properties": {"at": {"type": "string"}, "jobs": {"type": "array", "items": {
                   "type": "object", "required": ["job", "did", "changed"],
                   "properties": {"job": {"type": "string"}, "did": {"type": "string", "description": "One line."},
                                  "changed": {"type": "boolean"}}}}}},
    "IndexState": {"type": "object", "required": ["model", "dim", "stale_files", "job"],
                   "properties": {"model": _NULL_STR, "dim": {"type": ["integer", "null"]}, "file": _NULL_STR,
                                  "exists": {"type": "boolean"},
                                  "stale_files": {"type": ["integer", "null"],
                                                  "description": "Topic files changed since the last refresh."},
                                  "error": _NULL_STR, "job": {"$ref": "#/components/schemas/Job"}}},
}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _obj(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": props}


@dataclass
class Operation:
    """One route: what it takes, what it answers, and the method of :class:`Api` that serves it."""

    method: str
    path: str
    handler: str
    summary: str
    ok: int
    answer: dict[str, Any]
    query: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    body_required: bool = True
    errors: tuple[int, ...] = ()
    params: dict[str, Any] | None = None  #: the path's parameters (``{session}``)
    max_body: int = MAX_BODY_BYTES


OPERATIONS = [
    Operation("GET", "/search", "search", "Search memories (exact words and meaning, fused), best first.", 200,
              _obj(["hits"], hits={"type": "array", "items": _ref("Hit")}), query=SEARCH_PARAMS, errors=(400, 404)),
    Operation("POST", "/add", "add", "Append a memory to a topic; returns the entry written (and where: a topic "
              "over its size limit is split at once).", 201, _ref("Entry"), body=ADD_BODY, errors=(400, 409)),
    Operation("POST", "/context", "context", "The memory block for an assistant's system prompt, for the user's "
              "latest message.", 200, _ref("Context"), body=CONTEXT_BODY, errors=(400,)),
    Operation("POST", "/forget", "forget", "Remove a memory (by id or text): the line moves to archive.md with "
              "the day and its topic, so it can be put back; nothing is deleted.", 200,
              _obj(["forgotten"], forgotten={"type": "array", "items": _ref("Entry")}), body=FORGET_BODY,
              errors=(400, 404, 409)),
    Operation("POST", "/edit", "edit", "Change a memory where it stands (by id or text); the old line is kept in "
              "archive.md. Returns the new entry (dated today).", 200, _ref("Entry"), body=EDIT_BODY,
              errors=(400, 404, 409)),
    Operation("GET", "/topics", "topics", "Every topic, most recently updated first: name, entries, updated, "
              "summary, file.", 200, _obj(["topics"], topics={"type": "array", "items": _ref("TopicInfo")})),
    Operation("GET", "/topics/{topic}", "show_topic", "One topic's entries with their ids (for POST /forget and "
              "POST /edit), or, for a topic that was split, the topics it was split into.", 200, _ref("Topic"),
              params=TOPIC_PATH, errors=(400, 404, 409)),
    Operation("GET", "/recent", "recent", "The recent-topics index (index.txt), newest first.", 200,
              _obj(["recent"], recent={"type": "array", "items": _ref("Recent")})),
    Operation("GET", "/pending", "pending", "The follow-ups (kind pending), most urgent first.", 200,
              _obj(["pending"], pending={"type": "array", "items": _ref("FollowUp")})),
    Operation("GET", "/proactive", "proactive", "Whether now is a good moment to raise a follow-up (never in "
              "quiet_hours, nor within proactive_gap_hours of the last conversation), which one, its question "
              "and, with an LLM, a drafted opening line.", 200, _ref("Nudge"), query=PROACTIVE_PARAMS,
              errors=(400,)),
    Operation("POST", "/pending/done", "done", "Resolve a follow-up (by id or text): it moves to archive.md as "
              "done.", 200, _obj(["done"], done=_ref("Entry")), body=DONE_BODY, errors=(400, 404, 409)),
    Operation("GET", "/stats", "stats", "Counts: entries per topic and kind, follow-ups, archive, index, inbox.",
              200, _obj(["topics", "entries", "per_topic", "per_kind", "pending", "index"],
                        topics={"type": "integer"}, entries={"type": "integer"}, per_topic={"type": "object"},
                        per_kind={"type": "object"}, pending={"type": "integer"}, index={"type": "object"})),
    Operation("GET", "/busy", "busy", "Whether a long job runs: in this server an index refresh started by "
              "POST /index (job 'index') or, with --watch and an LLM, a digest of inbox/ (job 'digest'); or "
              "any writer (this server, the CLI, a watcher, a digest) holding the vault's write lock.", 200,
              _obj(["busy", "jobs", "write_lock"], busy={"type": "boolean"},
                   jobs={"type": "array", "items": {"type": "string"}, "description": "Jobs running in this server."},
                   write_lock={"type": "boolean", "description": "A writer holds the vault's write lock now."})),
    Operation("GET", "/index", "index_status", "The index: model, dimension, topic files it is behind, and the "
              "last index job of this server.", 200, _ref("IndexState")),
    Operation("POST", "/index", "index_start", "Start bringing the index up to date in the background; "
              "GET /index and GET /busy follow it.", 202, _obj(["job"], job=_ref("Job")), body=INDEX_BODY,
              body_required=False, errors=(400, 409)),
    Operation("GET", "/sessions", "list_sessions", "The saved conversations, most recently updated first.", 200,
              _obj(["sessions"], sessions={"type": "array", "items": _ref("SessionInfo")}), query=SESSIONS_PARAMS,
              errors=(400,)),
    Operation("POST", "/sessions", "start_session", "Start saving a conversation: a new session file in sessions/. "
              "Its id works with the routes below and as POST /context's session.", 201, _ref("Session"),
              body=START_BODY, body_required=False, errors=(400, 409)),
    # before /sessions/{session}: a session whose id is 'search' is loaded by its file name
    Operation("GET", "/sessions/search", "search_sessions", "Find messages of saved conversations by meaning and "
              "words, best first.", 200, _obj(["hits"], hits={"type": "array", "items": _ref("SessionHit")}),
              query=SESSION_SEARCH_PARAMS, errors=(400, 404)),
    Operation("GET", "/sessions/{session}", "load_session", "A saved conversation's history within a token budget, "
              "oldest first, to continue it (summary and hybrid may wait for the LLM).", 200, _ref("Window"),
              query=LOAD_PARAMS, params=SESSION_PATH, errors=(400, 404)),
    Operation("POST", "/sessions/{session}/window", "keep_window", "As GET /sessions/{session}, and a summary made "
              "on the way is cached in the session's file (a GET writes nothing), so the next load needs no LLM call.",
              200, _ref("Window"), body=LOAD_PARAMS, body_required=False, params=SESSION_PATH, errors=(400, 404, 409)),
    Operation("POST", "/sessions/{session}/messages", "save_message", "Append one message to a saved conversation "
              "(one append to its file; nothing is rewritten). Returns the message with its time.", 201,
              {"allOf": [_ref("Message"), _obj(["session"], session={"type": "string"})]}, body=MESSAGE_BODY,
              params=SESSION_PATH, errors=(400, 404, 409), max_body=MAX_MESSAGE_BODY_BYTES),
    Operation("POST", "/upkeep", "run_upkeep", "Run the scheduled jobs now, as `memkit upkeep` does: expired "
              "memories archived, sessions digested and aged, old ones archived, the profile re-distilled when "
              "due. Slow when an LLM is configured; searches go on meanwhile.", 200, _ref("Upkeep"),
              body=UPKEEP_BODY, body_required=False, errors=(400, 409)),
]

STATUS_TEXT = {
    400: "Bad request: a missing, unknown or invalid field or parameter, or a Host that is not loopback",
    401: "Missing or wrong bearer token",
    403: "A request from a web page of another site (its Origin or Sec-Fetch-Site): refused",
    408: "The connection closed before the body was complete (a sender too slow is cut)",
    404: "No such topic, entry or session",
    405: "Method not allowed",
    409: "Conflict: the file, session or job state does not allow it now",
    413: "Body too large",
    415: "Needs Content-Type: application/json (every method but GET, an empty body too)",
    500: "The server could not do it",
    503: "The vault is busy (Retry-After), or the model or the LLM is unavailable",
}


def openapi(*, token: bool = False, mcp: bool = False) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route (``token``: say that requests need the bearer
    token; ``mcp``: the server also speaks MCP at /mcp)."""
    def error_responses(codes: set[int]) -> dict[str, Any]:
        # every route: 400 (an unknown query parameter, a Host that is not loopback), 403 (another
        # site's page), 405; 401 with a token
        codes = codes | {400, 403, 405} | ({401} if token else set())
        return {str(code): {"description": STATUS_TEXT[code],
                            "content": {"application/json": {"schema": _ref("Error")}}} for code in sorted(codes)}

    paths: dict[str, Any] = {"/openapi.json": {"get": {
        "summary": "This description.", "operationId": "openapi",
        "responses": {"200": {"description": "The OpenAPI document.",
                              "content": {"application/json": {"schema": {"type": "object"}}}},
                      **error_responses(set())}}}}
    for op in OPERATIONS:
        spec: dict[str, Any] = {"summary": op.summary, "operationId": op.handler}
        parameters = [
            {"name": name, "in": where, "required": where == "path" or name in params.get("required", []),
             "description": schema.get("description", ""),
             "schema": {k: v for k, v in schema.items() if k != "description"}}
            for where, params in (("path", op.params), ("query", op.query)) if params is not None
            for name, schema in params["properties"].items()]
        if parameters:
            spec["parameters"] = parameters
        if op.body is not None:
            spec["requestBody"] = {"required": op.body_required,
                                   "content": {"application/json": {"schema": op.body}}}
        codes = (set(op.errors) | ({408, 413} if op.body is not None else set())
                 | ({415} if op.method != "GET" else set()) | {500, 503})
        spec["responses"] = {str(op.ok): {"description": "OK" if op.ok == 200 else "Done",
                                          "content": {"application/json": {"schema": op.answer}}},
                             **error_responses(codes)}
        paths.setdefault(op.path, {})[op.method.lower()] = spec
    if mcp:
        paths["/mcp"] = {method: {
            "summary": "MCP over streamable HTTP: the tools and resources of `memkit mcp` (JSON-RPC messages; "
                       "see the MCP specification, not this document, for their shapes).",
            "operationId": f"mcp_{method}",
            "responses": {"default": {"description": "An MCP answer: JSON, a server-sent event stream, or 202."}}}
            for method in ("get", "post", "delete")}
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "memkit", "version": __version__,
                 "description": "A memkit vault's long-term memory over HTTP (`memkit serve`). Errors are JSON: "
                                "{\"error\": \"what is wrong\", \"status\": code}."},
        "paths": paths, "components": {"schemas": COMPONENTS},
    }
    if token:
        doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc


# ---- validation -------------------------------------------------------------------------------------

class RequestError(MemkitError):
    """A request the API refuses before the library sees it: an HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _expected(kind: str) -> str:
    return {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "array": "a list of strings", "object": "an object of strings"}[kind]


def check(schema: dict[str, Any], data: Any, what: str = "field") -> dict[str, Any]:
    """Validate ``data`` against one of the request schemas above (the subset of JSON Schema they
    use); returns it with the defaults filled in. :raises RequestError: 400 naming the field."""
    if not isinstance(data, dict):
        raise RequestError(400, f"the body must be a JSON object, got {_shown(data)}")
    props: dict[str, Any] = schema["properties"]
    unknown = sorted(set(data) - set(props))
    if unknown:
        raise RequestError(400, f"unknown {what} {unknown[0]!r} (expected: {', '.join(props)})")
    for name in schema.get("required", []):
        if data.get(name) is None:
            raise RequestError(400, f"missing required {what} {name!r}")
    out: dict[str, Any] = {}
    for name, spec in props.items():
        value: Any = data.get(name)
        if value is None:
            out[name] = spec.get("default")
            continue
        kind = spec["type"]
        ok = {"string": isinstance(value, str), "boolean": isinstance(value, bool), "array": isinstance(value, list),
              "object": isinstance(value, dict),
              "integer": (isinstance(value, int) and not isinstance(value, bool))
              or (isinstance(value, float) and value.is_integer()),
              "number": isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)}[kind]
        if not ok:
            raise RequestError(400, f"invalid {what} {name}: expected {_expected(kind)}, got {_shown(value)}")
        if kind in ("integer", "number"):
            value = int(value) if kind == "integer" else float(value)
            if value < spec.get("minimum", value) or value > spec.get("maximum", value):
                raise RequestError(400, f"invalid {what} {name}: {value} is outside "
                                        f"{spec['minimum']}..{spec['maximum']}")
        if kind == "string":
            if len(value) > spec.get("maxLength", len(value)):
                raise RequestError(400, f"invalid {what} {name}: {len(value):,} characters, the limit is "
                                        f"{spec['maxLength']:,}")
            if len(value.strip()) < spec.get("minLength", 0):
                raise RequestError(400, f"invalid {what} {name}: it is empty")
            if "pattern" in spec and not re.fullmatch(spec["pattern"], value):
                raise RequestError(400, f"invalid {what} {name}: {_shown(value)} {PATTERN_RULES[spec['pattern']]}")
            if "enum" in spec and value not in spec["enum"]:
                raise RequestError(400, f"invalid {what} {name}: {_shown(value)} is not one of "
                                        f"{', '.join(spec['enum'])}")
            if spec.get("format") == "date":
                try:
                    date.fromisoformat(value)
                except ValueError:
                    raise RequestError(400, f"invalid {what} {name}: expected a date like 2026-03-01, "
                                            f"got {_shown(value)}") from None
            if spec.get("format") == "date-time":
                try:
                    when = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
                    if not 1900 <= when.year <= 9000:  # converted to UTC or local time later: no overflow there
                        raise ValueError("out of range")
                except ValueError:
                    raise RequestError(400, f"invalid {what} {name}: expected a time like 2026-03-01T18:30 "
                                            f"(years 1900 to 9000), got {_shown(value)}") from None
        if kind == "object":
            if len(value) > spec["maxProperties"]:
                raise RequestError(400, f"invalid {what} {name}: {len(value)} keys, the limit is {spec['maxProperties']}")
            for key, item in value.items():
                if len(key) > spec["propertyNames"]["maxLength"] or not isinstance(item, str) \
                        or len(item) > spec["additionalProperties"]["maxLength"]:
                    raise RequestError(400, f"invalid {what} {name}: each key must be at most "
                                            f"{spec['propertyNames']['maxLength']} characters and each value a "
                                            f"string of at most {spec['additionalProperties']['maxLength']}, "
                                            f"got {_shown({key: item})}")
        if kind == "array":
            if len(value) > spec["maxItems"]:
                raise RequestError(400, f"invalid {what} {name}: {len(value)} items, the limit is {spec['maxItems']}")
            for item in value:
                if not isinstance(item, str) or len(item) > spec["items"]["maxLength"]:
                    raise RequestError(400, f"invalid {what} {name}: each item must be a string of at most "
                                            f"{spec['items']['maxLength']} characters, got {_shown(item)}")
        out[name] = value
    return out


def query_args(schema: dict[str, Any], params: Any) -> dict[str, Any]:
    """The query parameters (a Starlette ``QueryParams``) as typed values, validated."""
    data: dict[str, Any] = {}
    for name in params.keys():
        values = params.getlist(name)
        if len(values) > 1:
            raise RequestError(400, f"query parameter {name!r} is given {len(values)} times; give it once")
        value: Any = values[0]
        kind = schema["properties"].get(name, {}).get("type")
        if kind in ("integer", "number"):
            try:
                value = int(value) if kind == "integer" else float(value)
            except ValueError:
                raise RequestError(400, f"invalid query parameter {name}: expected {_expected(kind)}, "
                                        f"got {_shown(value)}") from None
        elif kind == "boolean":
            if value.lower() not in ("true", "false", "1", "0"):
                raise RequestError(400, f"invalid query parameter {name}: expected true or false, got {_shown(value)}")
            value = value.lower() in ("true", "1")
        data[name] = value
    return check(schema, data, "query parameter")
