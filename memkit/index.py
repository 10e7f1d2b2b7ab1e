"""The embedding sidecar: one SQLite file per model under ``.memkit/index/``, and its in-memory view.

Layout (derived data: delete it any time, it is rebuilt)::

    .memkit/index/<model-slug>-<dim>.sqlite3
        meta      schema version, model name, dimension, generation (bumped by every write)
        files     one row per topic file: path, topic, size, mtime_ns, inode, updated date, error
        entries   one row per entry, in file order: hash, lines, kind, tags, date, text, search terms
        vectors   one row per distinct entry text: its hash -> float16 unit vector

**Incremental.** A refresh lists topics/ once (one ``scandir`` and a stat per file) and compares
each file's (size, mtime_ns, inode) with its ``files`` row; only changed files are parsed again.
Vectors are keyed by the hash of an entry's normalised text, so an edited line re-embeds only
itself and a line moved between files is not re-embedded at all; a vector no entry uses any more
is deleted in the same transaction.

**Atomic and concurrent.** Each refresh is one SQLite transaction (WAL journal): a crash leaves
the previous state, a reader never sees half a refresh, and concurrent writers queue on SQLite's
own lock. A reader knows whether its in-memory view is current from the ``generation`` counter.

**Never trusted.** A file that is not a readable memkit index of this schema, model and dimension
(damaged, foreign, another version, a folder in its place…) is deleted, with its journal files,
and rebuilt: it is derived data. A vault
where nothing can be written (a read-only mount) is indexed in memory instead.

**The view.** :meth:`Index.view` loads every entry into arrays (float32 unit vectors in file
order, the search terms as ids, the columns a hit shows); it is rebuilt when the generation moves.
"""
from __future__ import annotations

import logging
import os
from array import array
import re
import shutil
import sqlite3
import stat
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from .embed import Embedder
from .errors import MemkitError, TopicParseError
from .store import STATE_DIR, Store, TopicFile
from .text import terms as text_terms
from .topic import Entry, Topic, read_topic

log = logging.getLogger("memkit")

__all__ = ["Index", "IndexReport", "IndexView"]

SCHEMA = 1
EMBED_BATCH = 2048
WRITE_WAIT_S = 30.0  #: how long a refresh waits for another process's write, by default
INDEX_DIR = "index"

Progress = Callable[[int, int], None]  # (done, total) entries embedded

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL,
    updated TEXT NOT NULL, error TEXT);
