"""The format of a conversation session file, ``sessions/<YYYY-MM-DD>-<id>.md`` (read and written here;
:mod:`memkit.sessions.folder` keeps the folder).

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

- The header is YAML frontmatter written once, when the session is created (``updated`` is the
  time of the last message, so appends never touch the header). Unknown keys a person adds are
  kept and shown as metadata. A conversation that ages (:mod:`memkit.sessions.aging`) is rewritten
  once per stage: its header gains ``stage`` (summary or core), ``stage_at``, ``stage_ratio``,
  ``raw`` (where the raw conversation is kept) and ``updated`` (its last message's time), and
  its messages give way to one ``of=stage`` summary block (:func:`restage`).
- Each message is a block: a heading ``### ROLE · TIME`` (role user, assistant, system or tool; time
  in UTC, ISO 8601) with optional ``· important`` (kept verbatim by the hybrid strategy) and
  ``· name=NAME`` (a tool's or speaker's name), then the content as written. A content line that
  would read as a heading is escaped with a leading ``\\`` (removed when read). Blank lines around
  the content are not part of it.
- A ``summary`` block is not a message: it caches what the ``summary``/``hybrid`` strategies
  condensed (:mod:`memkit.sessions.budget`): the first ``covers`` messages, whose hash is ``sha``.
  It is used only while those messages are unchanged (a person's edit of any of them makes the
  hash differ, and the next load that needs a summary computes and appends a new one).
- Every message is one ``O_APPEND`` write, so writers appending at once lose nothing; a session
  file is created atomically and replaced only when it ages. Two clones appending to the same session merge
  with ``sessions/*.md merge=union`` (both sides' blocks kept); messages are read in time order.
- Pruned sessions move to ``sessions/archive/`` (tracked, readable, restorable with ``mv``).

The id is the file name without its date: given (letters, digits, ``.``, ``_``, ``-``, not ending in
``.md``, which reads as a file name; a Claude Code session id fits) or generated (8 hex digits). The same string works as ``memkit context
--session``'s id. A format-layer module: text in, text out.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import yaml

from ..base.lazy_re import lazy
from ..errors import InvalidValue, MemkitError
from .safeyaml import YamlError, load_yaml

__all__ = ["SESSIONS_DIR", "ARCHIVE_DIR", "RAW_DIR", "is_session_filename", "ROLES", "NAME_RE", "Session", "SessionInfo", "SessionMessage", "SessionSummary", "PruneReport",
           "parse_session", "parse_session_tail", "parse_blocks", "last_block", "split_blocks", "render_header", "render_message", "render_summary",
           "message_rows", "locate_row", "format_time", "parse_time", "now_utc", "time_key", "check_session_id",
           "check_role", "messages_sha", "restage", "STAGE", "STAGE_KEYS"]

SESSIONS_DIR = "sessions"  #: the folder of session files, in the vault
MAX_SESSION_BYTES = 256 * 1024 * 1024  #: a session file is read up to this size
ARCHIVE_DIR = "archive"  #: pruned sessions, under SESSIONS_DIR
RAW_DIR = "raw"  #: under sessions/archive/: the raw conversations of aged sessions
ROLES = ("user", "assistant", "system", "tool")
SUMMARY = "summary"
STAGE = "stage"  #: a summary block's ``of=`` when it holds an aged conversation's stage text
STAGE_KEYS = ("stage", "stage_at", "stage_ratio", "raw", "updated")  #: the header keys aging writes
_ID_RE = lazy(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
NAME_RE = lazy(r"^(\d{4}-\d\d-\d\d)-(.+)\.md$")
_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
_TIME_RE = lazy(_TIME)
#: a block's heading: a known role (any case) and anything after it, or any one-word role and a
#: time; a heading whose role or time cannot be read is still a block (read with a warning), so a
#: person's hand-edited message never vanishes into the one before it
_HEADING = (rf"### (?:(?i:user|assistant|system|tool|summary) · [^\r\n]*|[A-Za-z][A-Za-z0-9_-]{{0,39}} · {_TIME}"
            rf"(?:(?: · |[ \t])[^\r\n]*)?)")
#: group 1: escaping backslashes (content, not a heading, when any); group 2: the heading
#: (matched against the text after a "\n": a literal first character lets the regex engine skip ahead)
_HEAD_RE = lazy(rf"\n(\\*)(### (?:(user|assistant|system|tool|summary) · ({_TIME})((?: · [^\r\n]*)?)[ \t]*"
                      rf"|{_HEADING[4:]}))\r?(?=\n|\Z)")  #: groups 3-5: role, time, flags of a heading read whole
_ESCAPE_RE = lazy(rf"^(\\*{_HEADING})", re.M)


def is_session_filename(name: str) -> bool:
    """Whether a file name in ``sessions/`` (or ``sessions/archive/``) names a session:
    ``YYYY-MM-DD-ID.md``, not hidden (temp files start with a dot)."""
    return not name.startswith(".") and NAME_RE.match(name) is not None


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


def now_utc(now: datetime | None) -> datetime:
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
    #: secrets replaced by ``[redacted]`` before it was written (:mod:`memkit.formats.redact`)
    redacted: int = field(default=0, compare=False, repr=False)
    #: saving it started its session (an id with no session yet, as ``context --session`` does)
    created: bool = field(default=False, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"role": self.role, "content": self.content, "time": self.time}
        if self.important:
            data["important"] = True
        if self.name:
            data["name"] = self.name
        if self.line:
            data["line"] = self.line
        if self.redacted:
            data["redacted"] = self.redacted
        if self.created:
            data["created"] = True
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
    stage: str | None = None  #: its aging stage: None (raw), ``summary`` or ``core`` (:mod:`memkit.sessions.aging`)
    summaries: list[SessionSummary] = field(default_factory=list)
    archived: bool = False  #: it lies in sessions/archive/ (pruned)
    stage_at: str | None = None  #: when it reached its stage
    stage_ratio: float | None = None  #: the stage text's size over the raw conversation's
    raw: str | None = None  #: where its raw conversation is kept (relative to the vault)
    active: str | None = None  #: the header's ``updated``: its last message's time when it was compressed
    problems: list[str] = field(default_factory=list)  #: ``"line N: why"`` of headings read as best it could
    imported: str | None = None  #: the header's ``imported``: when memkit imported it from a file

    @property
    def idle_since(self) -> str:
        """Since when the session is idle, for aging and pruning: its last message's time, or
        when memkit imported it when that is later (a 2024 history imported today is not idle
        for years). Never a file's mtime, which git and editors change."""
        if self.imported and _before(self.imported, self.updated):
            return self.imported
        return self.updated

    @property
    def updated(self) -> str:
        """The time of the last message (the creation time while it has none; a compressed
        session's header keeps the time of the messages it condensed)."""
        latest = self.created
        for time in (self.active, self.messages[-1].time if self.messages else None):  # messages: in time order
            if time and _before(time, latest):
                latest = time
        return latest

    @property
    def stage_block(self) -> SessionSummary | None:
        """The text its stage condensed the conversation into (the newest ``of=stage`` block)."""
        blocks = [s for s in self.summaries if s.strategy == STAGE]
        return blocks[-1] if blocks else None

    @property
    def display_title(self) -> str:
        """The title, else the first user message's beginning, else the id."""
        if self.title:
            return self.title
        first = next((m.content for m in self.messages if m.role == "user" and m.content.strip()), "")
        return _short(" ".join(first.split()), 60) or self.id

    def info(self, size: int = 0) -> "SessionInfo":
        """Its listing line; an aged conversation counts the messages its stage text condensed too."""
        aged = self.stage_block
        count = len(self.messages) + (aged.covers if aged is not None else 0)
        return SessionInfo(self.id, self.file, self.display_title, self.created, self.updated, count,
                           self.user, list(self.tags), size, self.archived, self.stage)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "title": self.title, "created": self.created,
                "updated": self.updated, "system": self.system, "user": self.user, "tags": self.tags,
                "metadata": self.metadata, "stage": self.stage, "stage_at": self.stage_at,
                "stage_ratio": self.stage_ratio, "raw": self.raw, "archived": self.archived,
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
    stage: str | None = None  #: its aging stage (None: raw)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "file": self.file, "title": self.title, "created": self.created,
                "updated": self.updated, "messages": self.messages, "user": self.user, "tags": self.tags,
                "bytes": self.bytes, "archived": self.archived, "stage": self.stage}


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
    return time_key(a) > time_key(b)


