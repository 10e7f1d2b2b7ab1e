"""Whether now is a good moment for the assistant to bring something up, and what to say.

An assistant that only answers forgets to ask how the interview went. :func:`proactive` looks at
the vault's follow-ups (:func:`memkit.upkeep.upkeep.pending`: due or overdue ones, and urgent ones) and
at the moment:

- never during ``quiet_hours`` (memkit.yaml, e.g. ``"22:00-07:30"``);
- never within ``proactive_gap_hours`` of the last conversation (the person just talked: what
  mattered was said then), which is the latest session of ``memkit context --session``;
- otherwise the most urgent follow-up that is due, overdue, or of high urgency.

It returns the follow-up, its suggested question (``(ask: …)``, else one made from its text)
and, with an LLM configured, an opening line the LLM drafts from the follow-up's background;
without one, or when the LLM fails, the question is the opening. Nothing is written.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..config import parse_quiet_hours
from ..errors import LLMError
from ..llm import LLM, ask_text
from ..store import Store
from ..upkeep import FollowUp, pending
from .block import last_session_time

log = logging.getLogger("memkit")

__all__ = ["Nudge", "proactive"]

OPENING_PROMPT = """You are a caring personal assistant starting a conversation with the user to \
follow up on something they told you earlier. Write ONE short, warm, natural opening line (at most \
30 words) that brings it up and asks about it. No greeting formula, no preamble, no quotes.

What to follow up on (background): {background}
Suggested question: {question}
Due: {due}"""


@dataclass
class Nudge:
    """The answer of :func:`proactive`."""

    now: bool  #: a good moment to bring something up
    reason: str  #: why (or why not), one line
    follow_up: FollowUp | None = None  #: what to bring up (also given when it is not the moment)
    question: str | None = None  #: the question to ask
    opening: str | None = None  #: the opening line the LLM drafted (None: no LLM, or it failed)
    last_conversation: datetime | None = None
    quiet_until: datetime | None = None  #: the end of the quiet hours, when in them

    def to_dict(self) -> dict[str, Any]:
        """As ``memkit proactive --json`` prints it."""
        return {"now": self.now, "reason": self.reason,
                "follow_up": self.follow_up.to_dict() if self.follow_up else None,
                "question": self.question, "opening": self.opening,
                "last_conversation": self.last_conversation.isoformat() if self.last_conversation else None,
                "quiet_until": self.quiet_until.isoformat() if self.quiet_until else None}


def proactive(store: Store, llm: LLM | None, *, now: datetime | None = None,
              last_conversation: datetime | None = None) -> Nudge:
    """Whether now is a good moment to raise a follow-up, which one, and how (see the module
    docstring).

    :param now: the moment asked about (default: now, local time).
    :param last_conversation: when the person last talked to the assistant; default: the latest
        ``memkit context --session`` state.
    """
    now = (now or datetime.now()).replace(microsecond=0)
    config = store.config
    last = last_conversation if last_conversation is not None else last_session_time(store)
    if last is not None and last > now:
        last = None  # asked about a moment before it (an injected clock): not known then
    candidates = [f for f in pending(store, today=now.date()) if f.is_due or f.urgency == "high"]
    best = candidates[0] if candidates else None
    question = _question(best) if best else None
    nudge = Nudge(False, "", best, question, None, last)
    quiet_end = _quiet_until(config.quiet_hours, now)
    if best is None:
        nudge.reason = "nothing to follow up on: no follow-up is due, overdue or urgent"
    elif quiet_end is not None:
        nudge.quiet_until = quiet_end
        nudge.reason = f"quiet hours ({config.quiet_hours.strip()}) until {quiet_end:%H:%M}"
    elif last is not None and now - last < timedelta(hours=config.proactive_gap_hours):
        nudge.reason = (f"the last conversation was {_ago(now - last)} ago; a follow-up waits "
                        f"{config.proactive_gap_hours:g} h (proactive_gap_hours)")
    else:
        nudge.now = True
        assert best is not None
        why = "overdue" if best.overdue_days > 0 else "due today" if best.is_due else "urgent"
        nudge.reason = f"{why}: {best.entry.id} in {best.entry.topic}"
        if llm is not None:
            nudge.opening = _opening(llm, best, question or "")
    return nudge


def _question(f: FollowUp) -> str:
    """The follow-up's own ``(ask: …)``, else one made from its background."""
    if f.question:
        return f.question
    return f"How did it go: {_background(f)}?"


def _background(f: FollowUp) -> str:
    text = f.entry.body
    cut = text.find(" (")
    return (text[:cut] if cut > 0 else text).rstrip(" .")


def _opening(llm: LLM, f: FollowUp, question: str) -> str | None:
    prompt = OPENING_PROMPT.format(background=_background(f), question=question,
                                   due=f.due.isoformat() if f.due else "not said")
    try:
        reply = ask_text(llm, [{"role": "user", "content": prompt}])
    except LLMError as exc:
        log.warning("could not draft an opening line (%s); the suggested question stands", exc)
        return None
    line = " ".join(str(reply).split()).strip("\"'")
    return line[:300] if line else None


def _quiet_until(hours: str, now: datetime) -> datetime | None:
    """The end of the quiet hours when ``now`` is inside them, else None."""
    span = parse_quiet_hours(hours) if hours and hours.strip() else None
    if span is None:
        return None
    start, end = span
    minute = now.hour * 60 + now.minute
    inside = start <= minute < end if start < end else (minute >= start or minute < end) if start != end else False
    if not inside:
        return None
    day = now.replace(hour=end // 60, minute=end % 60, second=0)
    return day if day > now else day + timedelta(days=1)


def _ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"
