"""A split's plan and the text of its parts: each part's frontmatter and heading, then the parent's
entry lines byte for byte with the lines a person wrote between them (see :mod:`memkit.split.split`);
every rendered part is parsed again and refused unless its entries are exactly the parent's."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable

from ..errors import MemkitError
from ..formats.markdown import is_list_line, scan_blocks, split_lines
from ..formats.names import topic_relpath
from ..formats.recent import RecentTopic, render_recent
from ..formats.safeyaml import dump_yaml
from ..formats.topic import Entry, Topic, as_datetime, newline_of, parse_topic_text, unified_diff, yaml_scalar
from ..store import Store
from .naming import one_line

__all__ = ["SplitPart", "SplitPlan", "render", "recent_items", "recent_text"]

_KNOWN_META = ("title", "summary", "created", "updated", "parent", "parent_summary")


@dataclass
class SplitPart:
    """One subtopic of a split: its file name, heading and summary, and the entries it receives."""

    name: str  #: safe topic name, ``<parent>-<word>``, unique in the vault
    title: str
    summary: str
    entries: list[Entry]  #: in the parent's order


@dataclass
class SplitPlan:
    """What :func:`apply_split` will do: the parts to write and the parent they come from.

    The plan keeps the parent's text as it was when planned; applying it to a changed file is refused.
    """

    parent: str
    parts: list[SplitPart]
    raw: str = field(default="", repr=False)  #: the parent's text when planned
    bom: bool = field(default=False, repr=False)
    named_by: str = "words"  #: ``"llm"`` or ``"words"``
    applied: bool = False
    #: a topic's file as messages and diffs name it (``Store.topic_rel``: no ``topics/`` with ``topics_folder: .``)
    file_of: Callable[[str], str] = field(default=topic_relpath, repr=False, compare=False)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parts]

    def to_dict(self) -> dict[str, Any]:
        """As ``memkit split --json`` prints it: parent, applied, named_by, and each part's name,
        title, summary and number of entries."""
        return {"parent": self.parent, "applied": self.applied, "named_by": self.named_by,
                "parts": [{"name": p.name, "title": p.title, "summary": p.summary, "entries": len(p.entries)}
                          for p in self.parts]}

    def texts(self, now: datetime | None = None) -> dict[str, str]:
        """The text of each part's file (without BOM), checked to hold exactly the parent's entries.

        :param now: the ``updated`` time to write (default: now).
        :raises MemkitError: if the parts would not hold the parent's entries exactly once each.
        """
        now = (now or datetime.now()).replace(microsecond=0)
        return render(self, now)

    def diff(self, store: Store) -> str:
        """A unified diff of every file the split would write or remove (for ``--dry-run``).

        :param store: the vault the plan was made for.
        """
        now = datetime.now().replace(microsecond=0)
        out = [unified_diff(None, text, store.topic_rel(name)) for name, text in render(self, now).items()]
        out.append(unified_diff(self.raw, None, store.topic_rel(self.parent)))
        try:
            old_index: str | None = store.recent_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            old_index = None
        out.append(unified_diff(old_index, recent_text(store, self, now), store.rel(store.recent_path)))
        return "".join(out)



# ---- rendering -----------------------------------------------------------------------------------


@dataclass
class _Chunk:
    entry: int  #: index of the entry in the parent (-1: the lines after the last entry)
    lines: list[str]  #: structure lines before the entry, then the entry's own lines
    adjacent: bool  #: the entry's first line directly follows the previous entry's last line


_H1_RE = re.compile(r"^\s{0,3}#(\s|$)")


def _chunks(topic: Topic) -> tuple[list[_Chunk], _Chunk | None]:
    """Cut the parent's body into one chunk per entry (plus the lines after the last entry)."""
    lines = split_lines(topic.raw)
    blocks = scan_blocks(lines, topic.body_start)
    pairs, hidden = blocks.fences, blocks.hidden
    spans = []
    for e in topic.entries:
        first, last = e.line - 1, e.end_line - 1
        if not e.is_list and pairs.get(first - 1) == last + 1:
            first, last = first - 1, last + 1  # a fenced block moves with its fences
        spans.append((first, last))
    title_line = -1
    first_entry = spans[0][0] if spans else len(lines)
    plain_titles = {" ".join(str(t).split()).casefold() for t in (topic.title, topic.name, topic.name.replace("-", " "))}
    for i in range(topic.body_start, first_entry):
        if i not in hidden and _H1_RE.match(lines[i]):
            # the part's own heading replaces a plain title; a heading with more words is kept
            if " ".join(lines[i].strip().lstrip("#").split()).casefold() in plain_titles:
                title_line = i
            break

    def structure(lo: int, hi: int) -> list[str]:
        kept = [i for i in range(lo, hi) if i != title_line]
        content = [i for i in kept if lines[i].strip()]
        if not content:
            return []
        return [lines[i] for i in kept if content[0] <= i <= content[-1]]

    chunks = []
    prev_end = topic.body_start
    for idx, (first, last) in enumerate(spans):
        lead = structure(prev_end, first)
        adjacent = idx > 0 and first == prev_end and not lead
        if lead:  # the blank lines between the structure and the entry stay as they were
            gap_start = max(i for i in range(prev_end, first) if lines[i].strip() and i != title_line) + 1
            lead += [lines[i] for i in range(gap_start, first) if i != title_line]
        own = lines[first:last + 1]
        if last >= len(lines) and blocks.unclosed_fence:  # a fence never closed: closed in its part
            nl = newline_of(topic.raw)
            own = own[:-1] + [own[-1] if own[-1].endswith("\n") else own[-1] + nl, blocks.unclosed_fence + nl]
        chunks.append(_Chunk(idx, lead + own, adjacent))
        prev_end = last + 1
    tail = structure(prev_end, len(lines))
    return chunks, (_Chunk(-1, tail, False) if tail else None)


