"""The vectors of one model as a ``.npy`` matrix: float32 unit rows, appended, memory-mapped.

The file is a standard NumPy ``.npy`` (format 1.0, a fixed 128-byte header, C order, ``<f4``)
that ``numpy.load(path, mmap_mode="r")`` opens; which row is which entry is in the index's SQLite
file (see :mod:`memkit.index.index`). Rules that make it safe to share between processes:

* **Rows once committed never change.** A writer (holding the SQLite write lock) writes its new
  rows after the last committed one, rewrites the header's row count, fsyncs, and only then
  commits the SQLite transaction that names them. A crash before that commit leaves rows past
  the committed count, which readers never look at and the next writer overwrites.
* **Compaction writes a new file** (``<stem>.<n>.npy``, temp file + fsync + rename), committed
  the same way; the SQLite ``meta`` row ``matrix`` names the current one. A reader whose
  snapshot names a file that is gone reads the snapshot again; older files are deleted by the
  writer that replaced them (an open memory map keeps its pages).
* **Never trusted.** A file that is missing, not an ``.npy`` of this dimension, or shorter than
  the committed rows raises :class:`MatrixError`; the index then rebuilds itself.

A vault that cannot be written keeps its matrices in memory (:class:`MemoryMatrix`).
"""
from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path
from typing import Iterable

import numpy as np

from ..base.fsutil import fsync_dir

__all__ = ["FileMatrix", "MemoryMatrix", "MatrixError", "HEADER_BYTES"]

HEADER_BYTES = 128  #: the header's size: room for any row count, so appending never moves the data
_MAGIC = b"\x93NUMPY\x01\x00"
_DTYPE = np.dtype("<f4")
_SHAPE = re.compile(r"'shape': \((\d+), (\d+)\)")


class MatrixError(Exception):
    """The matrix file does not hold what the index says (missing, foreign, short)."""


def header(rows: int, dim: int) -> bytes:
    """The ``.npy`` header of a ``(rows, dim)`` float32 matrix, padded to :data:`HEADER_BYTES`."""
    text = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, dim)
    size = HEADER_BYTES - len(_MAGIC) - 2
    return _MAGIC + struct.pack("<H", size) + text.ljust(size - 1).encode("latin1") + b"\n"


class FileMatrix:
    """The ``.npy`` files of one model in the index folder, ``<stem>.<n>.npy``.

    :param folder: the index folder.
    :param stem: ``<model-slug>-<dim>``.
    :param dim: the vectors' dimension.
    """

    in_memory = False

    def __init__(self, folder: Path, stem: str, dim: int) -> None:
        self.folder = folder
        self._folder = os.fspath(folder)
        self.stem = stem
        self.dim = dim
        self._maps: dict[tuple[str, int, int], np.ndarray] = {}  # (name, device, inode) -> its memory map

    def name(self, number: int) -> str:
        return f"{self.stem}.{number}.npy"

    def read(self, name: str, rows: int) -> np.ndarray:
        """The first ``rows`` rows of matrix ``name``, memory-mapped read-only (exactly those
        rows: the header's count, which a writer rewrites, is not relied on).

        :raises FileNotFoundError: when the file is gone (replaced by a compaction).
        :raises MatrixError: when it is not a matrix of this dimension, or is shorter.
        """
        path = self.folder / name
        if rows == 0:
            if path.is_dir():  # an index made anew over a folder named as its matrix: it cannot write
                raise MatrixError(f"{name} is a folder, not a matrix")
            return np.zeros((0, self.dim), dtype=np.float32)
        st = os.stat(path)  # the same name may be another file now (an index made anew): by inode
        key = (name, st.st_dev, st.st_ino)
        cached = self._maps.get(key)
        if cached is not None and cached.shape[0] >= rows:
            if st.st_size < HEADER_BYTES + rows * 4 * self.dim:  # cut short by hand: never touch it
                raise MatrixError(f"{name} was cut short to {st.st_size} bytes")
            return cached[:rows]
        mapped = self._map(path, rows, st.st_size)
        self._maps = {key: mapped}  # older maps go (the views made of them keep them alive)
        return mapped

    def _map(self, path: Path, rows: int, size: int) -> np.ndarray:
        need = HEADER_BYTES + rows * 4 * self.dim
        if size < need:
            raise MatrixError(f"{path.name} holds {size} bytes, the index names {rows} rows ({need} bytes)")
        try:
            with open(path, "rb") as fh:
                _check_header(fh.read(HEADER_BYTES), self.dim, rows, path.name)
            arr = np.memmap(path, dtype=_DTYPE, mode="r", offset=HEADER_BYTES, shape=(rows, self.dim))
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as exc:
            raise MatrixError(f"{path.name}: {exc}") from exc
        return np.asarray(arr)

    def append(self, name: str, rows: int, data: np.ndarray) -> None:
        """Write ``data`` as rows ``rows…`` of matrix ``name`` and make them durable; the caller
        commits the new row count afterwards. ``rows`` 0 makes the file anew (a new inode: a
        process that mapped an older file of that name keeps reading that one).

        :raises MatrixError: when the file is missing, not a matrix of this dimension, or shorter
            than ``rows`` (deleted or truncated by hand): the index is rebuilt.
        """
        data = np.ascontiguousarray(data, dtype=_DTYPE)
        if data.ndim != 2 or data.shape[1] != self.dim:
            raise ValueError(f"rows of {data.shape} for a {self.dim}-d matrix")
        path = self.folder / name
        flags = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        if rows == 0:  # a file of that name is no committed matrix (one an index deleted by hand
            path.unlink(missing_ok=True)  # left, a rolled-back one): a new inode, never written over
        try:
            fd = os.open(path, flags | (os.O_CREAT | os.O_EXCL if rows == 0 else 0), 0o644)
        except FileExistsError:
            raise MatrixError(f"{name} was made by another writer at the same moment") from None
        except FileNotFoundError:
            raise MatrixError(f"{name} is gone") from None
        try:
            if rows:
                need = HEADER_BYTES + rows * 4 * self.dim
                if os.fstat(fd).st_size < need:
                    raise MatrixError(f"{name} is shorter than the {rows} rows the index names")
                _check_header(os.pread(fd, HEADER_BYTES, 0), self.dim, rows, name)
            total = rows + data.shape[0]
            _write_all(fd, data.data.cast("B") if data.size else b"", HEADER_BYTES + rows * 4 * self.dim)  # no copy
            _write_all(fd, header(total, self.dim), 0)
            os.ftruncate(fd, HEADER_BYTES + total * 4 * self.dim)  # a crashed writer's rows past ours
            os.fsync(fd)
        finally:
            os.close(fd)
        if rows == 0:
            fsync_dir(self.folder)

    def intact(self, name: str, rows: int) -> bool:
        """Whether matrix ``name`` is still the file mapped and long enough for ``rows`` rows (a
        stat): a view over a file cut short by hand must not be read (its pages would fault)."""
        if rows == 0:
            return True
        try:
            st = os.stat(f"{self._folder}/{name}")  # a str path: a search pays a few microseconds
        except OSError:
            return False
        return (name, st.st_dev, st.st_ino) in self._maps and st.st_size >= HEADER_BYTES + rows * 4 * self.dim

    def write(self, name: str, blocks: Iterable[np.ndarray], rows: int) -> None:
        """Write a whole new matrix ``name`` of ``rows`` rows from ``blocks`` (temp file, fsync,
        rename): a compaction."""
        path = self.folder / name
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        try:
            written = 0
            _write_all(fd, header(rows, self.dim), 0)
            for block in blocks:
                block = np.ascontiguousarray(block, dtype=_DTYPE)
                _write_all(fd, block.tobytes(), HEADER_BYTES + written * 4 * self.dim)
                written += block.shape[0]
            if written != rows:
                raise ValueError(f"wrote {written} rows, not {rows}")
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, path)
        fsync_dir(self.folder)

    def others(self, keep: str) -> list[Path]:
        """This model's matrix files other than ``keep`` (replaced ones, a crashed compaction's)."""
        try:
            return [p for p in self.folder.iterdir()
                    if p.name != keep and (p.name.startswith(self.stem + ".") and p.name.endswith(".npy")
                                           or p.name.startswith(f".{self.stem}.") and p.name.endswith(".tmp"))]
        except OSError:
            return []

    def remove(self, name: str) -> None:
        """Delete matrix ``name`` (replaced by a compaction; open memory maps keep their pages)."""
        (self.folder / name).unlink(missing_ok=True)
        self._maps = {k: v for k, v in self._maps.items() if k[0] != name}

    def remove_others(self, keep: str) -> None:
        """Remove this model's matrix files other than ``keep``, and a folder named as any of them
        (``keep`` too: a folder is never a matrix, and the matrix is written in its place)."""
        for path in [*self.others(keep), *([self.folder / keep] if keep else [])]:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            elif path.name != keep:
                path.unlink(missing_ok=True)
        self._maps = {k: v for k, v in self._maps.items() if k[0] == keep}

    def close(self) -> None:
        self._maps = {}


