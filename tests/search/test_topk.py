"""The fast path's array helpers (memkit.search.topk): the largest values without a full sort."""
from __future__ import annotations

import numpy as np
import pytest

from memkit.search import topk


@pytest.mark.parametrize("largest", [True, False])
def test_top_holds_the_best_and_trim_keeps_only_them(largest):
    x = np.random.default_rng(4).standard_normal(1_000_000).astype(np.float32)
    order = np.argsort(-x if largest else x, kind="stable")
    want = set(order[:64].tolist())
    got = topk.top(x, 64, largest)
    assert want <= set(got.tolist())  # at least the 64 best, with those a sampled cut-off let through
    assert got.shape[0] > topk.TRIM_OVER * 64  # a sample of 2,048 places its cut-off no finer
    trimmed = topk.top(x, 64, largest, trim=True)
    assert trimmed.shape == (64,) and set(trimmed.tolist()) == want
    few = topk.top(x, 1500, largest, trim=True)  # a cut-off near the count asked: nothing trimmed
    assert set(order[:1500].tolist()) <= set(few.tolist()) and 1500 < few.shape[0] <= topk.TRIM_OVER * 1500


def test_top_of_a_short_array_is_exact():
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.float32)
    assert sorted(topk.top(x, 3).tolist()) == [4, 5, 7]
    assert sorted(topk.top(x, 2, largest=False).tolist()) == [1, 3]
    assert sorted(topk.top(x, 20).tolist()) == list(range(8))


@pytest.mark.parametrize("largest", [True, False])
def test_cut_takes_the_lowest_indexes_of_a_tied_group(largest):
    """The same members on every CPU: past the c-th value, then the lowest indexes equal to it
    (argpartition's choice among ties follows the SIMD sort of the CPU at hand)."""
    rng = np.random.default_rng(3)
    for n, c in [(100, 7), (1000, 64), (5000, 1), (64, 63)]:
        x = rng.integers(0, 5, n).astype(np.float32)  # many ties
        got = topk.cut(x, c, largest)
        key = -x if largest else x
        want = np.lexsort((np.arange(n), key))[:c]  # by value, then by index
        assert sorted(got.tolist()) == sorted(want.tolist())


def test_best_breaks_ties_at_the_cut_by_entry_order():
    score = np.array([0.5, 0.9, 0.5, 0.5, 0.9, 0.5], dtype=np.float32)
    assert topk.best(None, score, 3) == [(1, pytest.approx(0.9)), (4, pytest.approx(0.9)), (0, pytest.approx(0.5))]
    assert [r for r, _ in topk.best(np.array([5, 3, 2, 0]), score, 2)] == [0, 2]
