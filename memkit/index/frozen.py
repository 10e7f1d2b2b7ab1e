"""A frozen view: everything a search needs of the index, written once as memory-mapped files.

Without it a new process rebuilds its view from the SQLite file's blobs (every entry's text as a
Python string, its search terms, its dates) and the ranker from the view (BM25 postings, context
norms, speakers, the prefix scan's matrix): half a second at 100k entries, seconds and gigabytes
at a million. A frozen view is that work done at index time and kept on disk::

    .memkit/index/<model-slug>-<dim>.frozen.<generation>/
        meta.json        what the files hold (dtypes, shapes), the files' slots, the tables of kinds
                         and tags, the ranking's lists; written last
        <array>.bin      one raw array each: per row its file slot, first line, id, own day, date,
                         search terms (ids and offsets), liveness, kind and tags (codes); the texts
                         as one UTF-8 blob and its offsets; the rows whose text holds "(until"; and
                         the ranking's arrays (``rank.*``: postings, context norms, speakers, prefix)

A new process maps the files (:func:`thaw`): their pages are clean and shared, read from the page
cache as a search touches them. The rows written to the matrix after the freeze (files that
changed since) are read from SQLite and appended as usual (:meth:`memkit.index.Index.view`).

The SQLite ``meta`` row ``frozen`` names the current folder with the matrix and row count it
covers (``name|matrix|rows``); a writer holding the index's write lock makes a new one
(:meth:`memkit.index.Index.freeze`) when none covers the current matrix or enough rows were
appended since (:func:`due`), renames it into place and only then commits its name. A folder the
index does not name is deleted by the next freeze; a frozen view that is missing or damaged is
ignored (the view is read from SQLite instead) and made again.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..base.fsutil import fsync_dir
from .columns import CodedColumn, TagColumn, TextColumn
from .view import IndexView, TermIds, ViewBuilder, new_lineage

log = logging.getLogger("memkit")

__all__ = ["Frozen", "FROZEN_MIN_ROWS", "due", "write", "thaw", "remove_unused", "parse_state"]

FORMAT = 2
FROZEN_MIN_ROWS = 20_000  #: an index of fewer entries is read from SQLite (fast enough) and never frozen
REFREEZE_SHARE = 0.125  #: frozen again once this share of the matrix's rows came after the freeze …
REFREEZE_MIN_ROWS = 10_000  #: … and at least this many
_FILES_AT_ONCE = 256  #: files laid out before their rows are written out (bounds the memory)
_UNTIL = "(until"

#: what a search layer computes from a view to keep beside it (``rank.<name>`` arrays and a JSON
#: ``info``; an array given as (shape, dtype, fill) is filled through a map of its file, in the
#: order given); None: only the view's columns
Ranking = Callable[[IndexView], dict[str, Any]]


@dataclass
class Frozen:
    """The frozen rows of a view: how many, and the ranking's arrays kept for them."""

    rows: int
    ranking: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)  #: the ranking's own metadata (JSON)
    until_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  #: rows holding "(until"
    live: np.ndarray | None = None  #: the rows live when frozen (None: all)
    name: str = ""


def parse_state(value: str | None) -> tuple[str, str, int] | None:
    """(folder, matrix, rows) of the ``frozen`` meta row, or None."""
    if not value:
        return None
    try:
        name, matrix, rows = value.rsplit("|", 2)
        return name, matrix, int(rows)
    except ValueError:
        return None


def due(state: tuple[str, str, int] | None, matrix: str, rows: int, entries: int) -> bool:
    """Whether an index of ``entries`` entries over ``rows`` rows of ``matrix`` should be frozen
    (again): large enough, and no frozen view of this matrix or many rows appended since."""
    if entries < FROZEN_MIN_ROWS:
        return False
    if state is None or state[1] != matrix or state[2] > rows:
        return True
    return rows - state[2] >= max(REFREEZE_MIN_ROWS, REFREEZE_SHARE * rows)


