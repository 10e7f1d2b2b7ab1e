"""Git's 3-way merge of a session file (``sessions/**.md``), as the ``memkit`` merge driver runs it
(:mod:`memkit.git.sync`), block by block instead of line by line.

A session file is a header, a ``# title`` and blocks (messages and summaries,
:mod:`memkit.formats.session`). Two clones change it in three ways: they append messages, they age
it (the header gains the stage keys, the messages give way to one ``of=stage`` block: the raw
conversation is kept in ``sessions/archive/raw/``), and a person edits it. The merge:

- **blocks** are whole texts: one both sides hold stays, one a side removed (aged, or edited: the
  old text) goes, one a side added (a new message, a stage block, an edited text) comes, once;
- **one stage block** at most: when both clones aged the session, the further stage (``core``
  over ``summary``; then the later one) is kept, with its side's stage keys in the header (the
  raw conversation, kept on both, holds every message);
- **the header** merges key by key: a key one side changed takes that change; a key both changed
  differently (other than the stage keys) is a conflict, left marked for a person (git reports the
  file unmerged; ``memkit check`` reports it).

Messages are read in time order, so the blocks are written stage block first, then by time. A
format-layer module: text in, text out.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from ..formats.session import STAGE, STAGE_KEYS, parse_blocks, split_blocks, time_key

__all__ = ["merge_session"]

_RANK = {"summary": 1, "core": 2}


def merge_session(base: str, ours: str, theirs: str, file: str = "session") -> tuple[str, int]:
    """Merge two versions of a session file against their common ancestor (``""``: none, both
    added it). Returns the merged text and how many conflicts are left marked in it.

    :raises MemkitError: a version whose header cannot be read (the caller falls back to git's
        line merge)."""
    parts = [split_blocks(text, file) if text else ("", "", []) for text in (base, ours, theirs)]
    (b_head, b_pre, b_blocks), (o_head, o_pre, o_blocks), (t_head, t_pre, t_blocks) = parts
    heads = [_keys(h) for h in (b_head, o_head, t_head)]
    blocks = _blocks(b_blocks, o_blocks, t_blocks)
    info = {b: _parsed(b) for b in set(blocks)}  # block -> (time, whether it is a stage block)
    stages = [b for b in blocks if info[b][1]]
    stage_side: dict[str, str] | None = None
    if len(stages) > 1:  # both clones aged it: the further stage, then the later one
        mine = set(o_blocks)

        def rank(block: str) -> tuple[int, object, bool]:
            side = heads[1] if block in mine else heads[2]
            return (_RANK.get(_value(side.get("stage")), 0), time_key(info[block][0]), block in mine)
        keep = max(stages, key=rank)
        stage_side = heads[1] if keep in mine else heads[2]
        blocks = [b for b in blocks if not info[b][1] or b == keep]
    head, conflicts = _merge_header(heads[0], heads[1], heads[2], stage_side, bool(o_head or t_head))
    preamble = _pick(b_pre, o_pre, t_pre)
    ordered = sorted(blocks, key=lambda b: (not info[b][1], time_key(info[b][0])))
    text = head + preamble.rstrip("\r\n") + "\n" + "".join("\n" + b for b in ordered)
    return text, conflicts


def _pick(base: str, ours: str, theirs: str) -> str:
    return theirs if ours == base else ours


def _blocks(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """The blocks of the merge, ours' first (a block as many times as the merge keeps it)."""
    b, o, t = Counter(base), Counter(ours), Counter(theirs)
    out: list[str] = []
    done: set[str] = set()
    for block in [*ours, *theirs]:
        if block in done:
            continue
        done.add(block)
        if o[block] == t[block] or t[block] == b[block]:
            n = o[block]
        elif o[block] == b[block]:
            n = t[block]
        else:  # both changed how often it stands: each side's additions, once
            n = max(o[block], t[block])
        out += [block] * n
    return out


def _parsed(block: str) -> tuple[str, bool]:
    """A block's time and whether it is a stage block."""
    messages, summaries = parse_blocks(block)
    if summaries:
        return summaries[0].time, summaries[0].strategy == STAGE
    return (messages[0].time if messages else ""), False


def _keys(head: str) -> dict[str, str]:
    """A header's lines by top-level key (an indented line belongs to the key above it; a key
    written twice keeps both lines)."""
    lines = head.splitlines(keepends=True)
    if not lines:
        return {}
    out: dict[str, str] = {}
    key = ""
    for line in lines[1:-1]:  # between the --- lines
        if line[:1] not in (" ", "\t") and line.strip():
            key = line.split(":", 1)[0].strip()
        out[key] = out.get(key, "") + line
    return out


def _value(lines: str | None) -> str:
    return lines.split(":", 1)[1].strip() if lines and ":" in lines else ""


def _merge_header(base: dict[str, str], ours: dict[str, str], theirs: dict[str, str],
                  stage_side: dict[str, str] | None, present: bool) -> tuple[str, int]:
    if not present:
        return "", 0
    out: list[str] = []
    conflicts = 0
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        o, t, b = ours.get(key), theirs.get(key), base.get(key)
        if stage_side is not None and key in STAGE_KEYS:
            value = stage_side.get(key)
        elif o == t or t == b:
            value = o
        elif o == b:
            value = t
        else:
            conflicts += 1
            out.append(f"<<<<<<< ours\n{o or ''}=======\n{t or ''}>>>>>>> theirs\n")
            continue
        if value is not None:
            out.append(value if value.endswith("\n") else value + "\n")
    return "---\n" + "".join(out) + "---\n", conflicts
