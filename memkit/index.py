"""The embedding sidecar under ``.memkit/index/``: one record per topic file, plus a query-ready snapshot.

Layout (derived data; delete it any time, it is rebuilt)::

    .memkit/index/<model-slug>-<dim>/
        model.json                 which model made these vectors
        files/<topic-file>.json    stat + content hash of the file, and its entries (hash, line, kind, text…)
        vec/<key>.npy              float32 unit rows, one per entry of that file, in order
        generation                 a token every writer replaces after changing records (under the lock)
        snapshot.json              the manifest of the current snapshot (replaced last, atomically)
        snap-<id>/                 the snapshot: every entry of the vault in file order
            vectors.npy            (n, dim) float32, read with mmap_mode="r"
            dates.npy, lines.npy, end_lines.npy
            hashes.col, texts.col, kinds.col, dates.col, tags.col   one blob per column
            ranker/<key>.npy, ranker/sizes.json   Ranker.state() (optional; sizes.json last)

**Records.** Each topic file has its own record, so editing one file rewrites one small record
whatever the size of the vault. Vectors are looked up by the hash of an entry's normalised text,
so an edited line re-embeds only itself and a line moved between files is not re-embedded at all.
Records are written atomically (vectors first, then the JSON naming them); readers never lock and
retry once if a writer replaced a record under them. A missing, corrupt, foreign-model or
wrong-dimension record is rebuilt, never trusted.

**Refreshes cost O(changed files), not O(entries).** One ``os.scandir`` of topics/ and a stat per
file finds what changed; the hash -> vector map and per-hash counts (for ``removed``) are kept up
to date incrementally; a writer re-lists files/ only when ``generation`` says another writer
changed records; only the vector files of replaced records are deleted (``--full`` sweeps vec/).

**Snapshot.** A new process does not read thousands of record JSONs nor rebuild BM25: it reads
``snapshot.json``, checks the size of every snapshot file (a truncated or half-written snapshot
is ignored), maps ``vectors.npy``, decodes the columns, and — when ``generation`` still holds the
token the snapshot was made at — takes the snapshot as its records without listing files/ (else
it lists files/ and reads only the records whose stat differs from the manifest's). The usual
stat check of topic files against those records then finds hand edits. When the records in
memory are exactly the snapshot's, the search view uses the mapped matrix and the saved ranker
state (``Ranker.from_state``); otherwise (a few files changed since) the view is built from the
records as before. Any damage (bad sizes, columns, shapes, state) means: not trusted, rebuilt.

Who writes it (always under the index lock, files into a new ``snap-<id>`` folder, then the
manifest, then older folders are deleted; readers never wait, and a reader holding an old
folder's mapping keeps working):

- every writing refresh of a vault up to ``SNAPSHOT_SYNC_MAX`` entries (20k), and any full or
  large (≥ 10 % of the entries) refresh: vectors and columns only, no ranker build (a few ms
  at 10k). Above 20k, one added entry does not rewrite 100 MB: the snapshot goes stale and
  readers use it plus the changed records (falling back to a view built from records);
- a writing refresh with nothing to index (``memkit index`` run when up to date, and the
  watcher's periodic rescan when idle): the full snapshot with the ranker's state (above 20k
  entries only ``IDLE_SNAPSHOT_S`` after this process last changed records: no ranker build
  in the middle of a burst of edits);
- a reader that had to build the ranker over a current snapshot without a state adds the state
  (only if the index lock is free at that moment; never waits).

**Freshness checks of searches** (``needs_refresh``): at most once a second a search reads
``generation`` and stats topics/ (files created, deleted or renamed over: seen at once), then
stats ``FRESH_CHUNK`` topic files in turn (in-place edits); a full stat check happens at least
every ``FULL_CHECK_S`` seconds. So a warm search at 100k never pays a full 2,000-file stat scan.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import os
import re
import stat as stat_mod
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .errors import TopicParseError, VaultLocked
from .fsutil import atomic_write, file_lock
from .topic import decode_topic, parse_topic_text

if TYPE_CHECKING:
    from .embed import Embedder
    from .vault import Vault

log = logging.getLogger("memkit")

INDEX_VERSION = 2
GEN_FILE = "generation"
SNAP_POINTER = "snapshot.json"  #: names the current snapshot folder (written last)
SNAP_VERSION = 1
FRESH_CHUNK = 256  #: topic files a search stats per freshness check (needs_refresh)
FULL_CHECK_S = 2.0  #: a search makes a full stat check when the last one is older than this
SNAPSHOT_SYNC_MAX = 20_000  #: up to this many entries every writing refresh also rewrites the snapshot
IDLE_SNAPSHOT_S = 5.0  #: above SNAPSHOT_SYNC_MAX, an idle refresh writes the snapshot this long after a change
_GEN_COUNTER = itertools.count()
EMBED_BATCH = 2048

Progress = Callable[[int, int], None]  # (done, total) entries embedded


def embed_text(body: str) -> str:
    """What is embedded for an entry: its text without the ``[kind]`` prefix and trailing date."""
    return body


@dataclass
class FileRecord:
    """The index of one topic file."""

    file: str
    mtime_ns: int
    size: int
    sha: str
    topic: str
    updated: str  #: the topic's updated date (YYYY-MM-DD), used for undated entries
    hashes: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    end_lines: list[int] = field(default_factory=list)
    kinds: list[str | None] = field(default_factory=list)
    dates: list[str | None] = field(default_factory=list)
    tags: list[list[str]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    vectors: np.ndarray | None = None
    error: str | None = None  #: why the file could not be parsed (then it has no entries)
    vec_key: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "version": INDEX_VERSION, "file": self.file, "mtime_ns": self.mtime_ns, "size": self.size,
            "sha": self.sha, "topic": self.topic, "updated": self.updated, "error": self.error,
            "vec": self.vec_key, "hashes": self.hashes, "lines": self.lines, "end_lines": self.end_lines,
            "kinds": self.kinds, "dates": self.dates, "tags": self.tags, "texts": self.texts,
        }


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
    rebuilt_model: bool = False

    def summary(self) -> str:
        text = (f"indexed {self.entries:,} entries in {self.seconds:.1f} s: "
                f"{self.new:,} new, {self.removed:,} removed")
        if self.reused:
            text += f", {self.reused:,} reused"
        return text


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:80] or "model"


@lru_cache(maxsize=65536)
def _record_name(rel: str) -> str:
    """The name of a topic file's record under files/ (a hash keeps `my notes.md` and
    `my_notes.md`, or two long names, apart)."""
    return f"{_slug(rel)[:60]}-{hashlib.sha1(rel.encode('utf-8')).hexdigest()[:10]}.json"


class Index:
    """The embedding index of a vault for one model: its records on disk and a search view in memory.

    :param vault: the vault.
    :param embedder: the model; its ``name`` and ``dim`` select the sidecar folder.
    """

    def __init__(self, vault: "Vault", embedder: "Embedder") -> None:
        self.vault = vault
        self.embedder = embedder
        self.base = vault.state_dir / "index"
        self.dir = self.base / f"{_slug(embedder.name)}-{embedder.dim}"
        self.records: dict[str, FileRecord] = {}
        self._stamps: dict[str, tuple[int, int]] = {}  # record file -> (mtime_ns, size) when read
        self._loaded = False
        self._view: Any = None
        self._warned: set[str] = set()
        self.last_check = 0.0
        # hash -> a record holding it, and how many entries hold each hash; kept up to date
        # by refreshes so one changed file does not cost a walk over all entries
        self._known: dict[str, FileRecord] | None = None
        self._refs: dict[str, int] = {}
        self._changed_on_load = True
        self._pending: tuple[list[str], list[str]] | None = None
        self._gen: str | None = None  # the generation token of the records in memory
        self._snap: Snapshot | None = None  # the snapshot the records in memory came from
        self._disk_checked = False  # whether this Index checked the vector files on disk once
        self.snapshot_writes = True  #: write/refresh the query-ready snapshot (see the module docstring)
        # the cheap freshness check of searches (needs_refresh)
        self._dir_stamp: int | None = None
        self._gen_seen: str | None = None
        self._rr: list[str] = []
        self._rr_pos = 0
        self._last_full = 0.0
        self._round_started = 0.0
        self._last_change = -math.inf  # when a refresh of this Index last changed records
        self._current_stats: dict[str, tuple[int, int]] = {}  # topic file -> stamp, from stale_files

    # ---- reading records ------------------------------------------------------------------------
    def load(self) -> None:
        """Read this model's records; only record files changed since the last load are re-read,
        and unusable ones are dropped (their topic files are re-indexed)."""
        files_dir = self.dir / "files"
        if not self._loaded and not self.records:
            snap = self._open_snapshot()
            if snap is not None:
                self._snap = snap
                self.records = dict(snap.records)
                self._stamps = dict(snap.stamps)
                gen = self._read_gen()
                if snap.gen is not None and gen == snap.gen:
                    # no writer changed a record since the snapshot: it is the records
                    self._changed_on_load = True
                    self._known = None
                    self._view = None
                    self._loaded = True
                    self._gen = gen
                    return
        seen: dict[str, tuple[int, int]] = {}
        gen = self._read_gen()  # before the listing: a write after this is seen by the next load
        try:
            listing = list(os.scandir(files_dir))
        except FileNotFoundError:
            listing = []
        by_name = {_record_name(rec.file): rec for rec in self.records.values()}
        records: dict[str, FileRecord] = {}
        for item in listing:
            if not item.name.endswith(".json"):
                continue
            try:
                st = item.stat()
            except OSError:
                continue
            stamp = (st.st_mtime_ns, st.st_size)
            seen[item.name] = stamp
            old = by_name.get(item.name)
            if old is not None and self._stamps.get(item.name) == stamp:
                records[old.file] = old
                continue
            record = self._read_record(Path(item.path))
            if record is not None:
                records[record.file] = record
        changed = records.keys() != self.records.keys() or any(
            rec is not self.records.get(rel) for rel, rec in records.items())
        if changed:
            if self._known is not None:  # the hash -> record map follows, one changed file at a time
                kept = {id(r) for r in records.values()}
                before = {id(r) for r in self.records.values()}
                self._update_known([r for r in self.records.values() if id(r) not in kept],
                                   [r for r in records.values() if id(r) not in before and r.vectors is not None])
            self._view = None
        self._changed_on_load = changed
        self.records = records
        self._stamps = seen
        self._loaded = True
        self._gen = gen

    def _check_vec_files(self) -> None:
        """Drop records whose vector file on disk is missing or has the wrong size (their topic
        files are then re-indexed). One listing of vec/, no file read."""
        sizes: dict[str, int] = {}
        try:
            for item in os.scandir(self.dir / "vec"):
                if item.name.endswith(".npy"):
                    try:
                        sizes[item.name[:-4]] = item.stat().st_size
                    except OSError:
                        pass
        except FileNotFoundError:
            pass
        row = self.embedder.dim * 4
        bad = []
        for rel, r in self.records.items():
            if not r.hashes:
                continue
            extra = sizes.get(r.vec_key, -1) - len(r.hashes) * row
            if not (0 < extra <= 65536 and extra % 16 == 0):  # the .npy header is padded to 16/64 bytes
                bad.append(rel)
        if bad:
            for rel in bad:
                del self.records[rel]
            self._changed_on_load = True
            self._known = None
            self._view = None

    def _read_gen(self) -> str | None:
        """The records' generation: a token every writer replaces (under the index lock) after it
        changed records, so a writer that finds it unchanged can skip re-listing files/."""
        try:
            return (self.dir / GEN_FILE).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def _bump_gen(self) -> None:
        token = f"{os.getpid()}-{time.time_ns()}-{next(_GEN_COUNTER)}"
        try:
            atomic_write(self.dir / GEN_FILE, token, durable=False)
        except OSError:
            token = None  # type: ignore[assignment]  # then every writer re-lists files/
        self._gen = token

    def _read_record(self, path: Path) -> FileRecord | None:
        for _ in range(3):  # a writer may replace the record and its vectors under us: re-read
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("version") != INDEX_VERSION:
                    return None
                record = FileRecord(
                    data["file"], int(data["mtime_ns"]), int(data["size"]), data["sha"], data["topic"],
                    data["updated"], data["hashes"], data["lines"], data["end_lines"], data["kinds"],
                    data["dates"], data["tags"], data["texts"], None, data.get("error"), data.get("vec", ""),
                )
                n = len(record.hashes)
                if not all(len(x) == n for x in (record.lines, record.end_lines, record.kinds, record.dates,
                                                  record.tags, record.texts)):
                    return None
                if n:
                    vectors = np.load(self.dir / "vec" / f"{record.vec_key}.npy", mmap_mode="r", allow_pickle=False)
                    if vectors.shape != (n, self.embedder.dim) or vectors.dtype != np.float32:
                        return None
                    record.vectors = np.array(vectors)
                else:
                    record.vectors = np.zeros((0, self.embedder.dim), dtype=np.float32)
                return record
            except FileNotFoundError:
                time.sleep(0.01)
                continue
            except (OSError, ValueError, KeyError, TypeError):
                return None
        return None

    # ---- bringing records up to date ------------------------------------------------------------
    def stale_files(self) -> tuple[dict[str, str], list[str], list[str]]:
        """(current topic files (vault-relative name -> path), files whose record is missing or out
        of date, records of vanished files).

        One ``os.scandir`` of topics/ (the same files as ``Vault.topic_files``: ``*.md``, not hidden,
        symlinks only when they stay inside the vault) and one stat per file, compared with the records."""
        if not self._loaded:
            self.load()
        topics = self.vault.topics_dir
        prefix = self.vault.rel(topics) + "/"
        current: dict[str, str] = {}
        stale: list[str] = []
        records = self.records
        stats: dict[str, tuple[int, int]] = {}
        base = str(topics) + os.sep
        fd = -1
        if not self.vault.topics_dir_inside():  # topics/ links out of the vault: index nothing
            return {}, [], list(records)
        try:  # entries of a scandir(fd) are stat-ed relative to the folder (no path walk per file)
            fd = os.open(topics, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)) if os.scandir in os.supports_fd else -1
            with os.scandir(fd if fd >= 0 else topics) as it:
                listing = [e for e in it if e.name.endswith(".md") and not e.name.startswith(".")]
            S_ISREG, S_ISLNK = stat_mod.S_ISREG, stat_mod.S_ISLNK
            for item in listing:
                name = item.name
                try:
                    st = item.stat(follow_symlinks=False)
                    if S_ISLNK(st.st_mode):
                        path = Path(base + name)
                        if not self.vault.is_inside(path):
                            self.vault.warn_once(f"{prefix}{name}: symlink to a file outside the vault; skipped")
                            continue
                        st = path.stat()
                    if not S_ISREG(st.st_mode):
                        continue
                except OSError:
                    continue  # vanished meanwhile
                rel = prefix + name
                current[rel] = base + name
                stamp = stats[rel] = (st.st_mtime_ns, st.st_size)
                record = records.get(rel)
                if record is None or (record.mtime_ns, record.size) != stamp:
                    stale.append(rel)
        except (FileNotFoundError, NotADirectoryError):
            pass
        finally:
            if fd >= 0:
                os.close(fd)
        stale.sort()
        self._current_stats = stats
        gone = [rel for rel in records if rel not in current]
        return current, stale, gone

    def needs_refresh(self, budget: int = FRESH_CHUNK) -> bool:
        """The cheap check a search makes (at most once a second) instead of a full stat scan:
        True when ``refresh()`` has something to do, or when a full check is due.

        Constant-cost signals first: the records' generation (another process indexed), the
        mtime of topics/ (a file created, deleted or renamed over: memkit's writes and most
        editors' saves). Then in-place edits: ``budget`` topic files are stat-ed per call, in
        turn, so a full round is spread over several searches; a round that is not finished
        within ``FULL_CHECK_S`` seconds is finished by a full refresh."""
        now = time.monotonic()
        self.last_check = now
        if not self._loaded or self._dir_stamp is None:
            return True
        if now - self._last_full >= FULL_CHECK_S:
            return True
        if self._read_gen() != self._gen_seen:
            return True
        try:
            if os.stat(self.vault.topics_dir).st_mtime_ns != self._dir_stamp:
                return True
        except OSError:
            return True
        if not self._rr:
            self._rr = sorted(self.records)
            self._rr_pos = 0
        rels, pos = self._rr, self._rr_pos
        if pos == 0:
            self._round_started = now
        end = min(pos + budget, len(rels))
        root = str(self.vault.root) + os.sep
        records = self.records
        for rel in rels[pos:end]:
            record = records.get(rel)
            try:
                st = os.stat(root + rel)
            except OSError:
                return True
            if record is None or record.mtime_ns != st.st_mtime_ns or record.size != st.st_size:
                return True
        if end >= len(rels):  # a round done: it counts as a full check from its start
            self._rr = []
            self._last_full = self._round_started
        else:
            self._rr_pos = end
        return False

    def is_stale(self) -> bool:
        """The cheap check: a stat of each topic file against its record."""
        _, stale, gone = self.stale_files()
        return bool(stale or gone)

    def refresh(self, full: bool = False, progress: Progress | None = None, write: bool | None = None,
                lock_timeout: float = 60.0) -> IndexReport:
        """Bring the index up to date with the topic files.

        :param full: re-read and re-embed every file, ignoring existing records.
        :param progress: called with (done, total) while embedding.
        :param write: persist records (``None``: write if the index lock is free right now, else
            update only this process's view, so a search never waits for a running watcher).
        :param lock_timeout: seconds to wait for the index lock when ``write`` is True.
        """
        started = time.perf_counter()
        report = IndexReport()
        if full:
            self.records = {}
            self._loaded = True
            report.rebuilt_model = False
        elif not self._loaded:
            first_time = not (self.dir / "files").is_dir()
            self.load()
            if first_time and self.base.is_dir() and any(p.is_dir() for p in self.base.iterdir()):
                report.rebuilt_model = True
                log.info("model is now %s (%d-d): building a new index; the old one is kept until it is done",
                         self.embedder.name, self.embedder.dim)
        if write and not full and not self._disk_checked:
            self.load()  # records changed on disk since the snapshot are re-read…
            self._check_vec_files()  # …and damaged vector files re-indexed
            self._disk_checked = True
        check_started = time.monotonic()
        try:
            dir_stamp: int | None = os.stat(self.vault.topics_dir).st_mtime_ns
        except OSError:
            dir_stamp = None
        gen_seen = self._read_gen()
        current, stale, gone = self.stale_files()
        self._dir_stamp, self._gen_seen, self._last_full = dir_stamp, gen_seen, check_started
        self._rr, self._rr_pos = [], 0
        self._pending = (stale, gone)
        if full:
            stale = list(current)
        self.last_check = time.monotonic()
        if not stale and not gone:
            report.files = len(current)
            report.entries = sum(map(len, [r.hashes for r in self.records.values()]))
            if (write and self.snapshot_writes and not self._snapshot_current(with_ranker=True)
                    and (report.entries <= SNAPSHOT_SYNC_MAX
                         or time.monotonic() - self._last_change >= IDLE_SNAPSHOT_S)):
                # nothing to index: a good time to catch the snapshot up (in a big vault only when
                # nothing changed for a while, so a watcher does not build the ranker mid-burst)
                self._snapshot_idle()
            report.seconds = time.perf_counter() - started
            return report
        if write is None:
            try:
                with file_lock(self.base / "index.lock", timeout=0):
                    return self._refresh_locked(current, full, progress, True, report, started)
            except VaultLocked:
                return self._refresh_locked(current, full, progress, False, report, started)
        if write:
            with file_lock(self.base / "index.lock", timeout=lock_timeout):
                return self._refresh_locked(current, full, progress, True, report, started)
        return self._refresh_locked(current, full, progress, False, report, started)

    def _refresh_locked(self, current: dict[str, str], full: bool, progress: Progress | None, write: bool,
                        report: IndexReport, started: float) -> IndexReport:
        if write and not full:
            self._changed_on_load = False
            gen = self._read_gen()
            if gen is None or gen != self._gen or not self._disk_checked:
                self.load()  # another writer may have finished while we waited for the lock
            if not self._disk_checked:
                # the first write of this Index: records that came from the snapshot must still
                # be sound on disk (the next writers and readers build on them), else re-index
                self._check_vec_files()
                self._disk_checked = True
        if full or self._pending is None:
            current, stale, gone = self.stale_files()
        elif self._changed_on_load:  # other records now: compare them with the stats just taken
            stats, records = self._current_stats, self.records
            stale = [rel for rel in current if (r := records.get(rel)) is None
                     or (r.mtime_ns, r.size) != stats.get(rel)]
            gone = [rel for rel in records if rel not in current]
        else:
            stale, gone = self._pending  # the records did not change since refresh() checked
        self._pending = None
        if full:
            stale = list(current)
            self._known = None
        known = self._known_map()
        new_records: dict[str, FileRecord] = {}
        to_embed: dict[str, str] = {}
        old_records = [self.records[rel] for rel in stale + gone if rel in self.records]
        for rel in stale:
            record = self._parse_file(rel, Path(current[rel]))
            if record is None:
                continue
            old = self.records.get(rel)
            if old is not None and old.sha == record.sha and not full and old.error is None:
                old.mtime_ns, old.size = record.mtime_ns, record.size  # touched, not changed
                new_records[rel] = old
                continue
            new_records[rel] = record
            if record.error:
                report.errors.append(record.error)
            for h, text in zip(record.hashes, record.texts):
                if h not in known and h not in to_embed:
                    to_embed[h] = text
        # embed what is new, in batches, with progress
        items = list(to_embed.items())
        vectors: dict[str, np.ndarray] = {}
        total = len(items)
        for start in range(0, total, EMBED_BATCH):
            batch = items[start:start + EMBED_BATCH]
            rows = self.embedder.embed([embed_text(_body(t)) for _, t in batch])
            for (h, _), row in zip(batch, rows):
                vectors[h] = row
            if progress:
                progress(min(start + EMBED_BATCH, total), total)
        report.new = total
        for rel, record in new_records.items():
            if record.vectors is None:
                dim = self.embedder.dim
                record.vectors = (np.stack([vectors[h] if h in vectors else _row(known[h], h) for h in record.hashes])
                                  .astype(np.float32) if record.hashes else np.zeros((0, dim), np.float32))
                report.reused += sum(1 for h in record.hashes if h not in vectors)
        gone_set = set(gone)
        replaced = [r for r in old_records if r.file in gone_set or
                    (r.file in new_records and new_records[r.file] is not r)]
        if write:  # disk first: if this fails, memory still says these files need indexing
            self._write(new_records, gone, None if full else {r.vec_key for r in replaced if r.vec_key})
        for rel in gone:
            self.records.pop(rel, None)
        self.records.update(new_records)
        if new_records or gone:
            self._last_change = time.monotonic()
        replaced_ids = {id(r) for r in old_records}
        report.removed = self._update_known(replaced, [r for r in new_records.values() if id(r) not in replaced_ids])
        self._view = None
        report.changed_files = len(new_records)
        report.files = len(current)
        report.entries = sum(map(len, [r.hashes for r in self.records.values()]))
        if write and self.snapshot_writes and (full or report.entries <= SNAPSHOT_SYNC_MAX
                                               or report.new + report.reused >= report.entries // 10):
            self._try_snapshot(with_ranker=False)  # cheap here: vectors + metadata, no ranker build
        report.seconds = time.perf_counter() - started
        return report

    def _known_map(self) -> dict[str, FileRecord]:
        """hash -> a record holding it, over all records (built once, then updated incrementally;
        one reference per hash, no per-entry objects for the garbage collector to walk)."""
        if self._known is None:
            known: dict[str, FileRecord] = {}
            hashes = []
            for r in self.records.values():
                if r.vectors is None or not r.hashes:
                    continue
                known.update(zip(r.hashes, itertools.repeat(r)))
                hashes.append(r.hashes)
            self._known = known
            self._refs = dict(Counter(itertools.chain.from_iterable(hashes)))
        return self._known

    def _update_known(self, removed: list[FileRecord], added: list[FileRecord]) -> int:
        """Account for replaced/removed and new records; returns how many hashes vanished.

        A hash still held by another file may keep pointing at a replaced record: that record's
        row for it is the same vector (same text, same model), so no search for the other file."""
        known, refs = self._known_map(), self._refs
        for r in added:
            known.update(zip(r.hashes, itertools.repeat(r)))
            for h in r.hashes:
                refs[h] = refs.get(h, 0) + 1
        gone = 0
        for r in removed:
            for h in r.hashes:
                left = refs.get(h, 0) - 1
                if left > 0:
                    refs[h] = left
                    continue
                if h in refs:
                    gone += 1
                refs.pop(h, None)
                known.pop(h, None)
        return gone

    def _parse_file(self, rel: str, path: Path) -> FileRecord | None:
        try:
            st = path.stat()
        except OSError:
            return None  # vanished meanwhile: the next refresh drops it
        try:
            data = path.read_bytes() if st.st_size <= _max_bytes() else None
        except OSError as exc:
            record = FileRecord(rel, st.st_mtime_ns, st.st_size, f"unreadable-{st.st_mtime_ns}", path.stem,
                                _day(st.st_mtime), error=f"{rel}: cannot read: {exc.strerror or exc}")
            self._warn(rel + record.sha, f"{record.error}; skipped")
            return record
        sha = hashlib.sha1(data).hexdigest() if data is not None else f"size-{st.st_size}"
        stem = path.stem
        record = FileRecord(rel, st.st_mtime_ns, st.st_size, sha, stem, _day(st.st_mtime))
        try:
            if data is None:
                raise TopicParseError(rel, f"is over the {_max_bytes() // 2**20} MB limit for a topic; split it")
            text, bom = decode_topic(data, rel)
            topic = parse_topic_text(text, stem, rel, path, bom)
        except TopicParseError as exc:
            record.error = str(exc)
            self._warn(rel + sha, f"{exc}; skipped")
            return record
        record.updated = topic.updated().date().isoformat()
        for e in topic.entries:
            record.hashes.append(e.hash)
            record.lines.append(e.line)
            record.end_lines.append(e.end_line)
            record.kinds.append(e.kind)
            record.dates.append(e.date)
            record.tags.append(list(e.tags))
            record.texts.append(e.text)
        return record

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)

    def _write(self, changed: dict[str, FileRecord], gone: list[str], old_keys: set[str] | None = None) -> None:
        files_dir, vec_dir = self.dir / "files", self.dir / "vec"
        files_dir.mkdir(parents=True, exist_ok=True)
        vec_dir.mkdir(parents=True, exist_ok=True)
        model_json = self.dir / "model.json"
        if not model_json.exists():
            atomic_write(model_json, json.dumps({"model": self.embedder.name, "dim": self.embedder.dim,
                                                 "version": INDEX_VERSION}) + "\n")
        try:
            for rel, record in changed.items():
                assert record.vectors is not None
                if len(record.hashes):
                    key = hashlib.sha1(record.vectors.tobytes()).hexdigest()[:20]
                    if key != record.vec_key or not (vec_dir / f"{key}.npy").exists():
                        _atomic_save_npy(vec_dir / f"{key}.npy", record.vectors)
                    record.vec_key = key
                else:
                    record.vec_key = ""
                name = _record_name(rel)
                atomic_write(files_dir / name, json.dumps(record.to_json(), ensure_ascii=False), durable=False)
                st = os.stat(files_dir / name)
                self._stamps[name] = (st.st_mtime_ns, st.st_size)
            for rel in gone:
                try:
                    os.unlink(files_dir / _record_name(rel))
                except FileNotFoundError:
                    pass
                self._stamps.pop(_record_name(rel), None)
        finally:
            if changed or gone:
                self._bump_gen()
        if gone or changed:
            used = {r.vec_key for rel, r in self.records.items() if rel not in gone and rel not in changed}
            used |= {r.vec_key for r in changed.values()}
            if old_keys is None:  # a full run: sweep every unused vector file (also crash leftovers)
                candidates = [p.stem for p in vec_dir.iterdir() if p.suffix == ".npy"]
            else:  # only the files the replaced records named: no walk over vec/
                candidates = list(old_keys)
            for key in candidates:
                if key and key not in used:
                    try:
                        os.unlink(vec_dir / f"{key}.npy")
                    except OSError:
                        pass

    def prune_other_models(self) -> list[str]:
        """Delete sidecars made by other models (call after this one is complete)."""
        import shutil

        removed = []
        if self.base.is_dir():
            for path in self.base.iterdir():
                if path.is_dir() and path != self.dir:
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path.name)
        return removed

    # ---- the in-memory view for search -------------------------------------------------------
    def view(self) -> "IndexView":
        if self._view is None:
            snap = self._snap
            if snap is not None and self._snapshot_is_memory(snap):
                try:
                    self._view = IndexView.from_snapshot(self, snap)
                except (OSError, ValueError, KeyError, TypeError) as exc:
                    log.debug("snapshot %s unusable (%s): building the view from the records", snap.path, exc)
                    self._snap = None
            if self._view is None:
                self._view = IndexView.build(self)
        return self._view

    # ---- the query-ready snapshot ----------------------------------------------------------------
    def _snapshot_is_memory(self, snap: "Snapshot") -> bool:
        """Whether the records in memory are exactly the snapshot's (same objects: none replaced)."""
        records = self.records
        return len(records) == len(snap.records) and all(records.get(rel) is rec for rel, rec in snap.records.items())

    def _snapshot_current(self, with_ranker: bool) -> bool:
        snap = self._snap
        if snap is None or not self._snapshot_is_memory(snap):
            return False
        if any(snap.stamps_files.get(rel) != (r.mtime_ns, r.size) for rel, r in self.records.items()):
            return False  # files touched since (same content): refresh the stamps in the snapshot
        return not with_ranker or snap.has_ranker() or not snap.n

    def _snapshot_idle(self) -> None:
        """Write the snapshot with the ranker's state if the lock is free and memory is what the
        records on disk hold (else a later refresh does it)."""
        try:
            with file_lock(self.base / "index.lock", timeout=0):
                if self._read_gen() != self._gen:
                    return
                self.write_snapshot(with_ranker=True)
        except VaultLocked:
            pass
        except OSError as exc:
            log.debug("could not write the index snapshot: %s", exc)

    def _try_snapshot(self, with_ranker: bool) -> None:
        try:
            self.write_snapshot(with_ranker=with_ranker)
        except OSError as exc:  # derived data: a failed snapshot only costs the next reader time
            log.debug("could not write the index snapshot: %s", exc)

    def write_snapshot(self, with_ranker: bool = True) -> Path:
        """Write the query-ready snapshot of the records in memory (caller holds the index lock
        and has written the records). Files go to a new folder, the pointer ``snapshot.json`` is
        replaced last, then older snapshot folders are deleted."""
        view = self._view if self._view is not None and (self._view.ranker is not None or not with_ranker) else None
        if view is None:
            view = IndexView.build(self, ranker=with_ranker)
            if with_ranker:
                self._view = view
        token = f"{time.time_ns():x}-{os.getpid()}"
        final = self.dir / f"snap-{token}"
        tmp = self.dir / f".snap-{token}.tmp"
        tmp.mkdir(parents=True)
        try:
            _save_npy(tmp / "vectors.npy", np.ascontiguousarray(view.vectors, dtype=np.float32))
            _save_npy(tmp / "dates.npy", np.asarray(view.dates, dtype="U10"))
            order = sorted(self.records)
            recs = [self.records[rel] for rel in order]
            _save_npy(tmp / "lines.npy", np.array([x for r in recs for x in r.lines], dtype=np.int64))
            _save_npy(tmp / "end_lines.npy", np.array([x for r in recs for x in r.end_lines], dtype=np.int64))
            for name, values in (("hashes", view.hashes), ("texts", view.texts), ("kinds", view.kinds),
                                 ("dates", view.own_dates), ("tags", view.tags)):
                (tmp / f"{name}.col").write_bytes(_encode_column(values, name == "tags"))
            if with_ranker and view.ranker is not None:
                _save_ranker(tmp / "ranker", view.ranker)
            sizes = {p.name: p.stat().st_size for p in tmp.iterdir() if p.is_file()}
            os.rename(tmp, final)
        except BaseException:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
            raise
        manifest = {
            "version": SNAP_VERSION, "index_version": INDEX_VERSION, "model": self.embedder.name,
            "dim": self.embedder.dim, "dir": final.name, "gen": self._gen, "n": len(view),
            "sizes": sizes,
            "files": [[r.file, r.mtime_ns, r.size, r.sha, r.topic, r.updated, r.error, r.vec_key, len(r.hashes)]
                      for r in recs],
            "stamps": {name: list(st) for name, st in self._stamps.items()},
        }
        atomic_write(self.dir / SNAP_POINTER, json.dumps(manifest, ensure_ascii=False), durable=False)
        # memory now mirrors the snapshot: readers of this Index keep using it for the next views
        self._snap = Snapshot(final, self._gen, dict(self.records), dict(self._stamps),
                              {r.file: (r.mtime_ns, r.size) for r in recs}, len(view))
        for old in self.dir.iterdir():
            if old != final and (old.name.startswith("snap-") or
                                 (old.name.startswith(".snap-") and old.name.endswith(".tmp"))):
                import shutil

                shutil.rmtree(old, ignore_errors=True)
        return final

    def _open_snapshot(self) -> "Snapshot | None":
        """The current snapshot with its records, or None when missing, foreign or damaged."""
        try:
            manifest = json.loads((self.dir / SNAP_POINTER).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.debug("index snapshot pointer unreadable (%s): ignored", exc)
            return None
        try:
            return Snapshot.open(self, manifest)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            log.debug("index snapshot unusable (%s): reading the records", exc)
            return None


def _row(record: FileRecord, h: str) -> np.ndarray:
    assert record.vectors is not None
    return record.vectors[record.hashes.index(h)]


def _body(text: str) -> str:
    from .topic import _DATE_RE, _KIND_RE

    return _DATE_RE.sub("", _KIND_RE.sub("", text, count=1))


def _day(mtime: float) -> str:
    return datetime.fromtimestamp(mtime).date().isoformat()


def _max_bytes() -> int:
    from .topic import MAX_TOPIC_BYTES

    return MAX_TOPIC_BYTES


def _atomic_save_npy(path: Path, array: np.ndarray) -> None:
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(array, dtype=np.float32), allow_pickle=False)
    atomic_write(path, buffer.getvalue(), durable=False)


def _save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, array, allow_pickle=False)


def _save_ranker(folder: Path, ranker: Any) -> None:
    """The ranker's state as one .npy per array plus ``sizes.json`` (written last)."""
    folder.mkdir()
    sizes = {}
    for key, array in ranker.state().items():
        if not re.fullmatch(r"[A-Za-z0-9_]+", key):
            raise ValueError(f"unexpected ranker state key {key!r}")
        _save_npy(folder / f"{key}.npy", np.asarray(array))
        sizes[key] = (folder / f"{key}.npy").stat().st_size
    (folder / "sizes.json").write_text(json.dumps(sizes), encoding="utf-8")


def _load_ranker_state(folder: Path) -> dict[str, np.ndarray] | None:
    """The saved ranker state (memory-mapped), or None when absent or damaged."""
    try:
        sizes = json.loads((folder / "sizes.json").read_text(encoding="utf-8"))
        state = {}
        for key, size in sizes.items():
            path = folder / f"{key}.npy"
            if path.stat().st_size != size:
                return None
            state[key] = np.load(path, mmap_mode="r", allow_pickle=False) if size > 4096 else \
                np.load(path, allow_pickle=False)
        return state
    except (OSError, ValueError, TypeError, AttributeError):
        return None


class Snapshot:
    """A query-ready copy of all records: ``snap-<id>/`` (see the module docstring)."""

    def __init__(self, path: Path, gen: str | None, records: dict[str, FileRecord],
                 stamps: dict[str, tuple[int, int]], stamps_files: dict[str, tuple[int, int]], n: int,
                 vectors: np.ndarray | None = None, dates: np.ndarray | None = None) -> None:
        self.path = path
        self.gen = gen  #: the records' generation it was made from
        self.records = records  #: topic file -> record (entries' vectors are rows of ``vectors``)
        self.stamps = stamps  #: record file -> (mtime_ns, size) of the records it holds
        self.stamps_files = stamps_files  #: topic file -> (mtime_ns, size) it reflects
        self.n = n
        self._vectors = vectors
        self._dates = dates

    def has_ranker(self) -> bool:
        return (self.path / "ranker" / "sizes.json").is_file()

    def vectors(self, dim: int) -> np.ndarray:
        if self._vectors is None:
            self._vectors = _load_matrix(self.path / "vectors.npy", self.n, dim)
        return self._vectors

    def dates(self) -> np.ndarray:
        if self._dates is None:
            dates = np.load(self.path / "dates.npy", mmap_mode="r", allow_pickle=False)
            if dates.shape != (self.n,) or dates.dtype.kind != "U":
                raise ValueError("snapshot dates do not match")
            self._dates = dates
        return self._dates

    def ranker_state(self) -> dict[str, np.ndarray] | None:
        return _load_ranker_state(self.path / "ranker")

    @classmethod
    def open(cls, index: Index, manifest: dict[str, Any]) -> "Snapshot | None":
        dim = index.embedder.dim
        if (manifest.get("version") != SNAP_VERSION or manifest.get("index_version") != INDEX_VERSION
                or manifest.get("model") != index.embedder.name or manifest.get("dim") != dim):
            return None
        name = str(manifest["dir"])
        if not re.fullmatch(r"snap-[0-9a-f]+-[0-9]+", name):
            return None
        path = index.dir / name
        for fname, size in manifest["sizes"].items():  # a truncated or half-copied file: not trusted
            if "/" in fname or os.stat(path / fname).st_size != int(size):
                raise ValueError(f"{fname} has the wrong size")
        n = int(manifest["n"])
        vectors = _load_matrix(path / "vectors.npy", n, dim)
        cols = []
        for k in ("hashes", "lines", "end_lines", "kinds", "dates", "tags", "texts"):
            if k in ("lines", "end_lines"):
                arr = np.load(path / f"{k}.npy", allow_pickle=False)
                if arr.shape != (n,) or arr.dtype.kind != "i":
                    raise ValueError(f"snapshot {k} do not match its vectors")
                cols.append(arr.tolist())
            else:
                cols.append(_decode_column((path / f"{k}.col").read_bytes(), n, k == "tags", k in ("kinds", "dates")))
        hashes, lines, end_lines, kinds, dates, tags, texts = cols
        records: dict[str, FileRecord] = {}
        stamps_files: dict[str, tuple[int, int]] = {}
        pos = 0
        empty = np.zeros((0, dim), dtype=np.float32)
        for file, mtime_ns, size, sha, topic, updated, error, vec_key, m in manifest["files"]:
            m = int(m)
            end = pos + m
            if end > n:
                raise ValueError("snapshot files list more entries than it holds")
            records[file] = FileRecord(file, int(mtime_ns), int(size), sha, topic, updated, hashes[pos:end],
                                       lines[pos:end], end_lines[pos:end], kinds[pos:end], dates[pos:end],
                                       tags[pos:end], texts[pos:end], vectors[pos:end] if m else empty, error,
                                       vec_key)
            stamps_files[file] = (int(mtime_ns), int(size))
            pos = end
        if pos != n:
            raise ValueError("snapshot files do not cover its entries")
        stamps = {str(k): (int(v[0]), int(v[1])) for k, v in manifest["stamps"].items()}
        gen = manifest.get("gen")
        return cls(path, gen if isinstance(gen, str) else None, records, stamps, stamps_files, n, vectors)


def _save_ranker_later(index: Index, snap: Snapshot, ranker: Any, replace: bool = False) -> None:
    """A reader that had to build the ranker over a snapshot saves its state there for the next
    process, only if the index lock is free right now (a reader never waits for a writer).
    ``replace``: the saved state was unusable (damaged, other parameters): put this one instead."""
    if not index.snapshot_writes or (snap.has_ranker() and not replace):
        return
    tmp = snap.path / f".ranker-{os.getpid()}-{time.time_ns():x}.tmp"
    try:
        with file_lock(index.base / "index.lock", timeout=0):
            if not snap.path.is_dir():
                return
            try:
                _save_ranker(tmp, ranker)
                if replace and (snap.path / "ranker").exists():
                    import shutil

                    old = snap.path / f".ranker-old-{os.getpid()}-{time.time_ns():x}.tmp"
                    os.rename(snap.path / "ranker", old)  # readers meanwhile rebuild: still correct
                    shutil.rmtree(old, ignore_errors=True)
                os.rename(tmp, snap.path / "ranker")
            finally:
                if tmp.exists():
                    import shutil

                    shutil.rmtree(tmp, ignore_errors=True)
    except (VaultLocked, OSError, ValueError) as exc:
        log.debug("ranker state not saved: %s", exc)


def _load_matrix(path: Path, n: int, dim: int) -> np.ndarray:
    vectors = np.load(path, mmap_mode="r", allow_pickle=False)
    if vectors.shape != (n, dim) or vectors.dtype != np.float32:
        raise ValueError(f"snapshot vectors are {vectors.shape} {vectors.dtype}, expected ({n}, {dim}) float32")
    return np.asarray(vectors)  # a plain read-only ndarray over the mapping (cheaper to slice)


_NONE = "\x01"  # a None in a text column
_TAG_SEP = "\x1f"
_NO_TAGS: list[str] = []  # shared by the snapshot's untagged entries (never mutated)


def _encode_column(values: list[Any], tags: bool) -> bytes:
    """A column of strings (or None, or tag lists) as one blob: a format byte, then the values
    joined by NUL (``j``), or JSON (``J``) when a value holds a separator character."""
    items = [_TAG_SEP.join(v) for v in values] if tags else [_NONE if v is None else v for v in values]
    joined = "\x00".join(items)
    ok = len(items) != 1 and joined.count("\x00") == max(len(items) - 1, 0)
    if ok and tags:  # no tag holds the separator: exactly (tags - 1) separators per entry
        ok = joined.count(_TAG_SEP) == sum(map(len, values)) - sum(1 for v in values if v)
    elif ok:  # no value holds the None marker: exactly one per None
        ok = joined.count(_NONE) == values.count(None)
    if ok:
        return b"j" + joined.encode("utf-8", "surrogatepass")
    return b"J" + json.dumps(values, ensure_ascii=True).encode("ascii")


def _decode_column(raw: bytes, n: int, tags: bool, few: bool = False) -> list[Any]:
    if raw[:1] == b"J":
        values = json.loads(raw[1:].decode("ascii"))
        if not isinstance(values, list):
            raise ValueError("snapshot column is not a list")
    elif raw[:1] == b"j":
        text = raw[1:].decode("utf-8", "surrogatepass")
        values = text.split("\x00") if n else []
        if tags:
            values = [v.split(_TAG_SEP) if v else _NO_TAGS for v in values]
        elif few:  # kinds, dates: a few distinct values, one string object each
            same = {v: (None if v == _NONE else v) for v in set(values)}
            values = [same[v] for v in values]
        elif _NONE in text:
            values = [None if v == _NONE else v for v in values]
    else:
        raise ValueError("snapshot column has an unknown format")
    if len(values) != n:
        raise ValueError("snapshot column does not match its vectors")
    return values


@dataclass
class IndexView:
    """All entries of the vault as parallel arrays, in file order, with the ranker built over them."""

    files: list[str]
    topics: list[str]
    file_ids: np.ndarray
    lines: np.ndarray
    hashes: list[str]
    texts: list[str]
    kinds: list[str | None]
    tags: list[list[str]]
    dates: np.ndarray  #: 'YYYY-MM-DD' per entry (the topic's updated date when the entry has none)
    own_dates: list[str | None]
    vectors: np.ndarray
    ranker: Any  #: the Ranker (None in a view built only to write a snapshot)

    @classmethod
    def build(cls, index: Index, ranker: bool = True) -> "IndexView":
        """The view over the records in memory (vectors copied into one matrix)."""
        return cls._assemble(index, None, ranker)

    @classmethod
    def from_snapshot(cls, index: Index, snap: Snapshot) -> "IndexView":
        """The view over a snapshot that holds exactly the records in memory: its memory-mapped
        matrix, its dates, and its saved ranker state when there is one (no BM25 rebuild)."""
        return cls._assemble(index, snap, True)

    @classmethod
    def _assemble(cls, index: Index, snap: Snapshot | None, with_ranker: bool) -> "IndexView":
        from .rank import Ranker

        records = [index.records[rel] for rel in sorted(index.records) if index.records[rel].hashes]
        n = sum(len(r.hashes) for r in records)
        dim = index.embedder.dim
        file_ids = np.repeat(np.arange(len(records), dtype=np.int32),
                             [len(r.hashes) for r in records]) if records else np.zeros(0, np.int32)
        hashes: list[str] = []
        texts: list[str] = []
        kinds: list[str | None] = []
        tags: list[list[str]] = []
        own_dates: list[str | None] = []
        line_list: list[int] = []
        for r in records:
            hashes += r.hashes
            texts += r.texts
            kinds += r.kinds
            tags += r.tags
            own_dates += r.dates
            line_list += r.lines
        lines = np.asarray(line_list, dtype=np.int32)
        if snap is not None:
            if snap.n != n:
                raise ValueError("snapshot size does not match its records")
            vectors = snap.vectors(dim)
            dates = snap.dates()
        else:
            vectors = np.empty((n, dim), dtype=np.float32)
            pos = 0
            for r in records:
                m = len(r.hashes)
                assert r.vectors is not None
                vectors[pos:pos + m] = r.vectors
                pos += m
            updated = [r.updated for r in records]
            dates = (np.array([d or updated[f] for d, f in zip(own_dates, file_ids.tolist())], dtype="U10")
                     if n else np.array([], dtype="U10"))
        ranker = None
        if with_ranker:
            saved = snap is not None and hasattr(Ranker, "from_state") and snap.has_ranker()
            state = snap.ranker_state() if saved and snap is not None else None
            if state is not None:
                try:
                    ranker = Ranker.from_state(state, vectors, file_ids)
                except ValueError as exc:  # other parameters or a damaged state: rebuild
                    log.debug("saved ranker state unusable (%s): rebuilding", exc)
            if ranker is None:
                ranker = Ranker(texts, vectors, file_ids)
                if snap is not None and hasattr(ranker, "state"):
                    _save_ranker_later(index, snap, ranker, replace=saved)
        return cls([r.file for r in records], [r.topic for r in records], file_ids, lines, hashes, texts,
                   kinds, tags, dates, own_dates, vectors, ranker)

    def __len__(self) -> int:
        return len(self.texts)
