"""The embedding sidecar of one model under ``.memkit/index/``: a SQLite file and an ``.npy`` matrix.

Layout (derived data: delete it any time, it is rebuilt)::

    .memkit/index/<model-slug>-<dim>.sqlite3
        meta       schema version, model name, dimension, generation (bumped by every write),
                   entries (their count), pending (entries indexed without vectors),
                   matrix (the name of the current .npy file), rows (its committed rows)
        files      one row per file (:mod:`memkit.index.sources`): path, name, size, mtime_ns, inode, date, error,
                   gen (the generation that wrote it), n (its entries), pending (vectors missing),
                   row0 (the matrix row of its first entry: its entries are rows row0 .. row0+n-1)
        file_data  one row per file, everything else a search loads, as a few blobs: the
                   entries' search terms as int32 term ids, first lines and dates as int32,
                   hashes, and their texts, kinds and tags (JSON)
        entries    one row per entry: (file, position) -> its hash (finds a known text's vector)
        terms      search term -> id (append-only: an id never changes meaning)
    .memkit/index/<model-slug>-<dim>.<n>.npy
        the vectors: a float32 (rows, dim) matrix of unit rows, numpy.load(path, mmap_mode="r")
        (see memkit.index.matrix). Rows no file claims (a file's block before it changed) are dead
        until the matrix is compacted into the next <n>.

**Incremental.** A refresh lists topics/ once (one ``scandir`` and a stat per file) and compares
each file's (size, mtime_ns, inode) with its ``files`` row; only changed files are parsed again
and their entries appended to the matrix as a new block. :meth:`Index.refresh` with ``paths``
checks only the files named (what a process that just wrote a file calls). Vectors are keyed by
the hash of an entry's normalised text, so an edited line re-embeds only itself and a line moved
between files is not re-embedded at all.

**Atomic and concurrent.** Each refresh is one SQLite transaction (WAL journal) that appends its
rows to the matrix (fsynced) before it commits: a crash leaves the previous state, a reader never
sees half a refresh, and concurrent writers queue on SQLite's own lock. A reader knows whether
its view is current from ``PRAGMA data_version`` (no query of its own) and the ``generation``.

**Streamed** (:mod:`memkit.index.writer`): a large refresh (a full index, a first index, a pull
that changed many files) parses, embeds and writes its files in chunks of ~20k entries inside that
one transaction, so its memory does not grow with the vault; it holds the write lock from its
first chunk's write to its commit.

**Never trusted** (:mod:`memkit.index.sidecar`): files that are not what they should be are made anew.
**The view** (:mod:`memkit.index.view`): the memory-mapped matrix, with what a hit shows.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..embeddings import Embedder, complete
from ..errors import MemkitError
from ..formats.topic import Entry, Topic
from ..store import Store, TopicFile
from . import frozen
from .matrix import FileMatrix, MatrixError, MemoryMatrix
from .queue import EMBED_BATCH, entry_texts
from .report import IndexReport, Progress
from .sidecar import Sidecar
from .sources import Source, TopicSource
from .view import TRIM_MIN_ROWS, IndexView, TermIds, ViewBuilder, row_damage, trim_memory
from .writer import Changed, Writer, fill_pending

log = logging.getLogger("memkit")

__all__ = ["Index", "IndexReport", "IndexView", "Progress", "TermIds"]

#: a vocabulary of at most this many terms is read whole when a query first needs it (a new
#: process of a large vault looks its queries' terms up instead: 90k terms take 0.1-0.3 s to read)
VOCAB_READ_WHOLE = 20_000
WRITE_WAIT_S = 30.0  #: how long a refresh waits for another process's write, by default

#: what a broken index file's errors say (not a lock, a full disk or a read-only folder: those are
#: left to their cause)
_NOT_DAMAGE = ("locked", "busy", "readonly", "read-only", "disk is full", "unable to open", "disk i/o",
               "interrupted", "out of memory")


def damaged(exc: BaseException) -> bool:
    """Whether an error says the index itself is broken, so that making it anew from the files is
    the cure: a matrix deleted or cut short by hand (:class:`MatrixError`), or an SQLite error of a
    broken file (malformed pages, a column that no longer decodes, not a database at all)."""
    if isinstance(exc, MatrixError):
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    text = str(exc).lower()
    return not any(word in text for word in _NOT_DAMAGE)


class Index:
    """The embedding index of a vault for one model (see the module docstring).

    :param store: the vault's files.
    :param embedder: the model; its ``name`` and ``dim`` select the sidecar file (an object with
        ``name``, ``dim`` and ``embed`` alone is completed, :func:`memkit.embeddings.complete`).
    """

    def __init__(self, store: Store, embedder: Embedder, source: Source | None = None) -> None:
        self.store = store
        embedder = complete(embedder)
        self.embedder = embedder
        self.source: Source = source if source is not None else TopicSource(store)  #: the files indexed
        self.db = Sidecar(store, embedder, self.source.suffix)  #: the SQLite file and the matrix
        self.last_check = 0.0  #: time.monotonic() of the last freshness check of every file
        self._mutex = threading.RLock()  # one connection, shared by this process's threads
        self._files: dict[str, tuple[int, tuple[int, int, int]]] | None = None  # path -> (id, stamp)
        self._files_epoch = -1
        self._files_gen = 0  # the highest files.gen the cached rows have seen
        self._view: IndexView | None = None
        self._view_epoch = -1
        self._epoch = 0  # bumped whenever the sidecar may have changed (PRAGMA data_version, own writes)
        self._data_version: int | None = None
        self._rebuilding = False  # a rebuild after a damaged matrix is under way

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r})"

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self.db.path

    @property
    def dir(self) -> Path:
        """The folder of the index files (``.memkit/index``)."""
        return self.db.dir

    @property
    def watch_mark(self) -> Path:
        """``<model>-<dim>.watch`` beside the SQLite file: ``memkit watch`` holds a lock on it
        (:func:`memkit.base.fsutil.hold_lock`) while it keeps this index current."""
        return self.path.with_name(self.path.name.removesuffix(".sqlite3") + ".watch")

    @property
    def matrix(self) -> FileMatrix | MemoryMatrix:
        """The vectors (a ``.npy`` file, or arrays in memory for a read-only vault)."""
        return self.db.matrix

    @property
    def in_memory(self) -> bool:
        """True when the vault cannot be written (the index lives in memory)."""
        return self.db.in_memory

    def close(self) -> None:
        """Close the database connection (a later call reopens it)."""
        with self._mutex:
            if self.db.open:
                self.db.close()
                self._files = None
                self._view = None
                self._data_version = None
                self._epoch += 1

    def _sync(self) -> int:
        """The current epoch: it moves when another connection committed (``PRAGMA
        data_version``, no table read) or this one wrote; caches are kept per epoch."""
        dv = self.db.connect().execute("PRAGMA data_version").fetchone()[0]
        if dv != self._data_version:
            self._data_version = dv
            self._epoch += 1
        return self._epoch

    def generation(self) -> int:
        """The sidecar's write counter (bumped by every refresh that changed something)."""
        with self._mutex:
            return int(self.db.meta("generation") or 0)

    def _file_rows(self) -> dict[str, tuple[int, tuple[int, int, int]]]:
        """path -> (file id, stamp) of every indexed file; after another writer's commit only the
        rows it wrote are read (``gen`` above the last seen), unless files went away."""
        epoch = self._sync()
        if self._files is None or epoch != self._files_epoch:
            con = self.db.connect()
            files = self._files
            if files is not None:
                for p, i, s, m, n, g in con.execute("SELECT path, id, size, mtime_ns, ino, gen FROM files "
                                                    "WHERE gen > ?", (self._files_gen,)):
                    files[p] = (i, (s, m, n))
                    self._files_gen = max(self._files_gen, g)
                if len(files) != con.execute("SELECT COUNT(*) FROM files").fetchone()[0]:
                    files = None  # some went away: read them all
            if files is None:
                rows = con.execute("SELECT path, id, size, mtime_ns, ino, gen FROM files").fetchall()
                files = {p: (i, (s, m, n)) for p, i, s, m, n, _ in rows}
                self._files_gen = max((g for *_, g in rows), default=0)
            self._files = files
            self._files_epoch = epoch
        return self._files

    # ---- freshness ------------------------------------------------------------------------------
    def stale(self, files: Sequence[TopicFile] | None = None, *,
              among: Iterable[str] | None = None) -> tuple[list[TopicFile], list[str]]:
        """(topic files whose row is missing or out of date, indexed paths whose file is gone).

        :param files: the files there are (default: a listing of them all).
        :param among: only these vault-relative paths were looked at (``files`` are those of
            them that exist): an indexed one not in ``files`` is gone, the others are left out.
        """
        files = self.source.files() if files is None else files
        relpath = self.source.relpath
        with self._mutex:
            known = self._file_rows()
            changed = []
            current = set()
            for tf in files:
                rel = relpath(tf.name)
                current.add(rel)
                row = known.get(rel)
                if row is None or row[1] != tf.stamp:
                    changed.append(tf)
            gone = [p for p in (known if among is None else among) if p in known and p not in current]
        return changed, gone

    def stale_of(self, paths: Iterable[str | os.PathLike[str]]) -> set[str]:
        """Of the files named (paths, or ``topics/NAME.md``), the vault-relative paths of those
        :meth:`stale` would name: a row missing or out of date, or indexed and gone. A stat of
        each, no listing of the folder.

        :raises MemkitError: for a name that is no file of this index's source.
        """
        names = {self.source.name_of(p) for p in paths}
        files = [tf for tf in map(self.source.file_at, names) if tf is not None]
        changed, gone = self.stale(files, among=[self.source.relpath(n) for n in names])
        return {self.source.relpath(tf.name) for tf in changed} | set(gone)

    def indexed_paths(self) -> list[str]:
        """The topic files the sidecar holds (vault-relative paths)."""
        with self._mutex:
            return list(self._file_rows())

    def file_errors(self) -> list[str]:
        """What is wrong with the indexed topic files (a merge conflict, bad frontmatter: read
        anyway, memkit will not write to them), one message each."""
        with self._mutex:
            return [str(e) for (e,) in self.db.connect().execute("SELECT error FROM files WHERE error IS NOT NULL")]

    def is_stale(self) -> bool:
        """Whether a topic file changed, appeared or vanished since the last refresh."""
        changed, gone = self.stale()
        return bool(changed or gone)

    # ---- refreshing -----------------------------------------------------------------------------
    def refresh(self, *, full: bool = False, progress: Progress | None = None, wait: float = WRITE_WAIT_S,
                embed: bool = True, paths: Iterable[str | os.PathLike[str]] | None = None,
                parsed: Sequence[Topic] = ()) -> IndexReport:
        """:meth:`_refresh`; an index file found damaged (inner pages a disk or a copy broke:
        "database disk image is malformed", a column that no longer decodes) is deleted and made
        anew from the topic files, once."""
        try:
            return self._refresh(full=full, progress=progress, wait=wait, embed=embed, paths=paths, parsed=parsed)
        except (sqlite3.DatabaseError, MatrixError) as exc:
            return self._remade(exc, lambda: self._refresh(full=True, progress=progress, wait=wait, embed=embed))

    def _remade(self, exc: Exception, redo: Callable[[], Any]) -> Any:
        """After ``exc``: where it says the index is broken (:func:`damaged`), delete it and ``redo``
        (which makes it anew), once; else, or when that breaks again, raise ``exc``."""
        if self._rebuilding or not damaged(exc):
            raise exc
        with self._mutex:
            self._rebuild(exc)
            self._rebuilding = True
            try:
                return redo()
            finally:
                self._rebuilding = False

    def _refresh(self, *, full: bool = False, progress: Progress | None = None, wait: float = WRITE_WAIT_S,
                 embed: bool = True, paths: Iterable[str | os.PathLike[str]] | None = None,
                 parsed: Sequence[Topic] = ()) -> IndexReport:
        """Bring the sidecar up to date with the topic files.

        :param full: parse every file again and re-embed every entry.
        :param progress: called with (done, total) while embedding.
        :param wait: seconds to wait for another process's write to finish; after that the
            refresh gives up (``report.busy``) and the sidecar stays as it is.
        :param embed: embed new entries. ``False`` (a lexical search) records the entries and
            their search terms without loading the model; their vectors are made by the next
            refresh that embeds.
        :param paths: check only these topic files (paths or ``topics/NAME.md``; a file that is
            gone is dropped): what a process calls right after writing them, without listing
            topics/. Other files are left for the next refresh.
        :param parsed: of ``paths``, the topics their writer parsed as it wrote them, each with the
            file's stat after the write (:attr:`Topic.stamp`): used instead of reading the file.
        """
        started = time.perf_counter()
        report = IndexReport(model=self.embedder.name, dim=self.embedder.dim)
        with self._mutex:
            self.db.connect()
            report.rebuilt_model = self.db.created
            self.db.created = False
            sources: list[Changed] | None = None
            gone: list[str] = []
            if paths is not None and not full:
                try:
                    sources, gone = self._stale_paths(paths, parsed)
                except (MemkitError, OSError) as exc:  # an odd name or file: check everything instead
                    log.debug("refresh of %s: %s; checking every file", paths, exc)
                    sources = None
            if sources is None:
                files = self.source.files()
                if full:
                    current = {self.source.relpath(tf.name) for tf in files}
                    changed, gone = list(files), [p for p in self._file_rows() if p not in current]
                else:
                    changed, gone = self.stale(files)
                sources = [Changed(self.source.relpath(tf.name), tf.name, tf.path, tf.stamp) for tf in changed]
                report.files = len(files)
                self.last_check = time.monotonic()
            else:
                report.files = -1
            try:
                if sources or gone:
                    self._apply(sources, gone, report, progress, wait, full, embed)
                if embed and self.db.meta("pending") == "1":
                    self._embed_pending(report, progress, wait)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise  # (a damaged file or matrix is made anew by refresh, once)
                log.debug("index %s busy (%s): left for the next refresh", self.path, exc)
                report.busy = True
            if report.files < 0:
                report.files = int(self.db.connect().execute("SELECT COUNT(*) FROM files").fetchone()[0])
            report.entries = int(self.db.meta("entries") or 0)
        report.seconds = time.perf_counter() - started
        return report

    def _stale_paths(self, paths: Iterable[str | os.PathLike[str]],
                     parsed: Sequence[Topic] = ()) -> tuple[list[Changed], list[str]]:
        """The named topic files that changed (parsed already: by their writer, ``parsed``, else
        read now), and those that are gone."""
        written = {t.name: t for t in parsed if t.stamp is not None}
        known = self._file_rows()
        sources, gone = [], []
        for given in paths:
            name = self.source.name_of(given)
            rel = self.source.relpath(name)
            row = known.get(rel)
            if row is not None:
                try:  # unchanged since indexed: nothing to read
                    st = os.stat(self.source.path_of(name))
                    if (st.st_size, st.st_mtime_ns, st.st_ino) == row[1]:
                        continue
                except OSError:
                    pass
            topic = written.get(name)
            if topic is not None:
                self.store.warn_problems(topic)  # what reading it would have said
            else:
                topic = self.source.lookup(name)
            if topic is None:
                if rel in known:
                    gone.append(rel)
                continue
            if topic.stamp is None:
                raise MemkitError(f"{rel}: no stamp")
            rel = self.source.relpath(topic.name)
            row = known.get(rel)
            if row is None or row[1] != topic.stamp:
                sources.append(Changed(rel, topic.name, topic.path, topic.stamp, topic))
        return sources, gone

    def _commit(self, con: sqlite3.Connection, rows: dict[str, tuple[int, tuple[int, int, int]] | None] | None = None) -> None:
        """Commit; ``rows``: the file rows written (None: removed), to keep the cache of file rows
        (else it is read again)."""
        current = self._files is not None and self._files_epoch == self._epoch
        con.execute("COMMIT")
        self._epoch += 1
        if rows is None or not current:
            self._files = None
            return
        assert self._files is not None
        for path, row in rows.items():
            if row is None:
                self._files.pop(path, None)
            else:
                self._files[path] = row
        self._files_epoch = self._epoch

    def _apply(self, sources: list[Changed], gone: list[str], report: IndexReport, progress: Progress | None,
               wait: float, full: bool, embed: bool) -> None:
        """Parse the changed files, find or make their vectors, and write them in one transaction,
        in chunks when many (:mod:`memkit.index.writer`)."""
        Writer(self, report, progress, wait, full, embed, self._embed_rows, self._commit).run(sources, gone)

    def lookup_terms(self, terms: list[str]) -> dict[str, int]:
        """Term -> id for the terms the sidecar knows (for :class:`TermIds`)."""
        with self._mutex:
            return self.db.lookup_terms(terms)

    def terms_after(self, last: int) -> dict[str, int]:
        """Term -> id of every term whose id is above ``last`` (for :class:`TermIds`)."""
        with self._mutex:
            return self.db.terms_after(last)

    def _embed_pending(self, report: IndexReport, progress: Progress | None, wait: float) -> None:
        """Embed the entries a refresh without embedding left without a vector (in chunks:
        :func:`memkit.index.writer.fill_pending`)."""
        fill_pending(self, report, progress, wait, self._embed_rows, self._commit)

    def _embed_rows(self, entries: Sequence[Entry], progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(entries), self.embedder.dim), dtype=np.float32)
        for i in range(0, len(entries), EMBED_BATCH):
            batch = entries[i:i + EMBED_BATCH]
            out[i:i + len(batch)] = self.embedder.embed(entry_texts(batch))
            if progress is not None:
                progress(i + len(batch), len(entries))
        return out

    def prune_other_models(self) -> list[str]:
        """Delete the index files of other models, and this model's replaced matrices; returns
        the names of the files deleted (see :meth:`memkit.index.sidecar.Sidecar.prune_other_models`)."""
        with self._mutex:
            return self.db.prune_other_models()

    # ---- the view ---------------------------------------------------------------------------------
    def view(self, *, others: bool = True) -> IndexView:
        """All entries as arrays (see :class:`IndexView`); brought up to date when the sidecar
        changed (read again whole, or only the files that changed). A damaged index file is made
        anew from the topic files, once (see :meth:`refresh`).

        :param others: also look for writes of other connections (``PRAGMA data_version``);
            False: only this object's own writes (a search between two freshness checks)."""
        try:
            return self._current_view(others)
        except (sqlite3.DatabaseError, MatrixError) as exc:
            self._remade(exc, lambda: self._refresh(full=True))
            return self._current_view(True)

    def _current_view(self, others: bool) -> IndexView:
        with self._mutex:
            epoch = self._sync() if others or self._data_version is None else self._epoch
            if self._view is not None and not self.db.matrix.intact(self._view.matrix, len(self._view)):
                self._view = None  # its file was deleted or cut short by hand: read (and rebuilt) anew
                self._epoch += 1
                epoch = self._epoch
            if self._view is not None and self._view_epoch == epoch:
                return self._view
            current = self._view
            if current is None or current.generation != int(self.db.meta("generation") or 0):
                self._view = self._read_view(current)  # (a deleted or cut-short matrix: view makes it anew)
            self._view_epoch = epoch
            assert self._view is not None
            return self._view

    def damage(self) -> str | None:
        """What SQLite's quick check finds wrong in the index file (None: nothing, or no file);
        on a connection of its own, read-only."""
        if not self.path.is_file():
            return None
        try:
            con = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5.0)
            try:
                rows = con.execute("PRAGMA quick_check(5)").fetchall()
                found = [str(r[0]) for r in rows if r and r[0] != "ok"]
                if not found:  # the pages whole: what they hold may still not be what it says
                    found = self._row_damage(con) or self._matrix_damage(con)
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            return str(exc) if damaged(exc) else None
        return "; ".join(found) or None

    #: no value of a stored row reaches this: a row that does holds bits a disk flipped (an exponent)
    MAX_VECTOR_VALUE = 1e6

    def _matrix_damage(self, con: sqlite3.Connection) -> list[str]:
        """What is wrong with the matrix the index names: a folder in its place, shorter than its
        rows, or values no model gives (not finite, or beyond :data:`MAX_VECTOR_VALUE`)."""
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            return []
        try:
            name, rows = self.db.matrix_state(con)
            vectors = self.db.matrix.read(name, rows)
        except (KeyError, ValueError) as exc:
            return [f"it names no matrix ({exc})"]
        except (OSError, MatrixError) as exc:
            return [str(exc)]
        for start in range(0, vectors.shape[0], 65536):
            block = vectors[start:start + 65536]
            if not np.isfinite(block).all() or float(np.abs(block).max(initial=0.0)) > self.MAX_VECTOR_VALUE:
                return [f"{name} holds values no model gives (bits flipped) from row {start} on"]
        return []

    def _row_damage(self, con: sqlite3.Connection) -> list[str]:
        """What :func:`memkit.index.view.row_damage` finds wrong in the rows (the first 5)."""
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'file_data'").fetchone():
            return []
        end = int(con.execute("SELECT COALESCE(MAX(id), -1) FROM terms").fetchone()[0]) + 1
        found: list[str] = []
        for row in con.execute(self._COLUMNS):
            wrong = row_damage(row, end)
            if wrong is not None:
                found.append(wrong)
                if len(found) == 5:
                    break
        return found

    def remake(self, why: str) -> IndexReport:
        """Delete the index file and make it anew from the topic files (a damaged one)."""
        with self._mutex:
            self._rebuild(sqlite3.DatabaseError(why))
        return self.refresh(full=True)

    def _rebuild(self, why: Exception) -> None:
        """The matrix does not hold what the index says: delete both (when still the files this
        object opened) so that they are made anew."""
        log.warning("index %s: %s; rebuilding it", self.store.rel(self.path), why)
        self.db.discard_if_current()
        self._files = None
        self._view = None
        self._data_version = None
        self._epoch += 1

    def _read_view(self, old: IndexView | None) -> IndexView:
        con = self.db.connect()
        for attempt in range(5):
            con.execute("BEGIN")  # one consistent snapshot of the tables
            try:
                gen = int(self.db.meta("generation") or 0)
                matrix, rows = self.db.matrix_state(con)
                end = con.execute("SELECT MAX(row0 + n) FROM files WHERE row0 >= 0").fetchone()[0]
                if end is not None and end > rows:
                    raise MatrixError(f"files name matrix rows up to {end}, the matrix has {rows}")
                vectors = self.db.matrix.read(matrix, rows)
                view = None
                if old is not None and old.matrix == matrix and len(old) <= rows:
                    view = self._extend_view(con, old, gen, vectors)
                if view is None:
                    view = self._thaw(con, gen, matrix, vectors)
                if view is None:
                    view = self._load_view(con, gen, matrix, vectors)
                con.execute("COMMIT")
                return view
            except FileNotFoundError as exc:  # replaced by a compaction after this snapshot: read it again
                con.execute("ROLLBACK")
                if attempt == 4:  # still gone: another process made the index anew (this connection's
                    # file was discarded under it) or the matrix was deleted: view() remakes or reopens it
                    raise MatrixError(f"the matrix {matrix} is gone ({exc.strerror or exc})") from exc
                time.sleep(0.01 * (attempt + 1))
            except BaseException:
                con.execute("ROLLBACK")
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _vocab(self, con: sqlite3.Connection) -> TermIds:
        terms = int(con.execute("SELECT COUNT(*) FROM terms").fetchone()[0])
        return TermIds(self.lookup_terms, self.terms_after if terms <= VOCAB_READ_WHOLE else None)

    def _thaw(self, con: sqlite3.Connection, gen: int, matrix: str, vectors: np.ndarray) -> IndexView | None:
        """The frozen view of this matrix (:mod:`memkit.index.frozen`) with the files changed since
        it was frozen, or None (none, damaged: the view is read from SQLite)."""
        state = frozen.parse_state(self.db.meta("frozen"))
        if state is None or state[1] != matrix or self.in_memory:
            return None
        base = frozen.thaw(self.db.dir, state[0], matrix, vectors, self._vocab(con))
        if base is None:
            return None
        return self._extend_view(con, base, gen, vectors)

    def freeze_due(self) -> bool:
        """Whether :meth:`freeze` would write a new frozen view now (see :func:`memkit.index.frozen.due`)."""
        if self.in_memory:
            return False
        with self._mutex:
            return self._freeze_due(self.db.connect())

    def _freeze_due(self, con: sqlite3.Connection) -> bool:
        matrix, rows = self.db.matrix_state(con)
        return frozen.due(frozen.parse_state(self.db.meta("frozen")), matrix, rows, int(self.db.meta("entries") or 0))

    def freeze(self, ranking: frozen.Ranking | None = None, *, wait: float = 0.5, force: bool = False) -> str | None:
        """Write the frozen view of the index as it is (:mod:`memkit.index.frozen`) when it is due
        (or ``force``), holding the write lock; ``ranking`` adds the search layer's arrays. Returns
        the new folder's name; None when not due, in memory, or another writer held the lock for
        ``wait`` seconds (the next refresh tries again)."""
        if self.in_memory or not (force or self.freeze_due()):
            return None
        with self._mutex:
            try:
                con = self.db.begin(wait)
            except sqlite3.OperationalError as exc:
                log.debug("freezing %s: busy (%s)", self.path, exc)
                return None
            try:
                gen = int(self.db.meta("generation") or 0)
                matrix, rows = self.db.matrix_state(con)
                if not force and not self._freeze_due(con):
                    con.execute("ROLLBACK")  # another process froze it meanwhile
                    return None
                vectors = self.db.matrix.read(matrix, rows)
                name = frozen.write(self.db.dir, self.db.matrix.stem, con, self._COLUMNS, gen, matrix, rows,
                                   vectors, self._vocab(con), ranking)
                con.execute("INSERT OR REPLACE INTO meta VALUES ('frozen', ?)", (f"{name}|{matrix}|{rows}",))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            self._epoch += 1
            frozen.remove_unused(self.db.dir, self.db.matrix.stem, keep=name)
            return name

    _COLUMNS = ("SELECT f.id, f.path, f.topic, f.updated, f.gen, f.n, f.row0, d.terms, d.counts, d.lines, d.days, "
                "d.hashes, d.body FROM files f LEFT JOIN file_data d ON d.file_id = f.id")

    def _load_view(self, con: sqlite3.Connection, gen: int, matrix: str, vectors: np.ndarray) -> IndexView:
        builder = ViewBuilder()
        for row in con.execute(self._COLUMNS + " ORDER BY f.row0, f.id"):
            builder.add(row)
        view = builder.view(gen, matrix, vectors, self._vocab(con))
        del builder
        if len(view) >= TRIM_MIN_ROWS:
            trim_memory()
        return view

    def _extend_view(self, con: sqlite3.Connection, old: IndexView, gen: int, vectors: np.ndarray) -> IndexView | None:
        """``old`` with the files changed since: their old rows dead, their new rows (appended to
        the matrix after ``old``'s) added; None when they are not all after ``old``'s rows."""
        slot_of = old.slot_index()
        # every file the view holds was written at its generation or before: the others are new
        # or changed; a file gone shows in the count (else every row is read)
        rows = con.execute("SELECT id, gen, row0 FROM files WHERE gen > ?", (old.generation,)).fetchall()
        total = con.execute("SELECT COUNT(*) FROM files").fetchone()[0]
        if total != len(slot_of) + sum(fid not in slot_of for fid, _, _ in rows):
            rows = con.execute("SELECT id, gen, row0 FROM files").fetchall()
        current = {fid for fid, _, _ in rows} if len(rows) == total else None
        changed = [fid for fid, g, _ in rows if fid not in slot_of or old.slot_gen[slot_of[fid]] != g]
        removed = [fid for fid in slot_of if fid not in current] if current is not None else []
        if not changed and not removed and len(old) == vectors.shape[0]:  # nothing a search sees changed
            old.generation = gen
            return old
        fresh = set(changed)
        if any(0 <= r0 < len(old) for fid, _, r0 in rows if fid in fresh):
            return None
        builder = ViewBuilder.extending(old)
        for f in changed + removed:
            if f in slot_of:
                builder.kill(slot_of[f])
        if changed:
            marks = ",".join("?" * len(changed))
            for row in con.execute(self._COLUMNS + f" WHERE f.id IN ({marks}) ORDER BY f.row0, f.id", changed):
                builder.add(row)
        return builder.view(gen, old.matrix, vectors, old.vocab.forget_unknown())

    def vectors_for(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these entry hashes (the ones the sidecar has)."""
        with self._mutex:
            found = self.db.known_vectors(hashes)
        return {h: np.frombuffer(v, dtype=np.float32).copy() for h, v in found.items()}
