"""The judge's vectors of a vault's entries: ``.memkit/judge/<model>-<fingerprint>.sqlite3``, filled as you go.

One table, ``vec (key INTEGER PRIMARY KEY, v BLOB)``: the key is :func:`memkit.embeddings.judge.text_keys`
of an entry's text (so an unchanged line keeps its vector wherever it moves, and a forgotten
one costs nothing but a row), the value its unit vector as float16. Derived data, like the
static index: delete it any time.

It is filled by ``memkit index``, the watcher and the servers (:meth:`JudgeVectors.fill`, in
batches, each its own transaction, so a kill loses one batch at most and concurrent writers
only ever add the same rows); a search reads the vectors of its few dozen candidates
(:meth:`JudgeVectors.vectors`) and embeds on the fly the ones not stored yet, storing them too.
Where the state folder cannot be written (a read-only vault) the vectors live in memory.
"""
from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..embeddings import Judge, prefetched, text_keys

log = logging.getLogger("memkit")

__all__ = ["JudgeVectors", "JUDGE_DIR"]

JUDGE_DIR = "judge"
FILL_BATCH = 32  #: texts embedded and committed together by :meth:`JudgeVectors.fill` (then progress)
#: texts a transformer pass when filling: one, as a search embeds a candidate on the fly. Several
#: a pass would be about twice as fast, but the int8 model quantises its activations per pass, so a
#: text's vector would depend on the texts beside it (cosine ~0.99), and which of the two a search
#: reads on a live server on whether the filling thread got there first: results would vary
FILL_PASS = 1
SQL_VARS = 500  #: keys asked for in one SELECT
BUSY_MS = 5000
MEMORY_MAX = 200_000  #: vectors kept in memory where the file cannot be written
RECENT_MAX = 20_000  #: stored vectors kept in memory after a search read them (float16: ~15 MB)

Progress = Callable[[int, int], None]


