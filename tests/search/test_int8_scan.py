"""The int8 scan (memkit.search.int8_scan): rows quantized per dimension, a query product run by
onnxruntime from a graph memkit writes itself, within a few thousandths of the float32 product;
where onnxruntime is missing, asked off or computing wrongly, no engine (the float32 scan runs)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from memkit.search import int8_scan

DIMS = 64


@pytest.fixture(autouse=True)
def int8_whatever_its_speed(monkeypatch):
    """These tests check the int8 kernel itself: on a processor where the float32 scan is the
    faster, :func:`int8_scan.engine` would give None (chosen by speed, tested below)."""
    monkeypatch.setenv(int8_scan.SCAN_ENV, "int8")


def unit_rows(n, d=256, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, d)).astype(np.float32)
    rows[:, :8] *= 4  # the first dimensions carry more, as a PCA-ordered model's do
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def test_quantize_keeps_each_value_within_half_a_step():
    rows = unit_rows(5000)[:, :DIMS]
    factors = int8_scan.scales(rows)
    assert factors.shape == (DIMS,) and factors.dtype == np.float32 and (factors > 0).all()
    p8 = int8_scan.quantize(rows, factors)
    assert p8.dtype == np.int8 and p8.shape == (DIMS, 5000) and np.abs(p8).max() == 127
    assert np.all(np.abs(p8 / factors[:, None] - rows.T) <= 0.51 / factors[:, None])
    assert np.array_equal(int8_scan.offsets(p8), p8.sum(axis=0, dtype=np.int32) * int8_scan.OFFSET)


def test_the_factors_read_every_row_so_nothing_is_clipped():
    """A few rows far larger in one dimension than all the others (a topic of their own) set that
    dimension's factor: read off a sample that missed them, they were clipped and lost their order."""
    rows = unit_rows(300_000)[:, :DIMS].copy()
    rows[123_457:123_460, 3] = [0.97, 0.98, 0.99]  # between any two runs a sample might read
    blocks = []
    factors = int8_scan.factors(int8_scan.largest(rows, each=lambda: blocks.append(1)))
    assert factors[3] == np.float32(127) / np.float32(0.99) and len(blocks) == 5  # 65,536 rows a block
    p8 = int8_scan.quantize(rows[123_457:123_460], factors)
    assert p8[3].tolist() == [124, 126, 127]  # in order, none clipped
    other = int8_scan.scales(np.delete(rows, [123_457, 123_458, 123_459], axis=0))
    assert int8_scan.quantize(rows[123_457:123_460], other)[3].tolist() == [127, 127, 127]  # clipped when missed
    assert int8_scan.factors(np.zeros(2, np.float32)).tolist() == [np.float32(127 / 1e-30)] * 2  # a dimension all 0


def test_the_scan_is_close_to_the_float_product_and_keeps_the_best_rows():
    scan = int8_scan.engine(DIMS)
    assert scan is not None  # onnxruntime is memkit's dependency on this machine
    rows = unit_rows(20_000, seed=1)
    prefix = rows[:, :DIMS]
    factors = int8_scan.scales(prefix)
    p8 = np.ascontiguousarray(int8_scan.quantize(prefix, factors))
    offs = int8_scan.offsets(p8)
    rng = np.random.default_rng(2)
    for i in rng.integers(0, 20_000, 20):
        q = rows[i] + rng.standard_normal(256).astype(np.float32) * 0.3
        q /= np.linalg.norm(q)
        got, want = scan.scan(q[:DIMS], p8, factors, offs), prefix @ q[:DIMS]
        assert got.dtype == np.float32 and got.shape == (20_000,)
        assert np.abs(got - want).max() < 0.02
        best = np.argsort(-want)[:10]
        assert np.isin(best, np.argsort(-got)[:50]).all()  # the exact best are among its 50 best


def test_a_zero_query_or_no_rows_give_zeros():
    scan = int8_scan.engine(DIMS)
    assert scan is not None
    factors = np.ones(DIMS, np.float32)
    p8 = np.ones((DIMS, 3), np.int8)
    assert np.array_equal(scan.scan(np.zeros(DIMS, np.float32), p8, factors, int8_scan.offsets(p8)), np.zeros(3))
    tiny = np.full(DIMS, 1e-36, np.float32)  # 63 / its largest value is past float32: zeros, not garbage
    assert np.array_equal(scan.scan(tiny, p8, factors, int8_scan.offsets(p8)), np.zeros(3))
    empty = np.zeros((DIMS, 0), np.int8)
    assert scan.scan(np.ones(DIMS, np.float32), empty, factors, int8_scan.offsets(empty)).shape == (0,)


def test_asked_off_or_without_onnxruntime_there_is_no_engine(monkeypatch):
    monkeypatch.setenv(int8_scan.SCAN_ENV, "numpy")
    assert int8_scan.engine(DIMS) is None
    monkeypatch.delenv(int8_scan.SCAN_ENV)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    assert int8_scan.engine(40) is None  # a size not made before in this process


def test_a_runtime_that_computes_wrongly_is_refused(monkeypatch, caplog):
    monkeypatch.setattr(int8_scan.Int8Scan, "scan", lambda self, q, p, f, o: np.zeros(p.shape[1], np.float32))
    with caplog.at_level("INFO", logger="memkit"):
        assert int8_scan.engine(24) is None
    assert "the float32 scan runs instead" in caplog.text


@pytest.mark.parametrize("dims", [16, 64, 200])
def test_the_graph_serves_any_width(dims):
    scan = int8_scan.engine(dims)
    assert scan is not None and scan.dims == dims


def test_the_faster_scan_is_chosen_and_a_near_tie_keeps_the_int8_one(monkeypatch, caplog):
    monkeypatch.delenv(int8_scan.SCAN_ENV)
    for dims, (t8, tf), chosen in [(17, (2.0e-3, 1.0e-3), False), (18, (1.2e-3, 1.0e-3), True),
                                   (19, (0.3e-3, 1.0e-3), True)]:
        monkeypatch.setattr(int8_scan, "timings", lambda scan, d, t=(t8, tf): t)
        with caplog.at_level("INFO", logger="memkit"):
            assert (int8_scan.engine(dims) is not None) == chosen, (t8, tf)
        assert ("the float32 scan is the faster here" in caplog.text) == (not chosen)
        caplog.clear()
        monkeypatch.setenv(int8_scan.SCAN_ENV, "int8")  # asked for: whatever the timing said
        assert int8_scan.engine(dims) is not None
        monkeypatch.delenv(int8_scan.SCAN_ENV)
        monkeypatch.setattr(int8_scan, "timings", lambda scan, d: (9.0, 1e-9))  # measured once a process
        assert (int8_scan.engine(dims) is not None) == chosen


def test_the_timings_are_of_each_scan():
    scan = int8_scan.engine(DIMS)
    assert scan is not None
    t8, tf = int8_scan.timings(scan, DIMS, rows=1000, runs=2)
    assert 0 < t8 < 1 and 0 < tf < 1
