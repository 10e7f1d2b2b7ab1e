"""A refresh's writer: parse the changed files, find or make their vectors, write their rows.

The whole refresh is one SQLite write transaction (:mod:`memkit.index.index`: a reader never sees
half of it, a crash or an error leaves the previous index), but a large one (a full index, the
first index of a vault, a pull that changed many files) is parsed, embedded and written in chunks
of about :data:`CHUNK_ENTRIES` entries: each chunk's rows (``files``, ``file_data``, ``entries``)
are inserted and its vectors appended to the matrix after the rows already there, then the chunk
is dropped. Its memory is that of two chunks (the one written while the embedding worker,
:mod:`memkit.index.queue`, embeds the next one as it is parsed), whatever the vault's size.

What stays for the whole refresh is small: the file ids, one 64-bit key per entry written (to
count the texts that vanished, ``report.removed``), and the hashes of replaced rows that may be
gone. The write lock is taken once the first chunk is ready to be written: a refresh of one chunk
parses its files before it, as it always did.
"""
from __future__ import annotations

import json
import sqlite3
from array import array
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

import numpy as np

from ..errors import TopicParseError
from ..formats.topic import Entry, Topic
from .embed_process import process_spec
from .queue import EmbedQueue, f32_rows
from .report import IndexReport, Progress
from .sidecar import split_hashes
from .view import NO_DAY, days_of

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from .sidecar import Sidecar
    from .sources import Source

__all__ = ["Writer", "Sink", "Changed", "fill_pending", "CHUNK_ENTRIES", "CHUNK_FILES", "OWN_ROWS_MAX"]

CHUNK_ENTRIES = 20_000  #: a refresh writes its rows once this many entries are parsed …
CHUNK_FILES = 5_000  #: … or this many files
OWN_ROWS_MAX = 64  #: a refresh of this many files at most reads their old vectors from their own rows first

EmbedRows = Callable[..., np.ndarray]  # (entries, progress=None) -> their (n, dim) vectors
Commit = Callable[[sqlite3.Connection, "dict[str, tuple[int, tuple[int, int, int]] | None] | None"], None]


class Sink(Protocol):
    """What a refresh writes into, and all it sees of the index (:class:`memkit.index.Index` is
    one): the sidecar (SQLite and the matrix), the model that embeds (its ``dim``, the child
    process's spec) and the files it reads."""

    @property
    def db(self) -> Sidecar: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def source(self) -> Source: ...


def _day(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).date().isoformat()


@dataclass
class Changed:
    """A topic file to (re)index: where it is, its stamp, and its parse when already made."""

    rel: str
    name: str
    path: Path
    stamp: tuple[int, int, int]
    topic: Topic | None = None
    error: str | None = None


@dataclass
class _Parsed:
    source: Changed
    topic: Topic | None
    error: str | None

    @property
    def entries(self) -> list[Entry]:
        return self.topic.entries if self.topic is not None else []


def _keys(hashes: Iterable[str]) -> np.ndarray:
    """A 64-bit key per hash (Python's own string hash, stable within the process): what the
    count of vanished texts compares, in 8 bytes an entry (a collision only miscounts the report)."""
    return np.fromiter((hash(h) for h in hashes), dtype=np.int64)


