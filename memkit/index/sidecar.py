"""The files of one model's index under ``.memkit/index/``: the SQLite file and its ``.npy`` matrix.

:class:`Sidecar` opens them (a WAL journal, this schema, model and dimension), checks that the
matrix the SQLite file names holds its committed rows, and deletes both when either is wrong
(derived data: rebuilt). A vault that cannot be written gets a private in-memory copy instead.
The tables and the rules that keep them in step are in :mod:`memkit.index.index`; the matrix file's
own rules in :mod:`memkit.index.matrix`.
"""
from __future__ import annotations

import logging
import os
import re
import shutil
import sqlite3
import stat
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..embeddings import Embedder
from ..errors import MemkitError
from ..store import STATE_DIR, Store
from .matrix import FileMatrix, MatrixError, MemoryMatrix
from .queue import f32_rows

log = logging.getLogger("memkit")

__all__ = ["Sidecar", "SCHEMA", "INDEX_DIR", "number_of", "split_hashes"]

SCHEMA = 3
INDEX_DIR = "index"
COMPACT_SHARE = 0.25  #: the matrix is written anew once dead rows pass this share of it …
COMPACT_MIN_ROWS = 4096  #: … and this many rows
TERM_CACHE_MAX = 500_000  #: term ids a writer keeps (then forgets them all)
_HASH_LEN = 40  # sha1 hex digest
VOCAB_LOAD_MAX = 100_000  #: a vocabulary of at most this many terms is read whole (else term by term)