def time_key(time: str) -> datetime:
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
    if value.endswith(".md"):  # read back as a file name: "x.md" would name session "x"
        raise InvalidValue(f"invalid session id {session!r}: it must not end in '.md' (a session is found by "
                           f"its id or its file name)")
    return value


def check_role(role: str) -> str:
    value = role.strip().lower()
    if value not in ROLES:
        raise InvalidValue(f"invalid role {role!r}: use one of {', '.join(ROLES)}")
    return value


def render_header(session_id: str, created: str, *, title: str | None = None, system: str | None = None,
                  user: str | None = None, tags: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
                  imported: str | None = None) -> str:
    """The header of a new session file (frontmatter, then a ``# title`` line); ``imported``:
    when memkit imported it (its idleness counts from then, :attr:`Session.idle_since`)."""
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
    text = f"---\nid: {session_id}\ncreated: {created}\n" + (f"imported: {imported}\n" if imported else "")
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
        raise MemkitError(f"{file} line {line}: the header is not valid YAML: "
                          f"{exc.problem_at(lambda at: at + 1)}") from None
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


_UNESCAPE_RE = lazy(rf"^\\(\\*{_HEADING})", re.M)


def _unescape(content: str) -> str:
    return _UNESCAPE_RE.sub(r"\1", content) if "\\###" in content else content


