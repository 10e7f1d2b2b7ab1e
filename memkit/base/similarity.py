"""Similarity matrices: every row of one matrix against every row of another, checked finite.

numpy computes ``A @ A.T`` (one buffer, transposed) with the BLAS's self-product routine (SYRK),
and the OpenBLAS bundled with numpy 2.4 picks SME kernels on Arm chips that have them (Apple M4,
qemu's default CPU) whose float32 SYRK returns inf/NaN or wrong values (numpy#31776,
OpenBLAS#5873); ordinary products were right there. :func:`similarities` is memkit's one way to
such a matrix: it hands the BLAS a copy of the right operand, so numpy always takes the ordinary
product (GEMM), never the self-product. A result that is still not finite, from finite rows, is
worked out again in float64 (with a warning); one that is not finite even then raises
:class:`~memkit.errors.NumericError` instead of being used.
"""
from __future__ import annotations

import logging

import numpy as np

from ..errors import NumericError

__all__ = ["similarities"]

log = logging.getLogger("memkit")


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The one product (a test replaces it to play a faulty BLAS)."""
    return np.matmul(a, b)


def similarities(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """``a @ b.T`` (``b`` None: ``a @ a.T``), the dot products of every row of ``a`` with every
    row of ``b``: cosines for unit rows. In ``a``'s float dtype (float32 stays float32).

    :raises NumericError: the rows, or the product even in float64, hold inf or NaN.
    """
    other = a if b is None else b
    right = np.array(other.T, order="C")  # a copy: never the buffer of ``a``, so never BLAS's SYRK
    out = _matmul(a, right)
    if np.isfinite(out).all():
        return out
    if not (np.isfinite(a).all() and np.isfinite(other).all()):
        raise NumericError("a similarity matrix cannot be computed: the vectors hold inf or NaN values")
    log.warning("the BLAS returned inf/NaN for a float%d matrix product of finite vectors (a known "
                "OpenBLAS bug on some Arm chips); computing it in float64 instead", out.dtype.itemsize * 8)
    out = _matmul(a.astype(np.float64), right.astype(np.float64))
    if not np.isfinite(out).all():
        raise NumericError("the BLAS returns inf/NaN for matrix products of finite vectors, even in float64: "
                           "numpy's linear algebra is broken on this machine (for OpenBLAS on Arm chips with "
                           "SME, see numpy issue 31776; OPENBLAS_CORETYPE=NEOVERSEN1 avoids its SME kernels)")
    return out.astype(np.result_type(a, other), copy=False)
