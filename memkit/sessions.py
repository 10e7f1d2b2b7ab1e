"""Conversation sessions as files: ``sessions/<YYYY-MM-DD>-<id>.md``, one conversation each.

The format (a person reads it in any editor; git merges two clones' appends with ``merge=union``)::

    ---
    id: 3f2a9c1e
    title: Planning the Lisbon trip
    created: 2026-11-24T10:03:12Z
    user: ana
    tags: [travel]
    metadata: {source: voice-bot}
    system: |-
      You are Ana's travel assistant.
    ---
    # Planning the Lisbon trip

    ### user · 2026-11-24T10:03:12Z
    I want to go to Lisbon in March.

    ### assistant · 2026-11-24T10:03:20Z · important
    Booked: TAP flight on March 3rd, back on the 9th.

    ### tool · 2026-11-24T10:03:25Z · name=weather
    {"lisbon": "18°C, sunny"}

    ### summary · 2026-11-25T08:00:00Z · of=summary · covers=40 · sha=9b1e0c2d4a7f
    Ana is planning a March trip to Lisbon...

- The header is YAML frontmatter written once, when the session is created; memkit never rewrites
  it (``updated`` is the time of the last message, so appends never touch the header). Unknown
  keys a person adds are kept and shown as metadata; ``stage:`` is reserved for conversations
  that age (their compression stage).
- Each message is a block: a heading ``### ROLE · TIME`` (role user, assistant, system or tool; time
  in UTC, ISO 8601) with optional ``· important`` (kept verbatim by the hybrid strategy) and
  ``· name=NAME`` (a tool's or speaker's name), then the content as written. A content line that
  would read as a heading is escaped with a leading ``\\`` (removed when read). Blank lines around
  the content are not part of it.
- A ``summary`` block is not a message: it caches what the ``summary``/``hybrid`` strategies
  condensed (:mod:`memkit.session_window`): the first ``covers`` messages, whose hash is ``sha``.
  It is used only while those messages are unchanged (a person's edit of any of them makes the
  hash differ, and the next load that needs a summary computes and appends a new one).
- Every message is one ``O_APPEND`` write, so writers appending at once lose nothing; a session
  file is created atomically and never replaced. Two clones appending to the same session merge
  with ``sessions/*.md merge=union`` (both sides' blocks kept); messages are read in time order.
- Pruned sessions move to ``sessions/archive/`` (tracked, readable, restorable with ``mv``).

The id is the file name without its date: given (letters, digits, ``.``, ``_``, ``-``; a Claude Code
session id fits) or generated (8 hex digits). The same string works as ``memkit context
--session``'s id. A helper-layer module: files only (no index, no LLM).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .config import Config
from .errors import InvalidValue, MemkitError, SessionNotFound
from .fsutil import NotRegularFile, append_bytes, atomic_write, describe_os_error, read_head, read_regular
from .safeyaml import YamlError, load_yaml

log = logging.getLogger("memkit")

__all__ = ["SESSIONS_DIR", "ROLES", "Session", "SessionInfo", "SessionMessage", "SessionSummary", "Sessions",
           "PruneReport", "parse_session", "render_message", "message_rows", "locate_row", "format_time",
           "parse_time", "check_session_id", "messages_sha", "parse_session_tail"]

SESSIONS_DIR = "sessions"
ARCHIVE_DIR = "archive"
ROLES = ("user", "assistant", "system", "tool")
SUMMARY = "summary"
MAX_SESSION_BYTES = 256 * 1024 * 1024  #: a session file is read up to this size
MAX_MESSAGE_CHARS = 1_000_000  #: one message (a pasted document at most)
LIST_CACHE = "session-list.json"  #: under .memkit/: what listing read of each file, by its stat
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
_NAME_RE = re.compile(r"^(\d{4}-\d\d-\d\d)-(.+)\.md$")
_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
#: a block's heading; group 1: escaping backslashes (content, not a heading, when any)
_HEAD_RE = re.compile(rf"^(\\*)### (user|assistant|system|tool|summary) · ({_TIME})((?: · [^\r\n]*)?)[ \t]*\r?$",
                      re.M)
_ESCAPE_RE = re.compile(rf"^(\\*### (?:user|assistant|system|tool|summary) · {_TIME})", re.M)


# ---- time ------------------------------------------------------------------------------------

def format_time(when: datetime) -> str:
    """``2026-11-24T10:03:12Z``: UTC, to the second (a naive time is taken as UTC)."""
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def parse_time(text: str) -> datetime:
    """An ISO time as an aware UTC datetime (naive: UTC). :raises ValueError: not a time."""
    value = text.strip()
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    when = datetime.fromisoformat(value)
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _now(now: datetime | None) -> datetime:
    return datetime.now(timezone.utc) if now is None else (now if now.tzinfo else now.replace(tzinfo=timezone.utc))


# ---- what a session holds --------------------------------------------------------------------

@dataclass(frozen=True)
class SessionMessage:
    """One message of a conversation."""

    role: str  #: user, assistant, system or tool
    content: str
    time: str  #: ISO 8601, UTC (``2026-11-24T10:03:12Z``)
    important: bool = False  #: kept verbatim by the hybrid strategy (decisions, key facts)
    name: str | None = None  #: a tool's or speaker's name
    line: int = 0  #: the line of its heading in the session file (0: not from a file)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content, "time": self.time}
        if self.important:
            data["important"] = True
        if self.name:
            data["name"] = self.name
        if self.line:
            data["line"] = self.line
        return data


@dataclass(frozen=True)
class SessionSummary:
    """A cached condensation of a session's first ``covers`` messages (see the module docstring)."""

    text: str
    time: str
    covers: int  #: how many messages (from the first) it condenses
    sha: str  #: :func:`messages_sha` of those messages when it was made
    strategy: str  #: the strategy that made it (``summary`` or ``hybrid``)
    line: int = 0