CREATE TABLE IF NOT EXISTS entries (
    file_id INTEGER NOT NULL, pos INTEGER NOT NULL, hash TEXT NOT NULL,
    line INTEGER NOT NULL, end_line INTEGER NOT NULL, kind TEXT, tags TEXT NOT NULL, date TEXT,
    text TEXT NOT NULL, terms TEXT NOT NULL, PRIMARY KEY (file_id, pos)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_hash ON entries (hash);
CREATE TABLE IF NOT EXISTS vectors (hash TEXT PRIMARY KEY, vec BLOB NOT NULL) WITHOUT ROWID;
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


@dataclass
class IndexView:
    """Every entry of the vault as parallel arrays, in file order (entries of a file together,
    in their order in the file)."""

    generation: int
    files: list[str]  #: vault-relative path per file id
    topics: list[str]  #: topic name per file id
    file_ids: np.ndarray  #: int32, per entry
    lines: np.ndarray  #: int32, first line per entry
    ids: np.ndarray  #: bytes ``S8``: each entry's id (the first 8 hex digits of its hash)
    texts: list[str]
    kinds: list[str | None]
    tags: list[tuple[str, ...]]
    own_dates: list[str | None]  #: the entry's own ``(YYYY-MM-DD)``
    dates: np.ndarray  #: 'YYYY-MM-DD' per entry: its own date, else its topic's updated date
    vectors: np.ndarray  #: (n, dim) float32 unit rows (zero rows for texts with no known token)
    term_ids: np.ndarray  #: int32, the search terms of every entry, concatenated
    term_offsets: np.ndarray  #: int64 (n + 1,): entry i's terms are term_ids[offsets[i]:offsets[i + 1]]
    vocab: dict[str, int]  #: search term -> id

    def __len__(self) -> int:
        return len(self.texts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "model"


def _day(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9).date().isoformat()


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
        self.last_check = 0.0  #: time.monotonic() of the last freshness check
        self._con: sqlite3.Connection | None = None
        self._mutex = threading.RLock()  # one connection, shared by this process's threads
        self._files: dict[str, tuple[int, tuple[int, int, int]]] | None = None  # path -> (id, stamp)
        self._files_gen = -1
        self._view: IndexView | None = None
        self._created = False

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
            ("generation", "0")])
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

    def generation(self) -> int:
        """The sidecar's write counter (bumped by every refresh that changed something)."""
        with self._mutex:
            row = self._connect().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            return int(row[0]) if row else 0

    def _file_rows(self) -> dict[str, tuple[int, tuple[int, int, int]]]:
        gen = self.generation()
        if self._files is None or gen != self._files_gen:
            rows = self._connect().execute("SELECT path, id, size, mtime_ns, ino FROM files").fetchall()
            self._files = {p: (i, (s, m, n)) for p, i, s, m, n in rows}
            self._files_gen = gen
        return self._files

    # ---- freshness ------------------------------------------------------------------------------
    def stale(self, files: Sequence[TopicFile] | None = None) -> tuple[list[TopicFile], list[str]]:
        """(topic files whose row is missing or out of date, indexed paths whose file is gone)."""
        files = self.store.topic_files() if files is None else files
        with self._mutex:
            known = self._file_rows()
            changed = [tf for tf in files
                       if known.get(self.store.rel(tf.path), (0, None))[1] != tf.stamp]
            current = {self.store.rel(tf.path) for tf in files}
            gone = [p for p in known if p not in current]
        return changed, gone

    def indexed_paths(self) -> list[str]:
        """The topic files the sidecar holds (vault-relative paths)."""
        with self._mutex:
            return list(self._file_rows())

    def is_stale(self) -> bool:
        """Whether a topic file changed, appeared or vanished since the last refresh."""
        changed, gone = self.stale()
        return bool(changed or gone)

    # ---- refreshing -----------------------------------------------------------------------------
    def refresh(self, *, full: bool = False, progress: Progress | None = None,
                wait: float = WRITE_WAIT_S, embed: bool = True) -> IndexReport:
        """Bring the sidecar up to date with the topic files.

        :param full: parse every file again and re-embed every entry.
        :param progress: called with (done, total) while embedding.
        :param wait: seconds to wait for another process's write to finish; after that the
            refresh gives up (``report.busy``) and the sidecar stays as it is.
        :param embed: embed new entries. ``False`` (a lexical search) records the entries and
            their search terms without loading the model; their vectors are made by the next
            refresh that embeds.
        """
        started = time.perf_counter()
        report = IndexReport(model=self.embedder.name, dim=self.embedder.dim)
        files = self.store.topic_files()
        with self._mutex:
            self._connect()
            report.rebuilt_model = self._created
            self._created = False
            if full:
                changed, gone = list(files), [p for p in self._file_rows() if p not in
                                              {self.store.rel(tf.path) for tf in files}]
            else:
                changed, gone = self.stale(files)
            self.last_check = time.monotonic()
            try:
                if changed or gone:
                    self._apply(changed, gone, report, progress, wait, full, embed)
                if embed and self._meta("pending") == "1":
                    self._embed_pending(report, progress, wait)
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                log.debug("index %s busy (%s): left for the next refresh", self.path, exc)
                report.busy = True
            con = self._connect()
            report.files = len(files)
            report.entries = con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
        report.seconds = time.perf_counter() - started
        return report

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

    def _embed_pending(self, report: IndexReport, progress: Progress | None, wait: float) -> None:
        """Embed the entries a refresh without embedding left without a vector."""
        con = self._connect()
        rows = con.execute("SELECT e.hash, MIN(e.text) FROM entries e LEFT JOIN vectors v ON v.hash = e.hash "
                           "WHERE v.hash IS NULL GROUP BY e.hash").fetchall()
        entries = [Entry(text, "", "", 0, 0, hash=h) for h, text in rows]
        vectors = self._embed(entries, progress)
        con = self._begin(wait)
        try:
            con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                            [(e.hash, vectors[i].astype(np.float16).tobytes()) for i, e in enumerate(entries)])
            con.execute("INSERT OR REPLACE INTO meta VALUES ('pending', '0')")
            con.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        report.new += len(entries)

    def _apply(self, changed: list[TopicFile], gone: list[str], report: IndexReport,
               progress: Progress | None, wait: float, full: bool, embed: bool = True) -> None:
        store = self.store
        parsed: list[tuple[TopicFile, Topic | None, str | None]] = []
        for tf in changed:
            try:
                found = read_topic(tf.path, tf.name, store.rel(tf.path))
                problems = [p.message for p in found.problems if p.blocks_writes]  # read anyway: reported
                store.warn_problems(found)
                report.errors += problems
                parsed.append((tf, found, "; ".join(problems) or None))
            except TopicParseError as exc:
                store.warn_once(f"{exc}; skipped")
                report.errors.append(str(exc))
                parsed.append((tf, None, str(exc)))
        con = self._connect()
        wanted: dict[str, Entry] = {}
        for _, topic, _ in parsed:
            for e in topic.entries if topic else ():
                wanted.setdefault(e.hash, e)
        known = set() if full else self._known_hashes(wanted)
        unembedded = [e for h, e in wanted.items() if h not in known]
        missing = unembedded if embed else []
        vectors = self._embed(missing, progress)
        report.new = len(missing)
        paths = [store.rel(tf.path) for tf, _, _ in parsed] + gone
        con = self._begin(wait)
        try:
            if len(unembedded) > len(missing):
                con.execute("INSERT OR REPLACE INTO meta VALUES ('pending', '1')")
            if full:
                con.execute("DELETE FROM vectors")
            old = self._hash_counts(paths)
            for path in paths:
                con.execute("DELETE FROM entries WHERE file_id = (SELECT id FROM files WHERE path = ?)", (path,))
            con.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in gone])
            new: dict[str, int] = {}
            for tf, topic, error in parsed:
                path = store.rel(tf.path)
                updated = topic.updated().date().isoformat() if topic else _day(tf.stat.st_mtime_ns)
                con.execute(
                    "INSERT INTO files (path, topic, size, mtime_ns, ino, updated, error) VALUES (?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (path) DO UPDATE SET topic = excluded.topic, size = excluded.size, "
                    "mtime_ns = excluded.mtime_ns, ino = excluded.ino, updated = excluded.updated, error = excluded.error",
                    (path, tf.name, *tf.stamp, updated, error))
                if topic is None:
                    continue
                file_id = con.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()[0]
                con.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                    (file_id, pos, e.hash, e.line, e.end_line, e.kind, "\x1f".join(e.tags), e.date, e.text,
                     " ".join(text_terms(e.text))) for pos, e in enumerate(topic.entries)])
                for e in topic.entries:
                    new[e.hash] = new.get(e.hash, 0) + 1
            con.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                            [(e.hash, vectors[i].astype(np.float16).tobytes()) for i, e in enumerate(missing)])
            report.reused = sum(new.values()) - len(unembedded)
            # a text no entry holds any more is removed, and so is its vector
            orphans = [h for h in old if h not in new and
                       con.execute("SELECT 1 FROM entries WHERE hash = ? LIMIT 1", (h,)).fetchone() is None]
            report.removed = sum(old[h] for h in orphans)
            con.executemany("DELETE FROM vectors WHERE hash = ?", [(h,) for h in orphans])
            con.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        report.changed_files = len(parsed)
        self._files = None

    def _known_hashes(self, hashes: Iterable[str]) -> set[str]:
        con = self._connect()
        wanted = list(hashes)
        known: set[str] = set()
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            marks = ",".join("?" * len(chunk))
            known.update(h for (h,) in con.execute(f"SELECT hash FROM vectors WHERE hash IN ({marks})", chunk))
        return known

    def _hash_counts(self, paths: Sequence[str]) -> dict[str, int]:
        counts: dict[str, int] = {}
        con = self._connect()
        for path in paths:
            for (h,) in con.execute("SELECT hash FROM entries WHERE file_id = (SELECT id FROM files WHERE path = ?)",
                                    (path,)):
                counts[h] = counts.get(h, 0) + 1
        return counts

    def _embed(self, entries: Sequence[Entry], progress: Progress | None) -> np.ndarray:
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
    def view(self) -> IndexView:
        """All entries as arrays (see :class:`IndexView`); cached until the generation moves."""
        with self._mutex:
            if self._view is None or self._view.generation != self.generation():
                self._view = self._load_view()
            return self._view

    def _load_view(self) -> IndexView:
        con = self._connect()
        con.execute("BEGIN")  # one consistent snapshot of the tables
        try:
            gen = int(con.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
            frows = con.execute("SELECT id, path, topic, updated FROM files ORDER BY id").fetchall()
            n = con.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            dim = self.embedder.dim
            fid_of = {fid: i for i, (fid, _, _, _) in enumerate(frows)}
            updated = [u for _, _, _, u in frows]
            file_ids = np.empty(n, dtype=np.int32)
            lines = np.empty(n, dtype=np.int32)
            vectors = np.zeros((n, dim), dtype=np.float32)
            ids = np.empty(n, dtype="S8")
            texts: list[str] = []
            kinds: list[str | None] = []
            tags: list[tuple[str, ...]] = []
            own: list[str | None] = []
            vocab: dict[str, int] = {}
            term_ids = array("i")
            offsets = np.zeros(n + 1, dtype=np.int64)
            same: dict[str | None, str | None] = {None: None}  # one object per distinct kind or date
            cur = con.execute(
                "SELECT e.file_id, e.line, e.hash, e.kind, e.tags, e.date, e.text, e.terms, v.vec "
                "FROM entries e LEFT JOIN vectors v ON v.hash = e.hash ORDER BY e.file_id, e.pos")
            i = 0
            setdefault = vocab.setdefault
            no_tags: tuple[str, ...] = ()
            width = 2 * dim
            while i < n:
                rows = cur.fetchmany(4096)
                if not rows:
                    break
                for fid, line, h, kind, tag, day, text, terms, vec in rows[:n - i]:
                    file_ids[i] = fid_of[fid]
                    lines[i] = line
                    ids[i] = h[:8].encode("ascii")
                    texts.append(text)
                    kinds.append(same.setdefault(kind, kind))
                    tags.append(tuple(tag.split("\x1f")) if tag else no_tags)
                    own.append(same.setdefault(day, day))
                    if vec is not None and len(vec) == width:
                        vectors[i] = np.frombuffer(vec, dtype=np.float16)
                    term_ids.extend(setdefault(t, len(vocab)) for t in terms.split())
                    i += 1
                    offsets[i] = len(term_ids)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        n = i
        dates = np.array([d or updated[f] for d, f in zip(own, file_ids[:n].tolist())], dtype="U10")
        return IndexView(gen, [p for _, p, _, _ in frows], [t for _, _, t, _ in frows], file_ids[:n], lines[:n],
                         ids[:n], texts, kinds, tags, own, dates, vectors[:n],
                         np.frombuffer(term_ids, dtype=np.int32).copy() if n else np.zeros(0, np.int32),
                         offsets[:n + 1], vocab)

    def vectors_for(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these entry hashes (the ones the sidecar has)."""
        out: dict[str, np.ndarray] = {}
        with self._mutex:
            con = self._connect()
            for i in range(0, len(hashes), 500):
                chunk = list(hashes[i:i + 500])
                marks = ",".join("?" * len(chunk))
                for h, vec in con.execute(f"SELECT hash, vec FROM vectors WHERE hash IN ({marks})", chunk):
                    if len(vec) == 2 * self.embedder.dim:
                        out[h] = np.frombuffer(vec, dtype=np.float16).astype(np.float32)
        return out


def _read_only(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text
