"""The embedding sidecar: one SQLite file per model under ``.memkit/index/``, and its in-memory view.

Layout (derived data: delete it any time, it is rebuilt)::

    .memkit/index/<model-slug>-<dim>.sqlite3
        meta       schema version, model name, dimension, generation (bumped by every write),
                   entries (their count), pending (entries indexed without vectors)
        files      one row per topic file: path, topic, size, mtime_ns, inode, updated date, error,
                   gen (the generation that wrote it), n (its entries), pending (vectors missing)
        file_data  one row per topic file, everything a search loads, as a few blobs: the entries'
                   float16 unit vectors in file order, their search terms as int32 term ids, first
                   lines and dates as int32, hashes, and their texts, kinds and tags (JSON)
        entries    one row per entry: (file, position) -> its hash (finds a known text's vector)
        terms      search term -> id (append-only: an id never changes meaning)

**Incremental.** A refresh lists topics/ once (one ``scandir`` and a stat per file) and compares
each file's (size, mtime_ns, inode) with its ``files`` row; only changed files are parsed again.
:meth:`Index.refresh` with ``paths`` checks only the files named (what a process that just wrote a
file calls). Vectors are keyed by the hash of an entry's normalised text, so an edited line
re-embeds only itself and a line moved between files is not re-embedded at all.

**Atomic and concurrent.** Each refresh is one SQLite transaction (WAL journal): a crash leaves
the previous state, a reader never sees half a refresh, and concurrent writers queue on SQLite's
own lock. A reader knows whether its in-memory view is current from ``PRAGMA data_version`` (no
query of its own) and the ``generation`` counter.

**Never trusted.** A file that is not a readable memkit index of this schema, model and dimension
(damaged, foreign, another version, a folder in its place…) is deleted, with its journal files,
and rebuilt: it is derived data. A vault where nothing can be written (a read-only mount) is
indexed in memory instead.

**The view.** :meth:`Index.view` loads every entry into arrays (the first ``PREFIX_DIMS``
dimensions of the float32 unit vectors and the rest as two contiguous arrays, the search terms as
ids, the columns a hit shows) from the ``file_data`` rows: a few blobs per file, no work per
entry. When files change, the next view reads only their rows: their entries are appended and
their old rows marked dead (:attr:`IndexView.live`), until dead and appended rows reach a quarter
of the view and it is loaded whole again.
"""
from __future__ import annotations

import ctypes
import itertools
import json
import logging
import os
import re
import shutil
import sqlite3
import stat
import threading
import time
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .embed import Embedder
from .errors import MemkitError, TopicNotFound, TopicParseError
from .names import topic_relpath
from .store import STATE_DIR, Store, TopicFile
from .text import terms as text_terms
from .topic import Entry, Topic, read_topic

log = logging.getLogger("memkit")

__all__ = ["Index", "IndexReport", "IndexView", "TermIds", "PREFIX_DIMS"]

SCHEMA = 2
EMBED_BATCH = 2048
WRITE_WAIT_S = 30.0  #: how long a refresh waits for another process's write, by default
INDEX_DIR = "index"
PREFIX_DIMS = 64  #: the view keeps the first dimensions of every vector as their own array (the ranker's scan)
TERM_CACHE_MAX = 500_000  #: term ids a writer keeps (then forgets them all)
OWN_ROWS_MAX = 64  #: a refresh of this many files at most reads their old vectors from their own rows first
THREAD_MIN_ENTRIES = 4096  #: a refresh embedding this many entries embeds in a thread while it parses
RELOAD_SHARE = 0.25  #: a view is loaded whole again once dead plus appended rows would pass this share
TRIM_MIN_ROWS = 20_000  #: after loading a view this large, freed memory is given back (trim_memory)
VOCAB_LOAD_MAX = 100_000  #: a view reads a vocabulary of at most this many terms whole (else term by term)
COMPACT_MIN_ROWS = 50_000  #: from this many entries a view keeps the dimensions after PREFIX_DIMS as bfloat16
_HASH_LEN = 40  # sha1 hex digest
NO_DAY = -(2 ** 31)  #: no own date
_EPOCH = date(1970, 1, 1).toordinal()
_LINEAGE = itertools.count(1)