def _frontmatter_extra(topic: Topic) -> list[str]:
    """The parent's frontmatter lines other than the keys a part sets itself, verbatim."""
    if not topic.has_frontmatter:
        return []
    lines = split_lines(topic.raw)[1:topic.body_start - 1]
    out: list[str] = []
    keep = True
    for line in lines:
        bare = line.rstrip("\r\n")
        if bare[:1] in (" ", "\t", "-") or not bare.strip():
            if keep:
                out.append(line)
            continue
        if bare.lstrip().startswith("#"):
            out.append(line)
            continue
        match = re.match(r"""^(?:"([^"]*)"|'([^']*)'|([^:#]+?))\s*:(\s|$)""", bare)
        key = next((g for g in match.groups()[:3] if g is not None), "") if match else ""
        keep = key.strip() not in _KNOWN_META
        if keep:
            out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return out


def _frontmatter_dumped(topic: Topic, nl: str) -> list[str]:
    """The parent's other frontmatter keys written anew, for YAML that cannot be copied line by line
    (an alias to an anchor under ``title:``, say)."""
    unknown = {k: v for k, v in topic.meta.items() if k not in _KNOWN_META}
    if not unknown:
        return []
    text = dump_yaml(unknown)
    return [line + nl for line in text.splitlines()]


class _FrontmatterMismatch(MemkitError):
    pass


def _header(plan: SplitPlan, parent: Topic, part: SplitPart, nl: str, now: datetime, extra: list[str]) -> str:
    created = as_datetime(parent.meta.get("created")) or now
    title = one_line(part.title, 200) or part.name
    summary = one_line(part.summary, 300)
    meta = [f"title: {yaml_scalar(title)}"]
    if summary:
        meta.append(f"summary: {yaml_scalar(summary)}")
    meta += [f"created: {yaml_scalar(created)}", f"updated: {yaml_scalar(now)}", f"parent: {yaml_scalar(plan.parent)}"]
    if parent.summary:  # the person's summary of the whole topic is kept, not dropped
        meta.append(f"parent_summary: {yaml_scalar(parent.summary)}")
    body = "".join(line + nl for line in meta)
    for line in extra:
        body += line if line.endswith("\n") else line + nl
    return f"---{nl}{body}---{nl}# {title}{nl}{nl}"


