"""What memkit last saw of the topic files (``.memkit/recent-seen.json``), to tell an edit made
outside memkit from one it made itself.

Each topic file is remembered by its mtime and a hash of its bytes, and index.txt by a hash of
its bytes. A file counts as changed only when its bytes changed: a ``git checkout`` that rewrites
the same bytes (a new mtime) is no change. When index.txt changed along with the topic files (a
``git pull`` brings both), index.txt already says when they changed, so file times are not used
and every clone computes the same index.txt from the same files.

With nothing remembered (a vault memkit never looked at: a fresh copy or clone), a file written
clearly after the rest of the vault (and after index.txt) was edited by hand.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..base.fsutil import NotRegularFile, atomic_write, read_regular

SEEN_FILE = "recent-seen.json"  #: under .memkit/
MAX_SEEN_BYTES = 1 << 24
HAND_EDIT_SLACK_S = 2.0  #: a file this much newer than the rest was changed outside memkit

__all__ = ["Seen", "SEEN_FILE", "HAND_EDIT_SLACK_S", "file_hash", "load_seen", "save_seen"]


def file_hash(path: str | os.PathLike[str]) -> str | None:
    """sha1 of a file's bytes (None when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()
    except OSError:
        return None


@dataclass
class Seen:
    """Each topic file's (mtime_ns, sha1) and index.txt's sha1 when memkit last looked."""

    files: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    index: str | None = None
    #: hashes taken while looking (name -> (mtime_ns, sha1)), so :meth:`updated` reads no file twice
    _hashed: dict[str, tuple[int, str | None]] = field(default_factory=dict, repr=False, compare=False)

    def _hash(self, name: str, mtime_ns: int, path: str | os.PathLike[str]) -> str | None:
        got = self._hashed.get(name)
        if got is None or got[0] != mtime_ns:
            got = self._hashed[name] = (mtime_ns, file_hash(path))
        return got[1]

    def changed(self, name: str, mtime_ns: int, path: str | os.PathLike[str]) -> bool:
        """Whether the topic file's bytes changed since then (a new file counts as changed)."""
        before = self.files.get(name)
        if before is None:
            return True
        if before[0] == mtime_ns:
            return False
        return before[1] is None or self._hash(name, mtime_ns, path) != before[1]

    def updated(self, files: dict[str, tuple[int, str | os.PathLike[str]]], index_sha: str | None) -> "Seen":
        """The record for now: hashes are kept for files whose mtime did not move."""
        out: dict[str, tuple[int, str | None]] = {}
        for name, (mtime_ns, path) in files.items():
            before = self.files.get(name)
            out[name] = (mtime_ns, before[1] if before is not None and before[0] == mtime_ns and before[1]
                         else self._hash(name, mtime_ns, path))
        return Seen(out, index_sha)

    def to_json(self) -> str:
        return json.dumps({"version": 2, "index": self.index,
                           "files": {k: list(v) for k, v in sorted(self.files.items())}}, sort_keys=True)


def load_seen(path: Path) -> Seen | None:
    """The record at ``path`` (None: memkit never looked, or the file is unreadable)."""
    try:
        data = json.loads(read_regular(path, MAX_SEEN_BYTES)[0])
    except (OSError, ValueError, NotRegularFile):  # derived data: anything wrong means "never looked"
        return None
    if not isinstance(data, dict):
        return None
    if data.get("version") == 2 and isinstance(data.get("files"), dict):
        files = {str(k): (int(v[0]), v[1] if isinstance(v[1], str) else None) for k, v in data["files"].items()
                 if isinstance(v, list) and len(v) == 2 and isinstance(v[0], int)}
        index = data.get("index")
        return Seen(files, index if isinstance(index, str) else None)
    # the first format: name -> mtime_ns
    return Seen({str(k): (v, None) for k, v in data.items() if isinstance(v, int)})


def save_seen(path: Path, seen: Seen) -> None:
    """Write the record (nothing when it is unchanged; a read-only vault just looks again next time)."""
    text = seen.to_json()
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except OSError:
        pass
    try:
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, text)
    except OSError:
        pass
