"""Array helpers of the ranking's fast path (:mod:`memkit.search.rank`): the largest values of a
score array without sorting it, the runs of a sorted array, rows' products a block at a time, and
the ``k`` best of some candidates."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["top", "cut", "distinct", "runs", "rows_dot", "best", "ROWS_AT_ONCE", "TOP_SLACK", "TRIM_OVER"]

TOP_SLACK = 1.25  #: a sampled cut-off aims at this many times the entries wanted (rarely fewer)
TRIM_OVER = 4  #: a cut-off that let through more than this many times the entries wanted is trimmed


def distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of ``x``, ascending: ``np.unique(x)`` without its ``np.ma`` check, whose
    first use imports ``numpy.ma`` (~10 ms of a cold search, issue 42.3)."""
    x = np.sort(x, kind="stable")
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if x.shape[0] else x


def cut(x: np.ndarray, c: int, largest: bool = True) -> np.ndarray:
    """Indexes of the ``c`` largest (or smallest) values of ``x``, unsorted, the same on every
    CPU: every value past the ``c``-th, then the lowest indexes among the values equal to it.
    (``argpartition`` picks members of a tied group by its SIMD sort's order, which differs
    between AVX2 and AVX-512: the int8 scan's top 64 of 100k differed for 44 of 50 queries.)"""
    n = x.shape[0]
    if c >= n:
        return np.arange(n)
    if c <= 0:
        return np.zeros(0, dtype=np.intp)
    kth = np.partition(x, n - c)[n - c] if largest else np.partition(x, c - 1)[c - 1]
    beyond = (x > kth).nonzero()[0] if largest else (x < kth).nonzero()[0]
    tied = (x == kth).nonzero()[0][:c - beyond.shape[0]]
    return np.concatenate([beyond, tied]) if tied.shape[0] else beyond


def top(x: np.ndarray, c: int, largest: bool = True, trim: bool = False) -> np.ndarray:
    """Indexes of (at least) the ``c`` largest (or smallest) values of ``x``, unsorted. On a
    large array, every value past a cut-off read from a strided sample (a few more than ``c``,
    in a fraction of an exact cut's time); an exact :func:`cut` when the sample falls short.
    A sample cannot place a cut-off finer than one of its values: a small ``c`` of a large array
    lets many more through (64 of 1M: ~1,800). ``trim``: where more than ``TRIM_OVER`` times
    ``c`` came through, only the ``c`` best of them are kept."""
    n = x.shape[0]
    if c >= n:
        return np.arange(n)
    if n >= 64 * c:
        sample = x[::n // (32 * c)].copy()
        m = sample.shape[0]
        r = min(m, int(np.ceil(TOP_SLACK * c * m / n)) + 3)
        if largest:
            sample.partition(m - r)
            got = (x >= sample[m - r]).nonzero()[0]
        else:
            sample.partition(r - 1)
            got = (x <= sample[r - 1]).nonzero()[0]
        if trim and got.shape[0] > TRIM_OVER * c:
            at = x[got]
            return got[cut(at, c, largest)]
        if got.shape[0] >= c:
            return got
    return cut(x, c, largest)


def runs(seg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of each run of equal values of ``seg`` (sorted)."""
    m = seg.shape[0]
    brk = np.empty(m, dtype=bool)
    brk[:1] = True
    np.not_equal(seg[1:], seg[:-1], out=brk[1:])
    starts = brk.nonzero()[0]
    lens = np.empty_like(starts)
    lens[:-1] = starts[1:] - starts[:-1]
    lens[-1:] = m - starts[-1:]
    return starts, lens



ROWS_AT_ONCE = 1024  #: rows gathered at a time for their exact cosines (a block stays in the cache)


def rows_dot(matrix: np.ndarray, rows: np.ndarray, q: np.ndarray, as_type: Any = None) -> np.ndarray:
    """``matrix[rows] @ q``, a block of rows at a time: thousands of rows gathered at once
    from a large matrix fall out of the cache before the product reads them (at 1M entries 12k
    rows took ~2x as long in one piece). ``as_type``: the gathered rows are converted to it
    first (integer rows: the product in floating point)."""
    if rows.shape[0] <= ROWS_AT_ONCE:
        got = np.take(matrix, rows, axis=0)
        return (got if as_type is None else got.astype(as_type)) @ q
    out = np.empty(rows.shape[0], dtype=np.result_type(matrix.dtype if as_type is None else as_type, q.dtype))
    for a in range(0, rows.shape[0], ROWS_AT_ONCE):
        got = np.take(matrix, rows[a:a + ROWS_AT_ONCE], axis=0)
        np.matmul(got if as_type is None else got.astype(as_type), q, out=out[a:a + ROWS_AT_ONCE])
    return out



def best(cand: np.ndarray | None, score: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best of ``cand`` (None: every row) by ``score``, best first, ties in entry order."""
    if cand is None:
        if score.shape[0] > k:
            cand = cut(score, k)
            s = score[cand]
        else:
            cand, s = np.arange(score.shape[0]), score
    else:
        if cand.size > k:
            cand = np.sort(cand)  # a tie at the cut goes to the first entries
            s = score[cand]
            part = cut(s, k)
            cand, s = cand[part], s[part]
        else:
            s = score[cand]
    order = np.lexsort((cand, -s))
    return [(int(cand[i]), float(s[i])) for i in order]
