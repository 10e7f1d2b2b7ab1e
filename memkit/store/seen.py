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
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection

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
    """Each topic file's (mtime_ns, sha1) and index.txt's sha1 when memkit last looked.

    ``files`` is never changed in place (records loaded from the same bytes share it)."""

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

    def updated(self, files: dict[str, tuple[int, str | os.PathLike[str]]], index_sha: str | None,
                among: Collection[str] | None = None) -> "Seen":
        """The record for now: hashes are kept for files whose mtime did not move.

        :param files: name -> (mtime_ns, path) of the topic files looked at.
        :param among: only these names were looked at (``files`` holds those of them that exist):
            the others keep what the record says of them. None: ``files`` is every topic file.
        """
        out: dict[str, tuple[int, str | None]] = {}
        if among is not None:
            out = {k: v for k, v in self.files.items() if k not in among}
        for name, (mtime_ns, path) in files.items():
            before = self.files.get(name)
            out[name] = (mtime_ns, before[1] if before is not None and before[0] == mtime_ns and before[1]
                         else self._hash(name, mtime_ns, path))
        return Seen(out, index_sha)

    def to_json(self) -> str:
        # (the tuples are written as lists; sort_keys orders the names)
        return json.dumps({"version": 2, "index": self.index, "files": self.files}, sort_keys=True)


#: the last records read or written, by path: (the file's bytes, files, index). A vault of 20,000
#: topics has a 2 MB record; a watcher looks at it after every edit, and parsing it again (or
#: rendering it to find it unchanged) costs ~0.1 s each. A hit needs the file's bytes to be the same.
_CACHE: dict[Path, tuple[bytes, dict[str, tuple[int, str | None]], str | None]] = {}
_CACHE_PATHS = 4
_CACHE_LOCK = threading.Lock()


def _cached(path: Path, data: bytes | None) -> Seen | None:
    with _CACHE_LOCK:
        hit = _CACHE.get(path)
    if hit is None or data is None or hit[0] != data:
        return None
    return Seen(hit[1], hit[2])  # shared: a record's files are never changed in place (updated() makes new ones)


def _remember(path: Path, data: bytes, seen: Seen) -> None:
    with _CACHE_LOCK:
        _CACHE.pop(path, None)
        while len(_CACHE) >= _CACHE_PATHS:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[path] = (data, seen.files, seen.index)


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path, MAX_SEEN_BYTES)[0]
    except (OSError, NotRegularFile):
        return None


def load_seen(path: Path) -> Seen | None:
    """The record at ``path`` (None: memkit never looked, or the file is unreadable)."""
    raw = _read(path)
    if raw is None:
        return None
    hit = _cached(path, raw)
    if hit is not None:
        return hit
    seen = _parse(raw)
    if seen is not None:
        _remember(path, raw, seen)
    return seen


def _parse(raw: bytes) -> Seen | None:
    try:
        data = json.loads(raw)
    except ValueError:  # derived data: anything wrong means "never looked"
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
    raw = _read(path)
    with _CACHE_LOCK:
        hit = _CACHE.get(path)
    if hit is not None and raw == hit[0] and hit[1] == seen.files and hit[2] == seen.index:
        return  # the file holds this record already (compared as dicts: no rendering)
    data = seen.to_json().encode("utf-8")
    if raw == data:
        _remember(path, data, seen)
        return
    try:
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, data)
    except OSError:
        return
    _remember(path, data, seen)
