"""The index in memory: every entry of the vault as parallel arrays, row for row with the matrix.

Row ``r`` of a view is row ``r`` of the model's ``.npy`` matrix (:mod:`memkit.index.matrix`): the
vectors are the memory-mapped file itself, never copied. A file's entries are one block of rows
in their order in the file. When a file changes its new entries are appended to the matrix and
its old block dies; rows no file claims are dead (:attr:`IndexView.live` False) until a
compaction writes the matrix anew. A view is extended by the rows appended since it was read
(:meth:`ViewBuilder.extending`), and read whole again after a compaction.
"""
from __future__ import annotations

import ctypes
import itertools
import json
import sqlite3
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["IndexView", "TermIds", "ViewBuilder", "NO_DAY", "TRIM_MIN_ROWS", "PREFIX_DIMS", "days_of", "trim_memory", "new_lineage",
           "row_damage"]

PREFIX_DIMS = 64  #: the view's ``prefix``: the first dimensions of every vector (the ranker's scan)
TRIM_MIN_ROWS = 20_000  #: after loading a view this large, freed memory is given back (trim_memory)
NO_DAY = -(2 ** 31)  #: no own date
_EPOCH = date(1970, 1, 1).toordinal()
_LINEAGE = itertools.count(1)

#: a ``files`` row joined with its ``file_data`` row, as the view reads it
FileRow = tuple[int, str, str, str, int, int, int, bytes, bytes, bytes, bytes, str, str]


def new_lineage() -> int:
    """A new lineage number (views of one lineage extend each other)."""
    return next(_LINEAGE)


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
        #: term -> id of the terms found so far (shared by the copies :meth:`forget_unknown`
        #: makes: an id never changes meaning)
        self._known: dict[str, int] = {} if known is None else known
        self._unknown: set[str] = set()  # asked for and not found (until the view changes)
        self._loaded = loaded  # ids up to this one are all in _known (with ``after``)

    def ids(self, terms: Sequence[str]) -> list[int]:
        """The id of each term (-1: no entry ever held it)."""
        known, unknown = self._known, self._unknown
        missing = [t for t in dict.fromkeys(terms) if t not in known and t not in unknown]
        if missing:
            if self._after is not None:
                found = self._after(self._loaded)
                known.update(found)
                self._loaded = max(found.values(), default=self._loaded)
            else:
                found = self._lookup(missing)
                known.update(found)
            unknown.update(t for t in missing if t not in known)
        return [known.get(t, -1) for t in terms]

    def get(self, term: str, default: int = -1) -> int:
        tid = self.ids([term])[0]
        return default if tid < 0 else tid

    def forget_unknown(self) -> "TermIds":
        """A copy that asks again for the terms not found so far (after the view changed)."""
        return TermIds(self._lookup, self._after, self._known, self._loaded)


@dataclass(eq=False)
class IndexView:
    """Every row of the matrix with what a search shows of its entry (see the module docstring)."""

    generation: int
    matrix: str  #: the matrix file the rows are from
    files: list[str]  #: vault-relative path per file slot
    topics: list[str]  #: topic name per file slot
    file_ids: np.ndarray  #: int32, per row: its file slot
    lines: np.ndarray  #: int32, first line per entry
    ids: np.ndarray  #: bytes ``S8``: each entry's id (the first 8 hex digits of its hash)
    texts: Sequence[str]  #: a list, or a frozen index's TextColumn (memkit.index.columns)
    kinds: Sequence[str | None]
    tags: Sequence[tuple[str, ...]]
    own_days: np.ndarray  #: int32 per entry: its own ``(YYYY-MM-DD)`` as days since 1970 (NO_DAY: none)
    dates: np.ndarray  #: ``datetime64[D]`` per entry: its own date, else its topic's updated date
    vectors: np.ndarray  #: (n, dim) float32 unit rows: the memory-mapped matrix
    term_ids: np.ndarray  #: int32, the search terms of every entry, concatenated
    term_offsets: np.ndarray  #: int64 (n + 1,): entry i's terms are term_ids[offsets[i]:offsets[i + 1]]
    vocab: TermIds  #: search term -> id
    live: np.ndarray | None = None  #: bool per row; None: every row is live
    lineage: int = 0  #: views of one lineage extend each other: a later one holds an earlier one's rows first
    slot_file: list[int] = field(default_factory=list)  #: sidecar file id per slot (-1: dead)
    slot_gen: list[int] = field(default_factory=list)
    slot_rows: list[tuple[int, int]] = field(default_factory=list)  #: (first row, count) per slot
    odd_dates: dict[int, str] = field(default_factory=dict)  #: own dates that are no real day ("2024-13-45")
    #: the ranking's arrays of the frozen rows this view starts with (:mod:`memkit.index.frozen`), or None
    frozen: Any = None
    grown: "_Grown" = field(default_factory=lambda: _Grown())  #: buffers its extensions write into

    def __len__(self) -> int:
        return int(self.file_ids.shape[0])

    def slot_index(self) -> dict[int, int]:
        """Sidecar file id -> its slot, for the files this view holds (made once per view)."""
        got = self.__dict__.get("_slot_index")
        if got is None:
            got = self.__dict__["_slot_index"] = {fid: s for s, fid in enumerate(self.slot_file) if fid >= 0}
        return got

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def prefix(self) -> np.ndarray:
        """The first ``PREFIX_DIMS`` dimensions of the rows (a view of the matrix)."""
        return self.vectors[:, :min(PREFIX_DIMS, self.dim)]

    @property
    def rest(self) -> np.ndarray:
        """The other dimensions (a view of the matrix)."""
        return self.vectors[:, min(PREFIX_DIMS, self.dim):]

    def term_ids_of(self, terms: Sequence[str]) -> list[int]:
        """The id of each search term in this view's vocabulary (-1: no entry holds it): a query's
        terms are looked up once, here, before it is ranked (:meth:`memkit.search.Searcher.find`)."""
        return self.vocab.ids(terms)

    def is_live(self, i: int) -> bool:
        return self.live is None or bool(self.live[i])

    def own_dates_at(self, rows: np.ndarray) -> list[str | None]:
        """:meth:`own_date` of each of ``rows``."""
        return [self.odd_dates.get(r) if d == NO_DAY else _day_text(d)
                for r, d in zip(rows.tolist(), self.own_days[rows].tolist())]

    def own_date(self, i: int) -> str | None:
        """Entry ``i``'s own ``(YYYY-MM-DD)`` as written, or None."""
        day = int(self.own_days[i])
        if day == NO_DAY:
            return self.odd_dates.get(i)
        return _day_text(day)


