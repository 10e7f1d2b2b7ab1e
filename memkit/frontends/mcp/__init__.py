"""`memkit mcp`: the vault as an MCP server (stdio, or beside the HTTP API), on the official MCP Python SDK."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.face import face

if TYPE_CHECKING:
    from .server import Memory, build_server, require_sdk, serve

__all__ = ["Memory", "build_server", "require_sdk", "serve"]

__getattr__, __dir__ = face(__name__, {".server": "Memory build_server require_sdk serve"})
