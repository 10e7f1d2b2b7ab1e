"""The vectors of one model as a ``.npy`` matrix: float32 unit rows, appended, memory-mapped.

The file is a standard NumPy ``.npy`` (format 1.0, a fixed 128-byte header, C order, ``<f4``)
that ``numpy.load(path, mmap_mode="r")`` opens; which row is which entry is in the index's SQLite
file (see :mod:`memkit.index`). Rules that make it safe to share between processes:

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
import struct
from pathlib import Path
from typing import Iterable

import numpy as np

from .fsutil import fsync_dir

__all__ = ["FileMatrix", "MemoryMatrix", "MatrixError", "HEADER_BYTES"]

HEADER_BYTES = 128  #: the header's size: room for any row count, so appending never moves the data
_MAGIC = b"\x93NUMPY\x01\x00"
_DTYPE = np.dtype("<f4")


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
        self.stem = stem
        self.dim = dim
        self._maps: dict[str, np.ndarray] = {}  # file name -> its memory map (whole file)

    def name(self, number: int) -> str:
        return f"{self.stem}.{number}.npy"

    def read(self, name: str, rows: int) -> np.ndarray:
        """The first ``rows`` rows of matrix ``name``, memory-mapped read-only.

        :raises FileNotFoundError: when the file is gone (replaced by a compaction).
        :raises MatrixError: when it is not such a matrix or is shorter.
        """
        if rows == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        mapped = self._maps.get(name)
        if mapped is None or mapped.shape[0] < rows:
            mapped = self._map(self.folder / name)
            self._maps = {name: mapped}  # older files' maps go (their views keep them alive)
        if mapped.shape[0] < rows:
            raise MatrixError(f"{name} holds {mapped.shape[0]} rows, the index names {rows}")
        return mapped[:rows]

    def _map(self, path: Path) -> np.ndarray:
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise
        except (OSError, ValueError) as exc:
            raise MatrixError(f"{path.name}: {exc}") from exc
        if arr.dtype != _DTYPE or arr.ndim != 2 or arr.shape[1] != self.dim or arr.offset != HEADER_BYTES:
            raise MatrixError(f"{path.name}: a {arr.dtype} {arr.shape} matrix, not (n, {self.dim}) float32")
        return np.asarray(arr)

    def append(self, name: str, rows: int, data: np.ndarray) -> None:
        """Write ``data`` as rows ``rows…`` of matrix ``name`` (created when ``rows`` is 0) and
        make them durable; the caller commits the new row count afterwards."""
        data = np.ascontiguousarray(data, dtype=_DTYPE)
        if data.ndim != 2 or data.shape[1] != self.dim:
            raise ValueError(f"rows of {data.shape} for a {self.dim}-d matrix")
        path = self.folder / name
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o644)
        try:
            total = rows + data.shape[0]
            _write_all(fd, data.tobytes(), HEADER_BYTES + rows * 4 * self.dim)
            _write_all(fd, header(total, self.dim), 0)
            os.ftruncate(fd, HEADER_BYTES + total * 4 * self.dim)  # a crashed writer's rows past ours
            os.fsync(fd)
        finally:
            os.close(fd)
        if rows == 0:
            fsync_dir(self.folder)

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
        self._maps.pop(name, None)

    def remove_others(self, keep: str) -> None:
        for path in self.others(keep):
            path.unlink(missing_ok=True)
        self._maps = {k: v for k, v in self._maps.items() if k == keep}

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

    def remove_others(self, keep: str) -> None:
        self._data = {k: v for k, v in self._data.items() if k == keep}

    def close(self) -> None:
        pass


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n
