"""The `memkit` command: a thin click layer over memkit.Vault (the group in group.py, the commands by theme)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.face import face

if TYPE_CHECKING:
    from .group import main

__all__ = ["main"]

__getattr__, __dir__ = face(__name__, {".group": "main"})
