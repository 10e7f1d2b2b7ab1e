"""The vectors a refresh needs: known ones found again, the others embedded in batches.

A refresh parses its changed files one by one and hands each file's entries to an
:class:`EmbedQueue`. Entries are queued once per text (their hash); each full batch first takes
the vectors the index already holds (:meth:`EmbedQueue.known`, e.g. a line moved between files),
then embeds the rest. A large refresh (several files, an estimated ``THREAD_MIN_ENTRIES`` entries
or more) embeds in one worker thread while the main thread goes on parsing and writing: the
writer waits for each file's own vectors only (:meth:`EmbedQueue.ready`). Where the model can be
made in another process (memkit's static model, a model2vec folder: :func:`process_spec`), the
machine has a second CPU and the refresh is larger still (``PROCESS_MIN_ENTRIES``), that worker
hands the batches to a child process (:mod:`memkit.index.embed_process`): the embedding then runs
beside the parsing, not in turns with it (one Python thread runs at a time). The child also
gives each entry's search terms (:meth:`EmbedQueue.terms_of`), which this process would
otherwise work out itself.

A refresh written in chunks (:mod:`memkit.index.writer`) hands back each chunk's entries once they
are written (:meth:`EmbedQueue.release`): the queue then forgets their vectors, unless an entry
still to be written holds the same text, so that its memory stays that of the chunks in flight.
"""
from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from ..formats.topic import Entry
from .embed_process import EmbedProcess, Spec, embed_text, entry_terms, usable_cpus

__all__ = ["EmbedQueue", "EMBED_BATCH", "THREAD_MIN_ENTRIES", "PROCESS_MIN_ENTRIES", "entry_texts", "f32_rows"]

log = logging.getLogger("memkit")

EMBED_BATCH = 2048
THREAD_MIN_ENTRIES = 4096  #: a refresh embedding this many entries embeds in a thread while it parses
#: … and this many (a child costs ~0.5 s to start and ~100 MB), in a child process where it can
PROCESS_MIN_ENTRIES = 20_000
#: the child works out a batch's search terms too while at most this many batches wait before it
#: (it keeps up); behind, this process does (the two stay busy rather than one waiting)
TERMS_BACKLOG = 1

Progress = Callable[[int, int], None]  # (done, total) entries embedded


