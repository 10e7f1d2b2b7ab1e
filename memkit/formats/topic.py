"""Topic files: parse them into entries, and edit single lines without touching any other byte.

A topic file is markdown with optional YAML frontmatter. Every list item is an entry, and so is
every prose paragraph a person writes. Headings, HTML comments, fences and rules are structure.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from ..base.fsutil import NotRegularFile, read_regular
from ..errors import InvalidValue, TopicParseError
from .markdown import (
    HEADING_RE,
    LIST_RE,
    RULE_RE,
    conflict_lines,
    decode_topic,
    encode_topic,
    is_cr_only,
    scan_blocks,
    split_lines,
    strip_eol,
)
from .names import topic_relpath
from .plain import CONTROL, describe
from .safeyaml import YamlError, load_yaml

MAX_TOPIC_BYTES = 8 * 1024 * 1024  # a topic larger than this is refused, not loaded half

_KEY_RE = re.compile(r"^([A-Za-z_][\w-]*)\s*:(?:\s|$)")
_COMMENT_RE = re.compile(r"\s+#.*$")
KIND_RE = re.compile(r"^\[([A-Za-z][\w-]{0,30})\]\s*")  #: an entry's ``[kind]`` prefix
LIST_MARKER_RE = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+(?=\S)")  #: a list item's marker ("- ", "* ", "1. ")
# a #tag: "#" at the start or after whitespace; "#" first, so the engine jumps from "#" to "#"
_TAG_RE = re.compile(r"#(?<=(?<!\S)#)([^\W\d_][\w/-]*)")
_DATE_RE = re.compile(r"\s*\((\d{4}-\d{2}-\d{2})\)\s*$")


def normalise(text: str) -> str:
    """The form of an entry's text that its id and embedding key are computed from."""
    return " ".join(text.split()).casefold()


def entry_body(text: str) -> str:
    """An entry's text without its ``[kind]`` prefix and its trailing date (:attr:`Entry.body`)."""
    return _DATE_RE.sub("", KIND_RE.sub("", text, count=1))


