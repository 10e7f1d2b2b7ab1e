"""A topic file's lines as markdown reads them, before any entry is made of them: the lines split
keeping their endings, the file's bytes decoded and encoded again byte for byte (a BOM, bare-CR
line endings), unresolved merge conflicts, and the structure that is not text (closed HTML
comments, fenced blocks, list items, headings and rules). :mod:`memkit.formats.topic` reads the
entries from them and edits them."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import TopicParseError

__all__ = ["HEADING_RE", "LIST_RE", "RULE_RE", "Blocks", "closes_fence", "conflict_lines", "decode_topic",
           "encode_topic", "fence_opener", "is_cr_only", "is_list_line", "scan_blocks", "split_lines", "strip_eol"]

# a list item: indentation, text (end-stripped after the match: a lazy (\S.*?)\s*$ cost ~7 µs a line)
LIST_RE = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])[ \t]+(\S.*)")

HEADING_RE = re.compile(r"^\s{0,3}#{1,6}(\s|$)")

RULE_RE = re.compile(r"^\s{0,3}([-*_=])(\s*\1){2,}\s*$")

_FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")

_FENCE_CLOSE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*$")


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only, keeping each line's ending (``\\r\\n`` stays with its line)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out

def strip_eol(line: str) -> str:
    """``line`` without its line ending."""
    return line.rstrip("\r\n")

def encode_topic(text: str, bom: bool = False, cr: bool = False) -> bytes:
    """The bytes of a topic file whose decoded text is ``text`` (see :func:`decode_topic`)."""
    if cr:
        text = text.replace("\n", "\r")
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", errors="surrogateescape")

def is_cr_only(text: str) -> bool:
    """Whether ``text`` ends its lines with bare CRs only (no LF anywhere)."""
    return "\r" in text and "\n" not in text

def decode_topic(data: bytes, path: str) -> tuple[str, bool]:
    """Decode a topic file's bytes; returns (text, had_bom). Raises TopicParseError naming the line.

    A file with bare-CR line endings is returned with LF endings (see :func:`is_cr_only`);
    :func:`encode_topic` with ``cr=True`` turns it back into the same bytes."""
    bom = data.startswith(b"\xef\xbb\xbf")
    if bom:
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise TopicParseError(path, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save it as UTF-8", line) from None
    if is_cr_only(text):
        text = text.replace("\r", "\n")
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise TopicParseError(path, "contains NUL bytes: this looks like a binary file, not markdown", line)
    return text, bom


_MARKER_RE = re.compile(r"^(<{7}|\|{7}|={7}|>{7})(?:[ \t].*)?$")


def conflict_lines(lines: list[str]) -> tuple[list[int], frozenset[int]]:
    """Unresolved git merge conflicts: (the 0-based line of each ``<<<<<<<``, every line to leave
    out: the marker lines, and a diff3 base section between ``|||||||`` and ``=======``). Both
    sides' own lines stay. A marker outside a complete ``<<<<<<< … ======= … >>>>>>>`` is text."""
    starts: list[int] = []
    hidden: set[int] = set()
    i, n = 0, len(lines)
    while i < n:
        if not strip_eol(lines[i]).startswith("<<<<<<<") or not _MARKER_RE.match(strip_eol(lines[i])):
            i += 1
            continue
        base = mid = end = None
        for j in range(i + 1, n):
            bare = strip_eol(lines[j])
            if not _MARKER_RE.match(bare):
                continue
            if bare.startswith("|||||||") and base is None and mid is None:
                base = j
            elif bare.startswith("=======") and mid is None:
                mid = j
            elif bare.startswith(">>>>>>>") and mid is not None:
                end = j
                break
            elif bare.startswith("<<<<<<<"):
                break
        if mid is None or end is None:
            i += 1
            continue
        starts.append(i)
        hidden.update((i, mid, end))
        if base is not None:
            hidden.update(range(base, mid))
        i = end + 1
    return starts, frozenset(hidden)

def is_list_line(line: str) -> bool:
    """Whether ``line`` starts a list item (``- x``, ``* x``, ``1. x``), not a rule (``- - -``)."""
    bare = strip_eol(line)
    return bool(LIST_RE.match(bare)) and not RULE_RE.match(bare)

@dataclass(frozen=True)
class Blocks:
    """Which body lines (0-based) are structure rather than text: closed HTML comments and fenced
    blocks. A fence never closed runs to the end of the file, as CommonMark (and every markdown
    viewer) has it; its text stays searchable as one code paragraph. A comment never closed hides
    nothing: only a closed comment is structure."""

    fences: dict[int, int]  #: opening fence line -> its closing line (the line count if never closed)
    comments: frozenset[int]  #: every line of a closed comment
    code: frozenset[int]  #: the lines between a fence pair
    unclosed_fence: str | None = None  #: the line that would close a fence left open (``"```"``)

    @property
    def closing(self) -> frozenset[int]:
        return frozenset(self.fences.values())

    @property
    def hidden(self) -> frozenset[int]:
        """Every line of a comment or a fenced block, delimiters included."""
        return self.comments | self.code | frozenset(self.fences) | self.closing

def fence_opener(line: str) -> str | None:
    """The fence (e.g. ``"````"``) that ``line`` opens per CommonMark: 0-3 spaces, 3+ backticks or
    tildes, an info string without backticks for a backtick fence; None when it opens none."""
    m = _FENCE_OPEN_RE.match(line)
    if not m or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return None
    return m.group(1)

def closes_fence(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened by ``fence``: the same character, at least as many."""
    m = _FENCE_CLOSE_RE.match(line)
    return m is not None and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)

def scan_blocks(lines: list[str], start: int) -> Blocks:
    """Find the comments and fenced blocks of ``lines`` from line ``start`` (the body)."""
    n = len(lines)
    last_close = max((i for i in range(start, n) if "-->" in lines[i]), default=-1)
    fences: dict[int, int] = {}
    comments: set[int] = set()
    code: set[int] = set()
    never_closed: dict[str, int] = {}
    in_comment = False
    i = start
    while i < n:
        line = strip_eol(lines[i])
        if in_comment:
            comments.add(i)
            in_comment = "-->" not in line
            i += 1
            continue
        stripped = line.strip()
        if stripped.startswith("<!--") and ("-->" in stripped or last_close > i):
            comments.add(i)
            in_comment = "-->" not in stripped
            i += 1
            continue
        fence = fence_opener(line)
        if fence is not None:
            end = None
            if len(fence) < never_closed.get(fence[0], 1 << 30):
                end = next((j for j in range(i + 1, n) if closes_fence(strip_eol(lines[j]), fence)), None)
            if end is None:  # CommonMark: a fence never closed runs to the end of the file
                never_closed[fence[0]] = len(fence)
                fences[i] = n
                code.update(range(i + 1, n))
                return Blocks(fences, frozenset(comments), frozenset(code), fence)
            fences[i] = end
            code.update(range(i + 1, end))
            i = end + 1
            continue
        i += 1
    return Blocks(fences, frozenset(comments), frozenset(code), None)
