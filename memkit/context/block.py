"""The prompt context: the memory block an assistant pastes into its system prompt (docs/getting-started.md, "Context").

The block is markdown, in layers:

0. **About the user**: the pinned profile (topics with ``pinned: true``; ``memkit init`` makes an
   empty ``topics/profile.md``, ``memkit distill`` rewrites it), always first, whatever the message.
   **To follow up**: follow-ups (kind ``pending``) that are due or overdue today.
1. **Recent topics**: the lines of index.txt, newest first, with relative times
   (``- cooking (2 days ago): rice recipes and oven timing``).
2. **Relevant memories**: the best memories for the message (the judge's best few, see
   :func:`_message_hits`), then those of the session's earlier messages, without duplicates
   (newest message's hits first, each message's hits in ranking order). They come first whatever
   topic is detected: a wrong topic guess never pushes out the memory that answers the message.
3. **Current topic**: once a topic is detected for the conversation, its **topic file** (title,
   summary and every entry as written) fills the room the memories leave. A detected topic sticks
   for the session until a later message clearly detects another one.
4. **Conversation** (with a session id and the vault's conversations, :mod:`memkit.context.conversation`):
   the conversation session of that id (started if there is none): its earlier messages that bear
   on the message, then its last ``context_turns`` messages, oldest first. The context only reads
   it: the caller saves the messages. ``clear`` ends its window (later blocks show only what follows).
5. **Memory instructions**: how the assistant should use and grow its memory.

Session state is derived data in ``.memkit/sessions/<safe id>.json``: the last messages, the
detected topic and the accumulated memories. Every read-modify-write of one session holds that
session's lock file, so concurrent calls never lose an update; a corrupt file starts the session
afresh with a warning. A session idle for longer than ``session_timeout_minutes`` starts afresh too
(by then its transcript is due for digestion). Without a session id the context is stateless.

The block fits ``budget_tokens`` (estimated at ~4 characters a token). Over budget, it sheds in
this order: recent topics beyond the newest five, the conversation's earlier messages, the topic
file's entries least relevant to the message (those the message does not find, oldest first, then
the weakest matches), the earlier messages' memories from the bottom of the list, the last recent
topics, the conversation's last turns (oldest first), the profile's last lines (down to one), then
this message's own memories from the bottom. The instructions
are never cut, and every cut says ``(N more not shown)``. Expired entries (memkit.yaml
``expire:``, ``(until DATE)``) are never shown. This module decides what goes in; the text and
the shedding are :mod:`memkit.context.render`.
"""
from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..base.fsutil import atomic_write, describe_os_error, file_lock
from ..base.limits import MAX_MESSAGE_CHARS  # a message is kept (and searched) up to this length
from ..errors import MemkitError, TopicNotFound, TopicParseError
from ..formats.lifecycle import PENDING, due_date, expiry
from ..formats.recent import TIME_FORMAT
from ..formats.topic import Entry, Topic
from ..formats.words import terms
from ..search import Hit, Searcher, bears_on, detect_topic, hit_at, is_confident, is_safety_note
from ..store import Store
from .conversation import Conversation, conversation_of
from .render import Context, age_order, estimate_tokens, fit

if TYPE_CHECKING:
    from ..sessions import Conversations

log = logging.getLogger("memkit")

__all__ = ["build_context", "reset_session", "session_path", "last_session_time"]

SESSIONS_DIR = "sessions"
STATE_FORMAT = 1
DETECT_MESSAGES = 3  #: topic detection reads the session's last this-many messages, joined
MAX_SESSION_MEMORIES = 50  #: accumulated memories kept in a session's state, newest first
LOCK_TIMEOUT_S = 30.0


def session_path(store: Store, session: str) -> Path:
    """The state file of ``session`` (:meth:`memkit.store.layout.VaultFiles.context_state_path`)."""
    return store.context_state_path(session)


def reset_session(store: Store, session: str) -> None:
    """Forget a session's state (its accumulated memories and detected topic); no-op if it has none.
    A conversation's clear point (``clear``) is kept: reset forgets memories, never shows cleared turns again.

    :param store: the vault.
    :param session: the session id.
    """
    path = session_path(store, session)
    if not path.parent.is_dir():
        return
    with file_lock(path.with_suffix(".lock"), LOCK_TIMEOUT_S):
        try:
            state = json.loads(path.read_bytes().decode("utf-8"))
        except (OSError, ValueError):
            state = None
        try:
            if isinstance(state, dict) and not _check_state(state) and "cleared" in state:
                state.update(turns=0, messages=[], topic=None, memories=[])
                atomic_write(path, json.dumps(state, indent=1) + "\n")
                return
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise describe_os_error(exc, f"session state {store.rel(path)}") from exc