class JudgeVectors:
    """The stored judge vectors of one vault.

    :param state_dir: the vault's ``.memkit`` folder.
    :param judge: the loaded judge.
    """

    def __init__(self, state_dir: Path, judge: Judge) -> None:
        self.judge = judge
        # the model's fingerprint in the name: vectors of another build of the judge (a memkit not yet
        # upgraded still running beside this one) never land in this file
        mark = getattr(judge, "fingerprint", None)
        self.path = state_dir / JUDGE_DIR / (f"{judge.name}-{mark}.sqlite3" if mark else f"{judge.name}.sqlite3")
        self._con: sqlite3.Connection | None = None
        self._memory: dict[int, np.ndarray] | None = None  # the file cannot be used
        self._lock = threading.Lock()
        self._filled: tuple[int, int] | None = None  # (view lineage, rows) known to be stored
        self._recent: dict[int, np.ndarray] = {}  # key -> vector of the candidates searches met lately
        self._last_query: tuple[str, np.ndarray] | None = None

    # ---- storage --------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection | None:
        if self._con is not None or self._memory is not None:
            return self._con
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._remove_other_builds()
            con = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, check_same_thread=False,
                                  isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS vec (key INTEGER PRIMARY KEY, v BLOB NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            # the model's fingerprint, not only its dimension: another judge of the same size (or the
            # same one quantised again) under this name starts again
            mark = getattr(self.judge, "fingerprint", str(self.judge.dim))
            row = con.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
            if row is None or row[0] != mark:
                if row is not None or con.execute("SELECT 1 FROM vec LIMIT 1").fetchone() is not None:
                    con.execute("DELETE FROM vec")
                con.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (mark,))
                con.execute("INSERT OR REPLACE INTO meta VALUES ('dim', ?)", (str(self.judge.dim),))
            self._con = con
        except (OSError, sqlite3.Error, ValueError) as exc:
            log.debug("judge vectors kept in memory: %s (%s)", self.path, exc)
            self._memory = {}
        return self._con

    def _remove_other_builds(self) -> None:
        """Delete the vector files of this judge's other builds (derived data, made anew if needed)."""
        name = self.judge.name
        for other in self.path.parent.glob(f"{name}*.sqlite3*"):
            base = other.name.split(".sqlite3", 1)[0]
            if base != self.path.name.split(".sqlite3", 1)[0] and (base == name or base.startswith(name + "-")):
                try:
                    other.unlink()
                except OSError as exc:
                    log.debug("cannot remove %s: %s", other, exc)

    def _fallback(self, exc: Exception) -> None:
        log.debug("judge vectors kept in memory from now on: %s (%s)", self.path, exc)
        self.close()
        self._memory = {}

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                try:
                    self._con.close()
                except sqlite3.Error:
                    pass
                self._con = None

    def _get(self, keys: Sequence[int]) -> dict[int, np.ndarray]:
        con = self._connect()
        out: dict[int, np.ndarray] = {}
        if con is None:
            memory = self._memory or {}
            return {k: memory[k] for k in keys if k in memory}
        try:
            uniq = list(dict.fromkeys(keys))
            with self._lock:  # one connection, shared by the threads of a server
                for start in range(0, len(uniq), SQL_VARS):
                    part = uniq[start:start + SQL_VARS]
                    marks = ",".join("?" * len(part))
                    for key, blob in con.execute(f"SELECT key, v FROM vec WHERE key IN ({marks})", part):
                        vec = np.frombuffer(blob, dtype=np.float16)
                        if vec.shape[0] == self.judge.dim:
                            out[int(key)] = vec
        except sqlite3.Error as exc:
            self._fallback(exc)
        return out

    def _put(self, keys: Sequence[int], vectors: np.ndarray) -> None:
        rows = [(int(k), vectors[i].astype(np.float16).tobytes()) for i, k in enumerate(keys)]
        con = self._connect()
        if con is None:
            memory = self._memory if self._memory is not None else {}
            if len(memory) + len(rows) > MEMORY_MAX:
                memory.clear()
            for k, i in zip(keys, range(len(keys))):
                memory[int(k)] = vectors[i].astype(np.float16)
            return
        try:
            with self._lock:
                con.execute("BEGIN IMMEDIATE")
                try:
                    con.executemany("INSERT OR IGNORE INTO vec VALUES (?, ?)", rows)
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:  # read-only, locked past the timeout, damaged: memory from now on
            self._fallback(exc)
            self._put(keys, vectors)

    # ---- what search and indexing call ---------------------------------------------------------
    def vectors(self, texts: Sequence[str], keys: Sequence[int] | None = None) -> np.ndarray:
        """The judge's unit vectors of ``texts`` (float32 ``(n, dim)``): stored ones read (the
        ``RECENT_MAX`` met last from memory), the others embedded now and stored. ``keys``: their
        :func:`memkit.embeddings.judge.text_keys`, when the caller has them."""
        keys = text_keys(texts).tolist() if keys is None else list(keys)
        recent = self._recent
        found = {k: recent[k] for k in keys if k in recent}
        if len(found) < len(keys):
            found.update(self._get([k for k in keys if k not in found]))
            if len(recent) + len(found) > RECENT_MAX:
                recent.clear()
            recent.update(found)
        out = np.zeros((len(texts), self.judge.dim), dtype=np.float32)
        for i, k in enumerate(keys):
            if k in found:
                out[i] = found[k]
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            fresh = self.judge.embed([texts[i] for i in missing])
            out[missing] = fresh
            self._put([keys[i] for i in missing], fresh)
        return out

    def query(self, text: str) -> np.ndarray:
        """The judge's unit vector of a query (embedded now: queries are not stored; the last one
        is kept, for the memory block asks twice about its message)."""
        last = self._last_query
        if last is not None and last[0] == text:
            return last[1]
        ahead = prefetched(self.judge, text)  # the search asked for it before its first stage
        vector = ahead if ahead is not None else self.judge.embed([text])[0]
        self._last_query = (text, vector)
        return vector

    def missing(self, texts: Sequence[str]) -> list[int]:
        """Positions of ``texts`` whose vector is not stored (the first of each text only)."""
        keys = text_keys(texts).tolist()
        found = self._get(keys)
        first: dict[int, int] = {}
        for i, k in enumerate(keys):
            if k not in found:
                first.setdefault(k, i)
        return list(first.values())

    def fill(self, texts: Sequence[str], progress: Progress | None = None, workers: int = 1) -> int:
        """Embed and store every text of ``texts`` not stored yet; how many were embedded.
        ``workers``: passes side by side (:meth:`memkit.embeddings.Judge.embed_apart`: the same
        vectors, faster on several cores; 1, a pass at a time, for a fill beside searches)."""
        todo = self.missing(texts)
        done = 0
        apart = getattr(self.judge, "embed_apart", None) if workers > 1 else None
        for start in range(0, len(todo), FILL_BATCH):
            part = todo[start:start + FILL_BATCH]
            batch = [texts[i] for i in part]
            vectors = apart(batch, workers) if apart is not None else self.judge.embed(batch, FILL_PASS)
            self._put(text_keys(batch).tolist(), vectors)
            done += len(part)
            if progress is not None:
                progress(done, len(todo))
        return done

    def fill_view(self, lineage: int, texts: Sequence[str], live: Callable[[int], bool],
                  progress: Progress | None = None, workers: int = 1) -> int:
        """:meth:`fill` for the live rows of an index view, remembering per view lineage which rows
        were done (an extended view only looks at its new rows)."""
        start = 0
        if self._filled is not None and self._filled[0] == lineage and self._filled[1] <= len(texts):
            start = self._filled[1]
        rows = [i for i in range(start, len(texts)) if live(i)]
        done = self.fill([texts[i] for i in rows], progress, workers)
        self._filled = (lineage, len(texts))
        return done

    def count(self) -> int:
        """How many vectors are stored."""
        con = self._connect()
        if con is None:
            return len(self._memory or {})
        try:
            return int(con.execute("SELECT count(*) FROM vec").fetchone()[0])
        except sqlite3.Error:
            return 0
