"""A long conversation's history within a token budget: the ``simple``, ``summary`` and ``hybrid``
strategies of :meth:`memkit.Vault.recent_messages`.

- ``simple``: the system prompt (the session's header), then the newest messages that fit,
  oldest first.
- ``summary``: the messages that do not fit are condensed by the LLM into one "previous context"
  message (role ``system``) placed before the newest messages. The summary is cached in the
  session file (a ``### summary`` block, :mod:`memkit.sessions.folder`) with the number of messages it
  covers and their hash; a later load reuses it while those messages are unchanged and the ones
  after it still fit, so a summary is not recomputed on every turn: when a new one is needed it
  covers enough that the newest messages take at most half the budget, and it is made from the
  previous summary plus the messages since (never the whole history again).
- ``hybrid``: like ``summary``, but system messages and messages flagged ``important`` are kept
  verbatim wherever they are, only routine exchanges are summarised, and at most ``keep_recent``
  newest messages are kept verbatim.

A session that aged (:mod:`memkit.sessions.aging`) starts with its stage text, after the system
prompt. With no LLM, ``summary`` and ``hybrid`` use a cached summary when a valid one exists and otherwise
fall back to windowing (``hybrid`` still keeps the system and important messages); the result says
so in :attr:`Window.note`. The summary takes a quarter of the budget (at most 600 tokens), or
room for its heading and a sentence when that is at most half the budget; a budget too small even
for that gets no summary (nor an LLM call): the newest messages, said in the note. Tokens are
estimated at ~4 characters each, plus 4 per message.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Literal, Sequence

from ..base.limits import SESSION_STRATEGIES
from ..errors import InvalidValue, LLMError
from ..formats.session import Session, SessionMessage, SessionSummary, format_time, messages_sha
from ..llm import LLM, ask_text

log = logging.getLogger("memkit")

__all__ = ["STRATEGIES", "Strategy", "Window", "estimate_tokens", "window"]

Strategy = Literal["simple", "summary", "hybrid"]
STRATEGIES: tuple[str, ...] = SESSION_STRATEGIES  #: declared once, in memkit.base.limits
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  #: tokens a message costs besides its content (role, separators)
SUMMARY_SHARE = 4  #: a summary may take up to 1/SUMMARY_SHARE of the budget …
SUMMARY_MAX_TOKENS = 600  #: … and at most this many tokens
PREFIX = "Previous context (a summary of the earlier conversation):\n"
MIN_SUMMARY_CHARS = 80  #: a smaller room for a summary is no summary: the newest messages instead
MIN_SUMMARY_TOKENS = MESSAGE_OVERHEAD + -(-(len(PREFIX) + MIN_SUMMARY_CHARS) // CHARS_PER_TOKEN)
CHUNK_CHARS = 24_000  #: the LLM reads older messages this much at a time
STAGE_PREFIX = "Earlier in this conversation (what is remembered of it):\n"

SUMMARY_PROMPT = """\
You condense the earlier part of a conversation between a user and an assistant into a short note \
that lets the assistant carry on the conversation. Keep decisions, facts about the user, names, \
numbers, dates, open questions and promises; drop greetings and small talk. Write plain sentences, \
at most {words} words. Reply with the note only."""


@dataclass
class Window:
    """A session's history fitted to a budget: the messages to send, oldest first."""

    session: str
    messages: list[SessionMessage]  #: the system prompt and summary first when there are any
    strategy: str  #: the strategy applied (``simple`` when ``summary``/``hybrid`` fell back)
    requested: str  #: the strategy asked for
    tokens: int  #: the estimated size of :attr:`messages`
    max_tokens: int
    total: int  #: messages in the session
    omitted: int  #: session messages left out (neither verbatim nor in the summary)
    summarised: int = 0  #: session messages the summary stands for
    summary_cached: bool = False  #: the summary came from the file (no LLM call)
    note: str | None = None  #: a fallback or a problem, said in words

    def __iter__(self) -> Any:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)

    def __getitem__(self, i: int) -> SessionMessage:
        return self.messages[i]

    def chat_messages(self) -> list[dict[str, str]]:
        """The messages in the shape chat APIs take: ``[{"role", "content"}]``."""
        return [{"role": m.role, "content": m.content} for m in self.messages]

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "strategy": self.strategy, "requested": self.requested,
                "tokens": self.tokens, "max_tokens": self.max_tokens, "total": self.total,
                "omitted": self.omitted, "summarised": self.summarised, "summary_cached": self.summary_cached,
                "note": self.note, "messages": [m.to_dict() for m in self.messages]}