class Writer:
    """One refresh's parse and write (see the module docstring); :meth:`run` once.

    :param index: the index written.
    :param report: filled: errors, new, reused, removed, changed_files.
    :param full: every row anew (a new matrix); else the changed files' rows replace theirs.
    :param embed: False: record the entries without vectors (``pending``).
    :param embed_rows: entries -> their vectors (the index's model, in batches).
    :param commit: commits the transaction, given the file rows written (None: unknown).
    """

    def __init__(self, index: Sink, report: IndexReport, progress: Progress | None, wait: float, full: bool,
                 embed: bool, embed_rows: EmbedRows, commit: Commit) -> None:
        self.index = index
        self.embed_rows = embed_rows
        self.commit = commit
        self.db = index.db
        self.dim = index.embedder.dim
        self.report = report
        self.progress = progress
        self.wait = wait
        self.full = full
        self.embed = embed
        self.con: sqlite3.Connection | None = None  # the write transaction, once begun
        self.gen = 0
        self.count = 0  # entries the index holds
        self.matrix = self.was_matrix = ""
        self.rows = 0  # the matrix's rows, this refresh's appended ones included
        self.ids: dict[str, int] = {}  # path -> file id, of the files replaced
        self.written: dict[str, tuple[int, tuple[int, int, int]] | None] = {}  # the file rows written (None: removed)
        self.old_keys: list[np.ndarray] = []  # full: the keys of every entry the index held
        self.new_keys: list[np.ndarray] = []  # the keys of every entry written
        self.maybe_gone: dict[str, int] = {}  # not full: hash -> entries, of replaced rows whose text may be gone
        self.entries = 0  # entries parsed
        self.fresh_terms: dict[str, int] = {}  # the terms this transaction added (cached once it commits)

    # ---- the refresh ------------------------------------------------------------------------------
    def run(self, sources: list[Changed], gone: list[str]) -> None:
        """Parse ``sources`` and write them, remove the rows of ``gone``, and commit."""
        report = self.report
        queue = EmbedQueue(self.embed_rows, None if self.full else self.db.known_vectors, embed=self.embed,
                           files=len(sources), total_bytes=sum(s.stamp[0] for s in sources), progress=self.progress,
                           spec=process_spec(self.index.embedder))
        if not self.full and len(sources) <= OWN_ROWS_MAX:  # an edited file's unchanged lines: from its own row
            queue.vectors.update(self.db.row_vectors([s.rel for s in sources]))
        waiting: deque[list[_Parsed]] = deque()  # parsed chunks, oldest first
        chunk: list[_Parsed] = []
        size = 0
        try:
            for source in sources:
                item = self._parse(source)
                if item.error is not None:
                    report.errors.append(item.error)
                queue.add(item.entries, source.stamp[0])
                chunk.append(item)
                size += len(item.entries)
                if size >= CHUNK_ENTRIES or len(chunk) >= CHUNK_FILES:
                    queue.finish()  # its last batch goes to the worker too
                    waiting.append(chunk)
                    chunk, size = [], 0
                    if len(waiting) > 1:  # written while the worker embeds the chunk after it
                        self._write(waiting.popleft(), queue, gone)
            waiting.append(chunk)
            queue.finish()
            while waiting:
                self._write(waiting.popleft(), queue, gone)
            self._finish(queue)
        except BaseException:
            self._rollback()
            raise
        finally:
            queue.close()
            self.db.writing = None
        report.new = queue.unknown if self.embed else 0
        report.reused = self.entries - queue.unknown
        report.changed_files = len(sources)

    def _parse(self, source: Changed) -> _Parsed:
        topic, error = source.topic, source.error
        if topic is None and error is None:
            try:
                topic = self.index.source.read(source.path, source.name, source.rel)
            except TopicParseError as exc:
                error = str(exc)
        if topic is not None:  # read anyway, reported: a file memkit will not write to until it is fixed
            error = "\n".join(p.message for p in topic.problems if p.blocks_writes) or None  # one per line
        self.entries += len(topic.entries) if topic is not None else 0
        return _Parsed(source, topic, error)

    # ---- the transaction --------------------------------------------------------------------------
    def _begin(self, gone: list[str]) -> sqlite3.Connection:
        """Take the write lock; a full refresh empties the tables (the file ids stay), and the rows
        of the files that are gone are removed."""
        self.con = con = self.db.begin(self.wait)
        self.gen = int(self.db.meta("generation") or 0) + 1
        self.count = int(self.db.meta("entries") or 0)
        self.matrix, self.rows = self.was_matrix, _ = self.db.matrix_state(con)
        self.written = dict.fromkeys(gone)
        if self.full:
            for (hashes,) in con.execute("SELECT hashes FROM file_data"):
                self.old_keys.append(_keys(split_hashes(hashes)))
            con.execute("DROP INDEX IF EXISTS entries_hash")  # made once at the end: faster than kept
            con.execute("DELETE FROM entries")
            con.execute("DELETE FROM file_data")
            self.ids = {p: i for p, i in con.execute("SELECT path, id FROM files")}
            con.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
            self.count = 0
            self.matrix, self.rows = self.db.next_matrix(self.matrix), 0  # every row anew: a new matrix
        else:
            for path in gone:
                row = _file_row(con, path)
                if row is None:
                    continue
                fid, n, hashes = row
                self.count -= n
                for h in split_hashes(hashes or ""):
                    self.maybe_gone[h] = self.maybe_gone.get(h, 0) + 1
                con.execute("DELETE FROM entries WHERE file_id = ?", (fid,))
                con.execute("DELETE FROM file_data WHERE file_id = ?", (fid,))
                con.execute("DELETE FROM files WHERE id = ?", (fid,))
        return con

    def _replaced(self, con: sqlite3.Connection, paths: list[str]) -> tuple[dict[int, list[str]], dict[str, int]]:
        """The indexed rows of these files (not full): file id -> their entries' hashes in order,
        and hash -> entries holding it among them."""
        before: dict[int, list[str]] = {}
        old: dict[str, int] = {}
        for path in paths:
            row = _file_row(con, path)
            if row is None:
                continue
            fid, n, hashes = row
            self.ids[path] = fid
            self.count -= n
            if hashes is None:  # no blobs (a damaged row): its entries rows go too
                con.execute("DELETE FROM entries WHERE file_id = ?", (fid,))
            before[fid] = split_hashes(hashes or "")
            for h in before[fid]:
                old[h] = old.get(h, 0) + 1
        return before, old

    def _write(self, chunk: list[_Parsed], queue: EmbedQueue, gone: list[str]) -> None:
        """Write one chunk's rows and append its vectors to the matrix (waiting for each file's own)."""
        con = self.con if self.con is not None else self._begin(gone)
        before: dict[int, list[str]] = {}
        old: dict[str, int] = {}
        if not self.full:
            before, old = self._replaced(con, [p.source.rel for p in chunk])
        queue.ready([e for item in chunk for e in item.entries])  # their vectors, and the child's terms
        each = [[queue.terms_of(e) for e in item.entries] for item in chunk]  # each file's entries' terms
        term_id = self.db.term_ids(con, {t for per_file in each for ts in per_file for t in ts}, self.fresh_terms)
        id_of = term_id.__getitem__
        zero = bytes(4 * self.dim)
        block: list[bytes] = []  # the rows appended to the matrix, in order
        now_all: list[str] = []
        gen = self.gen
        for item, per_entry in zip(chunk, each):
            src, topic, entries = item.source, item.topic, item.entries
            updated = topic.updated().date().isoformat() if topic is not None else _day(src.stamp[1])
            vecs = [queue.vectors.get(e.hash) for e in entries]
            missing = any(r is None for r in vecs)
            row0 = self.rows + len(block) if entries else -1
            block.extend(zero if r is None else r for r in vecs)
            values = (src.name, *src.stamp, updated, item.error, gen, len(entries), int(missing), row0)
            fid = self.ids.get(src.rel)
            if fid is None:
                fid = con.execute("INSERT INTO files (topic, size, mtime_ns, ino, updated, error, gen, n, pending, "
                                  "row0, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*values, src.rel)).lastrowid
            else:
                con.execute("UPDATE files SET topic = ?, size = ?, mtime_ns = ?, ino = ?, updated = ?, error = ?, "
                            "gen = ?, n = ?, pending = ?, row0 = ? WHERE id = ?", (*values, fid))
            assert fid is not None
            self.written[src.rel] = (fid, src.stamp)
            tids = array("i", map(id_of, chain.from_iterable(per_entry)))
            counts = array("i", map(len, per_entry))
            days = array("i", [days_of(e.date) for e in entries])
            # texts; kinds, tags and dates that are no real day only where an entry has them
            body = json.dumps([[e.text for e in entries], {p: e.kind for p, e in enumerate(entries) if e.kind},
                               {p: e.tags for p, e in enumerate(entries) if e.tags},
                               {p: e.date for p, e in enumerate(entries) if e.date and days[p] == NO_DAY}],
                              ensure_ascii=False, separators=(",", ":"))
            now = [e.hash for e in entries]
            con.execute("INSERT OR REPLACE INTO file_data VALUES (?, ?, ?, ?, ?, ?, ?)", (
                fid, tids.tobytes(), counts.tobytes(), array("i", [e.line for e in entries]).tobytes(),
                days.tobytes(), "".join(now), body))
            # only the positions whose text changed (an append writes one row)
            was = before.get(fid, [])
            if was:
                con.executemany("UPDATE entries SET hash = ? WHERE file_id = ? AND pos = ?",
                                [(h, fid, pos) for pos, (h, w) in enumerate(zip(now, was)) if h != w])
            if len(was) > len(now):
                con.execute("DELETE FROM entries WHERE file_id = ? AND pos >= ?", (fid, len(now)))
            con.executemany("INSERT INTO entries VALUES (?, ?, ?)",
                            [(fid, pos, h) for pos, h in enumerate(now[len(was):], start=len(was))])
            self.count += len(entries)
            now_all.extend(now)
        self.new_keys.append(_keys(now_all))
        if old:  # a replaced text this chunk does not hold again may be gone
            here = set(now_all)
            for h, n in old.items():
                if h not in here:
                    self.maybe_gone[h] = self.maybe_gone.get(h, 0) + n
        if block:
            self.db.matrix.append(self.matrix, self.rows, np.frombuffer(b"".join(block), dtype=np.float32)
                                  .reshape(len(block), self.dim))
            self.rows += len(block)
            self.db.writing = (self.matrix, self.rows)  # later chunks find these vectors (not full)
        for item in chunk:
            queue.release(item.entries)

    def _finish(self, queue: EmbedQueue) -> None:
        """Count the texts that vanished, compact the matrix when due, and commit."""
        con = self.con
        assert con is not None
        new = np.concatenate(self.new_keys) if self.new_keys else np.zeros(0, np.int64)
        if self.full:
            con.execute("CREATE INDEX IF NOT EXISTS entries_hash ON entries (hash)")
            old = np.concatenate(self.old_keys) if self.old_keys else np.zeros(0, np.int64)
            self.report.removed = int(np.count_nonzero(~np.isin(old, new)))
        else:  # a text no entry holds any more is gone (its vector with it)
            maybe = list(self.maybe_gone.items())
            kept = np.isin(_keys(h for h, _ in maybe), new)
            self.report.removed = sum(n for (h, n), k in zip(maybe, kept.tolist()) if not k and con.execute(
                "SELECT 1 FROM entries WHERE hash = ? LIMIT 1", (h,)).fetchone() is None)
        if not self.embed and queue.unknown:
            con.execute("INSERT OR REPLACE INTO meta VALUES ('pending', '1')")
        if self.full and self.rows == 0:  # no entries at all: the new matrix, empty
            self.db.matrix.append(self.matrix, 0, np.zeros((0, self.dim), dtype=np.float32))
        matrix, rows = self.db.compact(con, self.matrix, self.rows, self.count)
        con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                        [("generation", str(self.gen)), ("entries", str(self.count)), ("matrix", matrix),
                         ("rows", str(rows))])
        self.commit(con, None if self.full else self.written)
        self.con = None
        self.db.remember_terms(self.fresh_terms)
        if matrix != self.was_matrix:  # replaced: readers of the old one read their snapshot again
            self.db.make_durable()  # the commit naming the new matrix survives a power loss first
            self.db.matrix.remove(self.was_matrix)

    def _rollback(self) -> None:
        """Undo the open transaction; a full refresh's new matrix goes too (no reader knows it)."""
        con, self.con = self.con, None
        if con is None:
            return
        con.execute("ROLLBACK")
        if self.full and self.matrix != self.was_matrix:
            self.db.matrix.remove(self.matrix)