_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY AUTOINCREMENT, path TEXT NOT NULL UNIQUE, topic TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, updated TEXT NOT NULL,
    error TEXT, gen INTEGER NOT NULL, n INTEGER NOT NULL, pending INTEGER NOT NULL, row0 INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS file_data (
    file_id INTEGER PRIMARY KEY, terms BLOB NOT NULL, counts BLOB NOT NULL,
    lines BLOB NOT NULL, days BLOB NOT NULL, hashes TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    file_id INTEGER NOT NULL, pos INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (file_id, pos)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_hash ON entries (hash);
CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
"""


class Sidecar:
    """The SQLite file and the matrix of one model (see the module docstring); one connection,
    opened on first use. Not thread-safe: :class:`memkit.index.index.Index` serialises its use.

    :param store: the vault's files.
    :param embedder: the model; its ``name`` and ``dim`` select the files.
    :param suffix: after ``<model>-<dim>`` in the files' names: what is indexed (``-sessions``).
    """

    def __init__(self, store: Store, embedder: Embedder, suffix: str = "") -> None:
        self.store = store
        self.embedder = embedder
        self.dir = store.state_dir / INDEX_DIR
        stem = f"{_slug(embedder.name)}-{embedder.dim}{suffix}"
        self.path = self.dir / f"{stem}.sqlite3"
        self.matrix: FileMatrix | MemoryMatrix = FileMatrix(self.dir, stem, embedder.dim)
        self.in_memory = False  #: True when the vault cannot be written (the index lives in memory)
        self.created = False  #: the SQLite file was made by this object (no index existed)
        self._con: sqlite3.Connection | None = None
        self._ino = -1  # the SQLite file's inode when opened
        self._term_cache: dict[str, int] = {}  # term -> id, as committed to this connection's file
        #: (matrix, rows) the open write transaction has appended up to (:mod:`memkit.index.writer`):
        #: what :meth:`known_vectors` reads inside it; None: the committed rows
        self.writing: tuple[str, int] | None = None

    @property
    def open(self) -> bool:
        return self._con is not None

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        self._term_cache = {}
        self.matrix.close()

    def connect(self) -> sqlite3.Connection:
        if self._con is not None:
            return self._con
        try:
            self._con = self._open_file()
            self._ino = os.stat(self.path).st_ino
        except (sqlite3.Error, OSError) as exc:
            log.debug("index %s not writable (%s): indexing in memory", self.path, exc)
            self._con = self._open_memory()
        return self._con

    def make_durable(self) -> None:
        """Make the last commit durable now (a WAL journal with ``synchronous = NORMAL`` syncs it
        at the next checkpoint): run before deleting a file that commit stopped naming."""
        try:
            self.connect().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            log.debug("index checkpoint: %s", exc)

    def discard_if_current(self) -> None:
        """Close, and delete the files when they are still the ones this object opened (another
        process may have made the index anew already: that one is left alone)."""
        try:
            same = not self.in_memory and os.stat(self.path).st_ino == self._ino
        except OSError:
            same = False
        self.close()
        if same:
            self.discard()

    def _open_file(self) -> sqlite3.Connection:
        self._check_state_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            if not stat.S_ISREG(os.lstat(self.path).st_mode):  # a folder, a link, a FIFO: not ours
                log.info("index %s is not a file: rebuilding it", self.store.rel(self.path))
                self.discard()
        except FileNotFoundError:
            pass
        for attempt in (1, 2):
            con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            try:
                created = self._prepare(con)
                if created is not None:
                    if created:  # matrices left by an index that is gone (deleted by hand)
                        self.matrix.remove_others(keep=self.matrix_state(con)[0])
                    else:
                        self._check_matrix(con)
                    self.created = created
                    return con
            except (sqlite3.DatabaseError, MatrixError) as exc:
                con.close()
                if isinstance(exc, sqlite3.OperationalError) and _read_only(exc):
                    raise
                if attempt == 2:
                    raise
                log.info("index %s is unusable (%s): rebuilding it", self.store.rel(self.path), exc)
                self.discard()
                continue
            con.close()  # another schema, model or dimension: rebuilt
            self.discard()
        raise sqlite3.DatabaseError("cannot create the index")  # pragma: no cover

    def _check_matrix(self, con: sqlite3.Connection) -> None:
        """The matrix the index names must hold its committed rows (else :class:`MatrixError`),
        read in one snapshot; a matrix a compaction just replaced is looked for again."""
        for attempt in range(5):
            con.execute("BEGIN")
            try:
                self.matrix.read(*self.matrix_state(con))
                return
            except (KeyError, ValueError) as exc:
                raise MatrixError(f"no matrix named ({exc})") from exc
            except FileNotFoundError as exc:
                if attempt == 4:
                    raise MatrixError(f"the matrix is gone ({exc})") from exc
            finally:
                con.execute("COMMIT")
            time.sleep(0.01 * (attempt + 1))

    def _open_memory(self) -> sqlite3.Connection:
        """A private in-memory index, seeded from a current sidecar when one can be read."""
        self.in_memory = True
        disk_matrix = self.matrix
        self.matrix = MemoryMatrix(self.embedder.dim, disk_matrix.stem)
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        try:
            if self.path.is_file():
                disk = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True)
                try:
                    disk.backup(con)
                finally:
                    disk.close()
                if self._prepare(con) is False:
                    name, rows = self.matrix_state(con)
                    self.matrix.seed(name, disk_matrix.read(name, rows))
                    return con
        except (sqlite3.Error, MatrixError, OSError, ValueError):
            pass
        con.close()
        con = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._prepare(con)
        return con

    def _prepare(self, con: sqlite3.Connection) -> bool | None:
        """Set up ``con``, creating the tables when there are none (in one write transaction, so
        two processes creating the index at once make it once). True: this call created them;
        False: they were there; None: they hold another schema, model or dimension."""
        con.execute("PRAGMA busy_timeout = 30000")
        if con.execute("PRAGMA database_list").fetchone()[2]:  # a file: a WAL journal, cheap syncs
            if con.execute("PRAGMA journal_mode = WAL").fetchone()[0].lower() != "wal":
                con.execute("PRAGMA journal_mode = DELETE")
            con.execute("PRAGMA synchronous = NORMAL")
        meta = _meta_of(con)
        created = not meta
        if created and con.execute("SELECT COUNT(*) FROM sqlite_master WHERE name NOT IN "
                                   "('meta', 'files', 'file_data', 'entries', 'entries_hash', 'terms', "
                                   "'sqlite_sequence')").fetchone()[0]:
            return None  # some other database: not ours to add tables to
        if created:
            con.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA_SQL.split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.executemany("INSERT OR IGNORE INTO meta VALUES (?, ?)", [
                    ("schema", str(SCHEMA)), ("model", self.embedder.name), ("dim", str(self.embedder.dim)),
                    ("generation", "0"), ("entries", "0"), ("pending", "0"), ("matrix", self.matrix.name(0)),
                    ("rows", "0")])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            meta = _meta_of(con)
        want = {"schema": str(SCHEMA), "model": self.embedder.name, "dim": str(self.embedder.dim)}
        if any(meta.get(k) != v for k, v in want.items()):
            log.info("index %s was made by %s (%s-d): building a new one for %s (%d-d)",
                     self.store.rel(self.path), meta.get("model"), meta.get("dim"),
                     self.embedder.name, self.embedder.dim)
            return None
        return created

    @staticmethod
    def matrix_state(con: sqlite3.Connection) -> tuple[str, int]:
        """(the current matrix's name, its committed rows), as ``con`` sees them."""
        meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('matrix', 'rows')").fetchall())
        return str(meta["matrix"]), int(meta["rows"])

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

    def discard(self) -> None:
        """Remove an unusable sidecar (its journal files and matrices too); it is derived data."""
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = Path(str(self.path) + suffix)
            try:
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except FileNotFoundError:
                pass
        self.matrix.remove_others(keep="")
        for path in self.dir.glob(f"{self.matrix.stem}.frozen.*"):  # its frozen views (memkit.index.frozen)
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)

    def meta(self, key: str) -> str | None:
        row = self.connect().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def begin(self, wait: float) -> sqlite3.Connection:
        """Start a write transaction, waiting at most ``wait`` seconds for another writer."""
        con = self.connect()
        con.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        try:
            con.execute("BEGIN IMMEDIATE")
        finally:
            con.execute("PRAGMA busy_timeout = 30000")
        return con

    # ---- vectors known already -------------------------------------------------------------------
    def _snapshot(self, read: Callable[[sqlite3.Connection, np.ndarray], dict[str, bytes]]) -> dict[str, bytes]:
        """``read(con, matrix rows)`` inside one read transaction (or the write transaction open
        on this connection, with the rows it appended: :attr:`writing`); nothing when the matrix
        was just replaced (the vectors are made again instead)."""
        con = self.connect()
        own = con.in_transaction
        if not own:
            con.execute("BEGIN")
        try:
            try:
                state = self.writing if own and self.writing is not None else self.matrix_state(con)
                data = self.matrix.read(*state)
            except (FileNotFoundError, MatrixError) as exc:
                log.debug("index matrix unreadable for reuse (%s)", exc)
                return {}
            return read(con, data)
        finally:
            if not own:
                con.execute("COMMIT")

    def row_vectors(self, paths: Sequence[str]) -> dict[str, bytes]:
        """hash -> float32 row of the entries these files held when last indexed (complete rows)."""
        def read(con: sqlite3.Connection, data: np.ndarray) -> dict[str, bytes]:
            out: dict[str, bytes] = {}
            for path in paths:
                row = con.execute("SELECT f.row0, f.n, d.hashes FROM files f JOIN file_data d ON d.file_id = f.id "
                                  "WHERE f.path = ? AND f.pending = 0 AND f.row0 >= 0", (path,)).fetchone()
                if row is None or row[0] + row[1] > data.shape[0]:
                    continue
                row0, n, hashes = row
                out.update(zip(split_hashes(hashes), f32_rows(data[row0:row0 + n])))
            return out
        return self._snapshot(read)

    def known_vectors(self, hashes: Sequence[str]) -> dict[str, bytes]:
        """The float32 rows the sidecar holds for these entry hashes (from files whose vectors
        are complete), found through ``entries``."""
        def read(con: sqlite3.Connection, data: np.ndarray) -> dict[str, bytes]:
            where: dict[str, int] = {}
            wanted = list(dict.fromkeys(hashes))
            for i in range(0, len(wanted), 500):
                chunk = wanted[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for h, row in con.execute(f"SELECT e.hash, f.row0 + e.pos FROM entries e JOIN files f ON "
                                          f"f.id = e.file_id WHERE f.pending = 0 AND f.row0 >= 0 AND "
                                          f"e.hash IN ({marks})", chunk):
                    if row < data.shape[0]:
                        where.setdefault(h, row)
            if not where:
                return {}
            found = data[np.fromiter(where.values(), dtype=np.int64, count=len(where))]
            return dict(zip(where, f32_rows(found)))
        return self._snapshot(read)

    # ---- search terms ---------------------------------------------------------------------------
    def term_ids(self, con: sqlite3.Connection, terms: set[str], fresh: dict[str, int] | None = None) -> dict[str, int]:
        """The ids of ``terms``, adding the new ones (inside the write transaction).

        :param fresh: the terms this transaction added so far, and where the ones it adds now go:
            they join the cache (committed terms only) once it commits, :meth:`remember_terms`.
        """
        if not terms:
            return {}
        fresh = {} if fresh is None else fresh
        cache = self._term_cache  # committed terms only: an id never changes meaning
        if not cache and not fresh and len(terms) < 20_000:  # a first small write: the whole vocabulary when small
            if int(con.execute("SELECT COUNT(*) FROM terms").fetchone()[0]) <= VOCAB_LOAD_MAX:
                cache.update(con.execute("SELECT term, id FROM terms"))
        out = {}
        ask = []
        for t in terms:
            i = cache.get(t)
            if i is None:
                i = fresh.get(t)
            if i is None:
                ask.append(t)
            else:
                out[t] = i
        if len(ask) > 20_000:
            wanted = set(ask)
            found = {t: i for t, i in con.execute("SELECT term, id FROM terms") if t in wanted}
        else:
            found = self._lookup_terms(con, ask) if ask else {}
        found = {t: i for t, i in found.items() if t not in fresh}  # committed ones (all others are in fresh)
        if len(cache) + len(found) > TERM_CACHE_MAX:
            cache.clear()
        cache.update(found)
        out.update(found)
        new = sorted(t for t in terms if t not in out)
        if new:
            start = (con.execute("SELECT MAX(id) FROM terms").fetchone()[0] or 0) + 1
            con.executemany("INSERT INTO terms VALUES (?, ?)", [(start + i, t) for i, t in enumerate(new)])
            added = {t: start + i for i, t in enumerate(new)}
            fresh.update(added)
            out.update(added)
        return out

    def remember_terms(self, fresh: dict[str, int]) -> None:
        """The terms a write transaction added (:meth:`term_ids`) are committed: cached."""
        cache = self._term_cache
        if len(cache) + len(fresh) > TERM_CACHE_MAX:
            cache.clear()
        if len(fresh) <= TERM_CACHE_MAX:
            cache.update(fresh)

    @staticmethod
    def _lookup_terms(con: sqlite3.Connection, terms: list[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        for i in range(0, len(terms), 500):
            chunk = terms[i:i + 500]
            marks = ",".join("?" * len(chunk))
            out.update(con.execute(f"SELECT term, id FROM terms WHERE term IN ({marks})", chunk))
        return out

    def lookup_terms(self, terms: list[str]) -> dict[str, int]:
        """Term -> id for the terms the sidecar knows."""
        con = self.connect()
        if len(terms) > 16:
            return self._lookup_terms(con, terms)
        out = {}
        for term in terms:  # one statement, compiled once and cached: a few microseconds each
            row = con.execute("SELECT id FROM terms WHERE term = ?", (term,)).fetchone()
            if row is not None:
                out[term] = row[0]
        return out

    def terms_after(self, last: int) -> dict[str, int]:
        """Term -> id of every term whose id is above ``last``."""
        return dict(self.connect().execute("SELECT term, id FROM terms WHERE id > ?", (last,)))

    def compact(self, con: sqlite3.Connection, matrix: str, rows: int, live: int) -> tuple[str, int]:
        """Write the matrix anew, live rows only, when dead rows passed ``COMPACT_SHARE`` of it
        (inside the write transaction); returns the (name, rows) to commit."""
        dead = rows - live
        if dead < COMPACT_MIN_ROWS or dead <= COMPACT_SHARE * rows:
            return matrix, rows
        data = self.matrix.read(matrix, rows)
        files = con.execute("SELECT id, row0, n FROM files WHERE row0 >= 0 AND n > 0 ORDER BY row0").fetchall()
        new_name = self.next_matrix(matrix)
        self.matrix.write(new_name, (data[r:r + n] for _, r, n in files), live)
        at = 0
        moved = []
        for fid, _, n in files:
            moved.append((at, fid))
            at += n
        con.executemany("UPDATE files SET row0 = ? WHERE id = ?", moved)
        log.debug("index matrix compacted: %d rows -> %d (%s)", rows, live, new_name)
        return new_name, live

    def next_matrix(self, name: str) -> str:
        """The name of the matrix that follows ``name`` (``<stem>.<n+1>.npy``)."""
        return self.matrix.name(number_of(name) + 1)

    def prune_other_models(self) -> list[str]:
        """Delete the sidecars of other models (after a model change), with their ``-wal``/``-shm``
        journal files and matrices, and this model's matrices that a compaction replaced; returns
        the names of the files deleted."""
        removed = []
        try:
            items = list(self.dir.iterdir())
        except OSError:
            return []
        try:
            current = self.matrix_state(self.connect())[0]
        except (sqlite3.Error, KeyError, ValueError):
            current = ""
        for path in items:
            name = path.name
            for journal in ("-wal", "-shm", "-journal"):
                if name.endswith(journal):
                    name = name[:-len(journal)]
                    break
            if name.endswith(".sqlite3"):  # <model-slug>-<dim>.sqlite3, and not this model's
                stem = name[:-len(".sqlite3")]
                if name == self.path.name or not stem.rsplit("-", 1)[-1].isdigit():
                    continue
            elif name.startswith(".") and name.endswith(".tmp") and ".npy." in name:
                if not _stale_temp(path):
                    continue  # a compaction writing it now
            elif name.endswith(".npy") and name.count(".") >= 2:  # <model-slug>-<dim>.<n>.npy
                stem, number = name[:-len(".npy")].rsplit(".", 1)
                if not number.isdigit() or not stem.rsplit("-", 1)[-1].isdigit():
                    continue
                if stem == self.matrix.stem and (not current or int(number) >= number_of(current)):
                    continue  # this model's current matrix, or one a compaction is writing now
            else:
                continue
            try:
                path.unlink()
                removed.append(path.name)
            except OSError:
                pass
        return removed


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "model"


def number_of(matrix: str) -> int:
    """The ``<n>`` of a matrix name ``<stem>.<n>.npy`` (-1: none)."""
    try:
        return int(matrix.rsplit(".", 2)[-2])
    except (ValueError, IndexError):
        return -1


def _read_only(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def _stale_temp(path: Path) -> bool:
    """Whether a compaction's temp file ``.<matrix>.<pid>.tmp`` was left by a writer that is gone."""
    try:
        pid = int(path.name.rsplit(".", 2)[-2])
        os.kill(pid, 0)
    except (ValueError, IndexError, ProcessLookupError):
        return True
    except OSError:  # alive (another user's): not ours to judge
        return False
    return False  # its writer is alive


def _meta_of(con: sqlite3.Connection) -> dict[str, str]:
    """The ``meta`` table (empty: no tables yet, or not a memkit index at all)."""
    try:
        return {str(k): str(v) for k, v in con.execute("SELECT key, value FROM meta").fetchall()}
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise


def split_hashes(hashes: str) -> list[str]:
    """The entry hashes (sha1 hex) of a ``file_data.hashes`` column, in order."""
    return [hashes[i:i + _HASH_LEN] for i in range(0, len(hashes), _HASH_LEN)]
