"""Conversations in and out of ``sessions/``: export as JSONL, import JSONL / JSON messages, a
Claude Code transcript, or a ChatGPT export.

- **Export** (``memkit session export ID``): JSONL, one ``{"role", "content", "time"}`` object a
  line (``name`` and ``important`` when set), the system prompt first as a ``system`` message: the
  message-list shape of the OpenAI and Anthropic APIs, one message a line.
- **Import** (``memkit session import FILE``), the format detected from the content:

  - ``jsonl``: that shape (or a JSON list of it); ``time``/``timestamp``/``created_at`` are read,
    OpenAI content parts are joined, an assistant's ``tool_calls`` are kept compactly as
    ``→ name(arguments)`` lines; a first ``system`` message becomes the system prompt;
  - ``claude-code``: a Claude Code JSONL transcript, read as ``memkit capture`` reads it (user and
    assistant text, each with its entry's timestamp);
  - ``chatgpt``: ChatGPT's ``conversations.json`` export (one session per conversation, its
    current branch, with titles and times); a conversation without an ``id`` is named by its
    content (``chatgpt-`` and a hash of its creation time and first message), so a re-import
    finds it.

Importing into an existing session id appends only the messages it lacks, matched by role, time
and text (by role and text for a message whose file gives no time): re-importing a growing
transcript, as ``capture --save`` does, adds only what is new, also when the session gained
messages since or aged (its raw conversation counts). A new session is created with its messages
in one atomic write. A session file cut short by a kill in the middle of an import's append (its
last block a beginning of what the import writes) is completed by the next import: that block is
replaced by the whole messages, not duplicated. So is a Claude Code turn that grew since.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..digest import claude_code_turns, is_claude_code_entry
from ..errors import InvalidValue, MemkitError, TranscriptError
from ..formats.plain import escape_controls
from ..formats.session import (
    ROLES,
    Session,
    SessionMessage,
    check_session_id,
    format_time,
    last_block,
    parse_time,
    render_message,
)
from ..formats.transcript import decode_utf8, json_lines, json_value
from .folder import Sessions

log = logging.getLogger("memkit")

__all__ = ["Conversation", "FORMATS", "Imported", "export_jsonl", "parse_conversations", "import_conversations"]

FORMATS = ("auto", "jsonl", "claude-code", "chatgpt")
_ROLE_NAMES = {"human": "user", "ai": "assistant", "bot": "assistant", "model": "assistant",
               "developer": "system", "function": "tool"}


@dataclass
class Conversation:
    """A conversation read from a file, before it becomes a session."""

    messages: list[SessionMessage]
    title: str | None = None
    system: str | None = None
    source_id: str | None = None  #: the id the source gives it (a Claude Code or ChatGPT id)
    created: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    untimed: set[int] = field(default_factory=set)  #: messages whose time is the import's, not the file's


def export_jsonl(session: Session) -> str:
    """The session as JSONL (see the module docstring)."""
    lines = []
    if session.system:
        lines.append({"role": "system", "content": session.system, "time": session.created})
    lines += [{k: v for k, v in m.to_dict().items() if k != "line"} for m in session.messages]
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def _time(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return format_time(datetime.fromtimestamp(float(value), timezone.utc))
    if isinstance(value, str) and value.strip():
        try:
            return format_time(parse_time(value))
        except ValueError:
            return None
    return None


def _role(value: Any) -> tuple[str, str | None]:
    """(role, the name a non-standard role is kept as)."""
    raw = str(value or "user").strip()
    low = raw.lower()
    if low in ROLES:
        return low, None
    if low in _ROLE_NAMES:
        return _ROLE_NAMES[low], None
    return "user", raw[:80] or None


def _content(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI / Anthropic content parts: their text
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n\n".join(t for t in texts if t)
    return json.dumps(value, ensure_ascii=False)


def _tool_calls(calls: Any) -> str:
    out = []
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            out.append(f"→ {fn.get('name', 'tool')}({fn.get('arguments', '')})")
    return "\n".join(out)


def _from_objects(items: list[Any], name: str, fallback_time: str) -> Conversation:
    messages: list[SessionMessage] = []
    system: str | None = None
    created: str | None = None
    last = fallback_time
    timed = False
    untimed: set[int] = set()
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise TranscriptError(f"{name} message {i}: not an object with role and content")
        role, speaker = _role(item.get("role") or item.get("speaker") or item.get("author"))
        content = _content(item.get("content", item.get("text")))
        calls = _tool_calls(item.get("tool_calls"))
        if calls:
            content = f"{content}\n{calls}".strip("\n")
        own = _time(item.get("time") or item.get("timestamp") or item.get("created_at"))
        timed = timed or own is not None
        stamp = own or last
        last = stamp
        if not content.strip():
            continue
        if role == "system" and not messages and system is None:
            system, created = content, stamp
            continue
        tool_name = item.get("name") if isinstance(item.get("name"), str) else None
        if not timed:
            untimed.add(len(messages))
        who = tool_name or speaker
        messages.append(Sessions.message(role, escape_controls(content), important=bool(item.get("important")),
                                         name=escape_controls(who) if who else None, time=stamp))
    return Conversation(messages, system=system, created=created, untimed=untimed)


def _chatgpt(conversations: list[Any], name: str) -> list[Conversation]:
    out = []
    for n, conv in enumerate(conversations, 1):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            raise TranscriptError(f"{name}: conversation {n} has no 'mapping' (not a ChatGPT export)")
        mapping: dict[str, Any] = conv["mapping"]
        node_id = conv.get("current_node")
        if node_id not in mapping:  # no current node: the last leaf in file order
            leaves = [k for k, v in mapping.items() if isinstance(v, dict) and not v.get("children")]
            node_id = leaves[-1] if leaves else None
        chain = []
        seen: set[str] = set()
        while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
            seen.add(node_id)
            node = mapping[node_id]
            chain.append(node)
            node_id = node.get("parent") if isinstance(node, dict) else None
        created = _time(conv.get("create_time")) or format_time(datetime.now(timezone.utc))
        items = []
        for node in reversed(chain):
            msg = node.get("message") if isinstance(node, dict) else None
            if not isinstance(msg, dict):
                continue
            author: dict[str, Any] = msg["author"] if isinstance(msg.get("author"), dict) else {}
            content: dict[str, Any] = msg["content"] if isinstance(msg.get("content"), dict) else {}
            parts = content.get("parts") or ([content["text"]] if isinstance(content.get("text"), str) else [])
            if (msg.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
                continue
            items.append({"role": author.get("role"), "content": _content(parts),
                          "time": msg.get("create_time"), "name": author.get("name")})
        conversation = _from_objects(items, f"{name} conversation {n}", created)
        conversation.title = conv.get("title") if isinstance(conv.get("title"), str) else None
        conversation.source_id = (str(conv.get("conversation_id") or conv.get("id") or "") or None
                                  or _content_id(conv.get("create_time"), conversation))
        conversation.created = conversation.created or created
        conversation.metadata = {"source": "chatgpt"}
        out.append(conversation)
    return out


def _content_id(create_time: Any, conversation: Conversation) -> str | None:
    """The id of a ChatGPT conversation that has none, from its content: a hash of its creation
    time and its first message (neither changes when the conversation grows), so importing the
    same export again finds the session it made. None for a conversation with no message."""
    if not conversation.messages:
        return None
    first = conversation.messages[0]
    key = json.dumps([create_time if isinstance(create_time, (int, float, str)) else None, first.role,
                      first.content.replace("\r\n", "\n").strip()], ensure_ascii=False)
    return "chatgpt-" + hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


def _claude_code(lines: list[bytes], name: str, fallback: str) -> Conversation:
    """A Claude Code transcript's conversation (its lines that cannot be read logged and skipped)."""
    skipped: list[str] = []
    turns, sid = claude_code_turns(lines, skipped)
    for problem in skipped:
        log.warning("%s %s; skipped", name, problem)
    if not turns:
        raise TranscriptError(f"{name}: the Claude Code transcript has no user or assistant text")
    msgs: list[SessionMessage] = []
    last = fallback
    untimed = set()
    for message, stamp in turns:
        own = _time(stamp)
        if own is None and last == fallback:
            untimed.add(len(msgs))
        last = own or last
        msgs.append(Sessions.message(message.role, escape_controls(message.content), time=last))
    return Conversation(msgs, source_id=sid, metadata={"source": "claude-code"}, untimed=untimed)