def _heads(text: str, start: int) -> list[re.Match[str]]:
    """The block headings of ``text`` from ``start``, matched in ``"\n" + text`` (so a match's
    ``start()`` is its heading's offset in ``text``, its ``end()`` one past it); escaped ones left out."""
    return [m for m in _HEAD_RE.finditer("\n" + text, start) if not m.group(1)]


def _loose(heading: str, line: int, previous: str, problems: list[str] | None) -> tuple[str, str, str]:
    """(role, time, flags) of a heading that is not read whole: an unknown role as ``"\\0ROLE"``,
    a time that is not one as ``previous``; what was wrong added to ``problems``."""
    written, _, rest = heading[4:].rstrip(" \t").partition(" · ")
    time, _, rest = rest.partition(" · ")
    time = time.strip()
    role = written.lower()
    why = []
    if role not in ROLES and role != SUMMARY:
        why.append(f"unknown role {written!r}: read as a user message named {written}")
        role = "\0" + written
    if not _TIME_RE.fullmatch(time):
        why.append(f"{time!r} is not a time (2026-11-24T10:03:12Z): read with the time before it")
        time = previous
    if why and problems is not None:
        problems.append(f"line {line}: {'; '.join(why)}")
    return role, time, (" · " + rest) if rest else ""


def parse_blocks(text: str, start: int = 0, first_line: int = 1, problems: list[str] | None = None
                 ) -> tuple[list[SessionMessage], list[SessionSummary]]:
    """The messages and summaries of a session file's body (``text[start:]``; ``first_line`` is
    the line number at ``start``). Messages are in file order. A heading whose role is unknown
    is read as a ``user`` message with that role as its name, one whose time is not a time gets
    the time of the block before it; each such heading adds ``"line N: why"`` to ``problems``."""
    messages: list[SessionMessage] = []
    summaries: list[SessionSummary] = []
    stop = _cut_heading(text, start, first_line, problems)
    heads = [m for m in _heads(text, start) if m.start() < stop]
    line = first_line
    pos = start
    count = text.count
    no_flags: tuple[bool, dict[str, str]] = (False, {})
    previous = ""
    for i, m in enumerate(heads):
        here = m.start()  # the heading's offset in ``text``
        line += count("\n", pos, here)
        pos = here
        end = heads[i + 1].start() if i + 1 < len(heads) else stop
        content = text[m.end() - 1:end].strip("\r\n")
        if "\r" in content:
            content = content.replace("\r\n", "\n")
        if "\\###" in content:
            content = _unescape(content)
        role, time, rest = m.group(3, 4, 5)
        if not content.strip() and _CUT_RE.fullmatch(m.group(2)):  # a heading cut short, appended after
            if problems is not None:
                problems.append(f"line {line}: a heading cut short ({m.group(2)!r}) with no message; left out")
            continue
        if role is None:  # a heading memkit cannot read whole
            role, time, rest = _loose(m.group(2), line, previous, problems)
        previous = time or previous
        important, values = _flags(rest) if rest else no_flags
        name = values.get("name") or None
        if role.startswith("\0"):  # an unknown role: a user message named after it
            role, name = "user", name or role[1:]
        if role == SUMMARY:
            try:
                covers = int(values.get("covers", ""))
            except ValueError:
                if values.get("of") != STAGE:  # a cache: made again when needed
                    if problems is not None:
                        problems.append(f"line {line}: a summary without covers=N; ignored (made again when needed)")
                    continue
                covers = 0
            summaries.append(SessionSummary(content, time, covers, values.get("sha", ""),
                                            values.get("of", SUMMARY), line))
            continue
        messages.append(SessionMessage(role, content, time, important, name, line))
    return messages, summaries


