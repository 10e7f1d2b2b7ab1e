"""The HTTP API's contract (:mod:`memkit.frontends.http.api`): each route's parameters, body and answers as
JSON Schema, and the OpenAPI 3.1 document made from them. The routes are made by iterating the
table of operations (:mod:`memkit.frontends.operations`: each entry's routes, their summaries and
answer schemas, their parameters as query, body and path), beside the server's own
(:data:`SERVER_ROUTES`), and checked by its one validation, so what the server accepts, what the
document says and what the CLI and the MCP server take cannot drift apart. The answers'
components (:data:`COMPONENTS`) are here.

No web framework here: plain dicts and functions (the server module imports Starlette).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ... import __version__
from ...errors import MemkitError
from ..operations import MAX_MESSAGE_BODY_BYTES, ROLES, Operation, Route, Style, expected, schema, shown
from ..operations import OPERATIONS as TABLE
from ..operations import check as check_params

__all__ = ["HttpRoute", "OPERATIONS", "RequestError", "SERVER_ROUTES", "check", "http_routes", "openapi", "query_args",
           "MAX_BODY_BYTES", "MAX_MESSAGE_BODY_BYTES"]

MAX_BODY_BYTES = 256 * 1024  #: a request body larger than this is refused (413)


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
    """One HTTP route, made from an operation's :class:`memkit.frontends.operations.Route` (or one of
    the server's own, :data:`SERVER_ROUTES`): what it takes (its path, query and body schemas, from
    the operation's parameters), what it answers, and what serves it (``handler``: the OpenAPI
    operationId; ``operation``: the table's entry, None for the server's own routes, served by the
    method of :class:`memkit.frontends.http.routes.Api` of that name)."""

    method: str
    path: str
    handler: str
    summary: str
    ok: int
    answer: Mapping[str, Any]
    query: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    body_required: bool = True
    errors: tuple[int, ...] = ()
    params: dict[str, Any] | None = None  #: the path's parameters (``{session}``)
    max_body: int = MAX_BODY_BYTES
    operation: Operation | None = None
    route: Route | None = None


def _http_route(op: Operation, route: Route) -> HttpRoute:
    has = {"path": bool(schema(op, "http", "path")["properties"]), "rest": bool(schema(op, "http", "rest")["properties"])}
    rest = schema(op, "http", "rest") if has["rest"] else None
    return HttpRoute(route.method, route.path, route.operation_id or op.name, route.summary, route.ok, op.answer_schema(route),
                     query=rest if route.method == "GET" else None, body=None if route.method == "GET" else rest,
                     body_required=route.body_required, errors=route.errors,
                     params=schema(op, "http", "path") if has["path"] else None,
                     max_body=route.max_body or MAX_BODY_BYTES, operation=op, route=route)


#: the routes of the server's own state, no operation of the others (methods of the Api of the same name)
SERVER_ROUTES = (
    HttpRoute("GET", "/busy", "busy", "Whether a long job runs: in this server an index refresh started by "
              "POST /index (job 'index') or, with --watch and an LLM, a digest of inbox/ (job 'digest'); or "
              "any writer (this server, the CLI, a watcher, a digest) holding the vault's write lock.", 200,
              _obj(["busy", "jobs", "write_lock"], busy={"type": "boolean"},
                   jobs={"type": "array", "items": {"type": "string"}, "description": "Jobs running in this server."},
                   write_lock={"type": "boolean", "description": "A writer holds the vault's write lock now."})),
    HttpRoute("GET", "/index", "index_status", "The index: model, dimension, topic files it is behind, and the "
              "last index job of this server.", 200, _ref("IndexState")),
)


def http_routes(table: Sequence[Operation] = TABLE) -> list[HttpRoute]:
    """Every route of the API: each operation's of ``table``, then the server's own; a path with a
    parameter after the fixed ones (``/sessions/search`` before ``/sessions/{session}``)."""
    made = [_http_route(op, route) for op in table for route in op.http] + list(SERVER_ROUTES)
    return sorted(made, key=lambda r: "{" in r.path)


OPERATIONS = http_routes()

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


def openapi(*, token: bool = False, mcp: bool = False, routes: Sequence[HttpRoute] | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 description of every route (``token``: say that requests need the bearer
    token; ``mcp``: the server also speaks MCP at /mcp; ``routes``: these instead of :data:`OPERATIONS`)."""
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
    for op in OPERATIONS if routes is None else routes:
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