def build_context(searcher: Searcher, message: str, *, session: str | None = None, budget_tokens: int = 2000,
                  now: datetime | None = None, conversations: Conversations | None = None,
                  clear: bool = False, markers: bool = False) -> Context:
    """Build the memory block for the user's ``message``.

    :param searcher: searches the vault (its store is the vault's files).
    :param message: the user's latest message (may be empty: the block then has no new memories).
    :param session: a conversation id; memories accumulate and topic detection sticks across the
        calls that share it. ``None`` (or blank) is stateless.
    :param budget_tokens: the most the block may take (~4 characters a token); the instructions
        are always kept, so a budget below their size is exceeded (with a warning).
    :param now: the current time (relative times, session timeout); default :meth:`datetime.now`.
    :param conversations: the vault's conversation sessions: with a session id, the block gets the
        conversation layer (:mod:`memkit.context.conversation`); None: no conversation layer.
    :param clear: end the conversation's window first (later blocks show only the messages after now).
    :param markers: show the entries' markers (``(importance 0.8)``, ``(people: Ana)``, ``(city: Porto)``…);
        by default the assistant reads what they say, not memkit's bookkeeping.
    :raises MemkitError: for a budget below 1, unwritable session state or an unreadable conversation.
    """
    if budget_tokens < 1:
        raise MemkitError(f"the token budget must be at least 1, got {budget_tokens}")
    now = (now or datetime.now()).replace(microsecond=0)
    message = " ".join(str(message or "").split())[:MAX_MESSAGE_CHARS]
    store = searcher.store
    message = store.config.redact.apply(message).text  # kept in the session's state: never a secret
    session = session.strip() if session is not None else None
    session = session or None
    if session is None:
        state = _new_state(None, now)
        return _build(store, searcher, message, state, budget_tokens, now, None, markers)
    path = session_path(store, session)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise describe_os_error(exc, f"{store.rel(path.parent)}/") from exc
    with file_lock(path.with_suffix(".lock"), LOCK_TIMEOUT_S):
        state = _load_state(store, path, session, now)
        conv = None
        if conversations is not None:
            turns = int(store.config.context_turns)
            conv = conversation_of(conversations, session, message, state, turns=turns, clear=clear, now=now)
        result = _build(store, searcher, message, state, budget_tokens, now, conv, markers)
        state["updated"] = now.strftime(TIME_FORMAT)
        try:
            atomic_write(path, json.dumps(state, indent=1) + "\n")  # ASCII: ids may hold surrogates
        except OSError as exc:
            raise describe_os_error(exc, f"session state {store.rel(path)}") from exc
    return result


# ---- session state ----------------------------------------------------------------------------

def last_session_time(store: Store) -> datetime | None:
    """When the last message of any session went through :func:`build_context` (its state's
    ``updated``), or None when there is none: when the person last talked to the assistant."""
    latest: datetime | None = None
    try:
        paths = list((store.state_dir / SESSIONS_DIR).glob("*.json"))
    except OSError:
        return None
    for path in paths:
        try:
            state = json.loads(path.read_bytes().decode("utf-8"))
            when = datetime.strptime(str(state["updated"]), TIME_FORMAT)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # unreadable or corrupt: the context reports it when the session goes on
        latest = when if latest is None or when > latest else latest
    return latest


def _new_state(session: str | None, now: datetime) -> dict[str, Any]:
    stamp = now.strftime(TIME_FORMAT)
    return {"format": STATE_FORMAT, "session": session, "created": stamp, "updated": stamp, "turns": 0,
            "messages": [], "topic": None, "memories": []}


