"""The embedding sidecar under ``.memkit/index/``: one record per topic file.

Layout (derived data; delete it any time, it is rebuilt)::

    .memkit/index/<model-slug>-<dim>/
        model.json                 which model made these vectors
        files/<topic-file>.json    stat + content hash of the file, and its entries (hash, line, kind, text…)
        vec/<key>.npy              float32 unit rows, one per entry of that file, in order

Each topic file has its own record, so editing one file rewrites one small record whatever the
size of the vault. Vectors are looked up by the hash of an entry's normalised text, so an edited
line re-embeds only itself and a line moved between files is not re-embedded at all. Records are
written atomically (vectors first, then the JSON naming them); readers never lock and retry once
if a writer replaced a record under them. A missing, corrupt, foreign-model or wrong-dimension
record is rebuilt, never trusted.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass, field
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

INDEX_VERSION = 1
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

    # ---- reading records ------------------------------------------------------------------------
    def load(self) -> None:
        """Read this model's records; only record files changed since the last load are re-read,
        and unusable ones are dropped (their topic files are re-indexed)."""
        files_dir = self.dir / "files"
        seen: dict[str, tuple[int, int]] = {}
        try:
            listing = list(os.scandir(files_dir))
        except FileNotFoundError:
            listing = []
        by_name = {rel_name: rec for rec in self.records.values() for rel_name in [f"{_slug(rec.file)}.json"]}
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
        self.records = records
        self._stamps = seen
        self._loaded = True
        self._view = None

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
    def stale_files(self) -> tuple[dict[str, Path], list[str], list[str]]:
        """(current topic files, files whose record is missing or out of date, records of vanished files)."""
        if not self._loaded:
            self.load()
        current = {self.vault.rel(path): path for _, path in self.vault.topic_files()}
        stale = []
        for rel, path in current.items():
            record = self.records.get(rel)
            try:
                st = path.stat()
            except OSError:
                stale.append(rel)
                continue
            if record is None or record.mtime_ns != st.st_mtime_ns or record.size != st.st_size:
                stale.append(rel)
        gone = [rel for rel in self.records if rel not in current]
        return current, stale, gone

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
        current, stale, gone = self.stale_files()
        if full:
            stale = list(current)
        self.last_check = time.monotonic()
        if not stale and not gone:
            report.files = len(current)
            report.entries = sum(len(r.hashes) for r in self.records.values())
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

    def _refresh_locked(self, current: dict[str, Path], full: bool, progress: Progress | None, write: bool,
                        report: IndexReport, started: float) -> IndexReport:
        if write and not full:
            self.load()  # another writer may have finished while we waited for the lock
        _, stale, gone = self.stale_files()
        if full:
            stale = list(current)
        known: dict[str, np.ndarray] = {}
        for record in self.records.values():
            if record.vectors is not None:
                for i, h in enumerate(record.hashes):
                    known[h] = record.vectors[i]
        new_records: dict[str, FileRecord] = {}
        to_embed: dict[str, str] = {}
        old_hashes = {h for rel in stale + gone if rel in self.records for h in self.records[rel].hashes}
        for rel in stale:
            record = self._parse_file(rel, current[rel])
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
                record.vectors = (np.stack([vectors[h] if h in vectors else known[h] for h in record.hashes])
                                  .astype(np.float32) if record.hashes else np.zeros((0, dim), np.float32))
                report.reused += sum(1 for h in record.hashes if h not in vectors)
        if write:  # disk first: if this fails, memory still says these files need indexing
            self._write(new_records, gone)
        for rel in gone:
            self.records.pop(rel, None)
        self.records.update(new_records)
        report.removed = len(old_hashes - {h for r in self.records.values() for h in r.hashes})
        self._view = None
        report.changed_files = len(new_records)
        report.files = len(current)
        report.entries = sum(len(r.hashes) for r in self.records.values())
        report.seconds = time.perf_counter() - started
        return report

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

    def _write(self, changed: dict[str, FileRecord], gone: list[str]) -> None:
        files_dir, vec_dir = self.dir / "files", self.dir / "vec"
        files_dir.mkdir(parents=True, exist_ok=True)
        vec_dir.mkdir(parents=True, exist_ok=True)
        model_json = self.dir / "model.json"
        if not model_json.exists():
            atomic_write(model_json, json.dumps({"model": self.embedder.name, "dim": self.embedder.dim,
                                                 "version": INDEX_VERSION}) + "\n")
        for rel, record in changed.items():
            assert record.vectors is not None
            if len(record.hashes):
                key = hashlib.sha1(record.vectors.tobytes()).hexdigest()[:20]
                if key != record.vec_key or not (vec_dir / f"{key}.npy").exists():
                    _atomic_save_npy(vec_dir / f"{key}.npy", record.vectors)
                record.vec_key = key
            else:
                record.vec_key = ""
            name = f"{_slug(rel)}.json"
            atomic_write(files_dir / name, json.dumps(record.to_json(), ensure_ascii=False), durable=False)
            st = os.stat(files_dir / name)
            self._stamps[name] = (st.st_mtime_ns, st.st_size)
        for rel in gone:
            try:
                os.unlink(files_dir / f"{_slug(rel)}.json")
            except FileNotFoundError:
                pass
            self._stamps.pop(f"{_slug(rel)}.json", None)
        if gone or changed:
            used = {r.vec_key for rel, r in self.records.items() if rel not in gone and rel not in changed}
            used |= {r.vec_key for r in changed.values()}
            for path in vec_dir.iterdir():
                if path.suffix == ".npy" and path.stem not in used:
                    try:
                        os.unlink(path)
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
            self._view = IndexView.build(self)
        return self._view


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
    ranker: Any

    @classmethod
    def build(cls, index: Index) -> "IndexView":
        from .rank import Ranker

        records = [index.records[rel] for rel in sorted(index.records) if index.records[rel].hashes]
        n = sum(len(r.hashes) for r in records)
        dim = index.embedder.dim
        vectors = np.empty((n, dim), dtype=np.float32)
        file_ids = np.empty(n, dtype=np.int32)
        lines = np.empty(n, dtype=np.int32)
        hashes: list[str] = []
        texts: list[str] = []
        kinds: list[str | None] = []
        tags: list[list[str]] = []
        own_dates: list[str | None] = []
        pos = 0
        for fid, r in enumerate(records):
            m = len(r.hashes)
            assert r.vectors is not None
            vectors[pos:pos + m] = r.vectors
            file_ids[pos:pos + m] = fid
            lines[pos:pos + m] = r.lines
            hashes += r.hashes
            texts += r.texts
            kinds += r.kinds
            tags += r.tags
            own_dates += r.dates
            pos += m
        dates = np.array([d or records[f].updated for d, f in zip(own_dates, file_ids)], dtype="U10") if n else np.array([], dtype="U10")
        ranker = Ranker(texts, vectors, file_ids)
        return cls([r.file for r in records], [r.topic for r in records], file_ids, lines, hashes, texts,
                   kinds, tags, dates, own_dates, vectors, ranker)

    def __len__(self) -> int:
        return len(self.texts)
