"""The pieces the table of operations (:mod:`memkit.frontends.operations`) is made of: a
:class:`Param`, an :class:`Operation` with its handler, its MCP :class:`Tool` and its HTTP
:class:`Route` s; the JSON schemas made of the parameters (:func:`schema`) and their one validation
(:func:`check`); the times a tool or a request gives (:func:`moment`, :func:`time_value`).

A front end module: of the library it imports only the facade and :mod:`memkit.base`'s limits.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any, Callable, Mapping

from ...errors import InvalidValue

__all__ = ["ArgumentError", "CLI_ONLY", "FRONT_ENDS", "Listed", "MAX_FACT_CHARS", "MAX_NAME_CHARS", "NULL_STR", "Operation", "Param",
           "MAX_MESSAGE_BODY_BYTES", "READ", "ROLES", "Route", "SESSION_ID", "Style", "Tool", "WRITE", "as_json", "check", "expected", "listed",
           "moment", "obj", "parse_time", "ref", "same", "schema", "shown", "time_value", "to_dict"]

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
    stdin: bool = False  #: the CLI reads it from stdin when it is given as '-'
    nargs: int = 1
    metavar: str | None = None

    def name_in(self, front: str) -> str:
        return self.names.get(front, self.name)

    def offered(self, front: str) -> bool:
        return front not in self.absent

    def seen_by(self, front: str) -> "Param":
        """This parameter as ``front`` declares it (its overrides applied)."""
        return replace(self, **self.overrides[front]) if front in self.overrides else self


#: POST /sessions/{session}/messages: a session message may be a pasted document (MAX_SESSION_MESSAGE_CHARS)
MAX_MESSAGE_BODY_BYTES = 8 * 1024 * 1024

#: an MCP tool's hints: it only reads, or it writes (the destructive and idempotent ones say so)
READ: Mapping[str, Any] = {"read_only_hint": True, "open_world_hint": False}
WRITE: Mapping[str, Any] = {"read_only_hint": False, "destructive_hint": False, "idempotent_hint": False,
                             "open_world_hint": False}


def as_json(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def same(result: Any) -> Any:
    """The JSON answer of a handler that returns it already."""
    return result


def to_dict(result: Any) -> Any:
    """The JSON answer of a library object: its ``to_dict()``."""
    return result.to_dict()


@dataclass(frozen=True)
class Listed:
    """The answer of an operation that gives a list of library objects: ``{key: [item.to_dict(), ...]}``,
    each item an ``item`` of the HTTP API's components. Its schema is the routes' answer, and the
    MCP tool's text is the list alone (unless the route or the tool says otherwise)."""

    key: str
    item: str

    def __call__(self, items: Any) -> dict[str, Any]:
        return {self.key: [item.to_dict() for item in items]}

    @property
    def schema(self) -> dict[str, Any]:
        return obj([self.key], **{self.key: {"type": "array", "items": ref(self.item)}})


def listed(key: str, item: str) -> Listed:
    """The answer ``{key: [item, ...]}`` (:class:`Listed`)."""
    return Listed(key, item)


NULL_STR: Mapping[str, Any] = {"type": ["string", "null"]}  #: a string or null, in an answer's schema


def ref(name: str) -> dict[str, str]:
    """A JSON schema naming one of the HTTP API's answer components (:mod:`memkit.frontends.http.spec`)."""
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: list[str], **props: Any) -> dict[str, Any]:
    """A JSON schema of an object with these properties."""
    return {"type": "object", "required": required, "properties": props}


