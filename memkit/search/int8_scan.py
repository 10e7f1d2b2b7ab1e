"""The fast path's scan over 8-bit integers, run by onnxruntime (:mod:`memkit.search.rank`).

A frozen index keeps the prefix scan's matrix a second time as int8 (``(PREFIX_DIMS, rows)``,
each dimension scaled to ±127 by its own factor: :func:`quantize`). numpy has no integer matrix
product that uses the processor's vector units, but onnxruntime — already memkit's dependency for
the judge — does (``MatMulInteger``): the scan reads a quarter of the bytes of the float32 one and
is 3-4x faster (100k rows 0.3 ms against 1.2 ms, 1M rows 4.7 ms against 17 ms; the float32 scan
is bound by memory). The product is exact integer arithmetic; the approximation is the rounding
of the rows and of the query (an approximate cosine off the float32 one by ~2e-3 RMS, at most
~1e-2, ~3e-2 for a query nearly all in one dimension), which only chooses candidates: their
exact cosines are read elsewhere.

The query, made to fit: each dimension divided by the rows' factor, scaled to ±63 and moved up
by ``OFFSET`` (64) into unsigned bytes 1 … 127 (x86's unsigned-by-signed byte instructions
saturate when both operands go past 127; a zero-point input or a second query row takes
onnxruntime off its fast kernel). What the offset adds, 64 times each row's sum, is kept with the
rows (:func:`offsets`) and taken off. The graph, written here as protobuf bytes (no ``onnx``
package needed)::

    y = MatMulInteger(q (1, D) uint8, P (D, n) int8)       # (1, n) int32
    out = Cast(y - c, float) * s                            # c: the offsets (1, n); s: 1 / the query's scale

Where onnxruntime is missing, refuses to load, or computes wrongly on this processor (checked
against numpy on a small problem when the session starts), :func:`engine` is None and the
float32 scan runs as before; ``MEMKIT_SCAN=numpy`` asks for that too (benchmarks, comparisons).

**Chosen by speed.** The int8 scan is not faster everywhere: 3-4x on an AVX2 EPYC, but slower than
numpy's float32 product on a Xeon with AVX-512 (1.71 against 1.24 ms at 100k rows), where numpy's
own kernel is wide and the memory fast. When its session starts, :func:`engine` also times both
scans once on a problem of ``_PROBE_ROWS`` rows (best of ``_PROBE_RUNS``, ~10 ms, once a process)
and keeps the int8 one unless the float32 one is clearly faster (``_NUMPY_MARGIN``: a near-tie
keeps the int8 scan, so a processor where the two run alike does not switch from run to run).
``MEMKIT_SCAN=int8`` keeps it whatever the timing says. Either scan only chooses candidates:
the exact cosines that rank them are the same.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Callable

import numpy as np

from ..base.ort import passes

log = logging.getLogger("memkit")

__all__ = ["Int8Scan", "engine", "timings", "quantize", "offsets", "factors", "largest", "scales", "SCAN_ENV", "OFFSET"]

SCAN_ENV = "MEMKIT_SCAN"  #: "numpy": never the int8 scan; "int8": whenever it computes right, however fast
_LEVELS = 127  #: the rows' int8 range (symmetric: -127 … 127)
_Q_LEVELS = 63  #: the query's range, before the offset
OFFSET = 64  #: added to the query's values (unsigned bytes 1 … 127)
_ROWS_AT_ONCE = 65536  #: rows read at a time for the largest values (small temporaries)
_PROBE_ROWS = 32768  #: the timed problem's rows (past the caches, as a frozen index's prefix is)
_PROBE_RUNS = 3  #: each scan's best of this many runs, after one to warm it
_NUMPY_MARGIN = 1.25  #: the float32 scan is chosen when the int8 one takes this many times as long


def factors(largest: np.ndarray) -> np.ndarray:
    """Each dimension's factor (float32, ``(D,)``) from its largest absolute value over every
    row: that value becomes ±127, so no row's value is clipped (a factor read off a sample
    clipped the rows it missed: a topic larger than the sample in some dimension lost its order
    there, recall@10 0.915 against 0.990 in a reviewer's test)."""
    return (np.float32(_LEVELS) / np.maximum(np.asarray(largest, dtype=np.float32), np.float32(1e-30))).astype(np.float32)


