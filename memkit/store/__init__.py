"""The vault's files on disk: topics, archive.md, inbox/, index.txt, a new vault, and the recovery of an interrupted write."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .layout import TopicFile
    from .newvault import PROFILE_SUMMARY, PROFILE_TOPIC, ensure_git_files
    from .store import INBOX_DIR, STATE_DIR, Store, TopicInfo, find_vault

__all__ = ["INBOX_DIR", "PROFILE_SUMMARY", "PROFILE_TOPIC", "STATE_DIR", "Store", "TopicFile", "TopicInfo", "ensure_git_files", "find_vault"]

__getattr__, __dir__ = face(__name__, {
    ".layout": "TopicFile",
    ".newvault": "PROFILE_SUMMARY PROFILE_TOPIC ensure_git_files",
    ".store": "INBOX_DIR STATE_DIR Store TopicInfo find_vault",
})
