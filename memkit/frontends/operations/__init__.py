"""Every operation of memkit's front ends, declared once (:data:`OPERATIONS`): its parameters (name,
type, range or choices, default, help), its handler (one call into :class:`memkit.Vault`), its MCP
tool (name, title, description, hints) and its HTTP routes (method, path, summary, answer schema),
and which front end offers it under which name (the CLI, the MCP server, the HTTP API), or why one
does not.

The front ends are made by iterating the table: the MCP server's tools and their input schemas
(:mod:`memkit.frontends.mcp.server`), the HTTP API's routes and its OpenAPI document
(:mod:`memkit.frontends.http.spec`), the click options and arguments of the commands
(:func:`memkit.frontends.cli.common.cli_params`) and, where a command only prints the answer, the
command itself (:func:`memkit.frontends.cli.common.table_command`); one validation checks a
tool's arguments or a request's fields (:func:`check`). tests/frontends/test_operations.py checks
that every front end offers every operation and parameter of the table, or the table says why not.
docs/contributing.md shows how to add one.

The entries live by subject: :mod:`.memories`, :mod:`.facts`, :mod:`.sessions`, :mod:`.jobs`;
the pieces they are made of in :mod:`.kit`, the parameters several share in :mod:`.shared`.
A front end module: of the library it imports only the facade and :mod:`memkit.base`'s limits.
"""
from __future__ import annotations

from typing import Any

from .facts import FACTS, get_fact
from .jobs import JOBS
from .kit import (
    CLI_ONLY,
    FRONT_ENDS,
    MAX_MESSAGE_BODY_BYTES,
    MAX_NAME_CHARS,
    READ,
    ROLES,
    SESSION_ID,
    WRITE,
    ArgumentError,
    Listed,
    Operation,
    Param,
    Route,
    Style,
    Tool,
    as_json,
    check,
    expected,
    moment,
    parse_time,
    shown,
    time_value,
)
from .kit import schema as _schema
from .memories import MEMORIES
from .sessions import SESSIONS
from .shared import TOPIC_NAME

__all__ = ["ArgumentError", "CLI_ONLY", "FRONT_ENDS", "Listed", "MAX_MESSAGE_BODY_BYTES", "MAX_NAME_CHARS", "OPERATIONS",
           "Operation", "Param", "READ", "ROLES", "Route", "SESSION_ID", "Style", "TOPIC_NAME", "Tool", "WRITE",
           "as_json", "check", "expected", "get_fact", "moment", "operation", "parse_time", "schema", "shown",
           "time_value"]

#: the table, in the order the MCP server lists its tools
OPERATIONS: tuple[Operation, ...] = MEMORIES + FACTS + SESSIONS + JOBS
_BY_NAME = {op.name: op for op in OPERATIONS}


def operation(name: str) -> Operation:
    """The operation named ``name`` (the table's name, not a front end's)."""
    return _BY_NAME[name]


def schema(op: str | Operation, front: str, where: str | None = None) -> dict[str, Any]:
    """The JSON schema of ``op``'s parameters as ``front`` (mcp or http) offers them: for http,
    ``where`` "path" is the route's path parameters, anything else the others (its query or body)."""
    return _schema(operation(op) if isinstance(op, str) else op, front, where)
