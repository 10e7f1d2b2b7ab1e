"""One BLAS thread for memkit's own matrix-vector products, whatever the caller's settings.

A search is one small matrix-vector product: on a busy 2-core machine OpenBLAS's worker threads
cost more to wake than the product itself (a 10k-entry search took ~8 ms instead of ~0.6 ms).
The CLI could pin the thread count in the environment before numpy loads, but a program that
imports memkit as a library (an assistant, the MCP server) has long since loaded numpy.
:func:`single_thread` sets OpenBLAS to one thread for the duration of a ``with`` block and puts
the caller's setting back afterwards; nothing happens on import. Where the BLAS is not OpenBLAS
(Accelerate on macOS, MKL) or cannot be found, it does nothing.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
from typing import Callable, Iterator

import numpy  # noqa: F401  (loads numpy's BLAS, which _find looks for among the loaded libraries)

__all__ = ["single_thread"]

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_lock = threading.Lock()
_depth = 0
_saved = 0
_funcs: tuple[Callable[[], int], Callable[[int], None]] | None = None
_looked = False


def _find() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """The get/set thread-count functions of the OpenBLAS numpy loaded (Linux: from /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for setter in _SETTERS:
            getter = setter.replace("set_num", "get_num")
            if hasattr(lib, setter) and hasattr(lib, getter):
                get, set_ = getattr(lib, getter), getattr(lib, setter)
                get.restype, get.argtypes = ctypes.c_int, []
                set_.restype, set_.argtypes = None, [ctypes.c_int]
                return get, set_
    return None


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """Run the block with one OpenBLAS thread; nested and concurrent uses share one setting."""
    global _depth, _saved, _funcs, _looked
    with _lock:
        if not _looked:
            _funcs, _looked = _find(), True
        if _funcs is not None:
            if _depth == 0:
                _saved = _funcs[0]()
                if _saved != 1:
                    _funcs[1](1)
            _depth += 1
    try:
        yield
    finally:
        if _funcs is not None:
            with _lock:
                _depth -= 1
                if _depth == 0 and _saved != 1:
                    _funcs[1](_saved)
