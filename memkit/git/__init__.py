"""Git for a vault: `memkit git-setup` and the merge driver for topic and session files."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .sync import GitSetup, git_setup, merge_files

__all__ = ["GitSetup", "git_setup", "merge_files"]

__getattr__, __dir__ = face(__name__, {
    ".sync": "GitSetup git_setup merge_files",
})