_DAY_TEXT: dict[int, str] = {}


def _day_text(day: int) -> str:
    """``YYYY-MM-DD`` of a day number (days since 1970), remembered: results show few distinct days."""
    text = _DAY_TEXT.get(day)
    if text is None:
        text = str(np.datetime64(day, "D"))  # numpy: also years past 9999 that date cannot hold
        if len(_DAY_TEXT) < 100_000:
            _DAY_TEXT[day] = text
    return text


class ViewBuilder:
    """Lays the files' rows out over the matrix rows ``[start, n)``: each file's block where its
    ``row0`` says, the rows between blocks dead.

    :param start: the first row to lay out (0, or an extended view's length).
    :param base: the view extended, or None.
    """

    def __init__(self, start: int = 0, base: IndexView | None = None) -> None:
        self.start = self.rows = start
        self.base = base
        self.files: list[str] = list(base.files) if base is not None else []
        self.topics: list[str] = list(base.topics) if base is not None else []
        self.slot_file: list[int] = list(base.slot_file) if base is not None else []
        self.slot_gen: list[int] = list(base.slot_gen) if base is not None else []
        self.slot_rows: list[tuple[int, int]] = list(base.slot_rows) if base is not None else []
        self.odd: dict[int, str] = dict(base.odd_dates) if base is not None else {}
        self.live: list[np.ndarray] = [np.ones(start, dtype=bool) if base is None or base.live is None
                                       else base.live.copy()]
        self.slots: list[np.ndarray] = []  # per block: its rows' file slot
        self.file_days: list[np.ndarray] = []
        self.blobs: dict[str, list[bytes]] = {"lines": [], "days": [], "terms": [], "counts": []}
        self.ids: list[np.ndarray] = []
        self.texts: list[str] = []
        self.kinds: list[str | None] = []
        self.tags: list[tuple[str, ...]] = []
        self.same: dict[Any, Any] = {}  # one object per distinct kind, tags
        self.dead_slot = -1

    @classmethod
    def extending(cls, old: IndexView) -> "ViewBuilder":
        return cls(len(old), old)

    def kill(self, slot: int) -> None:
        """The file of ``slot`` changed or went: its rows die."""
        first, count = self.slot_rows[slot]
        self.live[0][first:first + count] = False
        self.slot_file[slot] = -1
        self.files[slot] = self.topics[slot] = ""  # a search by topic no longer finds it

    def _slot(self, path: str, topic: str, fid: int, gen: int, first: int, n: int) -> int:
        self.files.append(path)
        self.topics.append(topic)
        self.slot_file.append(fid)
        self.slot_gen.append(gen)
        self.slot_rows.append((first, n))
        return len(self.files) - 1

    def skip(self, stop: int) -> None:
        """Rows up to ``stop`` belong to no file: dead."""
        gap = stop - self.rows
        if gap <= 0:
            return
        if self.dead_slot < 0:
            self.dead_slot = self._slot("", "", -1, -1, 0, 0)
        self.slot_rows[self.dead_slot] = (0, 0)
        self.slots.append(np.full(gap, self.dead_slot, dtype=np.int32))
        self.file_days.append(np.full(gap, NO_DAY, dtype=np.int64))
        self.live.append(np.zeros(gap, dtype=bool))
        blobs = self.blobs
        blobs["lines"].append(bytes(4 * gap))
        blobs["days"].append(np.full(gap, NO_DAY, dtype=np.int32).tobytes())
        blobs["counts"].append(bytes(4 * gap))
        self.ids.append(np.zeros(gap, dtype="S8"))
        self.texts.extend([""] * gap)
        self.kinds.extend([None] * gap)
        self.tags.extend([()] * gap)
        self.rows = stop

    def add(self, row: FileRow) -> None:
        """A file with its entries at rows ``row0…`` (those rows must not be laid out yet).

        :raises sqlite3.DatabaseError: the row does not hold what it says (:func:`row_damage`):
            the index is made anew from the files."""
        fid, path, topic, updated, gen, n, row0, terms, counts, lines, days, hashes, body = row
        if body is None or not n or row0 < 0:
            self._slot(path, topic, fid, gen, self.rows, 0)
            return
        wrong = row_damage(row)
        if wrong is not None:
            raise sqlite3.DatabaseError(wrong)
        if row0 < self.rows:
            raise ValueError(f"rows of {path} overlap")
        self.skip(row0)
        slot = self._slot(path, topic, fid, gen, row0, n)
        first = self.rows
        self.rows += n
        self.slots.append(np.full(n, slot, dtype=np.int32))
        self.file_days.append(np.full(n, days_of(updated), dtype=np.int64))
        self.live.append(np.ones(n, dtype=bool))
        blobs = self.blobs
        blobs["lines"].append(lines)
        blobs["days"].append(days)
        blobs["terms"].append(terms)
        blobs["counts"].append(counts)
        self.ids.append(np.frombuffer(hashes.encode("ascii"), dtype="S40").astype("S8"))
        texts, kinds, tags, odd = json.loads(body)
        self.texts.extend(texts)
        same = self.same
        at = len(self.kinds)
        self.kinds.extend([None] * n)
        for pos, kind in kinds.items():
            self.kinds[at + int(pos)] = same.setdefault(kind, kind)
        at = len(self.tags)
        self.tags.extend([()] * n)
        for pos, listed in tags.items():
            both = tuple(listed)
            self.tags[at + int(pos)] = same.setdefault(both, both)
        for pos, day in odd.items():
            self.odd[first + int(pos)] = day

    def drain(self) -> dict[str, Any]:
        """The rows laid out since the last drain, as arrays and lists, forgotten here (a frozen
        index is written a few files at a time: :mod:`memkit.index.frozen`)."""
        def joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        own = np.frombuffer(b"".join(self.blobs["days"]), dtype=np.int32)
        live = [part for part in self.live if part.size]
        out = {"file_ids": joined(self.slots, np.int32),
               "lines": np.frombuffer(b"".join(self.blobs["lines"]), dtype=np.int32),
               "own_days": own,
               "dates": np.where(own == NO_DAY, joined(self.file_days, np.int64), own).astype("M8[D]"),
               "ids": joined(self.ids, "S8"),
               "term_ids": np.frombuffer(b"".join(self.blobs["terms"]), dtype=np.int32),
               "counts": np.frombuffer(b"".join(self.blobs["counts"]), dtype=np.int32),
               "live": joined(live, bool),
               "texts": self.texts, "kinds": self.kinds, "tags": self.tags}
        self.slots, self.file_days, self.ids, self.live = [], [], [], []
        self.blobs = {k: [] for k in self.blobs}
        self.texts, self.kinds, self.tags = [], [], []
        return out

    def view(self, gen: int, matrix: str, vectors: np.ndarray, vocab: TermIds) -> IndexView:
        """The view of matrix rows ``vectors`` (all laid out: the rows after the last block die)."""
        self.skip(vectors.shape[0])
        n, base, start = self.rows, self.base, self.start

        def joined(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        new_ids = joined(self.ids, "S8")
        file_ids = joined(self.slots, np.int32)
        lines = np.frombuffer(b"".join(self.blobs["lines"]), dtype=np.int32)
        own = np.frombuffer(b"".join(self.blobs["days"]), dtype=np.int32)
        counts = np.frombuffer(b"".join(self.blobs["counts"]), dtype=np.int32)
        term_ids = np.frombuffer(b"".join(self.blobs["terms"]), dtype=np.int32)
        dates = np.where(own == NO_DAY, joined(self.file_days, np.int64), own).astype("M8[D]")
        live_all = np.concatenate(self.live)
        live = None if live_all.all() else live_all
        offsets = np.empty(n + 1, dtype=np.int64)
        if base is None:
            offsets[0] = 0
            np.cumsum(counts, out=offsets[1:])
            view = IndexView(gen, matrix, self.files, self.topics, file_ids, lines, new_ids, self.texts, self.kinds,
                             self.tags, own, dates, vectors, term_ids, offsets, vocab, live=live,
                             lineage=next(_LINEAGE))
        else:  # the base's columns and the new rows', in buffers with room (see _Grown)
            tail = np.empty(n - start, dtype=np.int64)
            np.cumsum(counts, out=tail)
            tail += base.term_offsets[-1]
            grow = base.grown.extend
            view = IndexView(gen, matrix, self.files, self.topics, grow("file_ids", base.file_ids, file_ids),
                             grow("lines", base.lines, lines), grow("ids", base.ids, new_ids),
                             _plus(base.texts, self.texts), _plus(base.kinds, self.kinds), _plus(base.tags, self.tags),
                             grow("own_days", base.own_days, own), grow("dates", base.dates, dates),
                             vectors, grow("term_ids", base.term_ids, term_ids),
                             grow("term_offsets", base.term_offsets, tail), vocab, live=live, lineage=base.lineage)
            view.grown = base.grown
        view.odd_dates = self.odd
        view.slot_file, view.slot_gen, view.slot_rows = self.slot_file, self.slot_gen, self.slot_rows
        if base is not None:
            view.frozen = base.frozen  # the same rows first: the frozen ranking still applies to them
        return view


def row_damage(row: FileRow, terms_end: int | None = None) -> str | None:
    """What is wrong with an index row of one file whose pages SQLite finds whole (bytes a disk
    flipped inside a blob, a row map cut short), or None: its columns' lengths agree with its entry
    count, its term ids are at least 0 (and below ``terms_end``, when given), its body decodes."""
    _fid, path, _topic, _updated, _gen, n, row0, terms, counts, lines, days, hashes, body = row
    if body is None or not n or row0 < 0:
        return None
    where = f"the index's row of {path}"
    if not all(isinstance(b, bytes) for b in (terms, counts, lines, days)) or not isinstance(hashes, str):
        return f"{where} holds a column of the wrong type"
    if len(counts) != 4 * n or len(lines) != 4 * n or len(days) != 4 * n or len(hashes) != 40 * n:
        return f"{where} names {n} entries, its columns hold others"
    per = np.frombuffer(counts, dtype=np.int32)
    ids = np.frombuffer(terms, dtype=np.int32) if len(terms) % 4 == 0 else None
    if ids is None or (per < 0).any() or int(per.sum(dtype=np.int64)) != ids.size:
        return f"{where}: its term counts do not add up to its terms"
    if ids.size and (int(ids.min()) < 0 or (terms_end is not None and int(ids.max()) >= terms_end)):
        return f"{where} holds a term id out of range"
    try:
        texts = json.loads(body)[0]
    except (ValueError, TypeError, IndexError, KeyError):
        return f"{where}: its body does not decode"
    if not isinstance(texts, list) or len(texts) != n:
        return f"{where}: its body holds other entries than its count"
    return None


class _Grown:
    """The buffers that a lineage of views shares: each column of the latest view is the first
    rows of a buffer with room after them, and the next extension writes its rows into that room
    (a million-row view extended by one file copies that file's rows, not the million). A view
    extended a second time (an older one) gets buffers of its own."""

    def __init__(self) -> None:
        self._bufs: dict[str, tuple[np.ndarray, list[int]]] = {}  # name -> (buffer, [rows used])

    def extend(self, name: str, old: np.ndarray, new: np.ndarray) -> np.ndarray:
        """``old`` (a column of the view extended) followed by ``new``."""
        n0, n = old.shape[0], old.shape[0] + new.shape[0]
        got = self._bufs.get(name)
        if got is not None:
            buf, used = got
            if used[0] == n0 and buf.shape[0] >= n and np.shares_memory(buf[:1], old[:1]) and n0:
                buf[n0:n] = new
                used[0] = n
                return buf[:n]
        buf = np.empty((n + max(1024, n // 4), *old.shape[1:]), dtype=old.dtype)
        buf[:n0] = old
        buf[n0:n] = new
        self._bufs[name] = (buf, [n])
        return buf[:n]


def _plus(column: Sequence[Any], more: list[Any]) -> Any:
    """``column`` followed by ``more``: a list, or a column of the frozen index extended."""
    return column + more  # type: ignore[operator]


def days_of(day: str | None) -> int:
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