def fill_pending(index: Sink, report: IndexReport, progress: Progress | None, wait: float, embed_rows: EmbedRows,
                 commit: Commit) -> None:
    """Embed the entries a refresh without embedding left without a vector: each such file's block
    is appended anew with its vectors, a transaction for each chunk of about :data:`CHUNK_ENTRIES`
    entries (each commit leaves every file either complete or still pending); the matrix is
    compacted after the last one."""
    db = index.db
    con = db.connect()
    pending = con.execute("SELECT id, n FROM files WHERE pending = 1 ORDER BY id").fetchall()
    total = sum(n for _, n in pending)
    chunks: list[list[int]] = [[]]
    size = 0
    for fid, n in pending:
        if size >= CHUNK_ENTRIES or len(chunks[-1]) >= CHUNK_FILES:
            chunks.append([])
            size = 0
        chunks[-1].append(fid)
        size += n
    done = 0
    for number, fids in enumerate(chunks):
        last = number == len(chunks) - 1
        files = []
        for fid in fids:
            row = con.execute("SELECT hashes, body FROM file_data WHERE file_id = ?", (fid,)).fetchone()
            if row is not None:
                files.append((fid, split_hashes(row[0]), json.loads(row[1])[0]))  # its entries' hashes and texts
        texts: dict[str, str] = {}
        for _, hashes, bodies in files:
            texts.update(zip(hashes, bodies))
        vectors = db.known_vectors(list(texts))
        missing = [Entry(text, "", "", 0, 0, hash=h) for h, text in texts.items() if h not in vectors]
        told = None if progress is None else (lambda d, _t, at=done: progress(at + d, max(total, at + d)))
        vectors.update(zip((e.hash for e in missing), f32_rows(embed_rows(missing, told))))
        done += len(missing)
        _append_pending(index, files, vectors, wait, last, commit)
        report.new += len(missing)
    if progress is not None and done:
        progress(done, done)  # texts found in earlier chunks were not embedded: the total is what was


