"""`memkit capture`: queue a finished conversation from an assistant in the vault's ``inbox/``.

Accepted input (the format is detected from the content):

- the JSON object Claude Code passes on stdin to its ``Stop`` / ``SessionEnd`` hooks
  (``session_id``, ``transcript_path``, ``hook_event_name``, ``cwd``…): the JSONL transcript it
  points to is read, keeping the text of the user's and the assistant's messages and skipping
  tool calls, tool results, thinking blocks, meta entries and sidechains (subagents);
- a Claude Code JSONL transcript given as a file;
- anything ``memkit digest`` reads: ``Speaker: text`` lines, a JSON list of ``{role, content}``
  messages, or JSONL.

The conversation is written, atomically, as JSONL messages to ``inbox/<slug>-<hash>.jsonl``
where the slug and hash come from the session id, so capturing the same session again (Claude
Code's ``Stop`` hook fires after every turn) replaces its queued transcript instead of adding
another one. ``memkit watch`` digests it once it has been idle for ``session_timeout_minutes``;
``digest`` (a callback, :meth:`memkit.Vault.capture` passes its digest) digests it at once.

A service: it writes through :class:`memkit.store.store.Store`; :meth:`memkit.Vault.capture` is its API.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from ..base.fsutil import NotRegularFile, open_regular
from ..base.limits import MAX_TRANSCRIPT_BYTES
from ..errors import MemkitError, TranscriptError
from ..formats.names import session_file_name
from ..formats.transcript import Message, parse_transcript
from ..store import Store

log = logging.getLogger("memkit")

#: the most read from stdin (a hook payload is a few hundred bytes; a pasted conversation more)
MAX_STDIN_BYTES = 16_000_000
#: the largest transcript file read, line by line (Claude Code's hold every tool result)
MAX_SOURCE_BYTES = 512_000_000
#: the largest file in a format other than Claude Code's (read whole, like `memkit digest`)
MAX_PLAIN_BYTES = 16_000_000

#: Claude Code's entry types that carry a conversation turn
_CC_TURNS = ("user", "assistant")
#: entries that are not a turn of the conversation: system notes, subagents, compaction summaries,
#: API error notices
_CC_SKIP = ("isMeta", "isSidechain", "isCompactSummary", "isVisibleInTranscriptOnly", "isApiErrorMessage")
#: keys only a Claude Code transcript entry has
_CC_KEYS = ("parentUuid", "sessionId", "leafUuid", "isSidechain", "userType")
#: user "messages" that are Claude Code's own bookkeeping, not something the user said
_CC_NOISE = re.compile(
    r"^\s*(<command-name>|<command-message>|<command-args>|<local-command-stdout>|<local-command-stderr>"
    r"|<bash-input>|<bash-stdout>|<bash-stderr>|\[Request interrupted by user)"
)
_CC_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


@dataclass
class Captured:
    """What :func:`capture` did."""

    status: str  #: ``queued`` (new), ``replaced``, ``unchanged``, ``already-digested`` or ``digested``
    file: str  #: the inbox file, relative to the vault (``inbox/…`` or ``inbox/done/…``)
    session: str  #: the session id the file is named after
    source: str  #: where the conversation came from (a path, ``stdin``)
    format: str  #: ``claude-code``, ``messages`` (JSON) or ``text``
    messages: int  #: messages queued
    bytes: int  #: size of the queued file
    dropped: int = 0  #: earlier messages left out to keep the file under the digest's 1 MB limit
    event: str | None = None  #: the hook event (``Stop``, ``SessionEnd``…) when called as a hook
    cwd: str | None = None  #: the assistant's working folder, from the hook payload
    report: dict[str, Any] | None = None  #: the digest report (``digest_now``)
    llm_configured: bool = True  #: whether an LLM is configured (without one nothing digests the inbox)
    saved: dict[str, Any] | None = None  #: the conversation session it was also stored in (``save``)
    skipped: list[str] = field(default_factory=list)  #: ``"<source> line N: why"``: lines that could not be read
    redacted: int = 0  #: secrets replaced by ``[redacted]`` before the transcript was written (docs/privacy.md)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "status": self.status, "file": self.file, "session": self.session, "source": self.source,
            "format": self.format, "messages": self.messages, "bytes": self.bytes, "dropped": self.dropped,
            "event": self.event, "cwd": self.cwd, "llm_configured": self.llm_configured,
        }
        if self.report is not None:
            data["digest"] = self.report
        if self.saved is not None:
            data["saved"] = self.saved
        if self.skipped:
            data["skipped"] = self.skipped
        if self.redacted:
            data["redacted"] = self.redacted
        return data

    def summary(self) -> str:
        text = self._summary()
        if self.redacted:
            text += f" ({self.redacted} secret{'' if self.redacted == 1 else 's'} redacted)"
        if self.saved is not None:
            text += (f"; saved as session {self.saved['id']} ({self.saved['file']}, "
                     f"{self.saved['added']} new message{'' if self.saved['added'] == 1 else 's'})")
        return text

    def _summary(self) -> str:
        what = f"{self.messages} message{'' if self.messages == 1 else 's'}"
        if self.dropped:
            what += f", {self.dropped} earlier left out (1 MB limit)"
        origin = f"session {self.session}" + (f", {self.event} hook" if self.event else "")
        if self.status == "digested":
            digest = self.report or {}
            written = len(digest.get("written", []))
            note = "already digested; nothing added" if digest.get("already_digested") else \
                f"wrote {written} entr{'y' if written == 1 else 'ies'}"
            return f"digested {self.source} ({what}; {origin}): {note}; moved to {self.file}"
        if self.status == "unchanged":
            return f"{self.file} already holds this conversation ({what}; {origin}); nothing changed"
        if self.status == "already-digested":
            return f"this conversation was already digested ({self.file}; {origin}); nothing queued"
        verb = "replaced" if self.status == "replaced" else "queued"
        if not self.llm_configured:
            return (f"{verb} {self.file} ({what}; {origin}); no LLM is configured, so nothing digests it yet: "
                    f"set `llm:` in memkit.yaml, then `memkit watch` digests it (or `memkit digest {self.file}`)")
        return f"{verb} {self.file} ({what}; {origin}); `memkit watch` digests it once it is idle"


# ---- reading the input -------------------------------------------------------------------------

def read_stream(stream: IO[bytes], limit: int = MAX_STDIN_BYTES) -> bytes:
    """Read all of ``stream`` (stdin), refusing more than ``limit`` bytes."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise MemkitError(f"stdin holds more than {limit / 1e6:.0f} MB: give the transcript as a file instead")
    return data