def largest(rows: np.ndarray, each: Callable[[], object] | None = None) -> np.ndarray:
    """The largest absolute value of each dimension of ``rows`` ``(n, D)``, read a block of rows
    at a time; ``each`` is called after each block (a memory-mapped matrix's pages given back)."""
    top = np.zeros(rows.shape[1], dtype=np.float32)
    for a in range(0, rows.shape[0], _ROWS_AT_ONCE):
        np.maximum(top, np.abs(np.asarray(rows[a:a + _ROWS_AT_ONCE], dtype=np.float32)).max(axis=0), out=top)
        if each is not None:
            each()
    return top


def scales(rows: np.ndarray) -> np.ndarray:
    """:func:`factors` of ``rows`` ``(n, D)`` (all of them read)."""
    return factors(largest(rows))


def quantize(block: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """``block`` ``(n, D)`` float rows as int8 ``(D, n)`` (transposed, as the scan reads them);
    values past a factor's range (none, with :func:`factors` of every row) are clipped."""
    scaled = np.asarray(block, dtype=np.float32) * factors
    np.clip(scaled, -_LEVELS, _LEVELS, out=scaled)
    return np.rint(scaled, out=scaled).astype(np.int8).T


def offsets(prefix: np.ndarray) -> np.ndarray:
    """What the query's ``OFFSET`` adds to each row's product: ``OFFSET`` times the sum of the
    row's values, int32 ``(n,)``, for ``prefix`` ``(D, n)`` as :func:`quantize` gave it."""
    return prefix.sum(axis=0, dtype=np.int32) * np.int32(OFFSET)


# ---- the graph, as protobuf bytes ---------------------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(raw)) + raw


_FLOAT, _UINT8, _INT8, _INT32 = 1, 2, 3, 6  # ONNX TensorProto element types


def _tensor_info(name: str, elem: int, dims: tuple[int | str, ...]) -> bytes:
    """A ValueInfoProto: name, TypeProto.tensor_type (elem_type, shape of dim_value/dim_param)."""
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem) + _bytes(2, shape)))


def _node(op: str, inputs: list[str], outputs: list[str], attrs: bytes = b"") -> bytes:
    return b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs) + \
        _bytes(3, op.lower()) + _bytes(4, op) + attrs


def model_bytes(dims: int) -> bytes:
    """The scan's ONNX model (ModelProto: IR version 8, opset 17) for ``dims`` dimensions."""
    cast_to_float = _bytes(5, _bytes(1, "to") + _int(3, _FLOAT) + _int(20, 2))  # AttributeProto, INT
    graph = (_bytes(1, _node("MatMulInteger", ["q", "P"], ["y"]))
             + _bytes(1, _node("Sub", ["y", "c"], ["z"]))
             + _bytes(1, _node("Cast", ["z"], ["zf"], cast_to_float))
             + _bytes(1, _node("Mul", ["zf", "s"], ["out"]))
             + _bytes(2, "memkit-int8-scan")
             + _bytes(11, _tensor_info("q", _UINT8, (1, dims)))
             + _bytes(11, _tensor_info("P", _INT8, (dims, "n")))
             + _bytes(11, _tensor_info("c", _INT32, (1, "n")))
             + _bytes(11, _tensor_info("s", _FLOAT, ()))
             + _bytes(12, _tensor_info("out", _FLOAT, (1, "n"))))
    return _int(1, 8) + _bytes(8, _bytes(1, "") + _int(2, 17)) + _bytes(7, graph)