def _load_state(store: Store, path: Path, session: str, now: datetime) -> dict[str, Any]:
    """The session's state, or a fresh one if it has none, is corrupt, or timed out."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return _new_state(session, now)
    except OSError as exc:
        log.warning("session state %s cannot be read (%s); starting the session afresh",
                    store.rel(path), exc.strerror or exc)
        return _new_state(session, now)
    try:
        state = json.loads(raw.decode("utf-8"))
        problem = _check_state(state)
    except (UnicodeDecodeError, ValueError) as exc:
        problem = f"not valid JSON ({exc})"
    if problem:
        log.warning("session state %s is corrupt: %s; starting the session afresh", store.rel(path), problem)
        return _new_state(session, now)
    timeout = float(store.config.session_timeout_minutes)
    updated = datetime.strptime(state["updated"], TIME_FORMAT)
    if timeout > 0 and (now - updated).total_seconds() > timeout * 60:  # idle past the timeout: start afresh
        return dict(_new_state(session, now), **({"cleared": state["cleared"]} if "cleared" in state else {}))
    state["session"] = session
    return state


def _check_state(state: Any) -> str | None:
    """What is wrong with a loaded state, or None."""
    if not isinstance(state, dict):
        return "not a JSON object"
    if state.get("format") != STATE_FORMAT:
        return f"unknown format {state.get('format')!r}"
    for key in ("created", "updated"):
        try:
            datetime.strptime(str(state.get(key)), TIME_FORMAT)
        except ValueError:
            return f"{key!r} is not a time"
    if not isinstance(state.get("turns"), int):
        return "'turns' is not a number"
    messages = state.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, str) for m in messages):
        return "'messages' is not a list of strings"
    if state.get("topic") is not None and not isinstance(state.get("topic"), str):
        return "'topic' is not a string"
    cleared = state.get("cleared")
    if cleared is not None and not (isinstance(cleared, dict) and isinstance(cleared.get("messages"), int)
                                    and isinstance(cleared.get("time"), str)):
        return "'cleared' is malformed"
    memories = state.get("memories")
    if not isinstance(memories, list):
        return "'memories' is not a list"
    for item in memories:
        if Hit.from_dict(item) is None or not isinstance(item.get("turn"), int):
            return "a memory is malformed"
    return None


# ---- the layers ---------------------------------------------------------------------------------

def _build(store: Store, searcher: Searcher, message: str, state: dict[str, Any], budget_tokens: int, now: datetime,
           conv: Conversation | None = None, markers: bool = False) -> Context:
    """Update ``state`` with ``message`` (search, accumulate, detect) and render the block."""
    hits: list[Hit] = []
    if message:
        state["turns"] += 1
        state["messages"] = (state["messages"] + [message])[-DETECT_MESSAGES:]
        hits = _safely(lambda: _message_hits(searcher, message), [], "cannot search memories; no new memories this time")
        joined = " ".join(state["messages"])
        guess = _safely(lambda: _detect(searcher, joined), None, "cannot detect the topic; keeping the session's")
        if guess is not None:
            state["topic"] = guess  # a clear detection wins; otherwise the earlier topic sticks
    private = set(_safely(store.private_topics, [], "cannot find the private topics"))  # never in a context
    hits = [h for h in hits if h.topic not in private]
    if state["topic"] in private:
        state["topic"] = None
    memories = [h for h in _accumulate(state, hits) if h.topic not in private]
    if memories:
        memories = _safely(lambda: _still_present(searcher, memories), memories,
                           "cannot check the session's memories against the vault; showing them as found")
        turns = {m["id"]: m["turn"] for m in state["memories"]}
        state["memories"] = [dict(h.to_dict(), turn=turns[h.id]) for h in memories]

    today = now.date()
    pinned: list[str] = [t for t in _safely(store.pinned_topics, [], "cannot find the pinned profile")
                         if t not in private]
    profile = _safely(lambda: _profile(store, pinned, today), [], "cannot read the pinned profile")
    memories = [h for h in memories if h.topic not in pinned]  # shown once, "About the user", not again below
    follow = [f for f in _safely(lambda: _due(store, searcher, today), [], "cannot list the follow-ups") if f[1] not in private]
    topic: Topic | None = None
    if state["topic"]:
        try:
            topic = store.topic(state["topic"])
        except TopicNotFound:
            state["topic"] = None  # deleted, renamed or split since: back to memories
        except (TopicParseError, MemkitError) as exc:
            log.warning("%s; showing memories instead of the topic", exc)
    if topic is not None:  # expired entries are never shown; the profile is shown above
        topic.entries = [e for e in topic.entries if not expiry(e, store.config.expire, today)]
    emptied = _safely(lambda: _emptied_topics(searcher), frozenset(), "cannot tell which topics are empty")
    recent = [r for r in store.index_txt.read()  # the profile is above; a topic whose entries were all forgotten
              if r.topic not in pinned and r.topic not in private and r.topic not in emptied]  # is not named
    order = None
    if topic is not None and message:
        current = topic
        order = _safely(lambda: _relevance_order(searcher, current, message), None,
                        "cannot rank the topic's entries; the oldest are left out first")
    fresh = {h.id for h in hits}
    own = sum(1 for h in memories if h.id in fresh)  # this message's memories lead the list
    block = fit(recent, memories, topic, state["session"], budget_tokens, now, profile, follow, order, own, conv,
                markers)
    return _without_secrets(store, block)


def _without_secrets(store: Store, block: Context) -> Context:
    """The block with every secret the vault's redaction rules find replaced by ``[redacted]``: a
    line a person typed into a topic file by hand (a router password, an API key) was never
    redacted on its way in, and the block goes to an assistant, often a remote LLM: no secret leaves
    the process in it. The memories' texts in ``--json`` too."""
    rules = store.config.redact
    text = rules.apply(block.text)
    if not text.count:
        return block
    memories = [replace(h, text=rules.apply(h.text).text) for h in block.memories]
    return replace(block, text=text.text, memories=memories, tokens=estimate_tokens(text.text))