class _Sink:
    """Raw arrays appended to ``<name>.bin`` files of a folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.arrays: dict[str, tuple[str, list[int]]] = {}
        self._files: dict[str, Any] = {}

    def put(self, name: str, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data)
        fh = self._files.get(name)
        if fh is None:
            fh = self._files[name] = open(self.folder / f"{name}.bin", "wb")
            self.arrays[name] = (data.dtype.str, [0, *data.shape[1:]])
        fh.write(data.tobytes())
        self.arrays[name][1][0] += int(data.shape[0])

    def fill(self, name: str, shape: tuple[int, ...], dtype: str, fill: Callable[[np.ndarray], None]) -> None:
        """A ``shape`` array of ``dtype`` that ``fill`` writes through a writable map of its file."""
        path = self.folder / f"{name}.bin"
        self.arrays[name] = (np.dtype(dtype).str, list(shape))
        if not all(shape):
            path.write_bytes(b"")
            return
        out = np.memmap(path, dtype=dtype, mode="w+", shape=shape)
        fill(out)
        out.flush()
        del out
        with open(path, "rb") as fh:
            os.fsync(fh.fileno())

    def close(self) -> None:
        for fh in self._files.values():
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
        self._files = {}


def _map(folder: Path, name: str, spec: tuple[str, list[int]]) -> np.ndarray:
    dtype, shape = np.dtype(spec[0]), tuple(int(x) for x in spec[1])
    if not shape[0] or not dtype.itemsize or 0 in shape[1:]:
        return np.zeros(shape, dtype=dtype)
    return np.asarray(np.memmap(folder / f"{name}.bin", dtype=dtype, mode="r", shape=shape))


def write(folder: Path, stem: str, con: sqlite3.Connection, columns: str, gen: int, matrix: str, rows: int,
          vectors: np.ndarray, vocab: TermIds, ranking: Ranking | None) -> str:
    """Write the frozen view of the tables as ``con`` sees them (its caller holds the write lock)
    into a new folder beside the index; returns the folder's name.

    :param columns: the SELECT of a file's row joined with its data (:class:`ViewBuilder`'s rows).
    """
    name = f"{stem}.frozen.{gen}"
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        sink = _Sink(tmp)
        builder = ViewBuilder()
        kinds: list[Any] = []
        tag_of: dict[str, int] = {}
        until: list[int] = []
        text_end = 0
        row = 0

        def flush() -> None:
            nonlocal kinds, text_end, row
            part = builder.drain()
            for key in ("file_ids", "lines", "own_days", "dates", "ids", "term_ids", "counts", "live"):
                sink.put(key, part[key])
            blobs = [t.encode("utf-8") for t in part["texts"]]
            ends = np.cumsum(np.fromiter((len(b) for b in blobs), dtype=np.int64, count=len(blobs))) + text_end
            sink.put("text_ends", ends)
            sink.put("texts", np.frombuffer(b"".join(blobs), dtype=np.uint8))
            text_end = int(ends[-1]) if ends.size else text_end
            coded = CodedColumn.encode(part["kinds"], None, kinds)
            kinds = coded.values
            sink.put("kinds", coded.codes)
            tag_ids = [tag_of.setdefault(t, len(tag_of)) for row_tags in part["tags"] for t in row_tags]
            sink.put("tag_ids", np.array(tag_ids, dtype=np.int32))
            sink.put("tag_counts", np.array([len(t) for t in part["tags"]], dtype=np.int32))
            until.extend(row + j for j, t in enumerate(part["texts"]) if _UNTIL in t)
            row += len(part["texts"])

        for count, file_row in enumerate(con.execute(columns + " ORDER BY f.row0, f.id"), start=1):
            builder.add(file_row)
            if count % _FILES_AT_ONCE == 0:
                flush()
        builder.skip(rows)
        flush()
        sink.put("until_rows", np.array(until, dtype=np.int64))
        sink.close()
        meta: dict[str, Any] = {
            "format": FORMAT, "generation": gen, "matrix": matrix, "rows": rows,
            "files": builder.files, "topics": builder.topics, "slot_file": builder.slot_file,
            "slot_gen": builder.slot_gen, "slot_rows": builder.slot_rows,
            "odd_dates": {str(k): v for k, v in builder.odd.items()}, "kinds": kinds,
            "tags": list(tag_of), "arrays": sink.arrays, "ranking": {}}
        if ranking is not None:
            _write_ranking(tmp, meta, ranking(_view(tmp, meta, gen, vectors[:rows], vocab)))
        with open(tmp / "meta.json", "w", encoding="utf-8") as fh:
            json.dump(meta, fh, separators=(",", ":"))
            fh.flush()
            os.fsync(fh.fileno())
        fsync_dir(tmp)
        final = folder / name
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        fsync_dir(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return name


def _write_ranking(tmp: Path, meta: dict[str, Any], made: dict[str, Any]) -> None:
    """Write what the search layer computed from the frozen view (``rank.<name>`` arrays, each an
    array, its blocks, or (shape, dtype, fill) written in place through a map) and its JSON info."""
    extra = _Sink(tmp)
    for key, value in made.get("arrays", {}).items():
        if isinstance(value, tuple):  # (shape, dtype, fill): written in place through a map
            extra.fill(f"rank.{key}", *value)
            continue
        for block in [value] if isinstance(value, np.ndarray) else value:  # an array, or its blocks
            extra.put(f"rank.{key}", np.asarray(block))
    extra.close()
    meta["arrays"].update(extra.arrays)
    meta["ranking"] = made.get("info", {})


def _view(folder: Path, meta: dict[str, Any], gen: int, vectors: np.ndarray, vocab: TermIds) -> IndexView:
    arrays = {k: _map(folder, k, v) for k, v in meta["arrays"].items()}
    n = int(arrays["file_ids"].shape[0])
    if n != vectors.shape[0]:
        raise ValueError(f"{n} rows for a matrix of {vectors.shape[0]}")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(arrays["counts"], out=offsets[1:])
    text_offsets = np.zeros(n + 1, dtype=np.int64)
    text_offsets[1:] = arrays["text_ends"]
    tag_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(arrays["tag_counts"], out=tag_offsets[1:])
    live = arrays["live"]
    live_all = bool(live.all()) if live.size else True
    view = IndexView(
        gen, meta["matrix"], list(meta["files"]), list(meta["topics"]), arrays["file_ids"], arrays["lines"],
        arrays["ids"], TextColumn(arrays["texts"], text_offsets), CodedColumn(arrays["kinds"], meta["kinds"]),
        TagColumn(arrays["tag_ids"], tag_offsets, meta["tags"]), arrays["own_days"], arrays["dates"],
        vectors, arrays["term_ids"], offsets, vocab, live=None if live_all else live, lineage=new_lineage(),
        slot_file=list(meta["slot_file"]), slot_gen=list(meta["slot_gen"]),
        slot_rows=[(int(a), int(b)) for a, b in meta["slot_rows"]],
        odd_dates={int(k): v for k, v in meta["odd_dates"].items()})
    view.frozen = Frozen(n, {k[5:]: v for k, v in arrays.items() if k.startswith("rank.")}, dict(meta["ranking"]),
                         arrays["until_rows"], view.live, folder.name)
    return view


def thaw(folder: Path, name: str, matrix: str, vectors: np.ndarray, vocab: TermIds) -> IndexView | None:
    """The frozen view ``name`` of ``folder`` over these matrix rows, or None when it is missing,
    damaged or of another matrix (the caller reads the view from SQLite)."""
    path = folder / name
    try:
        with open(path / "meta.json", encoding="utf-8") as fh:
            meta = json.load(fh)
        if meta.get("format") != FORMAT or meta.get("matrix") != matrix or int(meta["rows"]) > vectors.shape[0]:
            return None
        return _view(path, meta, int(meta["generation"]), vectors[:int(meta["rows"])], vocab)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.debug("frozen view %s unusable (%s): reading the index instead", name, exc)
        return None


def remove_unused(folder: Path, stem: str, keep: str) -> list[str]:
    """Delete this model's frozen folders other than ``keep`` (and temp folders of writers that
    died); returns their names."""
    removed = []
    try:
        items = list(folder.iterdir())
    except OSError:
        return []
    for path in items:
        name = path.name
        ours = name.startswith(f"{stem}.frozen.") or (name.startswith(f".{stem}.frozen.") and name.endswith(".tmp")
                                                      and _dead_writer(name))
        if ours and name != keep and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(name)
    return removed


def _dead_writer(name: str) -> bool:
    """Whether the process that names a temp folder (``….<pid>.tmp``) is gone."""
    try:
        pid = int(name.rsplit(".", 2)[-2])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return True
    except PermissionError:
        return False
    return pid == os.getpid()