class EmbedQueue:
    """Collects entries and makes their vectors (see the module docstring).

    :param embed_rows: entries -> their ``(n, dim)`` float32 unit rows (the model).
    :param known: hashes -> the float32 rows the index already holds for some of them; None:
        every entry is embedded (a full rebuild).
    :param embed: False: record which entries lack vectors without embedding them.
    :param files: how many files the refresh parses (one file never starts the thread).
    :param total_bytes: the size of those files, to estimate the entries still to come.
    :param progress: called with (done, total) entries embedded.
    :param spec: how a child process makes the model (:func:`memkit.index.embed_process.process_spec`);
        None: it embeds in this process.
    """

    def __init__(self, embed_rows: Callable[[Sequence[Entry]], np.ndarray],
                 known: Callable[[list[str]], dict[str, bytes]] | None, *, embed: bool = True, files: int = 1,
                 total_bytes: int = 1, progress: Progress | None = None, spec: Spec | None = None) -> None:
        self.vectors: dict[str, bytes] = {}  #: hash -> float32 row
        self._terms: dict[str, tuple[str, str]] = {}  # hash -> (text, its terms joined), from the child
        self.unknown = 0  #: texts whose vectors were not known (embedded unless ``embed`` is off)
        self._embed_rows = embed_rows
        self._known = known
        self._embed = embed
        self._files = files
        self._total_bytes = max(total_bytes, 1)
        self._done_bytes = 0
        self._progress = progress
        self._queued: list[Entry] = []
        self._held: dict[str, int] = {}  # hash -> entries added and not released yet
        self._jobs: list[tuple[list[Entry], Future[Any]]] = []
        self._batch_of: dict[str, int] = {}  # hash -> number of the worker's batch embedding it
        self._taken = 0  # worker batches collected so far
        self._embedded = 0
        self._worker: ThreadPoolExecutor | None = None
        self._spec = spec
        self._child: EmbedProcess | None = None
        self._child_run: Callable[[list[Entry], bool], tuple[np.ndarray, list[str] | None]] | None = None

    def add(self, entries: Sequence[Entry], parsed_bytes: int) -> None:
        """Queue the entries of one more parsed file (of ``parsed_bytes`` bytes)."""
        self._done_bytes += parsed_bytes
        held = self._held
        for e in entries:
            n = held.get(e.hash)
            if n is None:
                held[e.hash] = 1
                self._queued.append(e)
            else:
                held[e.hash] = n + 1
        if len(self._queued) >= EMBED_BATCH:
            self._flush()

    def finish(self) -> None:
        """Every file (of a chunk) is parsed: the last batch goes (the worker may still be embedding)."""
        self._flush()

    def release(self, entries: Sequence[Entry]) -> None:
        """These entries (added and made :meth:`ready` before) are written: forget the vectors no
        entry still to be written holds. A text added again afterwards is looked up (or embedded) anew."""
        held = self._held
        for e in entries:
            n = held.get(e.hash, 0) - 1
            if n > 0:
                held[e.hash] = n
            else:
                held.pop(e.hash, None)
                self.vectors.pop(e.hash, None)
                self._terms.pop(e.hash, None)
                self._batch_of.pop(e.hash, None)

    def ready(self, entries: Sequence[Entry]) -> None:
        """Wait until the vectors of ``entries`` are made (the worker embeds in order)."""
        if self._jobs:
            self._collect(max((self._batch_of.get(e.hash, -1) for e in entries), default=-1))

    def terms_of(self, entry: Entry) -> list[str]:
        """The search terms of ``entry`` (made :meth:`ready` before): the child's, for a text it
        embedded (the very text: entries of one hash may differ in case or spacing), else worked out here."""
        got = self._terms.get(entry.hash)
        if got is not None and got[0] == entry.text:
            return got[1].split(" ") if got[1] else []
        return entry_terms(entry.text)

    def close(self) -> None:
        """Stop the worker (waiting for the batch it embeds; the others are dropped) and end the
        child process, at once when it still has work (a failure, an interrupt)."""
        worker, child = self._worker, self._child
        self._worker = self._child = None
        if worker is not None:
            worker.shutdown(wait=False, cancel_futures=True)
        if child is not None:
            child.close(kill=any(not job.done() for _, job in self._jobs))
        if worker is not None:
            worker.shutdown(wait=True)

    def _estimate(self) -> int:
        """Entries to embed in all: those found so far, scaled by the bytes still to parse."""
        found = self.unknown
        return max(found, int(found * self._total_bytes / max(self._done_bytes, 1)))

    def _tell(self, final: bool = False) -> None:
        if self._progress is not None:
            total = self.unknown if final else self._estimate()
            self._progress(self._embedded, max(self._embedded, total))

    def _collect(self, until: int) -> None:
        """Take the worker's batches up to number ``until`` (waiting), and any finished one."""
        jobs = self._jobs
        while jobs and (self._taken <= until or jobs[0][1].done()):
            batch, job = jobs.pop(0)
            result = job.result()
            if isinstance(result, tuple):  # the child's: rows, and each text's terms when asked
                result, terms = result
                if terms is not None:
                    self._terms.update((e.hash, (e.text, t)) for e, t in zip(batch, terms))
            self.vectors.update(zip((e.hash for e in batch), f32_rows(result)))
            self._embedded += len(batch)
            self._taken += 1
            self._tell(final=not jobs and self._done_bytes >= self._total_bytes)

    def _flush(self) -> None:
        batch = self._queued
        self._queued = []
        if self._known is not None and batch:
            batch = [e for e in batch if e.hash not in self.vectors]  # e.g. in the file's own old row
            found = self._known([e.hash for e in batch]) if batch else {}
            self.vectors.update(found)
            batch = [e for e in batch if e.hash not in found]
        self.unknown += len(batch)
        if not self._embed or not batch:
            return
        for i in range(0, len(batch), EMBED_BATCH):
            part = batch[i:i + EMBED_BATCH]
            if self._worker is None and self._files > 1 and self._estimate() >= THREAD_MIN_ENTRIES:
                self._start()
            if self._worker is not None:
                number = self._taken + len(self._jobs)
                self._batch_of.update((e.hash, number) for e in part)
                job: Future[Any]  # rows; from the child (rows, terms or None)
                if self._child_run is not None:  # its terms too while the child keeps up
                    job = self._worker.submit(self._child_run, part, len(self._jobs) <= TERMS_BACKLOG)
                else:
                    job = self._worker.submit(self._embed_rows, part)
                self._jobs.append((part, job))
            else:
                self.vectors.update(zip((e.hash for e in part), f32_rows(self._embed_rows(part))))
                self._embedded += len(part)
                self._tell(final=self._done_bytes >= self._total_bytes)
        self._collect(-1)

    def _start(self) -> None:
        """The worker thread; it hands the batches to a child process where that wins (see the
        module docstring)."""
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="memkit-embed")
        if self._spec is not None and self._estimate() >= PROCESS_MIN_ENTRIES and usable_cpus() > 1:
            try:
                child = self._child = EmbedProcess(self._spec)
            except OSError as exc:  # no interpreter to start (an embedded Python): the thread embeds
                log.debug("cannot start the embedding process (%s): embedding in a thread", exc)
                return
            self._child_run = lambda part, terms: child.embed_entries([e.text for e in part], terms)


def entry_texts(entries: Sequence[Entry]) -> list[str]:
    """What the model embeds of each entry: its body without the provenance marker."""
    return [embed_text(e.text) for e in entries]


def f32_rows(rows: np.ndarray) -> list[bytes]:
    """Each row of ``rows`` as float32 bytes."""
    data = np.ascontiguousarray(rows, dtype=np.float32)
    width = data.shape[1] * 4
    raw = data.tobytes()
    return [raw[i:i + width] for i in range(0, len(raw), width)] if width else [b""] * data.shape[0]
