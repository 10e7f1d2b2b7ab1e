"""What a writer killed mid-way leaves, cleaned up by the next writer when it takes the lock.

- **An interrupted split.** :func:`write_split_journal` records, under ``.memkit/``, the parent and
  the parts (with their sha256) before the parts are written; :func:`undo_interrupted_split`
  reads it: if the parent is still there unchanged, the parts written so far are removed (a part
  someone changed since is kept, with a warning); if the parent is gone, the split was done.
- **Temp files of dead writers.** :func:`sweep_temp_files` removes the ``.NAME.tmp…`` files
  memkit's own atomic writes make, for files memkit writes, in the folders it is given.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping

from ..base.fsutil import TEMP_RE, atomic_write, read_regular
from ..errors import MemkitError

log = logging.getLogger("memkit")

__all__ = ["SPLIT_JOURNAL", "write_split_journal", "undo_interrupted_split", "aside_path", "sweep_temp_files"]

SPLIT_JOURNAL = "split-journal.json"  #: under .memkit/: the split being written, until it is done


def aside_path(state_dir: Path, parent: Path) -> Path:
    """Where a split moves its parent before removing it (under ``.memkit/``)."""
    return state_dir / f"split-parent-{parent.name}"


def write_split_journal(state_dir: Path, parent_rel: str, parent_data: bytes, parts: Mapping[str, bytes]) -> Path:
    """Record a split about to be written (``parts``: vault-relative path -> bytes); returns the
    journal's path, to remove once the split is done or undone."""
    journal = state_dir / SPLIT_JOURNAL
    atomic_write(journal, json.dumps({
        "parent": parent_rel, "parent_sha": hashlib.sha256(parent_data).hexdigest(),
        "parts": {rel: hashlib.sha256(data).hexdigest() for rel, data in parts.items()}}))
    return journal


def undo_interrupted_split(root: Path, state_dir: Path, is_inside: Callable[[Path], bool]) -> None:
    """Finish or undo the split the journal under ``state_dir`` describes, if any (see the module
    docstring); the caller holds the write lock."""
    journal = state_dir / SPLIT_JOURNAL
    try:
        data = json.loads(read_regular(journal, 1 << 20)[0])
    except FileNotFoundError:
        return
    except (OSError, MemkitError, ValueError):
        journal.unlink(missing_ok=True)
        return
    parent = root / str(data.get("parent", ""))
    parts = data.get("parts") if isinstance(data.get("parts"), dict) else {}
    try:
        parent_now = hashlib.sha256(parent.read_bytes()).hexdigest() if parent.is_file() else None
    except OSError:
        parent_now = None
    if parent_now is not None and parent_now == data.get("parent_sha"):
        # the parent is still there, unchanged: the split did not finish; remove its parts
        kept = []
        for rel, sha in parts.items():
            path = root / str(rel)
            if not is_inside(path) or not path.is_file():
                continue
            if hashlib.sha256(path.read_bytes()).hexdigest() == sha:
                path.unlink()
            else:
                kept.append(str(rel))
        log.warning("a split of %s was interrupted: undone (the topic is as it was)%s", data.get("parent"),
                    f"; {', '.join(kept)} changed since and were kept: check them for duplicates" if kept else "")
    elif parent_now is None:  # every part was written and the parent moved aside: the split is done
        aside_path(state_dir, parent).unlink(missing_ok=True)
    journal.unlink(missing_ok=True)


def sweep_temp_files(folders: Iterable[tuple[Path, tuple[str, ...] | None]]) -> None:
    """Remove memkit's temp files in each folder: those of the files named in ``owned``, or, when
    ``owned`` is None, of any ``.md`` file. The caller holds the write lock (nobody else writes
    these folders meanwhile)."""
    for folder, owned in folders:
        try:
            names = [e.name for e in os.scandir(folder) if e.name.startswith(".") and e.is_file(follow_symlinks=False)]
        except OSError:
            continue
        for name in names:
            m = TEMP_RE.match(name)  # only the temp files memkit's own writes make, for files it writes
            if m and (m.group(1) in owned if owned is not None else m.group(1).endswith(".md")):
                with contextlib.suppress(OSError):
                    os.unlink(folder / name)