def open_transcript(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open a transcript file for reading only if it is a regular file of at most
    :data:`MAX_SOURCE_BYTES`: a FIFO, device or folder is refused at once (never blocking on it,
    see :func:`memkit.base.fsutil.open_regular`), so a hook never hangs on one."""
    p = Path(path).expanduser()
    try:
        return open_regular(p, MAX_SOURCE_BYTES)
    except FileNotFoundError:
        raise MemkitError(f"{p}: no such transcript file") from None
    except NotRegularFile as exc:
        raise MemkitError(f"{p} {exc}: give a transcript file") from None
    except OSError as exc:
        raise MemkitError(f"{p}: cannot read: {exc.strerror or exc}") from None


def _json_object(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def is_claude_code_entry(obj: Any) -> bool:
    """Whether a parsed JSONL line is an entry of a Claude Code transcript."""
    if not isinstance(obj, dict):
        return False
    if obj.get("type") in _CC_TURNS and isinstance(obj.get("message"), dict):
        return True
    return isinstance(obj.get("type"), str) and any(k in obj for k in _CC_KEYS)


def is_hook_payload(obj: Any) -> bool:
    """Whether ``obj`` is the JSON an assistant's hook passes on stdin (Claude Code's shape)."""
    return isinstance(obj, dict) and ("hook_event_name" in obj or "transcript_path" in obj)


def _block_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    # only text blocks: tool_use, tool_result, thinking, redacted_thinking, image… are skipped
    return [b["text"] for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def claude_code_messages(lines: Iterable[bytes], skipped: list[str] | None = None
                         ) -> tuple[list[Message], str | None]:
    """The user's and the assistant's text messages of a Claude Code JSONL transcript, and the
    session id it names. Consecutive messages of one role (an answer split by tool calls) are
    joined; a last line that is not valid JSON (still being written) is skipped, and so is any
    other line that cannot be read, which adds ``"line N: why"`` to ``skipped``."""
    turns, session = claude_code_turns(lines, skipped)
    return [m for m, _ in turns], session


def _unreadable(line: bytes) -> str:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (byte {exc.start + 1})"
    try:
        json.loads(text)
    except RecursionError:
        return "JSON nested too deeply"
    except ValueError as exc:
        return f"not valid JSON: {getattr(exc, 'msg', exc)}"
    return "not a JSON object"


def claude_code_turns(lines: Iterable[bytes], skipped: list[str] | None = None
                      ) -> tuple[list[tuple[Message, str | None]], str | None]:
    """Like :func:`claude_code_messages`, each message with its time (the ``timestamp`` of its
    first entry, when the transcript has one)."""
    turns: list[tuple[Message, str | None]] = []
    session: str | None = None
    bad: tuple[int, bytes] | None = None  # the last unreadable line, reported once another follows
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if bad is not None and skipped is not None:
            skipped.append(f"line {bad[0]}: {_unreadable(bad[1])}")
        bad = None
        obj = _json_object(line)
        if not isinstance(obj, dict):
            if obj is None:
                bad = (number, line)
            continue
        if session is None and isinstance(obj.get("sessionId"), str):
            session = obj["sessionId"]
        if obj.get("type") not in _CC_TURNS or any(obj.get(flag) for flag in _CC_SKIP):
            continue
        message = obj.get("message")
        if not isinstance(message, dict):
            continue
        role = str(message.get("role") if message.get("role") in _CC_TURNS else obj["type"])
        parts = []
        for text in _block_texts(message.get("content")):
            if role == "user" and _CC_NOISE.match(text):
                continue
            text = _CC_REMINDER.sub("", text).strip()
            if text:
                parts.append(text)
        if not parts:
            continue
        text = "\n\n".join(parts)
        stamp = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
        if turns and turns[-1][0].role == role:
            turns[-1] = (Message(role, f"{turns[-1][0].content}\n\n{text}"), turns[-1][1])
        else:
            turns.append((Message(role, text), stamp))
    if bad is not None and skipped is not None and bad[1].rstrip(b" \t\r\n").endswith(b"}"):  # else: still written
        skipped.append(f"line {bad[0]}: {_unreadable(bad[1])}")
    return turns, session


@dataclass
class _Source:
    messages: list[Message]
    format: str
    source: str
    slug: str  #: readable part of the inbox file name
    key: str  #: what the hash part is computed from (the session id, a path, the content)
    session: str
    event: str | None = None
    cwd: str | None = None
    skipped: list[str] = field(default_factory=list)  #: ``"<source> line N: why"`` of lines not read


def _from_file(path: str | os.PathLike[str], session: str | None, what: str | None = None) -> _Source:
    p = Path(path).expanduser()
    shown = what or str(p)
    with open_transcript(p) as fh:
        lines: Iterator[bytes] = iter(fh)
        head = list(itertools.islice(lines, 20))
        if any(is_claude_code_entry(_json_object(line)) for line in head if line.lstrip().startswith(b"{")):
            skipped: list[str] = []
            messages, named = claude_code_messages(itertools.chain(head, lines), skipped)
            if not messages:
                raise TranscriptError(f"{shown}: the Claude Code transcript has no user or assistant text yet")
            sid = session or named or p.stem
            return _Source(messages, "claude-code", shown, sid, sid, sid, skipped=[f"{shown} {s}" for s in skipped])
        rest = fh.read(MAX_PLAIN_BYTES + 1)
        data = b"".join(head) + rest
        if len(data) > MAX_PLAIN_BYTES:
            raise MemkitError(f"{shown} is over {MAX_PLAIN_BYTES / 1e6:.0f} MB: split it into smaller files")
    messages = parse_transcript(data, shown)
    fmt = "messages" if data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"[", b"{") else "text"
    if session:
        return _Source(messages, fmt, shown, session, session, session)
    resolved = str(p.resolve())  # the same file lands on the same inbox file
    return _Source(messages, fmt, shown, p.stem, resolved, resolved)


def _from_stdin(data: bytes, session: str | None) -> _Source:
    stripped = data.strip()
    if not stripped:
        raise MemkitError("nothing to capture: stdin is empty (pipe a conversation, or give a transcript path)")
    if stripped.startswith(b"{"):
        payload = _json_object(stripped)  # one object (a JSONL file of several does not parse)
        if is_hook_payload(payload):
            return _from_hook(payload, session)
    lines = stripped.splitlines()
    if stripped.startswith(b"{") and any(is_claude_code_entry(_json_object(line)) for line in lines[:20]):
        skipped: list[str] = []
        messages, named = claude_code_messages(lines, skipped)
        if not messages:
            raise TranscriptError("stdin: the Claude Code transcript has no user or assistant text yet")
        sid = session or named or "stdin-" + hashlib.sha256(data).hexdigest()[:12]
        return _Source(messages, "claude-code", "stdin", sid, sid, sid, skipped=[f"stdin {s}" for s in skipped])
    messages = parse_transcript(data, "stdin")
    fmt = "messages" if stripped[:1] in (b"[", b"{") else "text"
    if session:
        return _Source(messages, fmt, "stdin", session, session, session)
    sid = "stdin-" + hashlib.sha256(data).hexdigest()[:16]  # the same text lands on the same file
    return _Source(messages, fmt, "stdin", sid, sid, sid)


def _from_hook(payload: dict[str, Any], session: str | None) -> _Source:
    event = payload.get("hook_event_name")
    event = event if isinstance(event, str) else None
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path.strip():
        raise MemkitError(f"the {event or 'hook'} payload on stdin has no transcript_path: nothing to capture")
    sid = payload.get("session_id")
    sid = session or (sid if isinstance(sid, str) and sid.strip() else None)
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else None
    if cwd and not Path(path).expanduser().is_absolute():
        path = str(Path(cwd) / path)  # relative to the assistant's folder, not ours
    src = _from_file(path, sid)
    src.event = event
    src.cwd = cwd
    return src


# ---- writing the inbox file --------------------------------------------------------------------

def inbox_name(session: str, key: str) -> str:
    """``<slug>-<hash>.jsonl``: readable, never hidden, no path separator; the hash of ``key``
    keeps distinct sessions apart (and makes the same session land on the same file)."""
    return session_file_name(session, key, ".jsonl")


def render_jsonl(messages: list[Message], limit: int = MAX_TRANSCRIPT_BYTES) -> tuple[bytes, int]:
    """The messages as JSONL ``{"role", "content"}`` lines, at most ``limit`` bytes: the newest
    messages are kept (a conversation's conclusions come last). Returns (data, messages dropped)."""
    lines = [json.dumps({"role": m.role, "content": m.content}, ensure_ascii=False).encode("utf-8") + b"\n"
             for m in messages]
    total, keep = 0, 0
    for line in reversed(lines):
        if total + len(line) > limit:
            break
        total += len(line)
        keep += 1
    if keep == 0 and lines:  # one message over the limit on its own: keep its beginning
        last = messages[-1]
        budget = max(limit // 2, 1)
        content = last.content.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
        line = json.dumps({"role": last.role, "content": content}, ensure_ascii=False).encode("utf-8") + b"\n"
        return line, len(lines) - 1
    return b"".join(lines[len(lines) - keep:]), len(lines) - keep


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size == len(data) \
            and path.read_bytes() == data
    except OSError:
        return False


def capture(store: Store, *, path: str | os.PathLike[str] | None = None, stdin: bytes | IO[bytes] | None = None,
            session: str | None = None, digest: Callable[[Path], dict[str, Any]] | None = None,
            llm_configured: bool = True) -> Captured:
    """Queue a conversation in the vault's inbox/ (see the module docstring).

    :param path: a transcript file (Claude Code JSONL, or any format ``memkit digest`` reads).
    :param stdin: the bytes read from stdin (or the stream) instead: a hook payload, JSON messages
        or plain text.
    :param session: the id to name the inbox file after (default: the hook's ``session_id``, the
        transcript's own session id, the file's path, or the content's hash).
    :param digest: digest the queued file at once with this (it returns the digest report as a
        dict) and move the file to ``inbox/done/``; when it fails the transcript stays queued
        and the error is raised.
    :param llm_configured: whether an LLM will digest the inbox (said in the result).
    :raises MemkitError: for unreadable input, a path that is not a regular file, or a failed digest.
    """
    if (path is None) == (stdin is None):
        raise MemkitError("give either a transcript path or the bytes read from stdin")
    if session is not None:
        session = session.strip()
        if not session:
            raise MemkitError("the session id is empty")
    if stdin is not None and not isinstance(stdin, (bytes, bytearray)):
        stdin = read_stream(stdin)
    src = _from_file(path, session) if path is not None else _from_stdin(bytes(stdin or b""), session)
    hidden = [store.config.redact.apply(m.content) for m in src.messages]  # never stored (docs/privacy.md)
    src.messages = [Message(m.role, h.text) for m, h in zip(src.messages, hidden)]
    data, dropped = render_jsonl(src.messages)
    inbox = store.inbox_dir
    name = inbox_name(src.slug, src.key)
    target = inbox / name
    result = Captured("queued", store.rel(target), src.session, src.source, src.format,
                      len(src.messages) - dropped, len(data), dropped, src.event, src.cwd,
                      llm_configured=llm_configured, skipped=src.skipped, redacted=sum(h.count for h in hidden))
    for line in src.skipped:
        log.warning("%s; skipped", line)
    if _same_bytes(target, data):
        result.status = "unchanged"  # not rewritten: the watcher's idle timer keeps running
    elif digest is None and _same_bytes(inbox / "done" / name, data):
        result.status = "already-digested"
        result.file = store.rel(inbox / "done" / name)
        return result
    else:
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise MemkitError(f"{store.rel(target)} exists and is not a regular file; not replaced")
        result.status = "replaced" if target.exists() else "queued"
        store.inbox.queue(name, data)
    if digest is None:
        return result
    read = target.stat()
    try:
        report = digest(target)
    except MemkitError as exc:
        raise MemkitError(f"{exc} (the transcript stays queued in {store.rel(target)} for `memkit watch`)") from exc
    store.inbox.done(target, read)
    result.status = "digested"
    result.file = store.rel(inbox / "done" / name)
    result.report = report
    return result


__all__ = ["Captured", "capture", "claude_code_messages", "claude_code_turns", "inbox_name", "is_hook_payload", "open_transcript",
           "read_stream", "render_jsonl"]