def text_hash(text: str) -> str:
    """Full hex hash of an entry's normalised text (its content key)."""
    return hashlib.sha1(normalise(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """One memory: a list item or a prose paragraph of a topic file."""

    text: str  #: the entry as written, without the list bullet (continuation lines joined by a space)
    topic: str  #: the topic name (file stem)
    file: str  #: path relative to the vault, e.g. ``topics/cooking.md``
    line: int  #: first line, 1-based
    end_line: int  #: last line, 1-based
    kind: str | None = None  #: ``[kind]`` prefix, lowercased
    tags: tuple[str, ...] = ()
    date: str | None = None  #: trailing ``(YYYY-MM-DD)``
    is_list: bool = True  #: False for a prose paragraph
    hash: str = ""  #: :func:`text_hash` of :attr:`text`
    #: secrets replaced by ``[redacted]`` in the text an add or edit was given (:mod:`memkit.formats.redact`)
    redacted: int = field(default=0, compare=False, repr=False)
    #: the heading the entry is under (its text, without the ``#``s); '' when none
    heading: str = field(default="", compare=False, repr=False)
    duplicate = False  #: (not a field) an add found this entry there already: :class:`memkit.store.store.ExistingEntry`

    @property
    def id(self) -> str:
        """Short stable id (like a git short hash); never written into topic files."""
        return self.hash[:8]

    def to_dict(self) -> dict[str, Any]:
        """The entry as ``memkit show --json`` prints it (id, text, topic, kind, tags, date, file, line)."""
        data = {"id": self.id, "text": self.text, "topic": self.topic, "kind": self.kind, "tags": list(self.tags),
                "date": self.date, "file": self.file, "line": self.line}
        if self.redacted:  # an add or edit: how many secrets left its text
            data["redacted"] = self.redacted
        return data

    @property
    def body(self) -> str:
        """The text without the ``[kind]`` prefix and the trailing date."""
        return entry_body(self.text)


@dataclass(frozen=True)
class Problem:
    """Something in a topic file that a person should look at (memkit reads around it)."""

    kind: str  #: ``conflict`` (git merge markers), ``frontmatter`` (not valid YAML) or ``duplicate-key``
    line: int  #: 1-based line in the file
    message: str  #: one line: what, where, what to do

    @property
    def blocks_writes(self) -> bool:
        """Whether memkit refuses to write into the file until a person fixes it."""
        return self.kind in ("conflict", "frontmatter")


@dataclass
class Topic:
    """A parsed topic file; :attr:`raw` is the exact text so edits can preserve every byte."""

    name: str
    path: Path
    raw: str
    meta: dict[str, Any]
    entries: list[Entry]
    body_start: int  #: 0-based index of the first line after the frontmatter
    has_frontmatter: bool
    bom: bool = False
    warnings: list[str] = field(default_factory=list)
    stamp: tuple[int, int, int] | None = None  #: (size, mtime_ns, inode) when read from disk
    cr: bool = False  #: the file ends its lines with a bare CR (old Mac style); :attr:`raw` holds LF
    problems: list[Problem] = field(default_factory=list)  #: merge conflicts, invalid frontmatter…

    def write_problem(self) -> Problem | None:
        """The first problem that makes memkit refuse to write into this file (None: it may)."""
        return next((p for p in self.problems if p.blocks_writes), None)

    def append_suffix(self, line: str) -> str:
        """What :func:`append_line` adds at the end of :attr:`raw` to append ``line``."""
        return append_line(self.raw, line)[len(self.raw):]

    def data(self, text: str | None = None) -> bytes:
        """``text`` (default: :attr:`raw`) as this file's bytes: its BOM and line endings kept."""
        return encode_topic(self.raw if text is None else text, self.bom, self.cr)

    @property
    def title(self) -> str:
        title = self.meta.get("title")
        return str(title) if title else self.name.rpartition("/")[2].replace("-", " ").capitalize()

    @property
    def summary(self) -> str:
        summary = self.meta.get("summary")
        return " ".join(str(summary).split()) if summary else ""

    def to_dict(self) -> dict[str, Any]:
        """The topic as ``memkit show --json`` prints it: name, title, summary, file, entries."""
        return {"name": self.name, "title": self.title, "summary": self.summary,
                "file": self.entries[0].file if self.entries else topic_relpath(self.name),
                "entries": [e.to_dict() for e in self.entries]}

    def updated(self) -> datetime:
        """When the topic last changed: the newest of its frontmatter ``updated`` (or ``created``)
        and its entries' dates (an add only appends a dated line; it does not rewrite the
        frontmatter). The file's mtime when it has neither."""
        stamps = [d for d in (as_datetime(self.meta.get("updated")) or as_datetime(self.meta.get("created")),) if d]
        days = [e.date for e in self.entries if e.date]
        if days:
            newest = as_datetime(max(days))
            if newest is not None:
                stamps.append(newest)
        if stamps:
            return max(stamps)
        try:
            return datetime.fromtimestamp(self.path.stat().st_mtime).replace(microsecond=0)
        except OSError:
            return datetime.now().replace(microsecond=0)


def as_datetime(value: Any) -> datetime | None:
    """A frontmatter timestamp (YAML loads it as datetime, date or string) as a naive datetime."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=None, microsecond=0)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "")).replace(tzinfo=None, microsecond=0)
        except ValueError:
            return None
    return None


def _parse_frontmatter(lines: list[str], path: str, hidden: frozenset[int],
                       problems: list[Problem]) -> tuple[dict[str, Any], int, bool]:
    """(meta, first body line, has frontmatter). Invalid YAML is a problem, not an error: the
    body is still read. Lines of a merge conflict inside it are left out, so both sides' keys
    count; a timestamp key written twice keeps the newest ``updated`` and the oldest ``created``."""
    if not lines or strip_eol(lines[0]).rstrip() != "---":
        return {}, 0, False
    for i in range(1, len(lines)):
        if i not in hidden and strip_eol(lines[i]).rstrip() in ("---", "..."):
            break
    else:
        problems.append(Problem("frontmatter", 1, f"{path} line 1: frontmatter opened with '---' is never closed: "
                                                   "add a '---' line after it"))
        return {}, 0, False
    kept = [k for k in range(1, i) if k not in hidden]
    block = "".join(lines[k] for k in kept)
    try:
        meta = load_yaml(block)
    except YamlError as exc:
        # the line of the file: a problem at the end of the block is on its closing '---'
        def to_file(at: int) -> int:
            return kept[at - 1] + 1 if at <= len(kept) else i + 1
        line = to_file(exc.line) if exc.line else 1
        problems.append(Problem("frontmatter", line, f"{path} line {line}: frontmatter is not valid YAML: "
                                                      f"{exc.problem_at(to_file)} (its entries are still read; fix the "
                                                      f"frontmatter to let memkit write to the file)"))
        return {}, i + 1, True
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        problems.append(Problem("frontmatter", 2, f"{path} line 2: frontmatter must be a mapping of keys to values"))
        return {}, i + 1, True
    seen: dict[str, list[int]] = {}
    for k in kept:
        key = frontmatter_key(lines[k])
        if key is not None:
            seen.setdefault(key, []).append(k)
    for key, rows in seen.items():
        if len(rows) < 2:
            continue
        problems.append(Problem("duplicate-key", rows[1] + 1, f"{path} line {rows[1] + 1}: frontmatter key "
                                                               f"{key!r} is written {len(rows)} times (after a merge?); "
                                                               "`memkit check --fix` keeps one"))
        if key in ("updated", "created"):
            stamps = [d for d in (as_datetime(frontmatter_value(lines[r])) for r in rows) if d is not None]
            if stamps:
                meta[key] = max(stamps) if key == "updated" else min(stamps)
    return meta, i + 1, True


def frontmatter_value(line: str) -> str:
    """The value of a ``key: value`` frontmatter line, without quotes or a trailing comment."""
    value = _COMMENT_RE.sub("", strip_eol(line).split(":", 1)[1]).strip()
    return value.strip("'\"")


def frontmatter_tags(meta: dict[str, Any]) -> tuple[str, ...]:
    """A note's own tags, as Obsidian reads them from its frontmatter: ``tags:`` (or ``tag:``) as a
    list or a comma- or space-separated string, each without its ``#``, lowercased."""
    raw = meta.get("tags", meta.get("tag"))
    if raw is None:
        return ()
    items = raw if isinstance(raw, list) else re.split(r"[,\s]+", str(raw))
    out = [str(t).strip().lstrip("#").strip().lower() for t in items if t is not None]
    return tuple(dict.fromkeys(t for t in out if t))


def parse_entry_text(text: str) -> tuple[str | None, tuple[str, ...], str | None]:
    """Return (kind, tags, date) found in an entry's text."""
    kind_match = KIND_RE.match(text)
    kind = kind_match.group(1).lower() if kind_match else None
    tags = tuple(dict.fromkeys(t.lower() for t in _TAG_RE.findall(text))) if "#" in text else ()
    # a date is the last 12 characters but trailing spaces: its "(" is there, or there is none
    date_match = _DATE_RE.search(text, max(0, len(text.rstrip()) - 12)) if text.rstrip().endswith(")") else None
    return kind, tags, date_match.group(1) if date_match else None


def parse_topic_text(text: str, name: str, file: str, path: Path | None = None, bom: bool = False) -> Topic:
    """Parse a topic file's text.

    :param text: the decoded file content.
    :param name: the topic name (file stem).
    :param file: the path shown in messages and stored in entries, relative to the vault.
    :param path: the real path, when there is one.
    :param bom: whether the file started with a UTF-8 BOM (kept when rewriting).
    """
    lines = split_lines(text)
    conflicts, markers = conflict_lines(lines)
    problems = [Problem("conflict", c + 1, f"{file} line {c + 1}: unresolved merge conflict (<<<<<<< … >>>>>>>): "
                                           f"keep the lines you want, delete the marker lines, then `git add {file}`; "
                                           "memkit reads both sides and writes nothing into the file until then")
                for c in conflicts]
    meta, start, has_fm = _parse_frontmatter(lines, file, markers, problems)
    reader = _EntryReader(name, file, frontmatter_tags(meta))  # Obsidian's: the note's tags are each of its entries'
    reader.read(lines, start, markers)
    return Topic(name, path or Path(file), text, meta, reader.entries, start, has_fm, bom, problems=problems)


class _EntryReader:
    """The entries of a topic's body, read line by line: the list item and the prose paragraph
    being read, and the heading they are under."""

    def __init__(self, name: str, file: str, note_tags: tuple[str, ...]) -> None:
        self.name, self.file, self.note_tags = name, file, note_tags
        self.entries: list[Entry] = []
        self.para: list[str] = []
        self.para_start = 0
        self.item: list[str] = []
        self.item_start = 0
        self.item_indent = 0
        self.heading = ""

    def make(self, parts: list[str], first: int, last: int, is_list: bool) -> None:
        body = parts[0].strip() if len(parts) == 1 else " ".join(p.strip() for p in parts if p.strip())
        if not body:
            return
        kind, tags, day = parse_entry_text(body) if is_list else (None, parse_entry_text(body)[1], None)
        if self.note_tags:
            tags = tuple(dict.fromkeys(tags + self.note_tags))
        self.entries.append(Entry(body, self.name, self.file, first + 1, last + 1, kind, tags, day, is_list,
                                  text_hash(body), heading=self.heading))

    def flush_para(self, end: int) -> None:
        if self.para:
            self.make(self.para, self.para_start, end, False)
            self.para = []

    def flush_item(self, end: int) -> None:
        if self.item:
            self.make(self.item, self.item_start, end, True)
            self.item = []

    def read(self, lines: list[str], start: int, markers: frozenset[int]) -> None:
        """Read the body, ``lines`` from ``start``; ``markers``: a merge conflict's marker lines."""
        blocks = scan_blocks(lines, start)
        closing = blocks.closing
        last_content = start - 1
        for i in range(start, len(lines)):
            line = strip_eol(lines[i])
            stripped = line.strip()
            if i in markers:  # a merge conflict's marker line: structure; both sides' lines are read
                self.flush_item(last_content)
                self.flush_para(last_content)
                continue
            if i in blocks.code:  # the text of a fenced block is one paragraph entry
                if not self.para:
                    self.para_start = i
                self.para.append(line)
                last_content = i
                continue
            if i in blocks.comments or i in blocks.fences:
                self.flush_item(last_content)
                self.flush_para(last_content)
                continue
            if i in closing:
                self.flush_para(i - 1)
                continue
            if not stripped:
                self.flush_item(last_content)
                self.flush_para(last_content)
                continue
            match = LIST_RE.match(line)
            if match and not RULE_RE.match(line):
                self.flush_item(last_content)
                self.flush_para(last_content)
                self.item, self.item_start, self.item_indent = [match.group(2).rstrip()], i, len(match.group(1))
                last_content = i
                continue
            if HEADING_RE.match(line) or RULE_RE.match(line):
                self.flush_item(last_content)
                self.flush_para(last_content)
                if HEADING_RE.match(line):
                    self.heading = stripped.lstrip("#").strip().rstrip("#").strip()
                continue
            if self.item and (len(line) - len(line.lstrip())) > self.item_indent:
                self.item.append(stripped)  # an indented continuation of the list item above
                last_content = i
                continue
            self.flush_item(last_content)
            if not self.para:
                self.para_start = i
            self.para.append(stripped)
            last_content = i
        self.flush_item(last_content)
        self.flush_para(last_content)


def read_topic(path: Path, name: str, file: str) -> Topic:
    """Read and parse a topic file; raises :class:`TopicParseError` naming the file and line.

    Only regular files are read (a FIFO or device is refused without blocking), at most
    ``MAX_TOPIC_BYTES``; the file's stat is kept in :attr:`Topic.stamp` so a writer can tell
    whether someone else changed the file since.
    """
    try:
        data, st = read_regular(path, MAX_TOPIC_BYTES)
    except NotRegularFile as exc:
        message = str(exc)
        if "limit" in message:
            message += " for a topic; split it into smaller topics"
        raise TopicParseError(file, message) from None
    except OSError as exc:
        raise TopicParseError(file, f"cannot read: {exc.strerror or exc}") from None
    text, bom = decode_topic(data, file)
    topic = parse_topic_text(text, name, file, path, bom)
    topic.cr = is_cr_only(data.decode("utf-8", errors="replace"))
    topic.stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
    return topic


# ---- byte-preserving edits -------------------------------------------------------------------

def newline_of(text: str) -> str:
    """The file's line ending: CRLF if its first line ends so, else LF."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def append_line(text: str, line: str) -> str:
    """Append one line at the end, in the file's own newline style; nothing before it changes.

    A file without a final newline gets one before the line; a code fence left open is closed
    first, so the line is never inside it (memkit's :meth:`Store.add` writes exactly this suffix
    with one append)."""
    nl = newline_of(text)
    prefix = "" if not text or text.endswith("\n") else nl
    lines = split_lines(text)
    fence = scan_blocks(lines, _body_start(lines)).unclosed_fence
    if fence is not None:
        prefix += fence + nl
    return text + prefix + line + nl


def _body_start(lines: list[str]) -> int:
    """The first body line: after a closed ``---`` frontmatter block, else 0 (no YAML parsed)."""
    if lines and strip_eol(lines[0]).rstrip() == "---":
        for i in range(1, len(lines)):
            if strip_eol(lines[i]).rstrip() in ("---", "..."):
                return i + 1
    return 0


def remove_lines(text: str, first: int, last: int) -> tuple[str, str]:
    """Remove lines ``first..last`` (1-based, inclusive); returns (new text, removed text)."""
    lines = split_lines(text)
    removed = "".join(lines[first - 1:last])
    rest = lines[: first - 1] + lines[last:]
    new = "".join(rest)
    if rest and not removed.endswith("\n") and new.endswith("\n"):
        # we removed the last line, which had no newline: the new last line loses its own
        new = new[:-2] if new.endswith("\r\n") else new[:-1]
    return new, removed


_YAML_PLAIN_SAFE = re.compile(r"^[A-Za-z0-9][\w .,/()+-]*$")


def _reads_as_itself(text: str) -> bool:
    """Whether YAML reads ``text``, unquoted, as that string ("007" is the number 7, "0x1F" 31)."""
    try:
        return yaml.safe_load(text) == text  # as frontmatter is read (YAML 1.1: "0777" is 511)
    except yaml.YAMLError:
        return False


def yaml_scalar(value: Any) -> str:
    """One YAML scalar for a frontmatter line: timestamps unquoted ISO, strings quoted only when needed."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _YAML_PLAIN_SAFE.match(text) and ": " not in text and not text.endswith(":") and \
            text.lower() not in ("yes", "no", "true", "false", "null", "on", "off", "~") and \
            (not text[0].isdigit() or _reads_as_itself(text)):
        return text
    return json.dumps(text, ensure_ascii=False)


def unified_diff(old: str | None, new: str | None, path: str) -> str:
    """A unified diff of one file, as git prints it: ``--- a/PATH`` / ``+++ b/PATH`` headers
    (``/dev/null`` for the side where the file does not exist) and ``\\ No newline at end of
    file`` after a last line that has none. Empty when nothing changed.

    :param old: the file's text before, or None when it did not exist.
    :param new: its text after, or None when it is removed.
    :param path: the file, relative to the vault (``topics/cooking.md``).
    """
    if old == new:
        return ""
    lines = difflib.unified_diff(split_lines(old or ""), split_lines(new or ""),
                                 "/dev/null" if old is None else f"a/{path}",
                                 "/dev/null" if new is None else f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def frontmatter_key(line: str) -> str | None:
    """The top-level key a frontmatter line sets (``updated`` for ``updated: …``), else None."""
    m = _KEY_RE.match(line)
    return m.group(1) if m else None


def set_frontmatter(text: str, values: dict[str, Any]) -> str:
    """Set top-level frontmatter keys by editing their own lines; every other byte stays.

    A key that is missing is added before the closing ``---``; a key written twice (a union merge
    can leave that) has every occurrence set; a ``# comment`` after the value stays. A file
    without frontmatter gets none added (memkit does not restructure a file a person wrote that way).
    """
    bom = text.startswith("\ufeff")
    lines = split_lines(text[1:] if bom else text)
    if not lines or strip_eol(lines[0]).rstrip() != "---":
        return text
    nl = newline_of(text)
    end = next((i for i in range(1, len(lines)) if strip_eol(lines[i]).rstrip() in ("---", "...")), None)
    if end is None:
        return text
    found: set[str] = set()
    for i in range(1, end):
        key = frontmatter_key(lines[i])
        if key is not None and key in values:  # every occurrence: YAML reads the last one
            bare = strip_eol(lines[i])
            value = bare.split(":", 1)[1].strip()
            comment = _COMMENT_RE.search(bare) if value[:1] not in ("'", '"') else None
            lines[i] = (f"{key}: {yaml_scalar(values[key])}{comment.group(0) if comment else ''}"
                        f"{lines[i][len(bare):]}")
            found.add(key)
    insert = [f"{k}: {yaml_scalar(v)}{nl}" for k, v in values.items() if k not in found]
    lines[end:end] = insert
    return ("\ufeff" if bom else "") + "".join(lines)


def new_topic_text(title: str, summary: str, now: datetime, extra: dict[str, Any] | None = None) -> str:
    """The text of a new topic file: frontmatter (title, summary, created, updated), a heading, a blank line."""
    meta: dict[str, Any] = {"title": title}
    if summary:
        meta["summary"] = summary
    meta.update(extra or {})
    meta["created"] = now
    meta["updated"] = now
    head = "".join(f"{k}: {yaml_scalar(v)}\n" for k, v in meta.items())
    return f"---\n{head}---\n# {title}\n\n"


_BAD_CHARS = re.compile(CONTROL.pattern[:-1] + "\ud800-\udfff]")  #: memkit.formats.plain's, and surrogates


def check_text(text: str) -> str:
    """``text`` if it can be written into a topic file: valid Unicode without NUL or control
    characters (:mod:`memkit.formats.plain`: a file holding one would no longer be read).

    :raises InvalidValue: naming the character and where.
    """
    m = _BAD_CHARS.search(text)
    if m:
        ch = m.group(0)
        what = "invalid UTF-8 (an undecodable byte)" if "\ud800" <= ch <= "\udfff" else f"a control character {describe(ch)}"
        raise InvalidValue(f"the text holds {what} at position {m.start() + 1}: memkit writes plain UTF-8 text only")
    return text


def format_entry(text: str, kind: str | None = None, tags: tuple[str, ...] | list[str] = (), day: str | None = None) -> str:
    """Render ``- [kind] text #tag (YYYY-MM-DD)`` as one line.

    HTML comment markers are defused (``<\\!--``, ``--\\>``): an appended ``-->`` would otherwise
    close a comment a person left open above and hide the entries in between.
    """
    check_text(text)
    body = " ".join(text.split()).replace("<!--", "<\\!--").replace("-->", "--\\>")
    if kind:
        body = f"[{kind}] {body}"
    present = {t.lower() for t in _TAG_RE.findall(body)}
    for tag in tags:
        tag = tag.lstrip("#")
        if tag.lower() not in present:
            body += f" #{tag}"
    if day and not _DATE_RE.search(body):
        body += f" ({day})"
    if RULE_RE.match(f"- {body}"):  # "- --" would read as a horizontal rule, not an entry
        body = "\\" + body
    return f"- {body}"
