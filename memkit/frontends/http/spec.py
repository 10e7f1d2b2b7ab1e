"""The HTTP API's contract (:mod:`memkit.frontends.http.api`): each route's parameters, body and answers as
JSON Schema, and the OpenAPI 3.1 document made from them. The parameters and bodies are made from
the table of operations (:mod:`memkit.frontends.operations`) and checked by its one validation, so
what the server accepts, what the document says and what the CLI and the MCP server take cannot
drift apart.

No web framework here: plain dicts and functions (the server module imports Starlette).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ... import __version__
from ...errors import MemkitError
from ..operations import ROLES, Style, expected, schema, shown
from ..operations import check as check_params

__all__ = ["HttpRoute", "OPERATIONS", "RequestError", "check", "openapi", "query_args", "MAX_BODY_BYTES",
           "MAX_MESSAGE_BODY_BYTES"]

MAX_BODY_BYTES = 256 * 1024  #: a request body larger than this is refused (413)
#: POST /sessions/{session}/messages: a session message may be a pasted document (MAX_SESSION_MESSAGE_CHARS)
MAX_MESSAGE_BODY_BYTES = 8 * 1024 * 1024

# ---- request schemas: made from the table of operations (memkit.frontends.operations), which also checks them ----

def _params(op: str, where: str | None = None) -> dict[str, Any]:
    return schema(op, "http", where)


SEARCH_PARAMS = _params("search")
ADD_BODY = _params("add")
CONTEXT_BODY = _params("context")
DONE_BODY = _params("done")
FORGET_BODY = _params("forget")
EDIT_BODY = _params("edit")
TOPIC_PATH = _params("show", "path")
PROACTIVE_PARAMS = _params("proactive")
SESSION_PATH = _params("load_session", "path")
WHY_PATH = _params("why", "path")
RELATED_PARAMS = _params("related")
SESSIONS_PARAMS = _params("list_sessions")
START_BODY = _params("start_session")
MESSAGE_BODY = _params("save_message", "body")
LOAD_PARAMS = _params("load_session", "body")
SESSION_SEARCH_PARAMS = _params("search_sessions")
UPKEEP_BODY = _params("upkeep")
INDEX_BODY = _params("index")
SET_BODY = _params("set")
GET_PARAMS = _params("get")
PERSON_BODY = _params("add_person")

# ---- response schemas (components) -----------------------------------------------------------------

_NULL_STR = {"type": ["string", "null"]}
ENTRY = {
    "type": "object", "required": ["id", "text", "topic", "kind", "tags", "date", "file", "line"],
    "properties": {"id": {"type": "string"}, "text": {"type": "string"}, "topic": {"type": "string"},
                   "kind": _NULL_STR, "tags": {"type": "array", "items": {"type": "string"}},
                   "date": {"type": ["string", "null"], "format": "date"}, "file": {"type": "string"},
                   "line": {"type": "integer"},
                   "duplicate": {"type": "boolean", "description": "An add found the same text in the topic "
                                 "already: this is that entry, not written again (absent otherwise)."},
                   "redacted": {"type": "integer", "description": "An add or edit: how many secrets were replaced "
                                "by [redacted] before the text was written (absent when none; docs/privacy.md)."}},
}
COMPONENTS: dict[str, Any] = {
    "Error": {"type": "object", "required": ["error", "status"], "additionalProperties": False,
              "properties": {"error": {"type": "string", "description": "What is wrong, in one line."},
                             "status": {"type": "integer"}}},
    "Entry": ENTRY,
    "Why": {"type": "object", "required": ["id", "text", "topic", "status", "source", "day", "file", "kind", "lines"],
            "properties": {
                "id": {"type": "string"}, "text": {"type": "string"}, "topic": {"type": "string"},
                "status": {"type": "string", "description": "current, or why it left (archive.md)"},
                "source": {"type": "string", "description": "a session id's beginning or a transcript's file name"},
                "day": {"type": ["string", "null"], "format": "date"},
                "file": {"type": "string", "description": "the conversation's file, relative to the vault"},
                "kind": {"type": "string", "enum": ["session", "raw", "transcript"]},
                "lines": {"type": "array", "items": {
                    "type": "object", "required": ["line", "role", "text", "match"],
                    "properties": {"line": {"type": "integer"}, "role": {"type": "string"}, "text": {"type": "string"},
                                   "match": {"type": "boolean",
                                             "description": "false: the message before, as context"}}}}}},
    "Hit": {"allOf": [{"$ref": "#/components/schemas/Entry"}, {
        "type": "object", "required": ["score", "cosine", "lexical", "confident"],
        "properties": {"score": {"type": "number"}, "cosine": {"type": "number"}, "lexical": {"type": "number"},
                       "confident": {"type": "boolean", "description": "false: below the similarity "
                                     "threshold; this is only one of the closest entries"},
                       "judge": {"type": "number", "description": "the judge's cosine (the second search "
                                 "stage re-scored this hit; absent when it did not run)"},
                       "relevance": {"type": "number", "minimum": 0, "maximum": 1,
                                     "description": "how likely this hit answers the query, calibrated on "
                                     "memkit's sets (not relative to the best hit; absent when the judge did not run)"}}}]},
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
                                                           "has only name and split_into)."},
                             "named_as": {"type": "string", "description": "The name asked for, when it named the "
                                          "topic as a [[link]] does (its file's name alone, an alias)."},
                             "also_named_so": {"type": "array", "items": {"type": "string"}, "description":
                                               "The other topics whose files have that name (the shortest path "
                                               "was shown)."}}},
    "Recent": {"type": "object", "required": ["updated", "topic", "summary"],
               "properties": {"updated": {"type": "string"}, "topic": {"type": "string"},
                              "summary": {"type": "string"}}},
    "Fact": {"type": "object", "required": ["key", "value", "day"],
             "properties": {"key": {"type": "string"}, "value": {"type": ["string", "null"], "description":
                                                                 "null: none now (a history of a key since removed)"},
                            "day": {"type": ["string", "null"], "format": "date", "description": "When it was set."},
                            "history": {"type": "array", "description": "With history=true: every value, oldest "
                                        "first.", "items": {"type": "object", "required": ["value", "day", "live"],
                                                            "properties": {"value": {"type": "string"},
                                                                           "day": _NULL_STR,
                                                                           "live": {"type": "boolean"}}}}}},
    "Person": {"type": "object", "required": ["name", "relation", "detail", "about", "line"],
               "properties": {"name": {"type": "string"},
                              "relation": {"type": "string", "description": "One word, lowercase; '' when none."},
                              "detail": {"type": "string"}, "about": {"type": "string"},
                              "line": {"type": "integer", "description": "Its line in people.md."}}},
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
                "properties": {"role": {"type": "string", "enum": list(ROLES)}, "content": {"type": "string"},
                               "time": {"type": "string", "description": "ISO 8601, UTC."},
                               "important": {"type": "boolean"}, "name": {"type": "string"},
                               "line": {"type": "integer"},
                               "redacted": {"type": "integer", "description": "Secrets replaced by [redacted] "
                                            "before it was saved (absent when none; docs/privacy.md)."},
                               "created": {"type": "boolean", "description": "Saving it started its session (an "
                                           "id with no session yet; absent otherwise)."}}},
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
class HttpRoute:
    """One HTTP route of an operation (:data:`memkit.frontends.operations.OPERATIONS` declares the
    operations): what it takes, what it answers, and the method of :class:`Api` that serves it."""

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
    HttpRoute("GET", "/search", "search", "Search memories (exact words and meaning, fused), best first.", 200,
              _obj(["hits"], hits={"type": "array", "items": _ref("Hit")}), query=SEARCH_PARAMS, errors=(400, 404)),
    HttpRoute("POST", "/add", "add", "Append a memory to a topic; returns the entry written (and where: a topic "
              "over its size limit is split at once).", 201, _ref("Entry"), body=ADD_BODY, errors=(400, 409)),
    HttpRoute("POST", "/context", "context", "The memory block for an assistant's system prompt, for the user's "
              "latest message.", 200, _ref("Context"), body=CONTEXT_BODY, errors=(400,)),
    HttpRoute("POST", "/forget", "forget", "Remove a memory (by id or text): the line moves to archive.md with "
              "the day and its topic, so it can be put back; nothing is deleted.", 200,
              _obj(["forgotten"], forgotten={"type": "array", "items": _ref("Entry")}), body=FORGET_BODY,
              errors=(400, 404, 409)),
    HttpRoute("POST", "/edit", "edit", "Change a memory where it stands (by id or text); the old line is kept in "
              "archive.md. Returns the new entry (dated today).", 200, _ref("Entry"), body=EDIT_BODY,
              errors=(400, 404, 409)),
    HttpRoute("GET", "/topics", "topics", "Every topic, most recently updated first: name, entries, updated, "
              "summary, file.", 200, _obj(["topics"], topics={"type": "array", "items": _ref("TopicInfo")})),
    HttpRoute("GET", "/topics/{topic}", "show_topic", "One topic's entries with their ids (for POST /forget and "
              "POST /edit), or, for a topic that was split, the topics it was split into.", 200, _ref("Topic"),
              params=TOPIC_PATH, errors=(400, 404, 409)),
    HttpRoute("GET", "/recent", "recent", "The recent-topics index (index.txt), newest first.", 200,
              _obj(["recent"], recent={"type": "array", "items": _ref("Recent")})),
    HttpRoute("GET", "/why/{id}", "why", "Where a memory came from: the conversation its (from …) marker names "
              "(a session, an aged session's raw archive, a transcript in inbox/done/) and the lines of it that say "
              "the memory. 404: no such entry, it names no conversation, or that conversation is gone.", 200,
              _ref("Why"), params=WHY_PATH, errors=(400, 404)),
    HttpRoute("GET", "/related", "related", "The memories most like a memory (ref: its id) or a topic (ref: its "
              "name), without a query: its text through the two stages of GET /search, itself left out. 404: no "
              "such entry or topic.", 200,
              _obj(["of", "hits"], of={"type": "object"}, hits={"type": "array", "items": _ref("Hit")}),
              query=RELATED_PARAMS, errors=(400, 404)),
    HttpRoute("GET", "/pending", "pending", "The follow-ups (kind pending), most urgent first.", 200,
              _obj(["pending"], pending={"type": "array", "items": _ref("FollowUp")})),
    HttpRoute("GET", "/proactive", "proactive", "Whether now is a good moment to raise a follow-up (never in "
              "quiet_hours, nor within proactive_gap_hours of the last conversation), which one, its question "
              "and, with an LLM, a drafted opening line.", 200, _ref("Nudge"), query=PROACTIVE_PARAMS,
              errors=(400,)),
    HttpRoute("POST", "/pending/done", "done", "Resolve a follow-up (by id or text): it moves to archive.md as "
              "done.", 200, _obj(["done"], done=_ref("Entry")), body=DONE_BODY, errors=(400, 404, 409)),
    HttpRoute("POST", "/facts", "set_fact", "Give a key (the user's city, the wifi name) its one live value: its "
              "line in topics/facts.md is replaced where it stands, the old value kept in archive.md with its date.",
              200, _obj(["key", "value", "old", "changed", "id"], key={"type": "string"}, value={"type": "string"},
                        old=_NULL_STR, changed={"type": "boolean", "description": "false: it had that value"},
                        id=_NULL_STR, redacted={"type": "integer", "description": "Secrets replaced by "
                                                "[redacted] in the value (absent when none; docs/privacy.md)."}),
              body=SET_BODY, errors=(400, 409)),
    HttpRoute("GET", "/facts", "get_fact", "A key's live value (404: none), with history=true every value it had; "
              "without a key, every key with its value.", 200,
              {"oneOf": [_ref("Fact"), _obj(["facts"], facts={"type": "array", "items": _ref("Fact")})]},
              query=GET_PARAMS, errors=(400, 404)),
    HttpRoute("GET", "/people", "people", "The people memories are about (people.md), in its order.", 200,
              _obj(["people"], people={"type": "array", "items": _ref("Person")})),
    HttpRoute("POST", "/people", "add_person", "Append a person to people.md (created when missing).", 201,
              _ref("Person"), body=PERSON_BODY, errors=(400, 409)),
    HttpRoute("GET", "/stats", "stats", "Counts: entries per topic and kind, follow-ups, archive, index, inbox.",
              200, _obj(["topics", "entries", "per_topic", "per_kind", "pending", "index"],
                        topics={"type": "integer"}, entries={"type": "integer"}, per_topic={"type": "object"},
                        per_kind={"type": "object"}, pending={"type": "integer"}, index={"type": "object"})),
    HttpRoute("GET", "/busy", "busy", "Whether a long job runs: in this server an index refresh started by "
              "POST /index (job 'index') or, with --watch and an LLM, a digest of inbox/ (job 'digest'); or "
              "any writer (this server, the CLI, a watcher, a digest) holding the vault's write lock.", 200,
              _obj(["busy", "jobs", "write_lock"], busy={"type": "boolean"},
                   jobs={"type": "array", "items": {"type": "string"}, "description": "Jobs running in this server."},
                   write_lock={"type": "boolean", "description": "A writer holds the vault's write lock now."})),
    HttpRoute("GET", "/index", "index_status", "The index: model, dimension, topic files it is behind, and the "
              "last index job of this server.", 200, _ref("IndexState")),
    HttpRoute("POST", "/index", "index_start", "Start bringing the index up to date in the background; "
              "GET /index and GET /busy follow it.", 202, _obj(["job"], job=_ref("Job")), body=INDEX_BODY,
              body_required=False, errors=(400, 409)),
    HttpRoute("GET", "/sessions", "list_sessions", "The saved conversations, most recently updated first.", 200,
              _obj(["sessions"], sessions={"type": "array", "items": _ref("SessionInfo")}), query=SESSIONS_PARAMS,
              errors=(400,)),
    HttpRoute("POST", "/sessions", "start_session", "Start saving a conversation: a new session file in sessions/. "
              "Its id works with the routes below and as POST /context's session.", 201, _ref("Session"),
              body=START_BODY, body_required=False, errors=(400, 409)),
    # before /sessions/{session}: a session whose id is 'search' is loaded by its file name
    HttpRoute("GET", "/sessions/search", "search_sessions", "Find messages of saved conversations by meaning and "
              "words, best first.", 200, _obj(["hits"], hits={"type": "array", "items": _ref("SessionHit")}),
              query=SESSION_SEARCH_PARAMS, errors=(400, 404)),
    HttpRoute("GET", "/sessions/{session}", "load_session", "A saved conversation's history within a token budget, "
              "oldest first, to continue it (summary and hybrid may wait for the LLM).", 200, _ref("Window"),
              query=LOAD_PARAMS, params=SESSION_PATH, errors=(400, 404)),
    HttpRoute("POST", "/sessions/{session}/window", "keep_window", "As GET /sessions/{session}, and a summary made "
              "on the way is cached in the session's file (a GET writes nothing), so the next load needs no LLM call.",
              200, _ref("Window"), body=LOAD_PARAMS, body_required=False, params=SESSION_PATH, errors=(400, 404, 409)),
    HttpRoute("POST", "/sessions/{session}/messages", "save_message", "Append one message to a saved conversation "
              "(one append to its file; nothing is rewritten; an id with no session starts one, as POST /context "
              "does: then created is true). Returns the message with its time.", 201,
              {"allOf": [_ref("Message"), _obj(["session"], session={"type": "string"})]}, body=MESSAGE_BODY,
              params=SESSION_PATH, errors=(400, 404, 409), max_body=MAX_MESSAGE_BODY_BYTES),
    HttpRoute("POST", "/upkeep", "run_upkeep", "Run the scheduled jobs now, as `memkit upkeep` does: expired "
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
                      **error_responses(set())}}},
        "/health": {"get": {
            "summary": "For a supervisor: ok, the vault, the index's state (as GET /index).", "operationId": "health",
            "responses": {"200": {"description": "Serving, the index readable.",
                                  "content": {"application/json": {"schema": {
                                      "type": "object", "required": ["ok", "vault", "index"],
                                      "properties": {"ok": {"type": "boolean"}, "vault": {"type": "string"},
                                                     "index": {"type": "object"}}}}}},
                          **error_responses({503})}}}}
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


def check(spec: dict[str, Any], data: Any, what: str = "field") -> dict[str, Any]:
    """Validate a request's ``what`` (field, query parameter, path parameter) against ``spec``: the
    table's one validation (:func:`memkit.frontends.operations.check`), said the HTTP way."""
    return check_params(spec, data, Style(invalid=f"invalid {what}", what=what))


def query_args(schema: dict[str, Any], params: Any) -> dict[str, Any]:
    """The query parameters (a Starlette ``QueryParams``) as typed values, validated."""
    data: dict[str, Any] = {}
    for name in params.keys():
        values = params.getlist(name)
        if schema["properties"].get(name, {}).get("type") == "array":  # ?where=a=1&where=b=2
            data[name] = values
            continue
        if len(values) > 1:
            raise RequestError(400, f"query parameter {name!r} is given {len(values)} times; give it once")
        value: Any = values[0]
        kind = schema["properties"].get(name, {}).get("type")
        if kind in ("integer", "number"):
            try:
                value = int(value) if kind == "integer" else float(value)
            except ValueError:
                raise RequestError(400, f"invalid query parameter {name}: expected {expected(kind)}, "
                                        f"got {shown(value)}") from None
        elif kind == "boolean":
            if value.lower() not in ("true", "false", "1", "0"):
                raise RequestError(400, f"invalid query parameter {name}: expected true or false, got {shown(value)}")
            value = value.lower() in ("true", "1")
        data[name] = value
    return check(schema, data, "query parameter")