def _relevance_order(searcher: Searcher, topic: Topic, message: str) -> list[int]:
    """The topic's entry positions from the one to leave out first to the one to keep last: entries
    the message does not find, oldest first, then those it finds, least relevant first (under a
    tight budget "what car do I drive?" keeps the car itself, not the car wash)."""
    entries = topic.entries
    hits = searcher.find(searcher.query(message, k=max(1, len(entries)), threshold=None, topic=topic.name), refresh=False)
    where = {e.id: pos for pos, e in enumerate(entries)}
    age = {pos: rank for rank, pos in enumerate(age_order(entries))}
    score: dict[int, float] = {}
    for h in hits:
        if h.topic == topic.name and h.id in where:
            score.setdefault(where[h.id], round(h.score, 6))
    # weakest first; among equals (notes alike), the oldest first, so the newest are kept
    found = sorted(score, key=lambda pos: (score[pos], age[pos]))
    return [pos for pos in age_order(entries) if pos not in score] + found


def _profile(store: Store, pinned: Sequence[str], today: date) -> list[Entry]:
    """The pinned topics' entries (not expired), in file order."""
    out: list[Entry] = []
    for name in pinned:
        out += [e for e in store.topic(name).entries if not expiry(e, store.config.expire, today)]
    return out


def _due(store: Store, searcher: Searcher, today: date) -> list[tuple[str, str, date]]:
    """(text, topic, due day) of each follow-up due or overdue today, the oldest due first; read
    from the index (no topic file is parsed), whose entries carry their kind."""
    searcher.refresh()
    view = searcher.view()
    out = []
    for i, kind in enumerate(view.kinds):
        if kind != PENDING or not view.is_live(i):
            continue
        text = view.texts[i]
        entry = Entry(text, view.topics[int(view.file_ids[i])], "", 0, 0, kind, (), view.own_date(i))
        due = due_date(entry)
        if due is not None and due <= today and not expiry(entry, store.config.expire, today):
            out.append((text, entry.topic, due))
    return sorted(out, key=lambda item: item[2])


def _detect(searcher: Searcher, text: str) -> str | None:
    guess = detect_topic(searcher, text)
    return guess.topic if guess is not None else None


def _emptied_topics(searcher: Searcher) -> frozenset[str]:
    """The topics whose file the index holds with no entry in it (every entry forgotten, moved or
    expired away): the block's recent topics leave them out, so what a person forgot is not named
    there by its topic either. Read from the index's view (no file is parsed); a topic the index
    does not know yet is kept."""
    view = searcher.view()
    rows = view.file_ids if view.live is None else view.file_ids[view.live]
    filled = set(rows.tolist())
    dead = {slot for slot, file in enumerate(view.slot_file) if file == -1}
    return frozenset(name for slot, name in enumerate(view.topics) if slot not in filled and slot not in dead)


def _safely(fn: Callable[[], Any], default: Any, what: str) -> Any:
    """Run a step the block can do without (search, detection): a failure (no model, say) becomes
    a warning, so the assistant still gets the recent topics and the instructions."""
    try:
        return fn()
    except MemkitError as exc:
        log.warning("%s (%s)", what, exc)
        return default


def _accumulate(state: dict[str, Any], hits: Sequence[Hit]) -> list[Hit]:
    """Merge this message's hits into the session's memories: newest message first, each message's
    hits in ranking order, one copy of each entry (a memory found again moves up to its newest turn)."""
    turn = state["turns"]
    merged: dict[str, tuple[int, int, Hit]] = {}
    for pos, item in enumerate(state["memories"]):
        hit = Hit.from_dict(item)
        if hit is not None:
            merged[hit.id] = (item["turn"], -pos, hit)
    for pos, hit in enumerate(hits):
        merged[hit.id] = (turn, 10**6 - pos, hit)  # this message's hits rank above every older one
    ordered = sorted(merged.values(), key=lambda t: (t[0], t[1]), reverse=True)[:MAX_SESSION_MEMORIES]
    state["memories"] = [dict(h.to_dict(), turn=t) for t, _, h in ordered]
    return [h for _, _, h in ordered]


