"""Git for a vault: the ``memkit`` merge driver for topic and session files, and ``memkit git-setup``.

A vault's ``.gitattributes`` (written by ``memkit init`` and ``memkit git-setup``) says::

    topics/*.md merge=memkit      # this module's driver (registered per clone by git-setup)
    archive.md merge=union        # git's own: both sides' appended lines are kept
    index.txt merge=union         # a clone without git-setup: memkit repairs it on its next read
    sessions/*.md merge=union     # a clone without git-setup: both sides' blocks kept

and ``git-setup`` names the session files (``sessions/``, its ``archive/`` and ``archive/raw/``)
and ``index.txt`` ``merge=memkit`` in the clone's own ``.git/info/attributes``, which overrides
that: the driver merges sessions block by block (:mod:`memkit.git.session_merge`) and index.txt
as memkit reads it (:func:`merge_index`: one line per topic, the newest), so the merge commit
holds it in step and ``memkit check`` finds nothing to fix.

The driver runs git's 3-way merge (``git merge-file --diff3``) and then settles the conflicts
that concurrent memkit use produces, which are not real disagreements:

- both sides added lines at the same place (two clones each ran ``memkit add``): both sides'
  lines are kept, ours first (a line both added identically is kept once);
- one side only removed lines (``memkit forget``) where the other only added: both apply;
- both sides changed only ``updated:``/``created:`` lines: the newest ``updated`` and the oldest
  ``created`` win.

Anything else (the same line changed differently on each side, a line one side changed and the
other removed, also when the change kept little of the old words: a line rewritten in place) stays
a conflict with the usual markers, which memkit reports loudly and never
treats as entries. A clone without the driver registered falls back to git's normal merge.
"""
from __future__ import annotations

import difflib
import os
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path, PurePosixPath

from ..base.fsutil import atomic_write
from ..config import Config, load_config
from ..errors import MemkitError
from ..formats.names import TOPICS_DIR
from ..formats.recent import parse_recent, render_recent
from ..formats.session import SESSIONS_DIR
from ..formats.topic import as_datetime, frontmatter_key, frontmatter_value
from ..store import Store, ensure_git_files
from .session_merge import merge_session

__all__ = ["DRIVER", "merge_topic", "merge_files", "merge_index", "git_setup", "GitSetup"]

DRIVER = "memkit"
_TIMESTAMP_KEYS = ("updated", "created")
EDIT_SIMILARITY = 0.6  #: a removed and an added line this alike are one line edited