#: what a heading that memkit wrote reads as when a write was cut short in its time (memkit's
#: own times always end in ``Z``: one without it, and no message under it, was never written whole)
_CUT_RE = lazy(r"### (?:user|assistant|system|tool|summary) · [0-9T:.-]*[ \t]*")


def _cut_heading(text: str, start: int, first_line: int, problems: list[str] | None) -> int:
    """Where a session file's body ends for its messages: before a last line that a write cut
    short in a heading (``### assistant · 2026-03-0``, no newline after it: a message that was
    never written, not an empty one), else at the end of ``text``."""
    if text.endswith("\n"):
        return len(text)
    last = max(text.rfind("\n") + 1, start)
    if not text.startswith("### ", last):
        return len(text)
    if problems is not None:
        line = first_line + text.count("\n", start, last)
        problems.append(f"line {line}: the file ends in a heading cut short ({text[last:]!r}); left out")
    return last


def split_blocks(text: str, file: str) -> tuple[str, str, list[str]]:
    """A session file's text in three parts: its header (the frontmatter with its ``---`` lines;
    ``""`` when it has none), what stands before its first block (the ``# title``), and each
    block's text (its heading to the next heading, blank lines at its end left out, ending in a
    newline). :raises MemkitError: a header that cannot be read."""
    if text.startswith("\ufeff"):
        text = text[1:]
    _, body = _header(text, file)
    rest = text[body:]
    heads = _heads(rest, 0)
    blocks = [rest[m.start():heads[i + 1].start() if i + 1 < len(heads) else len(rest)].rstrip("\r\n") + "\n"
              for i, m in enumerate(heads)]
    return text[:body], rest[:heads[0].start()] if heads else rest, blocks


def last_block(text: str) -> int | None:
    """The offset in a session file's ``text`` of its last block's heading (None: no block)."""
    try:
        _, body = _header(text[1:] if text.startswith("\ufeff") else text, "session")
    except MemkitError:
        return None
    if text.startswith("\ufeff"):
        body += 1
    heads = _heads(text, body)
    return heads[-1].start() if heads else None