def render(plan: SplitPlan, now: datetime) -> dict[str, str]:
    """name -> file text for every part; checks that the parts hold exactly the parent's entries."""
    parent = parse_topic_text(plan.raw, plan.parent, plan.file_of(plan.parent), bom=plan.bom)
    nl = newline_of(plan.raw)
    by_line = {e.line: i for i, e in enumerate(parent.entries)}
    owner: dict[int, int] = {}
    for p, part in enumerate(plan.parts):
        if not part.entries:
            raise MemkitError(f"part {part.name} of {plan.parent} has no entries")
        for e in part.entries:
            i = by_line.get(e.line)
            if i is None or parent.entries[i].hash != e.hash or i in owner:
                raise MemkitError(f"the split plan of {plan.parent} does not match its entries; plan it again")
            owner[i] = p
    if len(owner) != len(parent.entries):
        raise MemkitError(f"the split plan of {plan.parent} leaves out entries; plan it again")
    chunks, tail = _chunks(parent)
    bodies: list[list[str]] = [[] for _ in plan.parts]
    last_in: list[int] = [-2] * len(plan.parts)
    for chunk in chunks:
        p = owner[chunk.entry]
        out = bodies[p]
        # Entries that were neighbours stay neighbours; a list item may follow a list item (a list
        # line always starts a new entry); anything else gets a blank line, so that two paragraphs
        # never merge and an indented line never becomes another item's continuation.
        glue = (chunk.adjacent and last_in[p] == chunk.entry - 1) or (
            last_in[p] >= 0 and parent.entries[last_in[p]].is_list and is_list_line(chunk.lines[0])
        )
        if out and not glue:
            out.append(nl)
        out.extend(chunk.lines)
        if not out[-1].endswith("\n"):
            out[-1] += nl
        last_in[p] = chunk.entry
    if tail is not None:
        out = bodies[owner[len(parent.entries) - 1]]
        out.append(nl)
        out.extend(tail.lines)
        if not out[-1].endswith("\n"):
            out[-1] += nl
    for extra in (_frontmatter_extra(parent), _frontmatter_dumped(parent, nl)):
        texts = {part.name: _header(plan, parent, part, nl, now, extra) + "".join(body)
                 for part, body in zip(plan.parts, bodies)}
        try:
            _check(plan, parent, texts)
            return texts
        except _FrontmatterMismatch as exc:
            problem = exc
    raise MemkitError(str(problem))


def _check(plan: SplitPlan, parent: Topic, texts: dict[str, str]) -> None:
    """Parse every part again: same entries, same lines, same extra frontmatter, or refuse."""
    parent_lines = split_lines(parent.raw)
    if parent_lines and not parent_lines[-1].endswith("\n"):
        parent_lines[-1] += newline_of(parent.raw)  # the one line a part may end differently
    unknown = {k: v for k, v in parent.meta.items() if k not in _KNOWN_META}
    where = plan.file_of(plan.parent)
    for part in plan.parts:
        text = texts[part.name]
        try:
            got = parse_topic_text(text, part.name, plan.file_of(part.name))
        except MemkitError as exc:
            raise _FrontmatterMismatch(
                f"{where}: its frontmatter cannot be copied into {part.name} ({exc}); nothing was written"
            ) from exc
        lines = split_lines(text)
        want = sorted(part.entries, key=lambda e: e.line)
        ok = len(got.entries) == len(want) and all(
            g.hash == w.hash
            and lines[g.line - 1:g.end_line] == parent_lines[w.line - 1:w.end_line]
            for g, w in zip(got.entries, want)
        )
        if not ok:
            raise MemkitError(
                f"{where}: splitting it would change how its entries read in {part.name}; nothing was written "
                "(please report this with the file)"
            )
        if got.meta.get("parent") != plan.parent or any(got.meta.get(k) != v for k, v in unknown.items()):
            raise _FrontmatterMismatch(f"{where}: its frontmatter cannot be copied into {part.name}; nothing was written")


# ---- index.txt and diffs -------------------------------------------------------------------------


def recent_items(store: Store, plan: SplitPlan, now: datetime) -> list[RecentTopic]:
    names = set(plan.names)
    existing = {tf.name for tf in store.topic_files()} | names
    items = [r for r in store.index_txt.read(write=False) if r.topic != plan.parent and r.topic not in names and r.topic in existing]
    return items + [RecentTopic(now, p.name, one_line(p.summary, 300)) for p in plan.parts]


def recent_text(store: Store, plan: SplitPlan, now: datetime) -> str:
    return render_recent(recent_items(store, plan, now), store.config.index_max_entries)