def _git(args: list[str], cwd: Path | None = None, input_: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=input_, capture_output=True, timeout=60)
    except FileNotFoundError:
        raise MemkitError("git is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise MemkitError(f"git {args[0]} did not finish within 60 s") from None


def merge_topic(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, int]:
    """Merge two versions of a topic file against their common ancestor.

    :returns: (the merged bytes, how many conflicts are left marked in them).
    """
    with tempfile.TemporaryDirectory(prefix="memkit-merge-") as folder:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / name
            path.write_bytes(data)
            paths.append(str(path))
        result = _git(["merge-file", "-p", "--diff3", f"--marker-size={_MARKER_SIZE}", "-L", "ours", "-L", "base",
                       "-L", "theirs", *paths])
    if result.returncode < 0 or result.returncode > 127:
        raise MemkitError(f"git merge-file failed: {result.stderr.decode(errors='replace').strip()}")
    if result.returncode == 0:
        return result.stdout, 0
    return _settle(result.stdout)


# git merge-file marks its hunks with markers this long, so a person's own "=======" line (a
# heading underline) is never taken for one; conflicts left for a person get the usual 7
_MARKER_SIZE = 32
_OPEN, _BASE, _MID, _CLOSE = (b"<" * _MARKER_SIZE + b" ", b"|" * _MARKER_SIZE + b" ", b"=" * _MARKER_SIZE,
                              b">" * _MARKER_SIZE + b" ")


def _settle(merged: bytes) -> tuple[bytes, int]:
    """Resolve the hunks of a ``--diff3`` merge that concurrent memkit use explains (see the
    module docstring); the others are written back as two-sided conflicts."""
    lines = merged.splitlines(keepends=True)
    out: list[bytes] = []
    left = 0
    i = 0
    while i < len(lines):
        if not lines[i].startswith(_OPEN):
            out.append(lines[i])
            i += 1
            continue
        j = i + 1
        sides: list[list[bytes]] = [[], [], []]  # ours, base, theirs
        part = 0
        while j < len(lines) and not lines[j].startswith(_CLOSE):
            if lines[j].startswith(_BASE) and part == 0:
                part = 1
            elif lines[j].rstrip(b"\r\n") == _MID and part in (0, 1):
                part = 2
            else:
                sides[part].append(lines[j])
            j += 1
        resolved = _resolve(*sides)
        if resolved is None:
            left += 1
            out += [b"<<<<<<< ours\n", *sides[0], b"=======\n", *sides[2], b">>>>>>> theirs\n"]
        else:
            out += resolved
        i = j + 1
    return b"".join(out), left


def _resolve(ours: list[bytes], base: list[bytes], theirs: list[bytes]) -> list[bytes] | None:
    """The lines of one conflict hunk, settled; None when it is a real conflict.

    Each side's change is read as line operations on the base: a base line it removed and
    replaced with a similar line (an edit), a base line it removed, lines it added. Only two
    sides that touch the same base line differently conflict (both edit it differently, or one
    edits what the other removes); everything else applies: removals from both sides, edits at
    their place, then ours' new lines and theirs' (a line both added is kept once).
    """
    stamps = _timestamps(ours, base, theirs)
    if stamps is not None:
        return stamps
    key = _key
    edits_o, removed_o, added_o = _operations(base, ours)
    edits_t, removed_t, added_t = _operations(base, theirs)
    for i in set(edits_o) | set(edits_t):
        mine, other = edits_o.get(i), edits_t.get(i)
        if mine is not None and other is not None and key(mine) != key(other):
            return None  # both changed this line, differently
        if (mine is not None and i in removed_t) or (other is not None and i in removed_o):
            return None  # one changed what the other removed
    both = removed_o & removed_t
    if both and sorted(map(key, added_o)) != sorted(map(key, added_t)) and \
            both & (_replaced(base, ours) | _replaced(base, theirs)):
        return None  # a line one side rewrote in place (an edit unlike the old text) the other removed
    out: list[bytes] = []
    for i, line in enumerate(base):
        if i in edits_o or i in edits_t:
            out.append(edits_o.get(i) or edits_t[i])
        elif i not in removed_o and i not in removed_t:
            out.append(line)
    seen = Counter(key(line) for line in out)
    for line in added_o:
        if not _take(seen, key(line)):  # ours' new lines, unless already there
            out = _with(out, line)
    ours_added = Counter(key(line) for line in added_o)
    for line in added_t:
        if _take(ours_added, key(line)) or _take(seen, key(line)):
            continue  # the same line added by both sides (or already there): once
        out = _with(out, line)
    return out


def _with(out: list[bytes], line: bytes) -> list[bytes]:
    if out and not out[-1].endswith((b"\n", b"\r")):
        out[-1] += b"\n"
    out.append(line)
    return out


def _replaced(base: list[bytes], side: list[bytes]) -> set[int]:
    """The base lines ``side`` replaced with other lines at their place (not only removed)."""
    matcher = difflib.SequenceMatcher(None, [_key(x) for x in base], [_key(x) for x in side], autojunk=False)
    return {i for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "replace" for i in range(i1, i2)}


def _key(line: bytes) -> bytes:
    return line.rstrip(b"\r\n")


def _operations(base: list[bytes], side: list[bytes]) -> tuple[dict[int, bytes], set[int], list[bytes]]:
    """How ``side`` changed ``base``: ({base line: its edited line}, {base lines removed}, [lines
    added]). A removed line and an added one that read alike (difflib ratio >= EDIT_SIMILARITY)
    are an edit of that line."""
    remaining = Counter(_key(line) for line in side)
    removed = []
    for i, line in enumerate(base):
        if not _take(remaining, _key(line)):
            removed.append(i)
    added = [line for line in side if _take(remaining, _key(line))]
    edits: dict[int, bytes] = {}
    for i in removed:
        best, score = None, EDIT_SIMILARITY
        for line in added:
            ratio = difflib.SequenceMatcher(None, _key(base[i]), _key(line)).ratio()
            if ratio >= score and line not in edits.values():
                best, score = line, ratio
        if best is not None:
            edits[i] = best
    used = list(edits.values())
    rest = []
    for line in added:
        if line in used:
            used.remove(line)
        else:
            rest.append(line)
    return edits, {i for i in removed if i not in edits}, rest


def _take(counter: Counter[bytes], item: bytes) -> bool:
    if counter[item] > 0:
        counter[item] -= 1
        return True
    return False


def _timestamps(ours: list[bytes], base: list[bytes], theirs: list[bytes]) -> list[bytes] | None:
    """Both sides changed only timestamp keys: one line per key, the newest ``updated`` and the
    oldest ``created``; None otherwise."""
    values: dict[str, list[tuple[object, bytes]]] = {}
    for line in ours + theirs:
        text = line.decode("utf-8", errors="replace")
        key = frontmatter_key(text)
        if key not in _TIMESTAMP_KEYS:
            return None
        when = as_datetime(frontmatter_value(text))
        if when is None:
            return None
        values.setdefault(key, []).append((when, line))
    if not values or any(frontmatter_key(line.decode("utf-8", errors="replace")) not in _TIMESTAMP_KEYS
                         for line in base):
        return None
    out = []
    for key, found in values.items():
        pick = max if key == "updated" else min
        out.append(pick(found, key=lambda item: item[0])[1])  # type: ignore[arg-type,return-value]
    return out


def merge_files(base: str, ours: str, theirs: str, path: str | None = None) -> int:
    """The merge driver git runs (``%O %A %B %P``): merge into ``ours`` (git's %A) in place; a
    session file (``path`` in a ``sessions/`` folder) block by block (:mod:`memkit.git.session_merge`),
    a topic file line by line (:func:`merge_topic`).

    :returns: 0 when clean, 1 when conflicts are left marked (git then reports the path as
        unmerged, as with its own merge).
    """
    old, mine, other = (Path(p).read_bytes() for p in (base, ours, theirs))
    if path is not None and is_session_path(path):
        merged, left = merge_session_bytes(old, mine, other, path)
    elif path is not None and PurePosixPath(path.replace("\\", "/")).name == INDEX_NAME:
        merged, left = merge_index(old, mine, other, _index_limit(Path(path).parent)), 0
    else:
        merged, left = merge_topic(old, mine, other)
    atomic_write(Path(ours), merged)  # a driver killed mid-write leaves git's %A whole, never cut short
    return 1 if left else 0


def merge_index(base: bytes, ours: bytes, theirs: bytes, limit: int = Config().index_max_entries) -> bytes:
    """index.txt merged as memkit reads what a union merge leaves: one line per topic, the newer of
    the two sides', newest first, at most ``limit`` lines (memkit.yaml's ``index_max_entries``). A
    topic one side dropped (its file renamed or removed there) while the other kept its line as it
    was stays out."""
    old, mine, other = (parse_recent(data.decode("utf-8", errors="replace")) for data in (base, ours, theirs))
    lines = {"ours": {r.line() for r in mine}, "theirs": {r.line() for r in other}}
    topics = {"ours": {r.topic for r in mine}, "theirs": {r.topic for r in other}}
    dropped = {r.topic for r in old
               if (r.topic not in topics["ours"] and r.line() in lines["theirs"])
               or (r.topic not in topics["theirs"] and r.line() in lines["ours"])}
    kept = [r for r in mine + other if r.topic not in dropped]
    return render_recent(kept, limit).encode("utf-8")


def _index_limit(root: Path) -> int:
    """The vault's ``index_max_entries`` (git runs the driver at the work tree's top, so ``root`` is
    the vault's folder there); the default when its memkit.yaml cannot be read."""
    try:
        return load_config(root).index_max_entries
    except MemkitError:
        return Config().index_max_entries


def is_session_path(path: str) -> bool:
    """Whether a path git names (relative to the repository) is a session file."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return parts[-1].endswith(".md") and SESSIONS_DIR in parts[:-1] and TOPICS_DIR not in parts[:-1]


def merge_session_bytes(base: bytes, ours: bytes, theirs: bytes, path: str = "session") -> tuple[bytes, int]:
    """:func:`memkit.git.session_merge.merge_session` of the files' bytes; a version that is not a
    session file memkit can read (not UTF-8, a header that is not YAML) falls back to git's line
    merge, its conflicts marked."""
    try:
        merged, left = merge_session(base.decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8"), path)
        return merged.encode("utf-8"), left
    except (UnicodeDecodeError, MemkitError):
        return _line_merge(base, ours, theirs)


def _line_merge(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, int]:
    """git's own 3-way merge, its conflicts marked as usual."""
    with tempfile.TemporaryDirectory(prefix="memkit-merge-") as folder:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            p = Path(folder) / name
            p.write_bytes(data)
            paths.append(str(p))
        result = _git(["merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", *paths])
    if result.returncode < 0 or result.returncode > 127:
        raise MemkitError(f"git merge-file failed: {result.stderr.decode(errors='replace').strip()}")
    return result.stdout, result.returncode


class GitSetup:
    """What ``git_setup`` did: the vault files it changed, and whether the driver is registered."""

    def __init__(self, changed: list[str], registered: bool, repository: str | None) -> None:
        self.changed = changed
        self.registered = registered
        self.repository = repository

    def to_dict(self) -> dict[str, object]:
        return {"changed": self.changed, "driver_registered": self.registered, "repository": self.repository}


def git_setup(store: Store, command: list[str] | None = None) -> GitSetup:
    """Make a vault merge-friendly: memkit's lines in ``.gitattributes`` and ``.gitignore``
    (idempotent) and, when the vault is in a git work tree, the ``memkit`` merge driver
    registered in that repository's config (``.git/config`` is not cloned: run this once per
    clone).

    :param command: how git should start memkit (default: this Python with ``-m memkit``).
    """
    changed = ensure_git_files(store)
    top = _git(["rev-parse", "--show-toplevel"], cwd=store.root)
    if top.returncode != 0:
        return GitSetup(changed, False, None)
    _session_attributes(store)
    argv = command or [sys.executable, "-m", "memkit"]
    driver = " ".join(shlex.quote(a) for a in argv) + " merge-driver %O %A %B %P"
    for key, value in ((f"merge.{DRIVER}.name", "memkit: keep both sides' new entries, newest updated:"),
                       (f"merge.{DRIVER}.driver", driver)):
        result = _git(["config", key, value], cwd=store.root)
        if result.returncode != 0:
            raise MemkitError(f"git config {key} failed: {result.stderr.decode(errors='replace').strip()}")
    return GitSetup(changed, True, os.fsdecode(top.stdout.strip()))


#: the session files this driver merges, in the clone's own ``.git/info/attributes`` (it overrides
#: the vault's ``.gitattributes``, whose ``merge=union`` serves a clone without ``git-setup``)
SESSION_PATTERNS = (f"{SESSIONS_DIR}/*.md", f"{SESSIONS_DIR}/archive/*.md", f"{SESSIONS_DIR}/archive/raw/*.md")
INDEX_NAME = "index.txt"  #: merged by :func:`merge_index` where the clone's attributes name it


def _session_attributes(store: Store) -> None:
    """Name the session files and index.txt ``merge=memkit`` in the repository's ``info/attributes``
    (idempotent: a clone set up before gets the lines it lacks)."""
    where = _git(["rev-parse", "--git-path", "info/attributes", "--show-prefix"], cwd=store.root)
    if where.returncode != 0:
        raise MemkitError(f"git rev-parse failed: {where.stderr.decode(errors='replace').strip()}")
    lines = os.fsdecode(where.stdout).splitlines()
    attributes = Path(lines[0]) if Path(lines[0]).is_absolute() else store.root / lines[0]
    prefix = lines[1].strip() if len(lines) > 1 else ""
    wanted = [f"/{prefix}{pattern} merge={DRIVER}" for pattern in (*SESSION_PATTERNS, INDEX_NAME)]
    try:
        have = attributes.read_text(encoding="utf-8").splitlines() if attributes.is_file() else []
        missing = [line for line in wanted if line not in have]
        if missing:
            attributes.parent.mkdir(parents=True, exist_ok=True)
            text = "\n".join(have) + ("\n" if have else "") + "# memkit: session files, index.txt (memkit git-setup)\n"
            atomic_write(attributes, text + "\n".join(missing) + "\n")
    except OSError as exc:
        raise MemkitError(f"{attributes}: cannot write: {exc.strerror or exc}") from None