@dataclass
class Session:
    """A conversation: its header and its messages (in time order)."""

    id: str
    file: str  #: relative to the vault (``sessions/2026-11-24-3f2a9c1e.md``)
    title: str | None
    created: str
    messages: list[SessionMessage]
    system: str | None = None  #: the system prompt given when it was created
    user: str | None = None
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)  #: the header's ``metadata:`` and unknown keys
    stage: str | None = None  #: reserved: a conversation's aging stage (raw when absent)
    summaries: list[SessionSummary] = field(default_factory=list)
    archived: bool = False  #: it lies in sessions/archive/ (pruned)

    @property
    def updated(self) -> str:
        """The time of the last message (the creation time while it has none)."""
        if not self.messages:
            return self.created
        last = self.messages[-1].time  # messages are in time order
        return self.created if _before(self.created, last) else last

    @property
    def display_title(self) -> str:
        """The title, else the first user message's beginning, else the id."""
        if self.title:
            return self.title
        first = next((m.content for m in self.messages if m.role == "user" and m.content.strip()), "")
        return _short(" ".join(first.split()), 60) or self.id

    def info(self, size: int = 0) -> "SessionInfo":
        return SessionInfo(self.id, self.file, self.display_title, self.created, self.updated, len(self.messages),
                           self.user, list(self.tags), size, self.archived)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "title": self.title, "created": self.created,
                "updated": self.updated, "system": self.system, "user": self.user, "tags": self.tags,
                "metadata": self.metadata, "stage": self.stage, "archived": self.archived,
                "messages": [m.to_dict() for m in self.messages]}


@dataclass(frozen=True)
class SessionInfo:
    """A session's listing line."""

    id: str
    file: str
    title: str
    created: str
    updated: str
    messages: int
    user: str | None = None
    tags: list[str] = field(default_factory=list)
    bytes: int = 0
    archived: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "title": self.title, "created": self.created,
                "updated": self.updated, "messages": self.messages, "user": self.user, "tags": self.tags,
                "bytes": self.bytes, "archived": self.archived}