def parse_session(text: str, file: str, session_id: str, archived: bool = False) -> Session:
    """A session file's text, parsed. Messages are sorted by time (stable: a union merge of two
    clones' appends reads in time order). :raises MemkitError: a header that cannot be read."""
    if text.startswith("\ufeff"):
        text = text[1:]
    data, body = _header(text, file)
    problems: list[str] = []
    messages, summaries = parse_blocks(text, body, text.count("\n", 0, body) + 1, problems)
    return _session(data, messages, summaries, file, session_id, archived, problems)


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
        head = next(iter(_heads(text, cut)), None)
        start = head.start() if head is not None else len(text)
    earlier = 0
    if start > body:  # counted, not parsed: every message heading starts a line (content never does, escaped)
        part = "\n" + text[body:start]
        earlier = sum(part.count(f"\n### {role} · ") for role in ROLES)
    problems: list[str] = []
    messages, summaries = parse_blocks(text, start, text.count("\n", 0, start) + 1, problems)
    return _session(data, messages, summaries, file, session_id, archived, problems), earlier


def _session(data: dict[str, Any], messages: list[SessionMessage], summaries: list[SessionSummary], file: str,
             session_id: str, archived: bool, problems: list[str] | None = None) -> Session:
    if messages and not messages[0].time:  # a first heading without a readable time: the session's creation
        made = _as_text(data.get("created")) or ""
        messages = [replace(m, time=made) if not m.time else m for m in messages]
    if any(_before(a.time, b.time) for a, b in zip(messages, messages[1:])):
        messages.sort(key=lambda m: time_key(m.time))
    known = ("id", "created", "title", "system", "user", "tags", "metadata", "imported") + STAGE_KEYS
    metadata = dict(data.get("metadata") or {}) if isinstance(data.get("metadata"), dict) else {}
    metadata.update({k: v for k, v in data.items() if k not in known})
    tags = data.get("tags") or []
    created = _as_text(data.get("created")) or (messages[0].time if messages else "")
    return Session(session_id, file, _as_text(data.get("title")), created, messages,
                   system=_as_text(data.get("system")), user=_as_text(data.get("user")),
                   tags=[str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
                   metadata=metadata, stage=_as_text(data.get("stage")), summaries=summaries, archived=archived,
                   stage_at=_as_text(data.get("stage_at")), stage_ratio=_as_ratio(data.get("stage_ratio")),
                   raw=_as_text(data.get("raw")), active=_as_text(data.get("updated")),
                   problems=problems or [], imported=_as_text(data.get("imported")))


def _as_ratio(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def restage(text: str, file: str, fields: Mapping[str, str], block: SessionSummary) -> str:
    """A session file's text rewritten for an aging stage: its header with ``fields`` (the
    :data:`STAGE_KEYS`, one line each, replacing earlier ones; every other line kept as written),
    the lines before its first block (the ``# title``), then ``block`` alone: the messages and
    earlier blocks go (the caller kept them in the raw conversation).

    :raises MemkitError: a header that cannot be read."""
    if text.startswith("\ufeff"):
        text = text[1:]
    _, body = _header(text, file)
    if body == 0:  # no header: one is made
        head, preamble = f"---\nid: {file.rsplit('/', 1)[-1][11:-3]}\n---\n", text
    else:
        head, preamble = text[:body], text[body:]
    first = next(iter(_heads(preamble, 0)), None)
    preamble = preamble[:first.start()] if first is not None else preamble
    lines = head.splitlines(keepends=True)
    closing = max(i for i, line in enumerate(lines) if line.rstrip() == "---")
    kept = [line for line in lines[1:closing] if line.split(":", 1)[0].strip() not in STAGE_KEYS
            or line[:1] in (" ", "\t")]
    added = [f"{key}: {value}\n" for key, value in fields.items()]
    return "".join([lines[0], *kept, *added, *lines[closing:]]) + preamble.rstrip("\n") + "\n" + render_summary(block)


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