def _still_present(searcher: Searcher, memories: list[Hit]) -> list[Hit]:
    """Drop remembered hits whose entry has been forgotten or edited since; follow moved ones."""
    searcher.refresh(force=True)  # a stat per topic file; search alone re-checks at most once a second
    view = searcher.view()
    where: dict[str, int] = {}
    for i, entry_id in enumerate(view.ids.tolist()):
        if view.is_live(i):  # a dead row: a forgotten or edited entry's old place
            where.setdefault(entry_id.decode("ascii"), i)
    out = []
    for hit in memories:
        found = where.get(hit.id)
        if found is None:
            continue
        out.append(hit_at(view, found, hit.score, hit.cosine, hit.lexical))
    return out


CONTEXT_FLOOR = 0.15  #: a memory the judge scores below this cosine is not put in the block
SAFETY_AFTER = 2  #: the safety notes that bear on a message come after its best this many memories
#: the judge's cosine from which a health note is in the block whatever its words (below it: where
#: it bears, :func:`memkit.search.safety.bears_on`)
CONTEXT_SAFETY_SURE = 0.3
CONTEXT_MEMORIES = 8  #: the judge's best this many (or max_memories_per_search, if more) for a message


def _message_hits(searcher: Searcher, message: str) -> list[Hit]:
    """The memories for the message: with the judge (the second search stage), its best
    ``CONTEXT_MEMORIES`` whose judge cosine reaches ``CONTEXT_FLOOR``, confident or not (for a
    message of one informative word, "hello", only those reaching the judge's threshold) (a
    related memory costs the assistant a line; a missing one costs the answer: on memkit's
    everyday set, the note that matters for a message is among the judge's best 5 for 70 % of
    messages and its best 8 above 0.15 for 83 %); without it, the hits that are real evidence
    (:func:`_confident_hits`)."""
    wanted = set(terms(message))
    if not wanted:  # only stop words and punctuation ("hi!", "ok thanks"): small talk
        return []
    if searcher.judge() is None:  # turned off, or it cannot run here: as before the judge
        return _with_safety(searcher, message, _confident_hits(searcher, message))
    k = max(CONTEXT_MEMORIES, searcher.config.max_memories_per_search)
    hits = searcher.find(searcher.query(message, threshold=None, k=k))
    if hits and hits[0].judge is None:  # the search could not judge (words only: no model)
        return _with_safety(searcher, message, _confident_hits(searcher, message))
    if len(wanted) < 2:  # one word ("hello", "thanks"): only what the judge is sure of
        floor = searcher.judge_threshold()
        return [h for h in hits if h.judge is not None and h.judge >= floor][:searcher.config.max_memories_per_search]
    # a health note the judge puts near a message it does not bear on ("book me a haircut" and the
    # thyroid pill, 0.20) is one line of noise in every block: it stays where it bears
    # (memkit.search.safety.bears_on) or the judge is sure of it
    kept = [h for h in hits if h.judge is not None and h.judge >= CONTEXT_FLOOR
            and (h.judge >= CONTEXT_SAFETY_SURE or not is_safety_note(h.text) or bears_on(h.text, message))]
    # a note that keeps the person safe (an allergy, a medication) and bears on the message goes in
    # after the two best, even where the judge ranks it far down ("a Thai dish to order" and the
    # shellfish allergy: 0.12)
    return _with_safety(searcher, message, kept)


def _with_safety(searcher: Searcher, message: str, kept: list[Hit]) -> list[Hit]:
    """``kept`` with the safety notes that bear on the message (:meth:`Searcher.safety_hits`) after
    its best ``SAFETY_AFTER``."""
    shown = {h.id for h in kept}
    safety = [h for h in searcher.safety_hits(message, floor=CONTEXT_SAFETY_SURE) if h.id not in shown]
    return kept[:SAFETY_AFTER] + safety + kept[SAFETY_AFTER:]


def _confident_hits(searcher: Searcher, message: str) -> list[Hit]:
    """Search hits that are real evidence (see :func:`memkit.search.route.is_confident`, or every
    informative word of the message in the entry): static models give small talk ("hi!") a high
    cosine with anything, and a wrong memory would stay for the whole session."""
    wanted = set(terms(message))
    if not wanted:  # only stop words and punctuation ("hi!", "ok thanks"): small talk
        return []
    threshold = searcher.threshold()
    hits = searcher.find(searcher.query(message, judge=False, weak=0))
    # evidence: close in meaning and sharing a word, or holding every informative word of the
    # message ("parking" finds "Parking spot is B15" whatever the model's cosine)
    return [h for h in hits if is_confident(h, threshold) or wanted <= set(terms(h.text))]