def estimate_tokens(message: SessionMessage) -> int:
    """A message's size in tokens: ~4 characters a token, plus :data:`MESSAGE_OVERHEAD`."""
    return -(-len(message.content) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


def _newest_fitting(messages: Sequence[SessionMessage], budget: int, limit: int | None = None) -> int:
    """The index from which ``messages[i:]`` fit ``budget`` (and number at most ``limit``)."""
    used = 0
    start = len(messages)
    while start > 0 and (limit is None or len(messages) - start < limit):
        cost = estimate_tokens(messages[start - 1])
        if used + cost > budget:
            break
        used += cost
        start -= 1
    return start


def _cached(session: Session, strategy: str, upto: int) -> SessionSummary | None:
    """The valid cached summary of ``strategy`` covering the most messages, at most ``upto``."""
    best: SessionSummary | None = None
    for s in session.summaries:
        if s.strategy != strategy or not 0 < s.covers <= min(upto, len(session.messages)):
            continue
        if best is not None and s.covers <= best.covers:
            continue
        if messages_sha(session.messages[:s.covers]) == s.sha:
            best = s
    return best


def _render(messages: Sequence[SessionMessage]) -> str:
    return "\n".join(f"{m.role}{' (' + m.name + ')' if m.name else ''}: {m.content}" for m in messages)


def _summarise(llm: LLM, previous: str | None, messages: Sequence[SessionMessage], words: int) -> str:
    """Condense ``messages`` (after the ``previous`` summary) in chunks of :data:`CHUNK_CHARS`."""
    note = previous
    chunk: list[SessionMessage] = []
    size = 0
    chunks: list[list[SessionMessage]] = []
    for m in messages:
        if chunk and size + len(m.content) > CHUNK_CHARS:
            chunks.append(chunk)
            chunk, size = [], 0
        chunk.append(m)
        size += len(m.content) + 20
    if chunk:
        chunks.append(chunk)
    for part in chunks:
        text = _render(part)
        if len(text) > CHUNK_CHARS * 2:
            text = text[-CHUNK_CHARS * 2:]
        prompt = (f"The note so far:\n{note}\n\nThe conversation since:\n{text}" if note else
                  f"The conversation:\n{text}")
        try:
            note = ask_text(llm, [{"role": "system", "content": SUMMARY_PROMPT.format(words=words)},
                                  {"role": "user", "content": prompt}])
        except LLMError as exc:
            raise LLMError(f"no summary: {exc}") from exc
    return note or ""


def window(session: Session, *, max_tokens: int = 4096, strategy: str = "simple", llm: LLM | None = None,
           keep_recent: int = 6, now: datetime | None = None,
           save_summary: Callable[[SessionSummary], None] | None = None, earlier: int = 0,
           redact: Callable[[str], str] | None = None) -> Window:
    """Fit ``session`` to ``max_tokens`` with ``strategy`` (see the module docstring).

    :param llm: condenses older messages (``summary``, ``hybrid``); None: fall back, saying so.
    :param keep_recent: ``hybrid``: the most newest messages kept verbatim.
    :param save_summary: called with a new summary to cache it in the session's file.
    :param redact: what a summary the LLM made goes through before it is cached or used (the
        vault's redaction: a secret it repeats is never stored, docs/privacy.md).
    :raises InvalidValue: an unknown strategy or a budget below 1.
    """
    if strategy not in STRATEGIES:
        raise InvalidValue(f"unknown strategy {strategy!r}: use one of {', '.join(STRATEGIES)}")
    if max_tokens < 1:
        raise InvalidValue(f"max_tokens must be at least 1, got {max_tokens}")
    if keep_recent < 1:
        raise InvalidValue(f"keep_recent must be at least 1, got {keep_recent}")
    messages = session.messages
    head: list[SessionMessage] = []
    if session.system:
        head.append(SessionMessage("system", session.system, session.created))
    aged = session.stage_block
    if aged is not None:  # an aged conversation continued: what is remembered of it comes first
        head.append(SessionMessage("system", f"{STAGE_PREFIX}{aged.text}", aged.time))
    budget = max_tokens - sum(estimate_tokens(m) for m in head)
    if budget <= 0:  # the system prompt alone fills the budget: it is still sent, nothing else
        return Window(session.id, head, strategy, strategy, max_tokens - budget, max_tokens,
                      len(messages) + earlier, len(messages) + earlier)
    start = _newest_fitting(messages, budget)
    simple = Window(session.id, head + list(messages[start:]), "simple", strategy, 0, max_tokens,
                    len(messages) + earlier, start + earlier)
    if strategy == "simple" or start == 0:  # everything fits: what any strategy gives, and says so
        simple.strategy = strategy
        return _sized(simple)
    hybrid = strategy == "hybrid"
    # its share of the budget, but room for its heading and a sentence when the budget allows
    summary_budget = min(max(budget // SUMMARY_SHARE, MIN_SUMMARY_TOKENS), budget // 2, SUMMARY_MAX_TOKENS)
    words = max(20, summary_budget * CHARS_PER_TOKEN // 6)
    rest = budget - summary_budget

    def pinned(older: Sequence[SessionMessage], room: int) -> tuple[list[SessionMessage], int]:
        """hybrid: the older system and important messages that fit ``room``, newest first."""
        if not hybrid:
            return [], room
        keep: list[SessionMessage] = []
        for m in reversed(older):
            if (m.role == "system" or m.important) and estimate_tokens(m) <= room:
                keep.append(m)
                room -= estimate_tokens(m)
        return keep[::-1], room

    def routine(part: Sequence[SessionMessage]) -> list[SessionMessage]:
        return [m for m in part if not (hybrid and (m.role == "system" or m.important))]

    def cost(part: Sequence[SessionMessage]) -> int:
        return sum(estimate_tokens(m) for m in part)

    # the newest messages come first; hybrid's pinned ones fill what they leave of ``rest``
    limit = keep_recent if hybrid else None
    if (summary_budget - MESSAGE_OVERHEAD) * CHARS_PER_TOKEN - len(PREFIX) < MIN_SUMMARY_CHARS:
        return _without_summary(session, head, simple, hybrid, pinned, rest + summary_budget, max_tokens,
                                f"{max_tokens} tokens leave no room for a summary" if llm else "no LLM configured")
    cached = _cached(session, strategy, len(messages))
    # 1. a cached summary whose later messages still fit: no LLM call
    if cached is not None:
        tail = messages[cached.covers:]
        if _newest_fitting(tail, rest, limit * 2 if limit else None) == 0:
            keep, _ = pinned(messages[:cached.covers], rest - cost(tail))
            return _assemble(session, head, cached, keep, list(tail), strategy, max_tokens, True, summary_budget,
                             len(routine(messages[:cached.covers])))
    # 2. a new summary, covering enough that the newest messages take at most half the room
    cut = _newest_fitting(messages, rest // 2, limit)
    if cut == len(messages):  # even the newest message does not fit half: keep what fits whole
        cut = _newest_fitting(messages, rest, limit)
    if llm is None:
        if cached is not None:
            tail = messages[cached.covers:]
            start = cached.covers + _newest_fitting(tail, rest, limit)
            keep, _ = pinned(messages[:cached.covers], rest - cost(messages[start:]))
            result = _assemble(session, head, cached, keep, list(messages[start:]), strategy, max_tokens, True,
                               summary_budget, len(routine(messages[:cached.covers])))
            result.omitted += start - cached.covers
            result.note = (f"no LLM configured: the cached summary covers {cached.covers} messages; "
                           f"{result.omitted} after it do not fit and are left out")
            return result
        return _without_summary(session, head, simple, hybrid, pinned, rest + summary_budget, max_tokens,
                                "no LLM configured")
    base = _cached(session, strategy, cut)
    previous = base.text if base is not None else None
    since = routine(messages[base.covers if base is not None else 0:cut])
    if not since and base is None:  # hybrid, every older message pinned: nothing to summarise
        keep, _ = pinned(messages[:cut], rest + summary_budget - cost(messages[cut:]))
        return _sized(Window(session.id, head + keep + list(messages[cut:]), strategy, strategy, 0, max_tokens,
                             len(messages), cut - len(keep)))
    try:
        text = _summarise(llm, previous, since, words) if since else (previous or "")
        if since and redact is not None:
            text = redact(text)
    except LLMError as exc:
        log.warning("cannot summarise session %s: %s; windowing instead", session.id, exc)
        simple.note = f"the LLM failed ({exc}): fell back to simple windowing"
        return _sized(simple)
    made = SessionSummary(text, format_time(now or datetime.now().astimezone()), cut,
                          messages_sha(messages[:cut]), strategy)
    if save_summary is not None:
        save_summary(made)
    keep, _ = pinned(messages[:cut], rest - cost(messages[cut:]))
    return _assemble(session, head, made, keep, list(messages[cut:]), strategy, max_tokens, False, summary_budget,
                     len(routine(messages[:cut])))


def _without_summary(session: Session, head: list[SessionMessage], simple: Window, hybrid: bool,
                     pinned: Callable[[Sequence[SessionMessage], int], tuple[list[SessionMessage], int]],
                     room: int, max_tokens: int, why: str) -> Window:
    """No summary (``why``): ``simple`` as it is; hybrid keeps the system and important messages
    that fit ``room``, then the newest that fit what they leave."""
    if not hybrid:
        simple.note = f"{why}: summary fell back to simple windowing"
        return _sized(simple)
    messages = session.messages
    keep, room = pinned(messages, room)
    keep_ids = {id(m) for m in keep}
    others = [m for m in messages if id(m) not in keep_ids]
    recent = others[_newest_fitting(others, room, None):]
    recent_ids = {id(m) for m in recent}
    shown = [m for m in messages if id(m) in keep_ids or id(m) in recent_ids]
    result = _sized(Window(session.id, head + shown, "simple", simple.requested, 0, max_tokens, simple.total,
                           simple.total - len(shown)))
    result.note = f"{why}: nothing summarised; system and important messages kept, then the newest that fit"
    return result


def _assemble(session: Session, head: list[SessionMessage], summary: SessionSummary, keep: list[SessionMessage],
              recent: list[SessionMessage], strategy: str, max_tokens: int, cached: bool, room: int,
              summarised: int) -> Window:
    """The window with the summary (cut to ``room`` tokens: an LLM may answer at length), which
    stands for ``summarised`` messages; the covered messages neither summarised nor kept (hybrid's
    pinned ones that did not fit) count as omitted."""
    text = summary.text
    limit = max(room - MESSAGE_OVERHEAD, 1) * CHARS_PER_TOKEN - len(PREFIX)
    if len(text) > limit:
        text = text[:max(limit - 1, 0)].rstrip() + "…"
    note = SessionMessage("system", PREFIX + text, summary.time)
    omitted = summary.covers - summarised - len(keep)
    return _sized(Window(session.id, head + [note] + keep + recent, strategy, strategy, 0, max_tokens,
                         len(session.messages), omitted, summarised, cached))


def _sized(result: Window) -> Window:
    result.tokens = sum(estimate_tokens(m) for m in result.messages)
    return result

