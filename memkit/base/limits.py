"""The sizes memkit accepts, in one place: front ends (the CLI, the MCP server) state them in
their schemas and messages; the modules that enforce them import them from here."""
from __future__ import annotations

__all__ = ["MAX_QUERY_CHARS", "MAX_ENTRY_CHARS", "MAX_TRANSCRIPT_BYTES", "MAX_SESSION_MESSAGE_CHARS", "MAX_MESSAGE_CHARS",
           "MAX_SYSTEM_PROMPT_CHARS", "WEAK_HITS",
           "MAX_SEARCH_RESULTS", "SEARCH_MODES", "SESSION_STRATEGIES"]

MAX_QUERY_CHARS = 2000  #: a longer query is cut: static embeddings average tokens anyway
MAX_ENTRY_CHARS = 4000  #: one memory is a sentence or a paragraph, not a document
MAX_TRANSCRIPT_BYTES = 1_000_000  #: about 250k tokens: larger conversations should be split first
MAX_SESSION_MESSAGE_CHARS = 1_000_000  #: one message of a conversation session (a pasted document at most)
MAX_SEARCH_RESULTS = 1000  #: a search's k (memories or conversations), in every front end
SEARCH_MODES = ("hybrid", "vector", "lexical")  #: a search's ranking: both sides fused, or one alone
#: how a session's history fits a budget: the newest that fit, older ones condensed, or routine ones condensed
SESSION_STRATEGIES = ("simple", "summary", "hybrid")
MAX_MESSAGE_CHARS = 2000  #: a context's message: the library keeps (and searches) this much; the servers refuse more
MAX_SYSTEM_PROMPT_CHARS = 20_000  #: a conversation session's system prompt, as the servers take it
WEAK_HITS = 3  #: a search that finds nothing above the threshold shows up to this many of the closest, marked weak
