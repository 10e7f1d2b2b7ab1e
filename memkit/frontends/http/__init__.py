"""`memkit serve`: the vault as a small local HTTP API, JSON in and out, described by OpenAPI."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.face import face

if TYPE_CHECKING:
    from .api import HTTPServer

__all__ = ["HTTPServer"]

__getattr__, __dir__ = face(__name__, {".api": "HTTPServer"})
