"""The vault's files on disk: topics, archive.md, inbox/, index.txt, a new vault, and the recovery of an interrupted write."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .facts import FactChange, FactValue, all_facts, fact_history, get_fact, set_fact
    from .keyed import Facts
    from .layout import TopicFile
    from .newvault import PROFILE_SUMMARY, PROFILE_TOPIC, ensure_git_files
    from .people import add_person, load_people
    from .store import INBOX_DIR, STATE_DIR, Store, TopicInfo, find_vault

__all__ = ["Facts", "FactChange", "FactValue", "all_facts", "fact_history", "get_fact", "set_fact", "add_person", "load_people",
           "INBOX_DIR", "PROFILE_SUMMARY", "PROFILE_TOPIC", "STATE_DIR", "Store", "TopicFile", "TopicInfo", "ensure_git_files", "find_vault"]

__getattr__, __dir__ = face(__name__, {
    ".facts": "FactChange FactValue all_facts fact_history get_fact set_fact",
    ".keyed": "Facts",
    ".layout": "TopicFile",
    ".people": "add_person load_people",
    ".newvault": "PROFILE_SUMMARY PROFILE_TOPIC ensure_git_files",
    ".store": "INBOX_DIR STATE_DIR Store TopicInfo find_vault",
})
