"""The conversation in the prompt: the ``## Conversation`` layer of ``memkit context --session ID``.

The session id given to the context names a conversation session (``sessions/<day>-<id>.md``,
:class:`memkit.sessions.Conversations`); with none of that id, a new one is started (an id that is
not a conversation id, ``"chat 1"``, gets no conversation layer: only the context state). The layer
holds the conversation's last ``context_turns`` messages (user and assistant, oldest first) and up to
:data:`EARLIER` earlier messages of it that bear on the user's message (the session search, best first).

The context only reads the conversation: the caller saves each message (``memkit session append``,
``save_message``), the user's message included.

``clear`` ends the conversation's window without deleting anything: the context state
(``.memkit/sessions/<id>.json``, derived data) records the clear point (how many messages the
conversation had, and the time of the last one), and later blocks show only the messages after it.
The file keeps every message.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import InvalidValue, MemkitError, SessionNotFound
from ..formats.session import SessionMessage, check_session_id

if TYPE_CHECKING:
    from ..sessions import Conversations

log = logging.getLogger("memkit")

__all__ = ["Conversation", "conversation_of", "clear_point", "after_clear"]

EARLIER = 3  #: earlier messages relevant to the user's message, at most
MAX_TURN_CHARS = 600  #: a message longer than this is shown cut, ending in "…"
TURN_ROLES = ("user", "assistant")


@dataclass
class Conversation:
    """What the block shows of the conversation."""

    session: str  #: the conversation's id
    turns: list[SessionMessage] = field(default_factory=list)  #: its last messages, oldest first
    earlier: list[SessionMessage] = field(default_factory=list)  #: earlier relevant ones, best first
    started: bool = False  #: the conversation was started by this call

    def turn_lines(self) -> list[str]:
        return [_line(m) for m in self.turns]

    def earlier_lines(self) -> list[str]:
        return [_line(m) for m in self.earlier]

    def to_dict(self, n_turns: int, n_earlier: int) -> dict[str, Any]:
        shown = self.turns[len(self.turns) - n_turns:] if n_turns else []
        return {"session": self.session, "started": self.started,
                "turns": [_brief(m) for m in shown], "earlier": [_brief(m) for m in self.earlier[:n_earlier]]}


def _brief(m: SessionMessage) -> dict[str, Any]:
    return {"role": m.role, "content": m.content, "time": m.time}


def _line(m: SessionMessage) -> str:
    text = " ".join(m.content.split())
    if len(text) > MAX_TURN_CHARS:
        text = text[:MAX_TURN_CHARS - 1].rstrip() + "…"
    return f"- {m.role}: {text}"


def clear_point(messages: Sequence[SessionMessage]) -> dict[str, Any]:
    """The clear point of a conversation holding ``messages``: what the context state records."""
    return {"messages": len(messages), "time": messages[-1].time if messages else ""}


def after_clear(messages: Sequence[SessionMessage], cleared: Any) -> list[SessionMessage]:
    """The messages after the clear point (all of them without one). Where the conversation was
    rewritten since (aged into a summary: fewer messages), the messages newer than its time."""
    if not isinstance(cleared, dict) or not isinstance(cleared.get("messages"), int) or not cleared["messages"]:
        return list(messages)
    count, time = cleared["messages"], str(cleared.get("time") or "")
    if count <= len(messages) and messages[count - 1].time == time:
        return list(messages[count:])
    return [m for m in messages if m.time > time]


def conversation_of(conversations: Conversations, session: str, message: str, state: dict[str, Any], *,
                    turns: int, clear: bool, now: datetime | None) -> Conversation | None:
    """The conversation layer for ``session`` (None: the id cannot name a conversation).

    :param state: the context state; ``clear`` records the clear point in it (``"cleared"``).
    :raises MemkitError: the conversation cannot be read or started.
    """
    try:
        sid = check_session_id(session)
    except InvalidValue:
        return None
    try:
        conv = conversations.folder.load(sid, exact=True)
        started = False
    except SessionNotFound:
        conv = conversations.new(session_id=sid, now=now)
        started = True
    if clear:
        state["cleared"] = clear_point(conv.messages)
    visible = [m for m in after_clear(conv.messages, state.get("cleared")) if m.role in TURN_ROLES]
    last = visible[len(visible) - turns:] if turns > 0 else []
    before = visible[:len(visible) - len(last)]
    result = Conversation(conv.id, last, [], started)
    if message and before:
        lines = {m.line: m for m in before}
        try:
            hits = conversations.search(message, k=EARLIER + len(last) + 5, session=conv.id, exact=True)
        except MemkitError as exc:
            log.warning("cannot search the conversation's earlier messages (%s)", exc)
            hits = []
        result.earlier = [lines[h.line] for h in hits if h.line in lines][:EARLIER]
    return result
