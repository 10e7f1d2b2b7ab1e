"""The sizes memkit accepts, in one place: front ends (the CLI, the MCP server) state them in
their schemas and messages; the modules that enforce them import them from here."""
from __future__ import annotations

__all__ = ["MAX_QUERY_CHARS", "MAX_ENTRY_CHARS", "MAX_TRANSCRIPT_BYTES", "MAX_SESSION_MESSAGE_CHARS"]

MAX_QUERY_CHARS = 2000  #: a longer query is cut: static embeddings average tokens anyway
MAX_ENTRY_CHARS = 4000  #: one memory is a sentence or a paragraph, not a document
MAX_TRANSCRIPT_BYTES = 1_000_000  #: about 250k tokens: larger conversations should be split first
MAX_SESSION_MESSAGE_CHARS = 1_000_000  #: one message of a conversation session (a pasted document at most)