Progress = Callable[[int, int], None]  # (done, total) entries embedded

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, updated TEXT NOT NULL,
    error TEXT, gen INTEGER NOT NULL, n INTEGER NOT NULL, pending INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS file_data (
    file_id INTEGER PRIMARY KEY, vecs BLOB NOT NULL, terms BLOB NOT NULL, counts BLOB NOT NULL,
    lines BLOB NOT NULL, days BLOB NOT NULL, hashes TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    file_id INTEGER NOT NULL, pos INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (file_id, pos)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_hash ON entries (hash);
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
"""


@dataclass
class IndexReport:
    """What an index run did."""

    entries: int = 0
    files: int = 0
    changed_files: int = 0
    new: int = 0  #: entries embedded
    reused: int = 0  #: entries of changed files whose vectors were already known
    removed: int = 0  #: entries that vanished
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    rebuilt_model: bool = False  #: no index existed for this model yet
    busy: bool = False  #: another process was writing the sidecar for longer than the refresh would wait
    model: str = ""  #: the name of the model the vectors are from
    dim: int = 0  #: their dimension

    def to_dict(self) -> dict[str, object]:
        """As ``memkit index --json`` prints it."""
        return {"entries": self.entries, "files": self.files, "changed_files": self.changed_files,
                "new": self.new, "reused": self.reused, "removed": self.removed,
                "seconds": round(self.seconds, 3), "errors": list(self.errors),
                "model": self.model, "dim": self.dim}

    def summary(self) -> str:
        text = (f"indexed {self.entries:,} entries in {self.seconds:.1f} s: "
                f"{self.new:,} new, {self.removed:,} removed")
        if self.reused:
            text += f", {self.reused:,} reused"
        return text


class TermIds:
    """Search term -> term id, from the sidecar's ``terms`` table. A vocabulary of at most
    ``VOCAB_LOAD_MAX`` terms is read whole when first needed (then only the terms added since);
    a larger one is looked up term by term. Term ids never change meaning, so an id learnt once
    stays right; an unknown term is asked again after the next change of the view.

    :param lookup: term -> id of the terms given (those the sidecar knows).
    :param after: term -> id of every term whose id is above the one given; None: look up only.
    """

    def __init__(self, lookup: Callable[[list[str]], dict[str, int]],
                 after: Callable[[int], dict[str, int]] | None = None, known: dict[str, int] | None = None,
                 loaded: int = -1) -> None:
        self._lookup = lookup
        self._after = after
        self._known: dict[str, int] = dict(known or {})
        self._loaded = loaded  # ids up to this one are all in _known (with ``after``)

    def ids(self, terms: Sequence[str]) -> list[int]:
        """The id of each term (-1: no entry ever held it)."""
        known = self._known
        missing = [t for t in dict.fromkeys(terms) if t not in known]
        if missing:
            if self._after is not None:
                found = self._after(self._loaded)
                known.update(found)
                self._loaded = max(found.values(), default=self._loaded)
            else:
                found = self._lookup(missing)
            for t in missing:
                known[t] = found.get(t, -1)
        return [known[t] for t in terms]

    def get(self, term: str, default: int = -1) -> int:
        tid = self.ids([term])[0]
        return default if tid < 0 else tid

    def forget_unknown(self) -> "TermIds":
        """A copy that asks again for the terms not found so far (after the view changed)."""
        return TermIds(self._lookup, self._after, {t: i for t, i in self._known.items() if i >= 0}, self._loaded)


@dataclass(eq=False)
class IndexView:
    """Every entry of the vault as parallel arrays: the entries of a file together, in their
    order in the file. Rows of files that changed since the view was loaded whole stay in place,
    dead (:attr:`live` False), and the files' new entries follow at the end."""

    generation: int
    files: list[str]  #: vault-relative path per file slot
    topics: list[str]  #: topic name per file slot
    file_ids: np.ndarray  #: int32, per entry: its file slot
    lines: np.ndarray  #: int32, first line per entry
    ids: np.ndarray  #: bytes ``S8``: each entry's id (the first 8 hex digits of its hash)
    texts: list[str]
    kinds: list[str | None]
    tags: list[tuple[str, ...]]
    own_days: np.ndarray  #: int32 per entry: its own ``(YYYY-MM-DD)`` as days since 1970 (NO_DAY: none)
    dates: np.ndarray  #: ``datetime64[D]`` per entry: its own date, else its topic's updated date
    prefix: np.ndarray  #: (n, PREFIX_DIMS) float32: the first dimensions of the unit vectors
    rest: np.ndarray  #: (n, dim - PREFIX_DIMS): the other dimensions, float32 (or bfloat16 as uint16 in a large view)
    term_ids: np.ndarray  #: int32, the search terms of every entry, concatenated
    term_offsets: np.ndarray  #: int64 (n + 1,): entry i's terms are term_ids[offsets[i]:offsets[i + 1]]
    vocab: TermIds  #: search term -> id
    live: np.ndarray | None = None  #: bool per entry; None: every row is live
    lineage: int = 0  #: views of one lineage extend each other: a later one holds an earlier one's rows first
    loaded_rows: int = 0  #: rows when the view was last loaded whole
    dead_rows: int = 0
    slot_file: list[int] = field(default_factory=list)  #: sidecar file id per slot (-1: dead)
    slot_gen: list[int] = field(default_factory=list)
    slot_rows: list[tuple[int, int]] = field(default_factory=list)  #: (first row, count) per slot
    capacity: tuple[np.ndarray, np.ndarray] | None = None  #: the arrays ``prefix``/``rest`` are the start of

    def __len__(self) -> int:
        return int(self.file_ids.shape[0])

    @property
    def dim(self) -> int:
        return int(self.prefix.shape[1] + self.rest.shape[1])

    @property
    def vectors(self) -> np.ndarray:
        """The full (n, dim) float32 vectors (a copy: the view keeps them split)."""
        rest = self.rest if self.rest.dtype != np.uint16 else (self.rest.astype(np.uint32) << 16).view(np.float32)
        return np.hstack([self.prefix, rest]) if rest.shape[1] else self.prefix.copy()

    odd_dates: dict[int, str] = field(default_factory=dict)  #: own dates that are no real day ("2024-13-45")

    def is_live(self, i: int) -> bool:
        return self.live is None or bool(self.live[i])

    def own_dates_at(self, rows: np.ndarray) -> list[str | None]:
        """:meth:`own_date` of each of ``rows``."""
        days = self.own_days[rows]
        text = np.datetime_as_string(np.where(days == NO_DAY, 0, days).astype("M8[D]")).tolist()
        return [self.odd_dates.get(int(r)) if d == NO_DAY else t for r, d, t in zip(rows.tolist(), days.tolist(), text)]

    def own_date(self, i: int) -> str | None:
        """Entry ``i``'s own ``(YYYY-MM-DD)`` as written, or None."""
        day = int(self.own_days[i])
        if day == NO_DAY:
            return self.odd_dates.get(i)
        return str(np.datetime64(day, "D"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "model"


def _day(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).date().isoformat()


@dataclass
class _Source:
    """A topic file to (re)index: where it is, its stamp, and its parse when already made."""

    rel: str
    name: str
    path: Path
    stamp: tuple[int, int, int]
    topic: Topic | None = None
    error: str | None = None


@dataclass
class _Parsed:
    source: _Source
    topic: Topic | None
    error: str | None
    terms: list[list[str]]


class Index:
    """The embedding index of a vault for one model (see the module docstring).

    :param store: the vault's files.
    :param embedder: the model; its ``name`` and ``dim`` select the sidecar file.
    """

    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder
        self.dir = store.state_dir / INDEX_DIR
        self.path = self.dir / f"{_slug(embedder.name)}-{embedder.dim}.sqlite3"
        self.in_memory = False  #: True when the vault cannot be written (the index lives in memory)
        self.last_check = 0.0  #: time.monotonic() of the last freshness check of every file
        self._con: sqlite3.Connection | None = None
        self._mutex = threading.RLock()  # one connection, shared by this process's threads
        self._files: dict[str, tuple[int, tuple[int, int, int]]] | None = None  # path -> (id, stamp)
        self._files_epoch = -1
        self._files_gen = 0  # the highest files.gen the cached rows have seen
        self._view: IndexView | None = None
        self._view_epoch = -1
        self._epoch = 0  # bumped whenever the sidecar may have changed (PRAGMA data_version, own writes)
        self._data_version: int | None = None
        self._created = False
        self._term_cache: dict[str, int] = {}  # term -> id, as committed to this connection's file

    def __repr__(self) -> str:
        return f"Index({str(self.path)!r})"

    # ---- the database ----------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._con is not None:
            return self._con
        try:
            self._con = self._open_file()
        except (sqlite3.Error, OSError) as exc:
            log.debug("index %s not writable (%s): indexing in memory", self.path, exc)
            self._con = self._open_memory()
        return self._con

    def _open_file(self) -> sqlite3.Connection:
        self._check_state_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            if not stat.S_ISREG(os.lstat(self.path).st_mode):  # a folder, a link, a FIFO: not ours
                log.info("index %s is not a file: rebuilding it", self.store.rel(self.path))
                self._discard()
        except FileNotFoundError:
            pass
        for attempt in (1, 2):
            existed = self.path.exists()
            con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            try:
                if self._prepare(con, existed):
                    self._created = not existed
                    return con
            except sqlite3.DatabaseError as exc:
                con.close()
                if isinstance(exc, sqlite3.OperationalError) and _read_only(exc):
                    raise
                if attempt == 2:
                    raise
                log.info("index %s is unusable (%s): rebuilding it", self.store.rel(self.path), exc)
                self._discard()
                continue
            con.close()  # another schema, model or dimension: rebuilt
            self._discard()
        raise sqlite3.DatabaseError("cannot create the index")  # pragma: no cover

    def _open_memory(self) -> sqlite3.Connection:
        """A private in-memory index, seeded from a current sidecar when one can be read."""
        self.in_memory = True
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        try:
            if self.path.is_file():
                disk = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
                try:
                    disk.backup(con)
                finally:
                    disk.close()
                if self._prepare(con, True):
                    return con
        except sqlite3.Error:
            pass
        con.close()
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._prepare(con, False)
        return con

    def _prepare(self, con: sqlite3.Connection, existed: bool) -> bool:
        """Set up ``con``; False when it holds another schema, model or dimension."""
        con.execute("PRAGMA busy_timeout = 30000")
        if con.execute("PRAGMA database_list").fetchone()[2]:  # a file: a WAL journal, cheap syncs
            if con.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
                con.execute("PRAGMA journal_mode = DELETE")
            con.execute("PRAGMA synchronous = NORMAL")
        if existed:
            try:
                meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            except sqlite3.OperationalError:
                meta = {}
            want = {"schema": str(SCHEMA), "model": self.embedder.name, "dim": str(self.embedder.dim)}
            if any(meta.get(k) != v for k, v in want.items()):
                if meta:
                    log.info("index %s was made by %s (%s-d): building a new one for %s (%d-d)",
                             self.store.rel(self.path), meta.get("model"), meta.get("dim"),
                             self.embedder.name, self.embedder.dim)
                return False
            return True
        con.executescript(_SCHEMA_SQL)
        con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [
            ("schema", str(SCHEMA)), ("model", self.embedder.name), ("dim", str(self.embedder.dim)),
            ("generation", "0"), ("entries", "0"), ("pending", "0")])
        return True

    def _check_state_dir(self) -> None:
        """``.memkit`` must be a real folder inside the vault: never write the index elsewhere."""
        state = self.store.state_dir
        if state.is_symlink():
            raise MemkitError(f"{STATE_DIR} is a symlink (to {os.readlink(state)}); memkit keeps derived data "
                              f"only inside the vault: remove the link (it is rebuilt)")
        for folder in (state, self.dir):
            try:
                st = os.lstat(folder)
            except FileNotFoundError:
                continue
            if not stat.S_ISDIR(st.st_mode):
                raise OSError(f"{self.store.rel(folder)} is not a folder")

    def _discard(self) -> None:
        """Remove an unusable sidecar (and its journal files); it is derived data."""
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = Path(str(self.path) + suffix)
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                pass

    def close(self) -> None:
        """Close the database connection (a later call reopens it)."""
        with self._mutex:
            if self._con is not None:
                self._con.close()
                self._con = None
                self._files = None
                self._view = None
                self._term_cache = {}
                self._data_version = None
                self._epoch += 1

    def _sync(self) -> int:
        """The current epoch: it moves when another connection committed (``PRAGMA
        data_version``, no table read) or this one wrote; caches are kept per epoch."""
        dv = self._connect().execute("PRAGMA data_version").fetchone()[0]
        if dv != self._data_version:
            self._data_version = dv
            self._epoch += 1
        return self._epoch

    def generation(self) -> int:
        """The sidecar's write counter (bumped by every refresh that changed something)."""
        with self._mutex:
            return int(self._meta("generation") or 0)

    def _file_rows(self) -> dict[str, tuple[int, tuple[int, int, int]]]:
        """path -> (file id, stamp) of every indexed file; after another writer's commit only the
        rows it wrote are read (``gen`` above the last seen), unless files went away."""
        epoch = self._sync()
        if self._files is None or epoch != self._files_epoch:
            con = self._connect()
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
    def stale(self, files: Sequence[TopicFile] | None = None) -> tuple[list[TopicFile], list[str]]:
        """(topic files whose row is missing or out of date, indexed paths whose file is gone)."""
        files = self.store.topic_files() if files is None else files
        with self._mutex:
            known = self._file_rows()
            changed = []
            current = set()
            for tf in files:
                rel = topic_relpath(tf.name)  # what Store.rel gives for topics/NAME.md, ~50x cheaper
                current.add(rel)
                row = known.get(rel)
                if row is None or row[1] != tf.stamp:
                    changed.append(tf)
            gone = [p for p in known if p not in current]
        return changed, gone

    def indexed_paths(self) -> list[str]:
        """The topic files the sidecar holds (vault-relative paths)."""
        with self._mutex:
            return list(self._file_rows())

    def file_errors(self) -> list[str]:
        """What is wrong with the indexed topic files (a merge conflict, bad frontmatter: read
        anyway, memkit will not write to them), one message each."""
        with self._mutex:
            return [str(e) for (e,) in self._connect().execute("SELECT error FROM files WHERE error IS NOT NULL")]

    def is_stale(self) -> bool:
        """Whether a topic file changed, appeared or vanished since the last refresh."""
        changed, gone = self.stale()
        return bool(changed or gone)

    # ---- refreshing -----------------------------------------------------------------------------
    def refresh(self, *, full: bool = False, progress: Progress | None = None, wait: float = WRITE_WAIT_S,
                embed: bool = True, paths: Iterable[str | os.PathLike[str]] | None = None) -> IndexReport:
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
        """
        started = time.perf_counter()
        report = IndexReport(model=self.embedder.name, dim=self.embedder.dim)
        with self._mutex:
            self._connect()
            report.rebuilt_model = self._created
            self._created = False
            sources: list[_Source] | None = None
            gone: list[str] = []
            if paths is not None and not full:
                try:
                    sources, gone = self._stale_paths(paths)
                except (MemkitError, OSError) as exc:  # an odd name or file: check everything instead
                    log.debug("refresh of %s: %s; checking every file", paths, exc)
                    sources = None
            if sources is None:
                files = self.store.topic_files()
                if full:
                    current = {topic_relpath(tf.name) for tf in files}
                    changed, gone = list(files), [p for p in self._file_rows() if p not in current]
                else:
                    changed, gone = self.stale(files)
                sources = [_Source(topic_relpath(tf.name), tf.name, tf.path, tf.stamp) for tf in changed]
                report.files = len(files)
                self.last_check = time.monotonic()
            else:
                report.files = -1
            try:
                if sources or gone:
                    self._apply(sources, gone, report, progress, wait, full, embed)
                if embed and self._meta("pending") == "1":
                    self._embed_pending(report, progress, wait)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                log.debug("index %s busy (%s): left for the next refresh", self.path, exc)
                report.busy = True
            if report.files < 0:
                report.files = int(self._connect().execute("SELECT COUNT(*) FROM files").fetchone()[0])
            report.entries = int(self._meta("entries") or 0)
        report.seconds = time.perf_counter() - started
        return report

    def _stale_paths(self, paths: Iterable[str | os.PathLike[str]]) -> tuple[list[_Source], list[str]]:
        """The named topic files that changed (parsed already), and those that are gone."""
        known = self._file_rows()
        sources, gone = [], []
        for given in paths:
            name = Path(given).stem
            rel = topic_relpath(name)
            row = known.get(rel)
            if row is not None:
                try:  # unchanged since indexed: nothing to read
                    st = os.stat(self.store.topic_path(name))
                    if (st.st_size, st.st_mtime_ns, st.st_ino) == row[1]:
                        continue
                except OSError:
                    pass
            try:
                topic = self.store.topic(name)  # the store decides what is a topic file
            except TopicNotFound:
                if rel in known:
                    gone.append(rel)
                continue
            if topic.stamp is None:
                raise MemkitError(f"{rel}: no stamp")
            rel = topic_relpath(topic.name)
            row = known.get(rel)
            if row is None or row[1] != topic.stamp:
                sources.append(_Source(rel, topic.name, topic.path, topic.stamp, topic))
        return sources, gone

    def _meta(self, key: str) -> str | None:
        row = self._connect().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _begin(self, wait: float) -> sqlite3.Connection:
        """Start a write transaction, waiting at most ``wait`` seconds for another writer."""
        con = self._connect()
        con.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        try:
            con.execute("BEGIN IMMEDIATE")
        finally:
            con.execute("PRAGMA busy_timeout = 30000")
        return con

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

    def _parse(self, source: _Source) -> _Parsed:
        topic, error = source.topic, source.error
        if topic is None and error is None:
            try:
                topic = read_topic(source.path, source.name, source.rel)
                self.store.warn_problems(topic)
            except TopicParseError as exc:
                self.store.warn_once(f"{exc}; skipped")
                error = str(exc)
        if topic is not None:  # read anyway, reported: a file memkit will not write to until it is fixed
            error = "\n".join(p.message for p in topic.problems if p.blocks_writes) or None  # one per line
        terms = [text_terms(e.text) for e in topic.entries] if topic is not None else []
        return _Parsed(source, topic, error, terms)

    def _apply(self, sources: list[_Source], gone: list[str], report: IndexReport, progress: Progress | None,
               wait: float, full: bool, embed: bool) -> None:
        """Parse the changed files, find or make their vectors, and write them in one transaction.
        Large refreshes embed in a worker thread while the files are still being parsed."""
        dim = self.embedder.dim
        parsed: list[_Parsed] = []
        vectors: dict[str, bytes] = {}  # hash -> float16 row
        queued: list[Entry] = []
        seen: set[str] = set()
        unembedded: list[Entry] = []
        jobs: list[tuple[list[Entry], Future[np.ndarray]]] = []
        worker: ThreadPoolExecutor | None = None
        total_bytes = sum(s.stamp[0] for s in sources) or 1
        done_bytes = 0
        embedded = 0

        def estimate() -> int:
            """Entries to embed in all: those found so far, scaled by the bytes still to parse."""
            return max(len(unembedded), int(len(unembedded) * total_bytes / max(done_bytes, 1)))

        def tell(final: bool = False) -> None:
            if progress is not None:
                progress(embedded, max(embedded, len(unembedded) if final else estimate()))

        batch_of: dict[str, int] = {}  # hash -> number of the worker's batch embedding it
        taken = 0  # worker batches collected so far

        def collect(until: int) -> None:
            """Take the worker's batches up to number ``until`` (waiting), and any finished one."""
            nonlocal embedded, taken
            while jobs and (taken <= until or jobs[0][1].done()):
                batch, job = jobs.pop(0)
                vectors.update(zip((e.hash for e in batch), _f16_rows(job.result())))
                embedded += len(batch)
                taken += 1
                tell(final=not jobs and done_bytes >= total_bytes)

        def ready(entries: list[Entry]) -> None:
            """Wait until the vectors of ``entries`` are made (the worker embeds in order)."""
            if jobs:
                collect(max((batch_of.get(e.hash, -1) for e in entries), default=-1))

        def flush() -> None:
            nonlocal worker, embedded
            batch = queued[:]
            queued.clear()
            if not full and batch:
                batch = [e for e in batch if e.hash not in vectors]  # in the file's own old row
                found = self._known_vectors([e.hash for e in batch]) if batch else {}
                vectors.update(found)
                batch = [e for e in batch if e.hash not in found]
            unembedded.extend(batch)
            if not embed or not batch:
                return
            for i in range(0, len(batch), EMBED_BATCH):
                part = batch[i:i + EMBED_BATCH]
                if worker is None and len(sources) > 1 and estimate() >= THREAD_MIN_ENTRIES:
                    worker = ThreadPoolExecutor(1, thread_name_prefix="memkit-embed")
                if worker is not None:
                    number = taken + len(jobs)
                    batch_of.update((e.hash, number) for e in part)
                    jobs.append((part, worker.submit(self._embed_rows, part)))
                else:
                    vectors.update(zip((e.hash for e in part), _f16_rows(self._embed_rows(part))))
                    embedded += len(part)
                    tell(final=done_bytes >= total_bytes)
            collect(-1)

        if not full and len(sources) <= OWN_ROWS_MAX:  # an edited file's unchanged lines: from its own row
            vectors.update(self._row_vectors([s.rel for s in sources]))
        try:
            for source in sources:
                item = self._parse(source)
                parsed.append(item)
                done_bytes += source.stamp[0]
                if item.error is not None:
                    report.errors.append(item.error)
                for e in item.topic.entries if item.topic is not None else ():
                    if e.hash not in seen:
                        seen.add(e.hash)
                        queued.append(e)
                if len(queued) >= EMBED_BATCH:
                    flush()
            flush()
            report.new = len(unembedded) if embed else 0
            pending = not embed and bool(unembedded)
            # written while the worker still embeds: each file waits for its own vectors only
            self._write(parsed, gone, vectors, report, wait, full, pending, dim, ready)
        finally:
            if worker is not None:
                worker.shutdown(wait=True, cancel_futures=True)
        report.reused = sum(len(p.topic.entries) for p in parsed if p.topic is not None) - len(unembedded)
        report.changed_files = len(parsed)

    def _write(self, parsed: list[_Parsed], gone: list[str], vectors: dict[str, bytes], report: IndexReport,
               wait: float, full: bool, pending: bool, dim: int, ready: Callable[[list[Entry]], None]) -> None:
        con = self._begin(wait)
        try:
            gen = int(self._meta("generation") or 0) + 1
            count = int(self._meta("entries") or 0)
            replaced = [p.source.rel for p in parsed] + gone
            old: dict[str, int] = {}  # hash -> entries holding it among the rows replaced
            ids: dict[str, int] = {}
            before: dict[int, list[str]] = {}  # file id -> its entries' hashes, in order, as indexed
            if full:
                for (hashes,) in con.execute("SELECT hashes FROM file_data"):
                    for h in _split_hashes(hashes):
                        old[h] = old.get(h, 0) + 1
                con.execute("DROP INDEX IF EXISTS entries_hash")  # rebuilt once at the end: faster than kept
                con.execute("DELETE FROM entries")
                con.execute("DELETE FROM file_data")
                ids = {p: i for p, i in con.execute("SELECT path, id FROM files")}
                con.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
                count = 0
            else:
                for path in replaced:
                    row = con.execute("SELECT f.id, f.n, d.hashes FROM files f LEFT JOIN file_data d "
                                      "ON d.file_id = f.id WHERE f.path = ?", (path,)).fetchone()
                    if row is None:
                        continue
                    fid, n, hashes = row
                    ids[path] = fid
                    count -= n
                    if hashes is None:  # no blobs (a damaged row): its entries rows go too
                        con.execute("DELETE FROM entries WHERE file_id = ?", (fid,))
                    before[fid] = _split_hashes(hashes or "")
                    for h in before[fid]:
                        old[h] = old.get(h, 0) + 1
                for path in gone:
                    fid = ids.get(path)
                    if fid is not None:
                        con.execute("DELETE FROM entries WHERE file_id = ?", (fid,))
                        con.execute("DELETE FROM file_data WHERE file_id = ?", (fid,))
                        con.execute("DELETE FROM files WHERE id = ?", (fid,))
            term_id = self._term_ids(con, {t for p in parsed for ts in p.terms for t in ts})
            written: dict[str, tuple[int, tuple[int, int, int]] | None] = dict.fromkeys(gone)
            zero = bytes(2 * dim)
            new: dict[str, int] = {}
            for item in parsed:
                src, topic = item.source, item.topic
                entries = topic.entries if topic is not None else []
                updated = topic.updated().date().isoformat() if topic is not None else _day(src.stamp[1])
                ready(entries)
                rows = [vectors.get(e.hash) for e in entries]
                missing = any(r is None for r in rows)
                values = (src.name, *src.stamp, updated, item.error, gen, len(entries), int(missing))
                fid = ids.get(src.rel)
                if fid is None:
                    fid = con.execute("INSERT INTO files (topic, size, mtime_ns, ino, updated, error, gen, n, pending, "
                                      "path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*values, src.rel)).lastrowid
                else:
                    con.execute("UPDATE files SET topic = ?, size = ?, mtime_ns = ?, ino = ?, updated = ?, error = ?, "
                                "gen = ?, n = ?, pending = ? WHERE id = ?", (*values, fid))
                assert fid is not None
                written[src.rel] = (fid, src.stamp)
                tids = array("i")
                counts = array("i")
                for ts in item.terms:
                    tids.extend([term_id[t] for t in ts])
                    counts.append(len(ts))
                days = array("i", [_days(e.date) for e in entries])
                # texts; kinds, tags and dates that are no real day only where an entry has them
                body = json.dumps([[e.text for e in entries], {p: e.kind for p, e in enumerate(entries) if e.kind},
                                   {p: e.tags for p, e in enumerate(entries) if e.tags},
                                   {p: e.date for p, e in enumerate(entries) if e.date and days[p] == NO_DAY}],
                                  ensure_ascii=False, separators=(",", ":"))
                con.execute("INSERT OR REPLACE INTO file_data VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (
                    fid, b"".join(zero if r is None else r for r in rows), tids.tobytes(), counts.tobytes(),
                    array("i", [e.line for e in entries]).tobytes(), days.tobytes(), "".join(e.hash for e in entries),
                    body))
                # only the positions whose text changed (an append writes one row)
                was = before.get(fid, [])
                now = [e.hash for e in entries]
                con.executemany("UPDATE entries SET hash = ? WHERE file_id = ? AND pos = ?",
                                [(h, fid, pos) for pos, (h, w) in enumerate(zip(now, was)) if h != w])
                if len(was) > len(now):
                    con.execute("DELETE FROM entries WHERE file_id = ? AND pos >= ?", (fid, len(now)))
                con.executemany("INSERT INTO entries VALUES (?, ?, ?)",
                                [(fid, pos, h) for pos, h in enumerate(now[len(was):], start=len(was))])
                count += len(entries)
                for e in entries:
                    new[e.hash] = new.get(e.hash, 0) + 1
            if full:
                con.execute("CREATE INDEX IF NOT EXISTS entries_hash ON entries (hash)")
                orphans = [h for h in old if h not in new]
            else:  # a text no entry holds any more is gone (its vector with it)
                orphans = [h for h in old if h not in new and
                           con.execute("SELECT 1 FROM entries WHERE hash = ? LIMIT 1", (h,)).fetchone() is None]
            report.removed = sum(old[h] for h in orphans)
            if pending:
                con.execute("INSERT OR REPLACE INTO meta VALUES ('pending', '1')")
            con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                            [("generation", str(gen)), ("entries", str(count))])
            self._commit(con, None if full else written)
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _term_ids(self, con: sqlite3.Connection, terms: set[str]) -> dict[str, int]:
        """The ids of ``terms``, adding the new ones (inside the write transaction)."""
        if not terms:
            return {}
        cache = self._term_cache  # committed terms only: an id never changes meaning
        if not cache and len(terms) < 20_000:  # a first small write: the whole vocabulary when small
            if int(con.execute("SELECT COUNT(*) FROM terms").fetchone()[0]) <= VOCAB_LOAD_MAX:
                cache.update(con.execute("SELECT term, id FROM terms"))
        out = {t: cache[t] for t in terms if t in cache}
        ask = [t for t in terms if t not in out]
        if len(ask) > 20_000:
            wanted = set(ask)
            found = {t: i for t, i in con.execute("SELECT term, id FROM terms") if t in wanted}
        else:
            found = self._lookup_terms(con, ask) if ask else {}
        if len(cache) + len(found) > TERM_CACHE_MAX:
            cache.clear()
        cache.update(found)
        out.update(found)
        new = sorted(t for t in terms if t not in out)
        if new:
            start = (con.execute("SELECT MAX(id) FROM terms").fetchone()[0] or 0) + 1
            con.executemany("INSERT INTO terms VALUES (?, ?)", [(start + i, t) for i, t in enumerate(new)])
            out.update((t, start + i) for i, t in enumerate(new))
        return out

    @staticmethod
    def _lookup_terms(con: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(terms), 500):
            chunk = terms[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.update(con.execute(f"SELECT term, id FROM terms WHERE term IN ({marks})", chunk))
        return out

    def lookup_terms(self, terms: list[str]) -> dict[str, int]:
        """Term -> id for the terms the sidecar knows (for :class:`TermIds`)."""
        with self._mutex:
            con = self._connect()
            if len(terms) > 16:
                return self._lookup_terms(con, terms)
            out = {}
            for term in terms:  # one statement, compiled once and cached: a few microseconds each
                row = con.execute("SELECT id FROM terms WHERE term = ?", (term,)).fetchone()
                if row is not None:
                    out[term] = row[0]
            return out

    def terms_after(self, last: int) -> dict[str, int]:
        """Term -> id of every term whose id is above ``last`` (for :class:`TermIds`)."""
        with self._mutex:
            return dict(self._connect().execute("SELECT term, id FROM terms WHERE id > ?", (last,)))

    def _row_vectors(self, paths: Sequence[str]) -> dict[str, bytes]:
        """hash -> float16 row of the entries these files held when last indexed (complete rows)."""
        con = self._connect()
        width = 2 * self.embedder.dim
        out: dict[str, bytes] = {}
        for path in paths:
            row = con.execute("SELECT d.vecs, d.hashes FROM files f JOIN file_data d ON d.file_id = f.id "
                              "WHERE f.path = ? AND f.pending = 0", (path,)).fetchone()
            if row is None:
                continue
            vecs, hashes = row
            hashes = _split_hashes(hashes)
            if len(vecs) == width * len(hashes):
                out.update((h, vecs[i * width:(i + 1) * width]) for i, h in enumerate(hashes))
        return out

    def _known_vectors(self, hashes: Sequence[str]) -> dict[str, bytes]:
        """The float16 rows the sidecar holds for these entry hashes (from files whose vectors
        are complete), found through ``entries`` and read from each file's blob once."""
        con = self._connect()
        width = 2 * self.embedder.dim
        where: dict[int, list[tuple[str, int]]] = {}
        wanted = list(dict.fromkeys(hashes))
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for h, fid, pos in con.execute(f"SELECT e.hash, e.file_id, e.pos FROM entries e JOIN files f ON "
                                           f"f.id = e.file_id WHERE f.pending = 0 AND e.hash IN ({marks})", chunk):
                where.setdefault(fid, []).append((h, pos))
        out: dict[str, bytes] = {}
        for fid, items in where.items():
            row = con.execute("SELECT vecs, n FROM file_data d JOIN files f ON f.id = d.file_id WHERE d.file_id = ?",
                              (fid,)).fetchone()
            if row is None or len(row[0]) != width * row[1]:
                continue
            blob = row[0]
            for h, pos in items:
                out.setdefault(h, blob[pos * width:(pos + 1) * width])
        return out

    def _embed_pending(self, report: IndexReport, progress: Progress | None, wait: float) -> None:
        """Embed the entries a refresh without embedding left without a vector."""
        con = self._connect()
        rows = con.execute("SELECT f.id, d.hashes, d.body FROM files f JOIN file_data d ON d.file_id = f.id "
                           "WHERE f.pending = 1").fetchall()
        files = [(fid, _split_hashes(hashes), json.loads(body)[0]) for fid, hashes, body in rows]  # texts
        texts: dict[str, str] = {}
        for _, hashes, bodies in files:
            texts.update(zip(hashes, bodies))
        vectors = self._known_vectors(list(texts))
        missing = [Entry(text, "", "", 0, 0, hash=h) for h, text in texts.items() if h not in vectors]
        vectors.update(zip((e.hash for e in missing), _f16_rows(self._embed_rows(missing, progress))))
        con = self._begin(wait)
        try:
            gen = int(self._meta("generation") or 0) + 1
            for fid, hashes, _ in files:
                con.execute("UPDATE file_data SET vecs = ? WHERE file_id = ?", (b"".join(vectors[h] for h in hashes), fid))
                con.execute("UPDATE files SET pending = 0, gen = ? WHERE id = ?", (gen, fid))
            con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", [("pending", "0"), ("generation", str(gen))])
            self._commit(con)
        except BaseException:
            con.execute("ROLLBACK")
            raise
        report.new += len(missing)

    def _embed_rows(self, entries: Sequence[Entry], progress: Progress | None = None) -> np.ndarray:
        out = np.zeros((len(entries), self.embedder.dim), dtype=np.float32)
        for i in range(0, len(entries), EMBED_BATCH):
            batch = entries[i:i + EMBED_BATCH]
            out[i:i + len(batch)] = self.embedder.embed([e.body for e in batch])
            if progress is not None:
                progress(i + len(batch), len(entries))
        return out

    def prune_other_models(self) -> list[str]:
        """Delete the sidecars of other models (after a model change), with their ``-wal``/``-shm``
        journal files; returns the names of the files deleted."""
        removed = []
        try:
            items = list(self.dir.iterdir())
        except OSError:
            return []
        for path in items:
            name = path.name
            for journal in ("-wal", "-shm", "-journal"):
                if name.endswith(journal):
                    name = name[:-len(journal)]
                    break
            # <model-slug>-<dim>.sqlite3, and not this model's
            if name == self.path.name or not name.endswith(".sqlite3") or \
                    not name[:-len(".sqlite3")].rsplit("-", 1)[-1].isdigit():
                continue
            try:
                path.unlink()
                removed.append(path.name)
            except OSError:
                pass
        return removed

    # ---- the view ---------------------------------------------------------------------------------
    def view(self, *, others: bool = True) -> IndexView:
        """All entries as arrays (see :class:`IndexView`); brought up to date when the sidecar
        changed (read again whole, or only the files that changed).

        :param others: also look for writes of other connections (``PRAGMA data_version``);
            False: only this object's own writes (a search between two freshness checks)."""
        with self._mutex:
            epoch = self._sync() if others or self._data_version is None else self._epoch
            if self._view is not None and self._view_epoch == epoch:
                return self._view
            current = self._view
            if current is None or current.generation != int(self._meta("generation") or 0):
                self._view = self._read_view(current)
            self._view_epoch = epoch
            assert self._view is not None
            return self._view

    def _read_view(self, old: IndexView | None) -> IndexView:
        con = self._connect()
        con.execute("BEGIN")  # one consistent snapshot of the tables
        try:
            gen = int(self._meta("generation") or 0)
            view = None
            if old is not None:
                view = self._extend_view(con, old, gen)
            if view is None:
                view = self._load_view(con, gen)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return view

    _COLUMNS = ("SELECT f.id, f.path, f.topic, f.updated, f.gen, f.n, d.vecs, d.terms, d.counts, d.lines, d.days, "
                "d.hashes, d.body FROM files f LEFT JOIN file_data d ON d.file_id = f.id")

    def _load_view(self, con: sqlite3.Connection, gen: int) -> IndexView:
        n = int(self._meta("entries") or 0)
        builder = _ViewBuilder(self.embedder.dim, n, n + max(1024, n // 4))
        for row in con.execute(self._COLUMNS + " ORDER BY f.id"):
            builder.add(row)
        terms = int(con.execute("SELECT COUNT(*) FROM terms").fetchone()[0])
        view = builder.view(gen, TermIds(self.lookup_terms, self.terms_after if terms <= VOCAB_LOAD_MAX else None))
        del builder
        if n >= TRIM_MIN_ROWS:
            trim_memory()
        return view

    def _extend_view(self, con: sqlite3.Connection, old: IndexView, gen: int) -> IndexView | None:
        """``old`` with the files changed since: their old rows dead, their new rows appended;
        None when so much changed that loading the view whole is better."""
        rows = con.execute("SELECT id, gen, n FROM files").fetchall()
        slot_of = {fid: s for s, fid in enumerate(old.slot_file) if fid >= 0}
        current = {fid for fid, _, _ in rows}
        changed = [fid for fid, g, _ in rows if fid not in slot_of or old.slot_gen[slot_of[fid]] != g]
        removed = [fid for fid in slot_of if fid not in current]
        dying = [slot_of[f] for f in changed + removed if f in slot_of]
        if not changed and not removed:  # nothing a search sees changed
            old.generation = gen
            return old
        dead = old.dead_rows + sum(old.slot_rows[s][1] for s in dying)
        fresh = set(changed)
        added = sum(n for fid, _, n in rows if fid in fresh)
        if dead + len(old) - old.loaded_rows + added > RELOAD_SHARE * max(old.loaded_rows, 1):
            return None
        builder = _ViewBuilder.extending(old, added)
        for s in dying:
            builder.kill(s)
        if changed:
            marks = ",".join("?" * len(changed))
            for row in con.execute(self._COLUMNS + f" WHERE f.id IN ({marks}) ORDER BY f.id", changed):
                builder.add(row)
        return builder.view(gen, old.vocab.forget_unknown())

    def vectors_for(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these entry hashes (the ones the sidecar has)."""
        with self._mutex:
            found = self._known_vectors(hashes)
        return {h: np.frombuffer(v, dtype=np.float16).astype(np.float32) for h, v in found.items()}


class _ViewBuilder:
    """Fills the arrays of an :class:`IndexView` file by file (from ``file_data`` rows)."""

    def __init__(self, dim: int, n: int, capacity: int) -> None:
        self.dim = dim
        self.p = min(PREFIX_DIMS, dim)
        self.rest_dtype = np.dtype(np.uint16 if n >= COMPACT_MIN_ROWS else np.float32)
        self.prefix_cap = np.empty((capacity, self.p), dtype=np.float32)
        self.rest_cap = np.empty((capacity, dim - self.p), dtype=self.rest_dtype)
        self.rows = 0
        self.files: list[str] = []
        self.topics: list[str] = []
        self.slot_file: list[int] = []
        self.slot_gen: list[int] = []
        self.slot_rows: list[tuple[int, int]] = []
        self.file_days: list[int] = []  # per file with entries: its updated day
        self.file_rows: list[int] = []
        self.file_slots: list[int] = []
        self.blobs: dict[str, list[bytes]] = {"lines": [], "days": [], "terms": [], "counts": []}
        self.ids: list[np.ndarray] = []
        self.texts: list[str] = []
        self.kinds: list[str | None] = []
        self.tags: list[tuple[str, ...]] = []
        self.odd: dict[int, str] = {}
        self.same: dict[Any, Any] = {}  # one object per distinct kind, tags
        self.base: IndexView | None = None
        self.live: np.ndarray | None = None
        self.dead_rows = 0
        self.loaded_rows = 0

    @classmethod
    def extending(cls, old: IndexView, added: int) -> "_ViewBuilder":
        n = len(old)
        b = cls(old.dim, 0, 0)
        assert old.capacity is not None
        prefix_cap, rest_cap = old.capacity
        b.rest_dtype = rest_cap.dtype
        if prefix_cap.shape[0] < n + added:  # grow; the old view keeps its arrays
            cap = n + added + max(1024, (n + added) // 4)
            prefix_cap = np.concatenate([old.prefix, np.empty((cap - n, old.prefix.shape[1]), np.float32)])
            rest_cap = np.concatenate([old.rest, np.empty((cap - n, old.rest.shape[1]), rest_cap.dtype)])
        b.prefix_cap, b.rest_cap = prefix_cap, rest_cap
        b.rows = n
        b.base = old
        b.live = np.ones(n, dtype=bool) if old.live is None else old.live.copy()
        b.dead_rows, b.loaded_rows = old.dead_rows, old.loaded_rows
        b.slot_file, b.slot_gen, b.slot_rows = list(old.slot_file), list(old.slot_gen), list(old.slot_rows)
        b.files, b.topics = list(old.files), list(old.topics)
        b.odd = dict(old.odd_dates)
        return b

    def kill(self, slot: int) -> None:
        first, count = self.slot_rows[slot]
        assert self.live is not None
        self.live[first:first + count] = False
        self.dead_rows += count
        self.slot_file[slot] = -1

    def add(self, row: tuple) -> None:
        fid, path, topic, updated, gen, n, vecs, terms, counts, lines, days, hashes, body = row
        slot = len(self.files)
        self.files.append(path)
        self.topics.append(topic)
        self.slot_file.append(fid)
        self.slot_gen.append(gen)
        if body is None or not n:
            n = 0
        self.slot_rows.append((self.rows, n))
        if not n:
            return
        first, stop = self.rows, self.rows + n
        if stop > self.prefix_cap.shape[0]:  # more rows than the count said (a concurrent writer): grow
            cap = stop + max(1024, stop // 4)
            self.prefix_cap = np.concatenate([self.prefix_cap[:first], np.empty((cap - first, self.p), np.float32)])
            self.rest_cap = np.concatenate([self.rest_cap[:first],
                                            np.empty((cap - first, self.dim - self.p), self.rest_dtype)])
        if len(vecs) == 2 * self.dim * n:
            v = np.frombuffer(vecs, dtype=np.float16).reshape(n, self.dim)
            self.prefix_cap[first:stop] = v[:, :self.p]
            self.rest_cap[first:stop] = v[:, self.p:] if self.rest_dtype != np.uint16 else to_bf16(v[:, self.p:])
        else:  # a damaged row: no vectors (the entries still search by their words)
            self.prefix_cap[first:stop] = 0
            self.rest_cap[first:stop] = 0
        self.rows = stop
        self.file_days.append(_days(updated))
        self.file_rows.append(n)
        self.file_slots.append(slot)
        blobs = self.blobs
        blobs["lines"].append(lines)
        blobs["days"].append(days)
        blobs["terms"].append(terms)
        blobs["counts"].append(counts)
        self.ids.append(np.frombuffer(hashes.encode("ascii"), dtype="S40").astype("S8"))
        texts, kinds, tags, odd = json.loads(body)
        self.texts.extend(texts)
        same = self.same
        if kinds:
            at = len(self.kinds)
            self.kinds.extend([None] * n)
            for pos, kind in kinds.items():
                self.kinds[at + int(pos)] = same.setdefault(kind, kind)
        else:
            self.kinds.extend([None] * n)
        at = len(self.tags)
        self.tags.extend([()] * n)
        for pos, listed in tags.items():
            both = tuple(listed)
            self.tags[at + int(pos)] = same.setdefault(both, both)
        for pos, day in odd.items():
            self.odd[first + int(pos)] = day

    def view(self, gen: int, vocab: TermIds) -> IndexView:
        n = self.rows
        base = self.base
        start = 0 if base is None else len(base)
        new_ids = np.concatenate(self.ids) if self.ids else np.zeros(0, "S8")
        lens = np.array(self.file_rows, dtype=np.int64)
        file_ids = np.repeat(np.array(self.file_slots, dtype=np.int32), lens)
        lines = np.frombuffer(b"".join(self.blobs["lines"]), dtype=np.int32)
        own = np.frombuffer(b"".join(self.blobs["days"]), dtype=np.int32)
        counts = np.frombuffer(b"".join(self.blobs["counts"]), dtype=np.int32)
        term_ids = np.frombuffer(b"".join(self.blobs["terms"]), dtype=np.int32)
        file_day = np.repeat(np.array(self.file_days, dtype=np.int64), lens)
        dates = np.where(own == NO_DAY, file_day, own).astype("M8[D]")
        if base is None:
            offsets = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(counts, out=offsets[1:])
            # (read-only arrays over the joined blobs: nothing writes to a view)
            view = IndexView(gen, self.files, self.topics, file_ids, lines, new_ids, self.texts, self.kinds,
                             self.tags, own, dates, self.prefix_cap[:n], self.rest_cap[:n], term_ids,
                             offsets, vocab, lineage=next(_LINEAGE), loaded_rows=n)
        else:
            offsets = np.empty(n + 1, dtype=np.int64)
            offsets[:start + 1] = base.term_offsets
            np.cumsum(counts, out=offsets[start + 1:])
            offsets[start + 1:] += base.term_offsets[-1]
            live = np.concatenate([self.live, np.ones(n - start, dtype=bool)]) if self.live is not None else None
            view = IndexView(gen, self.files, self.topics, np.concatenate([base.file_ids, file_ids]),
                             np.concatenate([base.lines, lines]), np.concatenate([base.ids, new_ids]),
                             base.texts + self.texts, base.kinds + self.kinds, base.tags + self.tags,
                             np.concatenate([base.own_days, own]), np.concatenate([base.dates, dates]),
                             self.prefix_cap[:n], self.rest_cap[:n], np.concatenate([base.term_ids, term_ids]),
                             offsets, vocab, live=live, lineage=base.lineage, loaded_rows=self.loaded_rows,
                             dead_rows=self.dead_rows)
        view.odd_dates = self.odd
        view.slot_file, view.slot_gen, view.slot_rows = self.slot_file, self.slot_gen, self.slot_rows
        view.capacity = (self.prefix_cap, self.rest_cap)
        return view


def _days(day: str | None) -> int:
    """``YYYY-MM-DD`` as days since 1970-01-01 (NO_DAY: none, or no real day)."""
    if not day:
        return NO_DAY
    try:
        return date.fromisoformat(day[:10]).toordinal() - _EPOCH
    except ValueError:
        return NO_DAY


_LIBC: list[object] = []


def trim_memory() -> None:
    """Give the memory freed after building a large view back to the system (glibc keeps freed
    blocks of its heap otherwise, and the next build would start from the higher mark)."""
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0](0)  # type: ignore[operator]


def to_bf16(x: np.ndarray) -> np.ndarray:
    """``x`` as bfloat16 (the upper half of each float32, rounded to nearest even) in uint16."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((u + (np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1)))) >> np.uint32(16)).astype(np.uint16)


def _split_hashes(hashes: str) -> list[str]:
    return [hashes[i:i + _HASH_LEN] for i in range(0, len(hashes), _HASH_LEN)]


def _f16_rows(rows: np.ndarray) -> list[bytes]:
    data = np.ascontiguousarray(rows, dtype=np.float16)
    width = data.shape[1] * 2
    raw = data.tobytes()
    return [raw[i:i + width] for i in range(0, len(raw), width)] if width else [b""] * data.shape[0]


def _read_only(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text
