"""The vault's files on disk: topics, archive.md, inbox/, index.txt, a new vault, and the recovery of an interrupted write."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .facts import FactChange, FactValue, all_facts, fact_history, get_fact, set_fact
    from .layout import TopicFile
    from .links import link_graph
    from .newvault import PROFILE_SUMMARY, PROFILE_TOPIC, ensure_git_files
    from .people import add_person, load_people
    from .rename import Renamed, rename_topic
    from .store import INBOX_DIR, STATE_DIR, Store, TopicInfo, find_vault

__all__ = ["FactChange", "FactValue", "all_facts", "fact_history", "get_fact", "set_fact", "add_person", "load_people",
           "INBOX_DIR", "PROFILE_SUMMARY", "PROFILE_TOPIC", "STATE_DIR", "Store", "TopicFile", "TopicInfo", "ensure_git_files", "find_vault",
           "link_graph", "Renamed", "rename_topic"]

__getattr__, __dir__ = face(__name__, {
    ".facts": "FactChange FactValue all_facts fact_history get_fact set_fact",
    ".layout": "TopicFile",
    ".links": "link_graph",
    ".rename": "Renamed rename_topic",
    ".people": "add_person load_people",
    ".newvault": "PROFILE_SUMMARY PROFILE_TOPIC ensure_git_files",
    ".store": "INBOX_DIR STATE_DIR Store TopicInfo find_vault",
})
