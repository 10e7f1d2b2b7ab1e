"""Transcripts into durable memories: capture queues them in inbox/, the digest asks the LLM what to keep."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .captured import Captured, capture, claude_code_turns, is_claude_code_entry
    from .digest import (
        DigestReport,
        InboxResult,
        digest_file,
        digest_messages,
        digest_text,
        load_digested,
        process_inbox,
        transcript_sha,
    )

__all__ = ["Captured", "DigestReport", "InboxResult", "capture", "claude_code_turns", "digest_file", "digest_messages", "digest_text", "is_claude_code_entry", "load_digested", "process_inbox", "transcript_sha"]

__getattr__, __dir__ = face(__name__, {
    ".captured": "Captured capture claude_code_turns is_claude_code_entry",
    ".digest": "DigestReport InboxResult digest_file digest_messages digest_text load_digested process_inbox transcript_sha",
})
