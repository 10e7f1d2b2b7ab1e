"""Giving back the pages of a memory-mapped file that a long pass has read.

A pass over a large memory-mapped file (the index's matrix while it is frozen) leaves every page
it read counted in the process's resident memory until the process ends, although they are clean
and belong to the page cache: on a 2 GB board that pass should hold only the block it works on.
:func:`release` tells the kernel this process no longer needs the pages it mapped
(``MADV_DONTNEED``): they stay in the page cache, and a later read maps them again.
"""
from __future__ import annotations

import mmap
from typing import Any

__all__ = ["release"]


def release(array: Any) -> bool:
    """Drop this process's pages of the file that ``array`` (a numpy array or a view of one)
    maps; True when it did (a mapped array, a platform with ``madvise``). Written pages of a
    shared mapping are kept by the page cache: nothing is lost."""
    found = array
    for _ in range(8):  # an array made from a np.memmap keeps it as its base
        mm = getattr(found, "_mmap", None)
        if isinstance(mm, mmap.mmap):
            try:
                mm.madvise(mmap.MADV_DONTNEED)
                return True
            except (AttributeError, OSError, ValueError):
                return False
        found = getattr(found, "base", None)
        if found is None:
            return False
    return False