@dataclass
class PruneReport:
    """What :meth:`Sessions.prune` did (or would do, ``dry_run``)."""

    days: int | None  #: sessions idle longer than this were pruned (None: never)
    action: str  #: ``archived`` or ``deleted``
    sessions: list[SessionInfo]
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"days": self.days, "action": self.action, "dry_run": self.dry_run,
                "sessions": [s.to_dict() for s in self.sessions]}


def _before(a: str, b: str) -> bool:
    """Whether time ``a`` is later than ``b`` (strings compared when both are memkit's own UTC form)."""
    if len(a) == len(b) == 20 and a[-1] == b[-1] == "Z":
        return a > b
    return _sort_key(a) > _sort_key(b)


def _sort_key(time: str) -> datetime:
    try:
        return parse_time(time)
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def messages_sha(messages: Sequence[SessionMessage]) -> str:
    """A short hash of messages' roles, times and contents (what a cached summary was made of)."""
    h = hashlib.sha256()
    for m in messages:
        h.update(f"{m.role}\0{m.time}\0{m.content}\0".encode("utf-8", errors="surrogatepass"))
    return h.hexdigest()[:12]


# ---- the format ------------------------------------------------------------------------------

def check_session_id(session: str) -> str:
    """A session id as stored. :raises InvalidValue: not letters, digits, '.', '_' or '-' (1-80)."""
    value = session.strip()
    if not _ID_RE.match(value) or ".." in value:
        raise InvalidValue(f"invalid session id {session!r}: use letters, digits, '.', '_' or '-' "
                           f"(at most 80, starting with a letter or digit)")
    return value


def _check_role(role: str) -> str:
    value = role.strip().lower()
    if value not in ROLES:
        raise InvalidValue(f"invalid role {role!r}: use one of {', '.join(ROLES)}")
    return value


def render_header(session_id: str, created: str, *, title: str | None = None, system: str | None = None,
                  user: str | None = None, tags: Sequence[str] = (), metadata: Mapping[str, Any] | None = None
                  ) -> str:
    """The header of a new session file (frontmatter, then a ``# title`` line)."""
    rest: dict[str, Any] = {}
    if title:
        rest["title"] = " ".join(title.split())
    if user:
        rest["user"] = user
    if tags:
        rest["tags"] = list(tags)
    if metadata:
        rest["metadata"] = dict(metadata)
    if system:
        rest["system"] = system
    text = f"---\nid: {session_id}\ncreated: {created}\n"
    if rest:
        text += yaml.dump(rest, Dumper=_HeaderDumper, sort_keys=False, allow_unicode=True, width=100)
    heading = " ".join(title.split()) if title else f"Conversation {session_id}"
    return text + f"---\n# {heading}\n"


class _HeaderDumper(yaml.SafeDumper):
    """Block style for a multi-line text (the system prompt reads as written), flow style for
    short lists (``tags: [travel]``)."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not re.search(r"[ \t]\n|^\s", value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    flow = all(isinstance(v, (str, int, float)) and len(str(v)) < 40 for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=flow)


_HeaderDumper.add_representer(str, _str)
_HeaderDumper.add_representer(list, _list)


def render_message(message: SessionMessage) -> str:
    """A message's block: a blank line, its heading, its content (escaped), a newline."""
    flags = (" · important" if message.important else "") + (f" · name={message.name}" if message.name else "")
    content = _ESCAPE_RE.sub(r"\\\1", message.content.strip("\r\n"))
    return f"\n### {message.role} · {message.time}{flags}\n{content}\n"


def render_summary(summary: SessionSummary) -> str:
    text = _ESCAPE_RE.sub(r"\\\1", summary.text.strip("\r\n"))
    return (f"\n### {SUMMARY} · {summary.time} · of={summary.strategy} · covers={summary.covers} · "
            f"sha={summary.sha}\n{text}\n")