def _append_pending(index: Sink, files: list[tuple[int, list[str], list[str]]], vectors: dict[str, bytes],
                    wait: float, last: bool, commit: Commit) -> None:
    db = index.db
    con = db.begin(wait)
    try:
        gen = int(db.meta("generation") or 0) + 1
        matrix, rows0 = was_matrix, _ = db.matrix_state(con)
        block: list[bytes] = []
        moved = []
        for fid, hashes, _ in files:
            current = con.execute("SELECT d.hashes FROM files f JOIN file_data d ON d.file_id = f.id "
                                  "WHERE f.id = ? AND f.pending = 1", (fid,)).fetchone()
            if current is None or split_hashes(current[0]) != hashes:
                continue  # rewritten meanwhile by another process
            moved.append((rows0 + len(block) if hashes else -1, gen, fid))
            block.extend(vectors[h] for h in hashes)
        if block:
            db.matrix.append(matrix, rows0, np.frombuffer(b"".join(block), dtype=np.float32)
                             .reshape(len(block), index.embedder.dim))
        con.executemany("UPDATE files SET pending = 0, row0 = ?, gen = ? WHERE id = ?", moved)
        total = rows0 + len(block)
        meta = [("generation", str(gen)), ("rows", str(total))]
        if last:  # compacted once, after the last chunk; the flag stays while another writer left files pending
            matrix, total = db.compact(con, matrix, total, int(db.meta("entries") or 0))
            still = con.execute("SELECT 1 FROM files WHERE pending = 1 LIMIT 1").fetchone() is not None
            meta = [("pending", "1" if still else "0"), ("generation", str(gen)), ("matrix", matrix),
                    ("rows", str(total))]
        con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta)
        commit(con, None)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    if matrix != was_matrix:
        db.make_durable()
        db.matrix.remove(was_matrix)


def _file_row(con: sqlite3.Connection, path: str) -> tuple[int, int, str | None] | None:
    """(file id, entries, their hashes) of an indexed file, or None."""
    return con.execute("SELECT f.id, f.n, d.hashes FROM files f LEFT JOIN file_data d ON d.file_id = f.id "
                       "WHERE f.path = ?", (path,)).fetchone()