@dataclass(frozen=True)
class Tool:
    """An operation as an MCP tool: its name, title, description and hints (``annotations``).

    ``text``: what the model reads, made of the handler's result (default: the answer as JSON, or the
    list alone of a :class:`Listed` answer). ``answer``: the structured result, made of the
    operation's answer when the tool's differs. ``extra``: arguments the server adds to every call."""

    name: str
    title: str
    description: str
    annotations: Mapping[str, Any] = field(default_factory=lambda: READ)
    text: Callable[[Any], str] | None = None
    answer: Callable[[Any], Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """An operation as an HTTP route: method, path, its OpenAPI summary, the status and JSON schema
    of its answer, the error statuses it may give. ``extra``: arguments the route adds to the call
    (``POST /sessions/{session}/window``: cache=True); ``server``: the name of the server's own
    method (:class:`memkit.frontends.http.routes.Api`) that serves it instead of the handler (a job
    in a thread, a digest after the answer)."""

    method: str
    path: str
    summary: str
    answer: Mapping[str, Any] | None = None  #: None: the operation's (a :class:`Listed` answer's schema)
    ok: int = 200
    errors: tuple[int, ...] = ()
    body_required: bool = True
    max_body: int | None = None  #: None: the server's default limit
    extra: Mapping[str, Any] = field(default_factory=dict)
    server: str | None = None
    after: str | None = None  #: the name of the server's method called with the arguments after the handler
    operation_id: str | None = None  #: the OpenAPI operationId (default: the operation's name)


@dataclass(frozen=True)
class Operation:
    """One operation: its parameters, its handler (one call into :class:`memkit.Vault`) and what each
    front end makes of it: the CLI's command (with its group), the MCP tool, the HTTP routes, or
    why a front end does not offer it (``absent``).

    ``call(vault, **arguments)``: the handler, given the parameters by their table names, returns the
    library's result; ``answer`` makes its JSON (the HTTP answer, the MCP tool's structured result
    and the CLI's --json, unless one says otherwise)."""

    name: str
    params: tuple[Param, ...]
    cli: tuple[str, ...] | None  #: the command, with its group
    mcp: Tool | None
    http: tuple[Route, ...]
    call: Callable[..., Any] | None = None
    answer: Callable[[Any], Any] = to_dict
    absent: Mapping[str, str] = field(default_factory=dict)

    def offered(self, front: str) -> list[Param]:
        """The parameters ``front`` offers, as it declares them."""
        return [p.seen_by(front) for p in self.params if p.offered(front)]

    def arguments(self, front: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` (by ``front``'s names, checked) by the table's names, for :attr:`call`."""
        names = {p.name_in(front): p.name for p in self.params}
        return {names[name]: value for name, value in values.items()}

    def answer_schema(self, route: Route) -> Mapping[str, Any]:
        """The JSON schema of ``route``'s answer: its own, else the operation's listing's."""
        if route.answer is not None:
            return route.answer
        assert isinstance(self.answer, Listed), f"{self.name} {route.path}: no answer schema"
        return self.answer.schema

    def run(self, vault: Any, front: str, values: Mapping[str, Any], **extra: Any) -> Any:
        """Call the handler with ``front``'s checked ``values`` (and ``extra``); returns the result."""
        assert self.call is not None, f"{self.name} has no handler"
        return self.call(vault, **self.arguments(front, values), **extra)


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


def schema(op: Operation, front: str, where: str | None = None) -> dict[str, Any]:
    """The JSON schema of ``op``'s parameters as ``front`` (mcp or http) offers them: for http,
    ``where`` "path" is the route's path parameters, anything else the others (its query or body)."""
    params = [p for p in op.offered(front) if where is None or (p.where == "path") == (where == "path")]
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


def moment(value: str | None, what: str = "at") -> datetime | None:
    """A moment a tool or a request gives, as the library takes one: local time, naive (one with an
    offset, or 'Z', is converted); None or blank: none given.

    :raises InvalidValue: not one, said naming ``what``."""
    if value is None or not value.strip():
        return None
    try:
        when = parse_time(value.strip())
    except ValueError:
        raise InvalidValue(f"{what} must be like '2026-11-28 09:00', got {value!r}") from None
    return when.astimezone().replace(tzinfo=None) if when.tzinfo else when