def parse_conversations(data: bytes, name: str, fmt: str = "auto", now: datetime | None = None
                        ) -> tuple[str, list[Conversation]]:
    """The conversations a file holds, and its format (see the module docstring).

    :raises TranscriptError: naming the file (and line) and what is wrong.
    """
    if fmt not in FORMATS:
        raise InvalidValue(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    fallback = format_time(now or datetime.now(timezone.utc))
    if fmt == "claude-code":  # read line by line: a line that cannot be read is named and skipped
        return "claude-code", [_claude_code(data.removeprefix(b"\xef\xbb\xbf").splitlines(), name, fallback)]
    text = decode_utf8(data, name)
    stripped = text.strip()
    if not stripped:
        raise TranscriptError(f"{name}: the file is empty")
    lines = [line for line in text.splitlines() if line.strip()]
    if fmt == "auto" and stripped.startswith("{"):
        head: list[Any] = []
        for first in lines[:20]:
            try:
                head.append(json.loads(first))
            except (ValueError, RecursionError):
                head.append(None)
        if any(is_claude_code_entry(obj) for obj in head):
            return "claude-code", [_claude_code([line.encode("utf-8") for line in text.splitlines()], name,
                                                fallback)]
    if stripped.startswith("["):
        try:
            items = json_value(stripped, name)
        except json.JSONDecodeError as exc:
            raise TranscriptError(f"{name} line {exc.lineno}: looks like JSON but is not valid: {exc.msg}") from None
        if fmt == "chatgpt" or (fmt == "auto" and items and isinstance(items[0], dict) and "mapping" in items[0]):
            return "chatgpt", _chatgpt(items, name)
        return "jsonl", [_from_objects(items, name, fallback)]
    if stripped.startswith("{"):
        try:
            whole = json_value(stripped, name)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, dict) and "mapping" in whole:  # one ChatGPT conversation
            return "chatgpt", _chatgpt([whole], name)
        if isinstance(whole, dict) and isinstance(whole.get("messages"), list):  # {"messages": [...]}
            return "jsonl", [_from_objects(whole["messages"], name, fallback)]
        return "jsonl", [_from_objects(json_lines(text, name), name, fallback)]
    raise TranscriptError(f"{name}: not JSONL, JSON messages, a Claude Code transcript or a ChatGPT export")


