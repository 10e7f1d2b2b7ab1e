"""Conversation sessions (sessions/*.md): the folder, a long conversation's window, import and export, search, aging and the live digest."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .aging import age_sessions, due_stage
    from .budget import Window, window
    from .conversations import Conversations
    from .folder import Sessions
    from .io import Imported, export_jsonl, import_conversations, parse_conversations
    from .live_digest import Digested, digest_new, digest_quietly, mark_digested, new_messages, to_jsonl
    from .search import SessionHit, SessionSearch

__all__ = ["Conversations", "Digested", "Imported", "SessionHit", "SessionSearch", "Sessions", "Window", "age_sessions", "digest_new", "digest_quietly", "due_stage", "export_jsonl", "import_conversations", "mark_digested", "new_messages", "parse_conversations", "to_jsonl", "window"]

__getattr__, __dir__ = face(__name__, {
    ".aging": "age_sessions due_stage",
    ".budget": "Window window",
    ".conversations": "Conversations",
    ".folder": "Sessions",
    ".io": "Imported export_jsonl import_conversations parse_conversations",
    ".live_digest": "Digested digest_new digest_quietly mark_digested new_messages to_jsonl",
    ".search": "SessionHit SessionSearch",
})