class MemoryMatrix:
    """The same interface over arrays in memory (a vault that cannot be written)."""

    in_memory = True

    def __init__(self, dim: int, stem: str = "memory") -> None:
        self.dim = dim
        self.stem = stem
        self._data: dict[str, np.ndarray] = {}

    def name(self, number: int) -> str:
        return f"{self.stem}.{number}.npy"

    def seed(self, name: str, data: np.ndarray) -> None:
        self._data = {name: np.array(data, dtype=_DTYPE)}

    def read(self, name: str, rows: int) -> np.ndarray:
        data = self._data.get(name)
        if rows == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        if data is None or data.shape[0] < rows:
            raise MatrixError(f"{name}: the matrix in memory holds fewer rows than {rows}")
        return data[:rows]

    def append(self, name: str, rows: int, data: np.ndarray) -> None:
        data = np.asarray(data, dtype=_DTYPE)
        old = self._data.get(name, np.zeros((0, self.dim), dtype=_DTYPE))
        self._data[name] = np.concatenate([old[:rows], data])  # a new array: views keep theirs

    def write(self, name: str, blocks: Iterable[np.ndarray], rows: int) -> None:
        parts = [np.asarray(b, dtype=_DTYPE) for b in blocks]
        self._data[name] = np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=_DTYPE)

    def others(self, keep: str) -> list[Path]:
        return []

    def remove(self, name: str) -> None:
        self._data.pop(name, None)

    def intact(self, name: str, rows: int) -> bool:
        return True

    def remove_others(self, keep: str) -> None:
        self._data = {k: v for k, v in self._data.items() if k == keep}

    def close(self) -> None:
        pass


def _check_header(head: bytes, dim: int, rows: int, name: str) -> None:
    """A memkit matrix header of this dimension, for at least ``rows`` rows (else MatrixError)."""
    if len(head) < HEADER_BYTES or not head.startswith(_MAGIC):
        raise MatrixError(f"{name} is not an .npy file of memkit's")
    text = head[10:].decode("latin1", errors="replace")
    m = _SHAPE.search(text)
    if "'<f4'" not in text or "'fortran_order': False" not in text or m is None or int(m.group(2)) != dim:
        raise MatrixError(f"{name} is not a float32 (n, {dim}) matrix")
    if int(m.group(1)) < rows:
        raise MatrixError(f"{name} says {m.group(1)} rows, the index names {rows}")


def _write_all(fd: int, data: bytes | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n