def _key(message: SessionMessage, timed: bool) -> tuple[str, ...]:
    content = message.content.replace("\r\n", "\n").strip()
    if not timed:
        return (message.role, content)
    try:
        time = format_time(parse_time(message.time))
    except ValueError:
        time = message.time
    return (message.role, time, content)


def _lacking(held: list[SessionMessage], conv: Conversation) -> list[SessionMessage]:
    """The messages of ``conv`` that ``held`` lacks, each held one matching at most one incoming:
    by role, time and text (by role and text for a message whose file gave it no time)."""
    exact = Counter(_key(m, True) for m in held)
    loose = Counter(_key(m, False) for m in held)
    out = []
    for i, message in enumerate(conv.messages):
        timed = i not in conv.untimed
        key, plain = _key(message, True), _key(message, False)
        if timed and exact[key] > 0:
            exact[key] -= 1
            loose[plain] -= 1
        elif not timed and loose[plain] > 0:
            loose[plain] -= 1
        else:
            out.append(message)
    return out


def _cut_tail(text: str, conv: Conversation) -> int | None:
    """Where the last block of a session file's ``text`` starts when that block was cut short by
    a kill in the middle of an import (or is a Claude Code turn that grew since): it, and what
    follows it, is a beginning of what ``conv``'s messages from one of them on render to, and not
    that whole message. None otherwise."""
    start = last_block(text)
    if start is None:
        return None
    tail = text[start:]
    for i, message in enumerate(conv.messages):
        if i in conv.untimed or not tail.startswith(f"### {message.role} · {message.time}"):
            continue
        whole = render_message(message)[1:]
        if tail.rstrip("\r\n") == whole.rstrip("\n"):
            return None  # held whole
        if _renders_from(conv.messages, i, len(tail) + 1).startswith(tail):
            return start
    return None


def _renders_from(messages: list[SessionMessage], first: int, chars: int) -> str:
    """What ``messages[first:]`` render to (without the first blank line), at least ``chars``
    characters of it (all when shorter)."""
    parts: list[str] = []
    size = 0
    for message in itertools.islice(messages, first, None):
        parts.append(render_message(message))
        size += len(parts[-1])
        if size > chars:
            break
    return "".join(parts)[1:]