# ---- the engine ---------------------------------------------------------------------------------
class Int8Scan:
    """An onnxruntime session running the scan (one thread; safe to share between threads)."""

    def __init__(self, dims: int) -> None:
        from ..base.ort import onnxruntime as ort  # telemetry off (memkit/base/ort.py)

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # the scan is bound by memory: a second thread does not help
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.dims = dims
        self._session = ort.InferenceSession(model_bytes(dims), sess_options=opts,
                                             providers=["CPUExecutionProvider"])

    def scan(self, q: np.ndarray, prefix: np.ndarray, factors: np.ndarray, offs: np.ndarray) -> np.ndarray:
        """``q @ rows`` approximately, float32 ``(n,)``: ``q`` the query's first ``dims``
        dimensions; ``prefix``, ``factors``, ``offs`` the rows as :func:`quantize`,
        :func:`scales` and :func:`offsets` gave them."""
        folded = np.asarray(q, dtype=np.float32) / factors
        top = float(np.abs(folded).max())
        if top < 1e-30 or prefix.shape[1] == 0:  # (63 / top must stay a float32)
            return np.zeros(prefix.shape[1], dtype=np.float32)
        level = _Q_LEVELS / top
        q8 = (np.rint(folded * np.float32(level)) + OFFSET).astype(np.uint8).reshape(1, -1)
        with passes:  # at the exit: ExitingError, a ModelError (the static scan's callers fall back)
            out = self._session.run(None, {"q": q8, "P": prefix, "c": offs.reshape(1, -1),
                                           "s": np.array(1 / level, dtype=np.float32)})[0]
        return out.reshape(-1)


#: (process, dimensions): the scan and whether it is the faster here, made once (None: cannot run)
_ENGINES: dict[tuple[int, int], tuple[Int8Scan, bool] | None] = {}
_LOCK = threading.Lock()


def _forked() -> None:  # a child forked while another thread held the lock would wait for ever
    global _LOCK
    _LOCK = threading.Lock()
    _ENGINES.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def engine(dims: int) -> Int8Scan | None:
    """The int8 scan for ``dims`` dimensions, made once a process; None where it cannot run, or
    where the float32 scan is the faster (see the module docstring; the reason is logged once)."""
    asked = os.environ.get(SCAN_ENV, "").strip().lower()
    if asked == "numpy":
        return None
    key = (os.getpid(), dims)  # a forked process makes its own session
    if key not in _ENGINES:
        with _LOCK:
            if key not in _ENGINES:
                _ENGINES[key] = _start(dims)
    made = _ENGINES[key]
    if made is None:
        return None
    scan, faster = made
    return scan if faster or asked == "int8" else None


def _start(dims: int) -> tuple[Int8Scan, bool] | None:
    try:
        scan = Int8Scan(dims)
        rng = np.random.default_rng(7)  # a small problem checked against numpy's own arithmetic
        rows = rng.standard_normal((257, dims)).astype(np.float32)
        q = rng.standard_normal(dims).astype(np.float32)
        f = scales(rows)
        prefix = np.ascontiguousarray(quantize(rows, f))
        got = scan.scan(q, prefix, f, offsets(prefix))
        want = rows @ q
        if got.shape != want.shape or not np.allclose(got, want, atol=0.05 * float(np.abs(want).max())):
            raise ValueError("its products differ from numpy's on this processor")
    except Exception as exc:  # ImportError, onnxruntime's own errors, the check
        log.info("the int8 scan cannot run here (%s): the float32 scan runs instead", exc)
        return None
    int8_s, float_s = timings(scan, dims)
    faster = int8_s < _NUMPY_MARGIN * float_s
    if not faster:
        log.info("the float32 scan is the faster here (%.2f against %.2f ms at %d rows): it runs instead",
                 float_s * 1e3, int8_s * 1e3, _PROBE_ROWS)
    return scan, faster


def timings(scan: Int8Scan, dims: int, rows: int = _PROBE_ROWS, runs: int = _PROBE_RUNS) -> tuple[float, float]:
    """Seconds of one int8 scan and one float32 scan of ``rows`` rows (each the best of ``runs``),
    laid out as a frozen index keeps them (``(dims, rows)``)."""
    rng = np.random.default_rng(11)
    p8 = rng.integers(-127, 128, size=(dims, rows), dtype=np.int8)
    pf = p8.astype(np.float32)
    f = np.ones(dims, dtype=np.float32)
    offs = offsets(p8)
    q = rng.standard_normal(dims).astype(np.float32)
    out = np.empty(rows, dtype=np.float32)

    def best(run: Callable[[], object]) -> float:
        run()
        took = []
        for _ in range(runs):
            t0 = time.perf_counter()
            run()
            took.append(time.perf_counter() - t0)
        return min(took)

    return best(lambda: scan.scan(q, p8, f, offs)), best(lambda: np.matmul(q, pf, out=out))
