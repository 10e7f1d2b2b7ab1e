"""The table's conversation sessions (sessions/): list, start, save a message, load a window of one,
search them (:mod:`memkit.frontends.operations`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...base.limits import MAX_SEARCH_RESULTS, MAX_SESSION_MESSAGE_CHARS, MAX_SYSTEM_PROMPT_CHARS, SESSION_STRATEGIES
from ...vault import Vault
from .kit import (
    MAX_MESSAGE_BODY_BYTES,
    ROLES,
    SESSION_ID,
    WRITE,
    Operation,
    Param,
    Route,
    Tool,
    listed,
    obj,
    ref,
    same,
    time_value,
    to_dict,
)
from .shared import SESSION_PATH, query_param

__all__ = ["SESSIONS"]


def _list(vault: Vault, limit: int | None = None, archived: bool = False) -> Any:
    return vault.conversations.list(archived=archived)[:limit]


def _start(vault: Vault, session: str | None = None, tags: list[str] | None = None, **given: Any) -> Any:
    return vault.conversations.new(session_id=session, tags=tags or (), **given)


def _without_messages(session: Any) -> dict[str, Any]:
    return {k: v for k, v in to_dict(session).items() if k != "messages"}


def _save(vault: Vault, session: str, role: str, content: str, time: str | None = None, **given: Any) -> Any:
    # exact: a session "user1" must not write into "user12"
    message = vault.conversations.append(session, role, content, now=time_value(time), exact=True, **given)
    return dict(message.to_dict(), session=session)


def _window(vault: Vault, session: str, max_tokens: int = 4096, strategy: str | None = None,
            cache: bool = False) -> Any:
    return vault.conversations.window(session, max_tokens, strategy=strategy, exact=True, cache=cache)


def _window_text(window: Any) -> str:
    text = "\n\n".join(f"{m.role}: {m.content}" for m in window.messages)
    return f"(note: {window.note})\n\n{text}" if window.note else text


def _search_sessions(vault: Vault, query: str, k: int = 5, **given: Any) -> Any:
    return vault.conversations.search(query, k=k, exact=True, **given)


SESSIONS: tuple[Operation, ...] = (
    Operation("list_sessions", (
        Param("limit", "integer", "The most recently updated sessions only, at most this many.", low=1,
              high=100_000, cli=("--limit",), metavar="N"),
        Param("archived", "boolean", "The pruned (archived) sessions instead.", default=False, cli=("--archived",)),
    ), ("session", "list"),
    Tool("list_sessions", "List conversation sessions",
         "The saved conversations, most recently updated first: id, title, created, updated "
         "(ISO times, UTC), messages (count), user, tags, file. Continue one with load_session."),
    (Route("GET", "/sessions", "The saved conversations, most recently updated first.", errors=(400,)),),
    call=_list, answer=listed("sessions", "SessionInfo")),
    Operation("start_session", (
        Param("session", "string", "An id to use (letters, digits, '.', '_', '-'); default: a new random one.",
              max_length=80, nonempty=True, pattern=SESSION_ID, names={"cli": "session_id"}, cli=("--id",),
              metavar="ID"),
        Param("title", "string", "A short title (default: the first user message's beginning).", max_length=200,
              nonempty=True, cli=("--title",), metavar="TEXT"),
        Param("system_prompt", "string", "The system prompt of the conversation, kept with it.",
              max_length=MAX_SYSTEM_PROMPT_CHARS, cli=("--system",), metavar="TEXT"),
        Param("user", "string", "Who the conversation is with.", max_length=200, nonempty=True, cli=("--user",),
              metavar="NAME"),
        Param("tags", "array", "Tags.", cli=("--tag",), metavar="TAG",
              overrides={"cli": {"help": "A tag (repeatable)."}}),
        Param("metadata", "object", "Anything else to keep in the session's header: text values by name.",
              names={"cli": "meta"}, cli=("--meta",), metavar="KEY=VALUE",
              overrides={"cli": {"type": "array", "help": "Metadata KEY=VALUE (repeatable)."}}),  # pairs at the shell
        Param("quiet", "boolean", "Print only the id.", default=False, cli=("-q", "--quiet"),
              absent={"mcp": "the answer is JSON", "http": "the answer is JSON"}),
    ), ("session", "new"),
    Tool("start_session", "Start a conversation session",
         "Start saving a conversation: a new session file in sessions/. Returns its id (use it "
         "with save_message, load_session, and as get_context's session).",
         WRITE),
    (Route("POST", "/sessions", "Start saving a conversation: a new session file in sessions/. "
          "Its id works with the routes below and as POST /context's session.",
          ref("Session"), ok=201, errors=(400, 409), body_required=False),),
    call=_start, answer=_without_messages),
    Operation("save_message", (
        SESSION_PATH,
        Param("role", "string", "user, assistant, system or tool.", required=True, max_length=20, nonempty=True,
              argument=True, metavar="ROLE",
              overrides={"cli": {"choices": ROLES}}),  # elsewhere the library says what is wrong (as the CLI did)
        Param("content", "string", "The message (appended to the session's file at once; nothing is rewritten).",
              required=True, max_length=MAX_SESSION_MESSAGE_CHARS,
              names={"cli": "text"}, argument=True, metavar="[TEXT]",
              overrides={"cli": {"required": False}}),  # stdin
        Param("important", "boolean", "A decision or key fact: kept word for word when the history is condensed.",
              default=False, cli=("--important",)),
        Param("name", "string", "A tool's or speaker's name.", max_length=80, nonempty=True, cli=("--name",),
              metavar="NAME"),
        Param("time", "string", "The message's own time, ISO 8601 (default: now; without an offset: UTC).",
              max_length=40, format="date-time", cli=("--time",), metavar="TIME"),
    ), ("session", "add"),
    Tool("save_message", "Save a message to a session",
         "Append one message to a saved conversation (appended to its file at once; nothing "
         "is rewritten; an id with no session starts one, as get_context's session does: then "
         "created is true). Returns the message with its time.",
         WRITE),
    (Route("POST", "/sessions/{session}/messages", "Append one message to a saved conversation "
          "(one append to its file; nothing is rewritten; an id with no session starts one, as POST /context "
          "does: then created is true). Returns the message with its time.",
          {"allOf": [ref("Message"), obj(["session"], session={"type": "string"})]}, ok=201, errors=(400, 404, 409), max_body=MAX_MESSAGE_BODY_BYTES, extra={"digest": False}, after="digest_later"),),
    call=_save, answer=same),
    Operation("load_session", (
        SESSION_PATH,
        Param("max_tokens", "integer", "The budget (~4 characters a token).", low=1, high=10_000_000, default=4096,
              cli=("--tokens",), metavar="N"),
        Param("strategy", "string", "simple: the newest messages that fit; summary: older ones condensed by the "
              "LLM; hybrid: important and system messages kept, routine ones condensed (default: memkit.yaml's "
              "session_strategy).", choices=SESSION_STRATEGIES, cli=("--strategy",)),
    ), ("session", "load"),
    Tool("load_session", "Load a conversation's recent history",
         "A saved conversation's history within a token budget, oldest first, to continue it: "
         "the system prompt, a summary of older messages when the strategy makes one, then the "
         "newest messages that fit. The text content is the messages as 'role: content' lines; "
         "the structured result has messages [{role, content, time}], strategy, tokens, omitted, "
         "summarised and note (a fallback, said in words).",
         dict(WRITE, idempotent_hint=True),
         text=_window_text),
    (Route("GET", "/sessions/{session}", "A saved conversation's history within a token budget, "
          "oldest first, to continue it (summary and hybrid may wait for the LLM).",
          ref("Window"), errors=(400, 404)),
     Route("POST", "/sessions/{session}/window", "As GET /sessions/{session}, and a summary made "
              "on the way is cached in the session's file (a GET writes nothing), so the next load needs no LLM call.",
              ref("Window"), errors=(400, 404, 409), body_required=False, extra={"cache": True}, operation_id="keep_window")),
    call=_window),
    Operation("search_sessions", (
        query_param("What to look for."),
        Param("k", "integer", "How many messages at most.", low=1, high=MAX_SEARCH_RESULTS, default=5,
              cli=("-k",), metavar="N"),
        replace(SESSION_PATH, help="Only this session.", required=False, where=None, argument=False,
                cli=("--session",)),
        Param("role", "string", "Only messages of this role.", choices=ROLES, cli=("--role",)),
        Param("since", "string", "Only messages of this day or later, YYYY-MM-DD.", max_length=10, format="date",
              cli=("--since",), metavar="DATE"),
    ), ("session", "search"),
    Tool("search_sessions", "Search past conversations",
         "Find messages of saved conversations by meaning and words. Returns hits, best first: "
         "session (id), title, time, role, text, score, file, line."),
    (Route("GET", "/sessions/search", "Find messages of saved conversations by meaning and "
          "words, best first.", errors=(400, 404)),),
    call=_search_sessions, answer=listed("hits", "SessionHit")),
)