@dataclass
class Imported:
    """One conversation imported: the session and how many messages were added to it."""

    session: Session
    added: int
    created: bool

    redacted: int = 0  #: secrets replaced by ``[redacted]`` in the messages added

    def to_dict(self) -> dict[str, Any]:
        data = {"id": self.session.id, "file": self.session.file, "title": self.session.display_title,
                "added": self.added, "created": self.created, "messages": len(self.session.messages)}
        if self.redacted:
            data["redacted"] = self.redacted
        return data


def import_conversations(sessions: Sessions, conversations: list[Conversation], *, session_id: str | None = None,
                         title: str | None = None, now: datetime | None = None) -> list[Imported]:
    """Store conversations as sessions (one each): a new session, or the messages a session of
    that id lacks appended in one write.

    :param session_id: the id (one conversation only); default the source's id when it is a valid
        id and no such session exists… else a new id.
    """
    if session_id is not None and len(conversations) != 1:
        raise InvalidValue(f"--id names one session, but the file holds {len(conversations)} conversations")
    out = []
    for conv in map(_visible, conversations):
        sid = session_id
        if sid is None and conv.source_id:
            try:
                sid = check_session_id(conv.source_id)
            except InvalidValue:
                sid = None
        existing: Session | None = None
        if sid is not None:
            try:
                existing = sessions.load(sid, exact=True)  # never another session its id prefixes
            except MemkitError:
                existing = None
        if existing is None:
            when = parse_time(conv.created or (conv.messages[0].time if conv.messages else format_time(
                now or datetime.now(timezone.utc))))
            made = sessions.create(session_id=sid, title=title or conv.title, system=conv.system,
                                   metadata=conv.metadata or None, now=when, messages=conv.messages,
                                   imported=now or datetime.now(timezone.utc))
            out.append(Imported(made, len(conv.messages), True, sum(m.redacted for m in conv.messages)))
            continue
        path, archived = sessions.find(existing.id, exact=True)
        if archived:
            raise MemkitError(f"{existing.file} is archived: move it back to sessions/ to add to it")
        session, added, redacted = _add_lacking(sessions, path, conv)
        out.append(Imported(session, added, False, redacted))
    return out


def _visible(conv: Conversation) -> Conversation:
    """``conv`` with each control character (NUL, ESC, BEL…) of its texts shown as its Unicode
    control picture (:func:`memkit.formats.plain.escape_controls`): a file memkit imports may hold
    one (a tool's coloured output), and the session file never does."""
    def data(value: Any) -> Any:
        if isinstance(value, str):
            return escape_controls(value)
        if isinstance(value, dict):
            return {data(k): data(v) for k, v in value.items()}
        return [data(v) for v in value] if isinstance(value, list) else value

    messages = [replace(m, content=escape_controls(m.content), name=escape_controls(m.name) if m.name else m.name)
                for m in conv.messages]
    return replace(conv, messages=messages, title=escape_controls(conv.title) if conv.title else conv.title,
                   system=escape_controls(conv.system) if conv.system else conv.system, metadata=data(conv.metadata))


def _add_lacking(sessions: Sessions, path: Path, conv: Conversation) -> tuple[Session, int, int]:
    """Append to the session file ``path`` the messages of ``conv`` it lacks (its raw conversation
    counted once it aged); a last block cut short is replaced (:func:`_cut_tail`)."""
    whole = sessions.load_raw_path(path)  # checked: a readable session file
    base, stamp = sessions.read_for_rewrite(path)
    text = base.decode("utf-8", errors="surrogatepass")
    cut = _cut_tail(text, conv)
    held = list(whole.messages)
    if cut is not None:  # the cut block's message is not held: it is written whole again
        line = text.count("\n", 0, cut) + 1
        gone = next((m for m in sessions.load_path(path).messages if m.line == line), None)
        same = next((i for i, m in enumerate(held) if gone is not None and _key(m, True) == _key(gone, True)), None)
        if same is not None:
            del held[same]
    new = _lacking(held, conv)
    if cut is not None:
        blocks = "".join(render_message(m) for m in new)
        sessions.rewrite(path, text[:cut].rstrip("\r\n") + "\n" + blocks, base, stamp)
        log.info("%s: its last message completed (cut short by a kill, or a turn that grew since)",
                 sessions.rel(path))
    else:
        sessions.append_raw(path, [render_message(m) for m in new])
    return sessions.load_path(path), len(new), sum(m.redacted for m in new)
