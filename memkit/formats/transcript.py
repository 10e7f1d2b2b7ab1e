"""Transcripts: plain ``Speaker: text`` lines, a JSON list of ``{role, content}``, or JSONL."""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.fsutil import NotRegularFile, read_regular
from ..base.lazy_re import lazy
from ..base.limits import MAX_TRANSCRIPT_BYTES
from ..errors import TranscriptError

_SPEAKER_RE = lazy(r"^\s*([A-Za-z][\w .'-]{0,40}?)\s*:\s+(.*)$")


@dataclass(frozen=True)
class Message:
    """One turn of a conversation."""

    role: str
    content: str


def read_transcript(path: Path) -> tuple[list[Message], bytes]:
    """Read and parse a transcript file; returns (messages, raw bytes).

    :raises TranscriptError: naming the file and what is wrong.
    """
    try:
        size = path.stat().st_size
        if size > MAX_TRANSCRIPT_BYTES:
            raise TranscriptError(
                f"{path}: transcript is {size / 1e6:.1f} MB; memkit digests at most "
                f"{MAX_TRANSCRIPT_BYTES / 1e6:.0f} MB at once: split it into smaller files"
            )
        data, _ = read_regular(path, MAX_TRANSCRIPT_BYTES)  # a FIFO or device is refused, never waited on
    except NotRegularFile as exc:
        raise TranscriptError(f"{path}: {exc}; not read") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    return parse_transcript(data, str(path)), data


_LINE_BREAK_B = lazy(rb"\r\n|\r|\n")


def decode_utf8(data: bytes, name: str, hint: str = "") -> str:
    """``data`` as UTF-8 text (a BOM dropped). :raises TranscriptError: naming the line of the
    first bad byte, then ``hint``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = len(_LINE_BREAK_B.split(data[:exc.start]))  # CRLF, LF and CR-only lines alike
        raise TranscriptError(f"{name} line {line}: not valid UTF-8{hint}") from None


def json_value(text: str | bytes, name: str) -> Any:
    """``json.loads``, a value nested too deeply for it (``RecursionError``) refused as a
    :class:`TranscriptError` naming ``name`` (the file, and line). :raises json.JSONDecodeError: as
    ``json.loads``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise TranscriptError(f"{name}: JSON nested too deeply to read (over ~{sys.getrecursionlimit()} "
                              f"levels); not a conversation") from None


def json_lines(text: str, name: str) -> list[Any]:
    """The JSON value of each non-blank line. :raises TranscriptError: naming the bad line."""
    objects = []
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            try:
                objects.append(json_value(raw, f"{name} line {number}"))
            except json.JSONDecodeError as exc:
                raise TranscriptError(f"{name} line {number}: not valid JSON Lines: {exc.msg}") from None
    return objects


def parse_transcript(data: bytes, name: str = "transcript") -> list[Message]:
    """Parse transcript bytes (format detected from the content)."""
    if b"\x00" in data:
        raise TranscriptError(f"{name}: contains NUL bytes: this looks like a binary file, not a transcript")
    text = decode_utf8(data, name, "; save the transcript as UTF-8")
    stripped = text.strip()
    if not stripped:
        raise TranscriptError(f"{name}: the transcript is empty; nothing to digest")
    if stripped.startswith("["):
        try:
            return _from_objects(json_value(text, name), name)  # the whole text: error lines count the blank ones
        except json.JSONDecodeError as exc:
            raise TranscriptError(f"{name} line {exc.lineno}: looks like JSON but is not valid: {exc.msg}") from None
    if stripped.startswith("{"):
        return _from_objects(json_lines(text, name), name)
    return _from_lines(text)


def _from_objects(items: object, name: str) -> list[Message]:
    if not isinstance(items, list):
        raise TranscriptError(f"{name}: expected a JSON list of messages")
    out = []
    for i, item in enumerate(items, 1):
        if not isinstance(item, dict):
            raise TranscriptError(f"{name}: message {i} is not an object with role and content")
        role = item.get("role") or item.get("speaker") or item.get("name") or "user"
        content = item.get("content", item.get("text", ""))
        if content is None:  # e.g. an assistant message that only calls a tool
            content = ""
        if isinstance(content, list):  # OpenAI content parts, or plain strings
            content = " ".join(str(p.get("text") or "") if isinstance(p, dict) else str(p) for p in content)
        content = " ".join(str(content).split())
        if content:
            out.append(Message(str(role), content))
    if not out:
        raise TranscriptError(f"{name}: the transcript has no messages with content")
    return out


def _from_lines(text: str) -> list[Message]:
    out: list[Message] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _SPEAKER_RE.match(line)
        if match:
            out.append(Message(match.group(1).strip(), match.group(2).strip()))
        elif out:
            out[-1] = Message(out[-1].role, f"{out[-1].content} {line.strip()}")
        else:
            out.append(Message("user", line.strip()))
    return out


def render(messages: list[Message]) -> str:
    """The transcript as ``role: content`` lines for the prompt."""
    return "\n".join(f"{m.role}: {m.content}" for m in messages)