def _header(text: str, file: str) -> tuple[dict[str, Any], int]:
    """The frontmatter of a session file, and the offset where its body starts."""
    if not text.startswith("---"):
        return {}, 0
    end = re.search(r"^---[ \t]*\r?$", text[3:], re.M)
    first = text.find("\n")
    if end is None or first < 0:
        raise MemkitError(f"{file} line 1: the header (---) is never closed")
    start = first + 1
    stop = 3 + end.start()
    try:
        data = load_yaml(text[start:stop]) if stop > start else {}
    except YamlError as exc:
        line = (exc.line or 0) + 1
        raise MemkitError(f"{file} line {line}: the header is not valid YAML: {exc.problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise MemkitError(f"{file} line 2: the header must be 'key: value' lines")
    body = text.find("\n", 3 + end.end())
    return data, (len(text) if body < 0 else body + 1)


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return format_time(value)
    return str(value)


def _flags(rest: str) -> tuple[bool, dict[str, str]]:
    important = False
    values: dict[str, str] = {}
    for part in rest.split(" · "):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            key, _, value = part.partition("=")
            values[key.strip()] = value.strip()
        elif part.lower() == "important":
            important = True
    return important, values


_UNESCAPE_RE = re.compile(rf"^\\(\\*### (?:user|assistant|system|tool|summary) · {_TIME})", re.M)


def _unescape(content: str) -> str:
    return _UNESCAPE_RE.sub(r"\1", content) if "\\###" in content else content


def parse_blocks(text: str, start: int = 0, first_line: int = 1
                 ) -> tuple[list[SessionMessage], list[SessionSummary]]:
    """The messages and summaries of a session file's body (``text[start:]``; ``first_line`` is
    the line number at ``start``). Messages are in file order."""
    messages: list[SessionMessage] = []
    summaries: list[SessionSummary] = []
    heads = [m for m in _HEAD_RE.finditer(text, start) if not m.group(1)]
    line = first_line
    pos = start
    for i, m in enumerate(heads):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        body = text[m.end():end]
        if body.startswith("\r"):
            body = body[1:]
        content = _unescape(body.strip("\r\n").replace("\r\n", "\n"))
        role, time = m.group(2), m.group(3)
        important, values = _flags(m.group(4))
        if role == SUMMARY:
            try:
                covers = int(values.get("covers", ""))
            except ValueError:
                continue
            summaries.append(SessionSummary(content, time, covers, values.get("sha", ""),
                                            values.get("of", SUMMARY), line))
            continue
        messages.append(SessionMessage(role, content, time, important, values.get("name") or None, line))
    return messages, summaries


def parse_session(text: str, file: str, session_id: str, archived: bool = False) -> Session:
    """A session file's text, parsed. Messages are sorted by time (stable: a union merge of two
    clones' appends reads in time order). :raises MemkitError: a header that cannot be read."""
    if text.startswith("\ufeff"):
        text = text[1:]
    data, body = _header(text, file)
    messages, summaries = parse_blocks(text, body, text.count("\n", 0, body) + 1)
    return _session(data, messages, summaries, file, session_id, archived)


def parse_session_tail(text: str, file: str, session_id: str, chars: int, archived: bool = False
                       ) -> tuple[Session, int]:
    """Like :func:`parse_session`, parsing only the messages that start in the last ``chars``
    characters (from the first heading there); returns the session and how many messages come
    before them (not parsed). A long session's recent history is read this way."""
    if text.startswith("\ufeff"):
        text = text[1:]
    data, body = _header(text, file)
    cut = max(body, len(text) - chars)
    start = body
    if cut > body:
        head = next((m for m in _HEAD_RE.finditer(text, cut) if not m.group(1)), None)
        start = head.start() if head is not None else len(text)
    earlier = 0
    if start > body:  # counted, not parsed: every message heading starts a line (content never does, escaped)
        part = "\n" + text[body:start]
        earlier = sum(part.count(f"\n### {role} · ") for role in ROLES)
    messages, summaries = parse_blocks(text, start, text.count("\n", 0, start) + 1)
    return _session(data, messages, summaries, file, session_id, archived), earlier


def _session(data: dict[str, Any], messages: list[SessionMessage], summaries: list[SessionSummary], file: str,
             session_id: str, archived: bool) -> Session:
    if any(_before(a.time, b.time) for a, b in zip(messages, messages[1:])):
        messages.sort(key=lambda m: _sort_key(m.time))
    known = ("id", "created", "title", "system", "user", "tags", "metadata", "stage", "updated")
    metadata = dict(data.get("metadata") or {}) if isinstance(data.get("metadata"), dict) else {}
    metadata.update({k: v for k, v in data.items() if k not in known})
    tags = data.get("tags") or []
    created = _as_text(data.get("created")) or (messages[0].time if messages else "")
    return Session(session_id, file, _as_text(data.get("title")), created, messages,
                   system=_as_text(data.get("system")), user=_as_text(data.get("user")),
                   tags=[str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
                   metadata=metadata, stage=_as_text(data.get("stage")), summaries=summaries, archived=archived)


# ---- the seam for the search index -------------------------------------------------------------

def message_rows(text: str) -> list[tuple[int, str]]:
    """A session file's messages as ``(line of its heading, content)`` rows, in file order: what
    an index embeds and matches for ``search --sessions`` (summaries and empty messages left out)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        _, body = _header(text, "session")
    except MemkitError:
        body = 0
    messages, _ = parse_blocks(text, body, text.count("\n", 0, body) + 1)
    return [(m.line, m.content) for m in messages if m.content.strip()]


def locate_row(session: Session, line: int) -> SessionMessage | None:
    """The message whose heading is on ``line`` of the session's file (an index row back to its
    message), or None when the file changed since."""
    return next((m for m in session.messages if m.line == line), None)


# ---- the folder --------------------------------------------------------------------------------

class Sessions:
    """The vault's ``sessions/`` folder: create, read, list, append, delete, prune.

    :param root: the vault folder; :param state_dir: its ``.memkit/`` (the listing cache);
    :param config: its settings (``expire: conversation``).
    """

    def __init__(self, root: Path, state_dir: Path, config: Config) -> None:
        self.root = root
        self.dir = root / SESSIONS_DIR
        self.archive_dir = self.dir / ARCHIVE_DIR
        self.state_dir = state_dir
        self.config = config
        self._listing: dict[str, tuple[tuple[int, int, int], SessionInfo]] | None = None

    # -- paths
    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _folder_ok(self, folder: Path) -> bool:
        """A sessions folder that is a real folder inside the vault (never followed out of it)."""
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(st.st_mode):
            try:
                folder.resolve().relative_to(self.root.resolve())
            except (ValueError, OSError, RuntimeError):
                raise MemkitError(f"{self.rel(folder)}/ is a symlink to a folder outside the vault; "
                                  f"memkit does not follow it") from None
            return folder.is_dir()
        return stat.S_ISDIR(st.st_mode)

    def _files(self, archived: bool = False) -> list[os.DirEntry[str]]:
        folder = self.archive_dir if archived else self.dir
        if not self._folder_ok(self.dir) or (archived and not self._folder_ok(folder)):
            return []
        try:
            with os.scandir(folder) as it:
                return sorted((e for e in it if _NAME_RE.match(e.name) and not e.name.startswith(".")),
                              key=lambda e: e.name)
        except OSError as exc:
            raise MemkitError(f"{self.rel(folder)}/: cannot list: {exc.strerror or exc}") from None

    def find(self, session: str) -> tuple[Path, bool]:
        """The file of session ``session`` (its id, a unique prefix of it, or its file name) and
        whether it is archived. :raises SessionNotFound: none or several match."""
        raw = session.strip()
        if raw.endswith(".md"):
            raw = raw[:-3]
        raw = raw.rsplit("/", 1)[-1]
        if not raw or ".." in raw or "\\" in raw or "\0" in raw:
            raise SessionNotFound(f"no session {session!r}")
        exact: list[tuple[Path, bool]] = []
        prefix: list[tuple[Path, bool]] = []
        for archived in (False, True):
            for entry in self._files(archived):
                m = _NAME_RE.match(entry.name)
                assert m is not None
                sid, stem = m.group(2), entry.name[:-3]
                if raw in (sid, stem):
                    exact.append((Path(entry.path), archived))
                elif sid.startswith(raw):
                    prefix.append((Path(entry.path), archived))
            if exact:
                break
        found = exact or prefix
        if len(found) == 1:
            return found[0]
        if not found:
            raise SessionNotFound(f"no session {session!r} in {SESSIONS_DIR}/ (`memkit session list` shows them)")
        names = ", ".join(_NAME_RE.match(p.name).group(2) for p, _ in found[:5])  # type: ignore[union-attr]
        raise SessionNotFound(f"session {session!r} is ambiguous: {names}{'…' if len(found) > 5 else ''}")

    # -- reading
    def _read(self, path: Path) -> tuple[str, os.stat_result]:
        try:
            if path.is_symlink():
                raise NotRegularFile("is a symlink; memkit does not follow it")
            data, st = read_regular(path, MAX_SESSION_BYTES)
        except NotRegularFile as exc:
            raise MemkitError(f"{self.rel(path)} {exc}") from None
        except FileNotFoundError:
            raise SessionNotFound(f"{self.rel(path)} is gone") from None
        except OSError as exc:
            raise MemkitError(f"{self.rel(path)}: cannot read: {exc.strerror or exc}") from None
        try:
            return data.decode("utf-8"), st
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise MemkitError(f"{self.rel(path)} line {line}: not valid UTF-8") from None

    def load(self, session: str) -> Session:
        """One session, parsed. :raises SessionNotFound: no such session."""
        path, archived = self.find(session)
        return self.load_path(path, archived)

    def load_path(self, path: Path, archived: bool = False) -> Session:
        text, _ = self._read(path)
        m = _NAME_RE.match(path.name)
        return parse_session(text, self.rel(path), m.group(2) if m else path.stem, archived)

    def load_tail(self, path: Path, chars: int, archived: bool = False) -> tuple[Session, int]:
        """The session of ``path`` with only its newest messages parsed (see
        :func:`parse_session_tail`), and how many earlier ones were not."""
        text, _ = self._read(path)
        m = _NAME_RE.match(path.name)
        return parse_session_tail(text, self.rel(path), m.group(2) if m else path.stem, chars, archived)

    def text(self, path: Path) -> str:
        """A session file's text (checked: a regular file inside the vault)."""
        return self._read(path)[0]

    def paths(self, archived: bool = False) -> list[Path]:
        """Every session file (sorted by name: by creation day)."""
        return [Path(e.path) for e in self._files(archived)]

    def list(self, archived: bool = False) -> list[SessionInfo]:
        """Every session's listing line, most recently updated first. What is read of each file is
        cached by its stat (size, mtime, inode), in memory and in ``.memkit/session-list.json``,
        so listing reads only the files that changed."""
        cache = self._load_listing()
        out: list[SessionInfo] = []
        changed = False
        for entry in self._files(archived):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                log.warning("%s is not a regular file; skipped", self.rel(Path(entry.path)))
                continue
            key = f"{'archive/' if archived else ''}{entry.name}"
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
            held = cache.get(key)
            if held is not None and held[0] == stamp:
                out.append(held[1])
                continue
            try:
                info = self.load_path(Path(entry.path), archived).info(st.st_size)
            except MemkitError as exc:  # one bad file never hides the others
                log.warning("%s; skipped", exc)
                continue
            cache[key] = (stamp, info)
            changed = True
            out.append(info)
        if changed:
            self._save_listing(cache)
        out.sort(key=lambda i: (_sort_key(i.updated), i.id), reverse=True)
        return out

    def _load_listing(self) -> dict[str, tuple[tuple[int, int, int], SessionInfo]]:
        if self._listing is not None:
            return self._listing
        self._listing = {}
        path = self.state_dir / LIST_CACHE
        try:
            data = json.loads(read_head(path, MAX_SESSION_BYTES).decode("utf-8")) if path.is_file() else {}
            for key, (stamp, info) in data.get("files", {}).items():
                self._listing[key] = ((int(stamp[0]), int(stamp[1]), int(stamp[2])), SessionInfo(**info))
        except (OSError, ValueError, TypeError, KeyError, AttributeError, NotRegularFile):
            self._listing = {}  # derived data: rebuilt when unreadable
        return self._listing

    def _save_listing(self, cache: Mapping[str, tuple[tuple[int, int, int], SessionInfo]]) -> None:
        data = {"format": 1, "files": {k: [list(stamp), info.to_dict()] for k, (stamp, info) in cache.items()}}
        with contextlib.suppress(OSError):
            if not self.state_dir.exists():
                self.state_dir.mkdir()
            if self.state_dir.is_dir() and not self.state_dir.is_symlink():
                atomic_write(self.state_dir / LIST_CACHE, json.dumps(data, ensure_ascii=False))

    # -- writing
    def _ensure_dir(self) -> Path:
        if not self._folder_ok(self.dir):
            try:
                self.dir.mkdir(exist_ok=True)
            except OSError as exc:
                raise describe_os_error(exc, f"{SESSIONS_DIR}/") from exc
            if not self._folder_ok(self.dir):
                raise MemkitError(f"{SESSIONS_DIR} exists and is not a folder; memkit will not write sessions there")
        return self.dir

    def create(self, *, session_id: str | None = None, title: str | None = None, system: str | None = None,
               user: str | None = None, tags: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
               now: datetime | None = None) -> Session:
        """Create ``sessions/<day>-<id>.md`` atomically (never replacing a file).

        :raises InvalidValue: a bad id; MemkitError: the id is taken.
        """
        when = _now(now)
        folder = self._ensure_dir()
        given = session_id is not None
        for _ in range(8):
            sid = check_session_id(session_id) if given else secrets.token_hex(4)  # type: ignore[arg-type]
            try:
                path, _ = self.find(sid)
                if given or path.name[11:-3] == sid:
                    if given:
                        raise MemkitError(f"session {sid} exists already ({self.rel(path)})")
                    continue
            except SessionNotFound:
                pass
            path = folder / f"{when.date().isoformat()}-{sid}.md"
            text = render_header(sid, format_time(when), title=title, system=system, user=user, tags=tags,
                                 metadata=metadata)
            if _create_exclusive(path, text.encode("utf-8")):
                return parse_session(text, self.rel(path), sid)
            if given:
                raise MemkitError(f"session {sid} exists already ({self.rel(path)})")
        raise MemkitError("could not pick a free session id")  # pragma: no cover - 8 collisions of 32 bits

    def append(self, session: str, role: str, content: str, *, important: bool = False, name: str | None = None,
               now: datetime | None = None, time: str | None = None) -> SessionMessage:
        """Append one message to a session with a single ``O_APPEND`` write.

        :param time: the message's own time (an import); default ``now``.
        :raises SessionNotFound, InvalidValue: no such session, a bad role, a message over the limit.
        """
        path, archived = self.find(session)
        return self.append_path(path, role, content, important=important, name=name, now=now, time=time,
                                archived=archived)

    def append_path(self, path: Path, role: str, content: str, *, important: bool = False, name: str | None = None,
                    now: datetime | None = None, time: str | None = None, archived: bool = False
                    ) -> SessionMessage:
        if archived:
            raise MemkitError(f"{self.rel(path)} is archived (pruned): move it back to {SESSIONS_DIR}/ to continue it")
        message = self.message(role, content, important=important, name=name, now=now, time=time)
        self.append_raw(path, [render_message(message)])
        return message

    @staticmethod
    def message(role: str, content: str, *, important: bool = False, name: str | None = None,
                now: datetime | None = None, time: str | None = None) -> SessionMessage:
        """A message checked and stamped (not written)."""
        role = _check_role(role)
        if not isinstance(content, str):
            raise InvalidValue("a message's content must be text")
        if len(content) > MAX_MESSAGE_CHARS:
            raise InvalidValue(f"the message is {len(content):,} characters; the limit is {MAX_MESSAGE_CHARS:,}")
        if "\0" in content:
            raise InvalidValue("the message contains a NUL character")
        if name is not None:
            name = " ".join(name.split()).replace("·", "-") or None
            if name is not None and len(name) > 80:
                raise InvalidValue("a message's name is at most 80 characters")
        if time is not None:
            try:
                stamp = format_time(parse_time(time))
            except ValueError:
                raise InvalidValue(f"invalid time {time!r}: use ISO 8601 (2026-11-24T10:03:12Z)") from None
        else:
            stamp = format_time(_now(now))
        return SessionMessage(role, content.strip("\r\n"), stamp, important, name)

    def append_raw(self, path: Path, blocks: Iterable[str]) -> None:
        """Append rendered blocks in one ``O_APPEND`` write (never through a symlink)."""
        data = "".join(blocks).encode("utf-8", errors="surrogatepass")
        if not data:
            return
        try:
            if path.is_symlink():
                raise NotRegularFile("is a symlink; memkit does not follow it")
            append_bytes(path, lambda last: data if last in (b"", b"\n") else b"\n" + data)
        except NotRegularFile as exc:
            raise MemkitError(f"{self.rel(path)} {exc}; memkit will not write to it") from None
        except FileNotFoundError:
            raise SessionNotFound(f"{self.rel(path)} is gone") from None
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc

    def add_summary(self, path: Path, summary: SessionSummary) -> None:
        """Cache a summary in the session's file (appended; see the module docstring)."""
        self.append_raw(path, [render_summary(summary)])

    def delete(self, session: str) -> SessionInfo:
        """Delete a session's file for good (the person asked). Returns what it was."""
        path, archived = self.find(session)
        info = self.load_path(path, archived).info(path.stat().st_size)
        try:
            path.unlink()
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc
        return info

    def prune(self, days: int | None = None, *, delete: bool = False, dry_run: bool = False,
              now: datetime | None = None) -> PruneReport:
        """Archive (move to ``sessions/archive/``) or delete the sessions whose last message is
        older than ``days`` (default: memkit.yaml's ``expire: conversation``, 30 days; ``never``
        prunes nothing)."""
        if days is None:
            days = self.config.expire.get("conversation")
        report = PruneReport(days, "deleted" if delete else "archived", [], dry_run)
        if days is None:
            return report
        if days < 0:
            raise InvalidValue(f"days must be 0 or more, got {days}")
        cutoff = _now(now) - timedelta(days=days)
        for path in self.paths():
            try:
                session = self.load_path(path)
            except MemkitError as exc:
                log.warning("%s; not pruned", exc)
                continue
            if _sort_key(session.updated) >= cutoff:
                continue
            info = session.info(path.stat().st_size)
            if not dry_run:
                try:
                    if delete:
                        path.unlink()
                    else:
                        self.archive_dir.mkdir(exist_ok=True)
                        target = self.archive_dir / path.name
                        if target.exists():
                            raise MemkitError(f"{self.rel(target)} exists already; {self.rel(path)} not archived")
                        os.rename(path, target)
                        info = SessionInfo(**dict(info.to_dict(), file=self.rel(target), archived=True))
                except OSError as exc:
                    raise describe_os_error(exc, self.rel(path)) from exc
            report.sessions.append(info)
        return report


def _create_exclusive(path: Path, data: bytes) -> bool:
    """Write ``path`` atomically only if it does not exist (a temp file hard-linked into place);
    False when it exists."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        atomic_write(tmp, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: exclusive create, then the bytes
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
