"""The ranker's matrix: a vault's unit vectors as :class:`memkit.search.rank.Ranker` reads them.

The scoring (:mod:`memkit.search.rank`) asks three things of the vectors: the exact cosines of
every row (or of some rows) with a query, the approximate cosines of the first ``PREFIX_DIMS``
dimensions of every row (the large-vault scan), and the exact cosines of the scan's candidates.
This module keeps the vectors in the layouts that answer those fast, and nothing else:

- one float32 ``(n, dim)`` matrix (a vault's is the memory-mapped ``.npy`` of
  :mod:`memkit.index.matrix`, never copied), read as two column views: the first ``PREFIX_DIMS``
  dimensions and the rest (or such a pair given apart);
- the scan's prefix, transposed, ``(PREFIX_DIMS, n)``: a contiguous copy with room to grow (an
  extended matrix copies only its new rows into it), or a frozen index's kept in a file
  (:mod:`memkit.index.frozen`) with the rows added after the freeze in memory;
- a frozen index's prefix as int8 and its factors (:mod:`memkit.search.int8_scan`, 3-4x faster
  where onnxruntime runs) and its rows whole as 16-bit fixed point (``ROW_SCALE``: within 3e-5 of
  the float32 product, half the bytes), so a searching process never maps the float32 matrix's
  rows in the fast path.

When the ranker takes the fast path is the ranker's decision (``FAST_MIN_N``); the matrix only
builds the prefix when told to.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..base.pages import release
from . import int8_scan, topk

__all__ = ["PREFIX_DIMS", "ROW_SCALE", "RankMatrix"]

PREFIX_DIMS = 64  #: dimensions of the approximate scan
#: a frozen index's rows are kept as round(x * ROW_SCALE) in int16 (unit rows: |x| <= 1); one
#: step is 3e-5, a cosine's error a few 1e-6 (at most ~3e-5 measured)
ROW_SCALE = 32767
_BLOCK = 2048  # rows at a time in the neighbours' products


class RankMatrix:
    """``n`` unit rows and their scan layouts (see the module docstring).

    :param vectors: ``(n, dim)`` unit rows (float32 rows are used in place, not copied), or the
        pair (first ``PREFIX_DIMS`` dimensions, the rest).
    :param n: the rows.
    :param pages: called now and then in a pass over every vector (gives their pages back).
    """

    #: the fast path's scan (None: exact path only): the first ``PREFIX_DIMS`` dimensions of the
    #: rows, transposed, ``(PREFIX_DIMS, rows)``: a product over it reads each dimension's values
    #: in one run (twice as fast as over the rows' layout)
    prefix: np.ndarray | None
    prefix_buffer: np.ndarray | None  #: the prefix's columns, with room to grow (an extension fills it)
    #: a prefix kept in a file (a frozen index's, :meth:`restore_scan`): the first rows of the scan …
    prefix_frozen: np.ndarray | None
    prefix_tail: np.ndarray | None  #: … and the rows after them, in memory
    #: a frozen index's first rows, ``(rows, dim)`` int16 (``ROW_SCALE``): the fast path's exact
    #: cosines of those rows (None: from the matrix)
    rows_frozen: np.ndarray | None
    #: a frozen index's prefix as int8 and its dimensions' factors (:mod:`memkit.search.int8_scan`)
    prefix8: tuple[np.ndarray, np.ndarray] | None
    offsets8: np.ndarray | None  #: what the int8 scan's query offset adds to each row (worked out on the first scan, shared by extended matrices)

    def __init__(self, vectors: np.ndarray | tuple[np.ndarray, np.ndarray], n: int,
                 pages: Callable[[], object] | None = None) -> None:
        self.n = n
        self.pages = pages
        self.first, self.rest, self.whole = _split(vectors, n)
        self.dim = self.first.shape[1] + self.rest.shape[1]
        self.prefix = self.prefix_buffer = self.prefix_frozen = self.prefix_tail = None
        self.rows_frozen = self.prefix8 = self.offsets8 = None

    @property
    def scannable(self) -> bool:
        """Whether the rows are wide enough for a prefix scan (twice ``PREFIX_DIMS`` or more)."""
        return self.dim >= 2 * PREFIX_DIMS and self.first.shape[1] == PREFIX_DIMS

    @property
    def vectors(self) -> np.ndarray:
        """The ``(n, dim)`` unit rows (a copy: kept split)."""
        if self.whole is not None:
            return self.whole
        return np.hstack([self.first, self.rest]) if self.rest.shape[1] else self.first

    # ---- the layouts ---------------------------------------------------------------------------
    def set_prefix(self, base: "RankMatrix | None", extend_frozen: bool, build: bool) -> None:
        """Make the scan's prefix: a frozen ``base``'s extended by the rows after it (when
        ``extend_frozen``), else (when ``build``) a contiguous copy of the first columns, an
        extended matrix copying only its new rows into the room its base left."""
        self.prefix = self.prefix_buffer = self.prefix_frozen = self.prefix_tail = None
        self.rows_frozen = self.prefix8 = self.offsets8 = None
        frozen = base.prefix_frozen if base is not None else None
        if frozen is not None and extend_frozen:
            assert base is not None
            self.rows_frozen, self.prefix8, self.offsets8 = base.rows_frozen, base.prefix8, base.offsets8
            f, n = frozen.shape[1], self.n
            buf = base.prefix_buffer
            start = base.n if buf is not None else f
            if buf is None or buf.shape[1] < n - f:
                buf = np.empty((PREFIX_DIMS, n - f + max(1024, (n - f) // 4)), dtype=np.float32)
                start = f
            buf[:, start - f:n - f] = self.first[start:n].T
            self.prefix_buffer = buf
            self.prefix_frozen = self.prefix = frozen
            self.prefix_tail = buf[:, :n - f]
            return
        if build:
            # a contiguous copy of the matrix's first columns: the scan reads 1/4 of the bytes. An
            # extended ranker copies only its new rows, into the room its base left (the base's
            # prefix is a view of the rows before: never changed)
            n = self.n
            buf = base.prefix_buffer if base is not None else None
            start = base.n if buf is not None and base is not None else 0
            if buf is None or buf.shape[1] < n:
                buf = np.empty((PREFIX_DIMS, n + max(1024, n // 4)), dtype=np.float32)
                start = 0
            for a in range(start, n, 65536):  # transposed a block at a time (small temporaries)
                b = min(a + 65536, n)
                buf[:, a:b] = self.first[a:b].T
            self.prefix_buffer = buf
            self.prefix = buf[:, :n]

    def restore_scan(self, kept: dict[str, Any]) -> None:
        """Use a frozen index's scan layouts (``prefix_t``, ``rows_i16``, ``prefix_i8``,
        ``prefix_factors``: memory-mapped) when they fit these rows."""
        n = self.n
        prefix, rows = kept.get("prefix_t"), kept.get("rows_i16")
        p8, factors = kept.get("prefix_i8"), kept.get("prefix_factors")
        if prefix is not None and prefix.shape == (PREFIX_DIMS, n):
            self.prefix = self.prefix_frozen = prefix
            if rows is not None and rows.shape == (n, self.dim) and rows.dtype == np.int16:
                self.rows_frozen = rows
            if (p8 is not None and p8.shape == (PREFIX_DIMS, n) and p8.dtype == np.int8
                    and factors is not None and factors.shape == (PREFIX_DIMS,)):
                self.prefix8 = (p8, np.asarray(factors, dtype=np.float32))

    def kept(self) -> dict[str, Any]:
        """The scan's layouts for a frozen index to keep, each as (shape, dtype, fill), filled in
        the order given (:func:`memkit.index.frozen.write`): the prefix's fill finds each
        dimension's largest value, which the int8 prefix and its factors then use (every row read
        once, none clipped)."""
        P = self.first
        top = np.zeros(PREFIX_DIMS, dtype=np.float32)  # each dimension's largest |value|, found by fill()

        def written(out: Any) -> None:  # a block written: its pages and the matrix's given back
            out.flush()
            release(out)
            if self.pages is not None:
                self.pages()

        def fill(out: Any) -> None:  # a np.memmap of the file
            for a in range(0, P.shape[0], 65536):
                block = P[a:a + 65536]
                out[:, a:a + 65536] = block.T
                np.maximum(top, np.abs(block).max(axis=0), out=top)
                written(out)

        def fill8(out: Any) -> None:  # the int8 prefix (after fill(): its factors from every row)
            factors = int8_scan.factors(top)
            for a in range(0, P.shape[0], 65536):
                out[:, a:a + 65536] = int8_scan.quantize(P[a:a + 65536], factors)
                written(out)

        def fill_factors(out: Any) -> None:
            out[:] = int8_scan.factors(top)

        whole = self.whole

        def fill_rows(out: Any) -> None:  # the rows in fixed point, a block at a time (16 MB temporaries)
            for a in range(0, self.n, 16384):
                b = min(a + 16384, self.n)
                block = np.clip(whole[a:b] if whole is not None else np.hstack([P[a:b], self.rest[a:b]]), -1, 1)
                block *= np.float32(ROW_SCALE)
                out[a:b] = np.rint(block, out=block)
                written(out)

        return {"prefix_t": ((PREFIX_DIMS, self.n), "<f4", fill),
                "prefix_i8": ((PREFIX_DIMS, self.n), "|i1", fill8),
                "prefix_factors": ((PREFIX_DIMS,), "<f4", fill_factors),
                "rows_i16": ((self.n, self.dim), "<i2", fill_rows)}

    # ---- the products --------------------------------------------------------------------------
    def unit(self, query_vec: np.ndarray) -> np.ndarray:
        """The query vector as a unit float32 row. :raises ValueError: not of the rows' dimensions."""
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, index has {self.dim}")
        norm = math.sqrt(float(q @ q))
        return q / np.float32(norm) if norm > 0 and abs(norm - 1.0) > 1e-3 else q

    def neighbour_dots(self, start: int, stop: int) -> np.ndarray:
        """``v_i . v_{i-1}`` for rows [start, stop) (0 for row 0), a block at a time."""
        dots = np.zeros(stop - start, dtype=np.float32)
        lo = max(start, 1)
        for a in range(lo, stop, _BLOCK):  # in blocks: small temporaries
            b = min(a + _BLOCK, stop)
            if self.pages is not None and (a - lo) % (32 * _BLOCK) == 0:
                self.pages()
            block = np.einsum("ij,ij->i", self.first[a:b], self.first[a - 1:b - 1])
            if self.rest.shape[1]:
                rest = self.rest[a - 1:b]
                block += np.einsum("ij,ij->i", rest[1:], rest[:-1])
            dots[a - start:b - start] = block
        return dots

    def cosines(self, q: np.ndarray, rows: np.ndarray | None = None, first: np.ndarray | None = None) -> np.ndarray:
        """Exact cosines of every row (or of ``rows``) with the unit query ``q``; ``first``: the
        products of ``rows`` with the first dimensions, already known (used without the whole matrix)."""
        p = self.first.shape[1]
        if self.whole is not None:  # one product; rows read whole: contiguous, faster than the strided columns
            return self.whole @ q if rows is None else topk.rows_dot(self.whole, rows, q)
        if first is not None and rows is not None:
            return first + self.rest[rows] @ q[p:] if self.rest.shape[1] else first.copy()
        if rows is None:
            cos = self.first @ q[:p]
            if self.rest.shape[1]:
                cos += self.rest @ q[p:]
            return cos
        cos = self.first[rows] @ q[:p]
        if self.rest.shape[1]:
            cos += self.rest[rows] @ q[p:]
        return cos

    def scan(self, q0: np.ndarray, approx: np.ndarray) -> None:
        """The approximate cosines of every row (the first dimensions of the unit query, ``q0``)
        into ``approx``: the frozen prefix's rows by the int8 scan where it runs
        (:mod:`memkit.search.int8_scan`), else the float32 product; the rows after it in memory."""
        assert self.prefix is not None
        f = self.prefix.shape[1]
        engine = int8_scan.engine(PREFIX_DIMS) if self.prefix8 is not None else None
        if engine is None or self.prefix8 is None:
            np.matmul(q0, self.prefix, out=approx[:f])
        else:
            p8, factors = self.prefix8
            if self.offsets8 is None:  # once a process (its rows' sums: ~20 ms at 1M rows)
                self.offsets8 = int8_scan.offsets(p8)
            approx[:f] = engine.scan(q0, p8, factors, self.offsets8)
        if self.prefix_tail is not None:  # rows after a frozen prefix
            np.matmul(q0, self.prefix_tail, out=approx[f:])

    def exact_rows(self, q: np.ndarray, rows: np.ndarray, approx: np.ndarray) -> np.ndarray:
        """The exact cosines of ``rows`` (sorted) in the fast path, ``approx`` the scan's products
        (the first dimensions' share, exact in float32 without a frozen index): a frozen index's
        rows from their fixed-point copy, the others from the matrix."""
        kept = self.rows_frozen
        cut = 0 if kept is None else int(np.searchsorted(rows, kept.shape[0]))
        out = np.empty(rows.shape[0], dtype=np.float32)
        if kept is not None:
            out[:cut] = topk.rows_dot(kept, rows[:cut], q * np.float32(1 / ROW_SCALE), np.float32)
        if cut < rows.shape[0]:
            tail = rows[cut:]
            out[cut:] = self.cosines(q, tail, None if self.whole is not None else approx[tail])
        return out


def _split(vectors: np.ndarray | tuple[np.ndarray, np.ndarray],
           n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(first PREFIX_DIMS dimensions, the rest, the whole matrix or None) as float32 arrays of
    ``n`` rows: column views of one matrix (no copy), or the pair given."""
    whole = None
    if isinstance(vectors, tuple):
        first = np.asarray(vectors[0], dtype=np.float32)
        rest = np.asarray(vectors[1], dtype=np.float32)
    else:
        whole = np.asarray(vectors, dtype=np.float32)
        if whole.ndim != 2:
            raise ValueError(f"vectors must be ({n}, d); got {whole.shape}")
        p = min(PREFIX_DIMS, whole.shape[1])
        first, rest = whole[:, :p], whole[:, p:]
    if first.ndim != 2 or rest.ndim != 2 or first.shape[0] != n or rest.shape[0] != n:
        raise ValueError(f"vectors must be ({n}, d); got {first.shape} + {rest.shape}")
    return first, rest, whole
