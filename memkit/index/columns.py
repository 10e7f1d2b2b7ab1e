"""Columns of a view that a frozen index keeps in files: texts, and kinds or tags as codes.

A view of a million entries must not hold a million Python strings: a new process would spend a
second making them and keep hundreds of megabytes. :class:`TextColumn` reads each text from a
memory-mapped UTF-8 blob when asked (a search asks for ten); :class:`CodedColumn` holds one small
integer per entry and the table of the distinct values (an entry's kind, its tags). Both behave
as read-only sequences, and ``column + list`` appends the rows of a view's extension (the files
that changed since the index was frozen) without copying the frozen part.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np

__all__ = ["TextColumn", "CodedColumn", "TagColumn", "column_mask", "tag_mask"]


class TextColumn(Sequence[str]):
    """Texts ``0 .. len(offsets) - 2`` of a UTF-8 ``blob`` (text ``i`` is ``blob[offsets[i]:offsets[i + 1]]``),
    then ``tail``'s."""

    def __init__(self, blob: np.ndarray, offsets: np.ndarray, tail: Sequence[str] = ()) -> None:
        self._blob = blob
        self._offsets = offsets
        self._frozen = int(offsets.shape[0]) - 1
        self._tail = list(tail)

    def __len__(self) -> int:
        return self._frozen + len(self._tail)

    def _one(self, i: int) -> str:
        if i >= self._frozen:
            return self._tail[i - self._frozen]
        a, b = int(self._offsets[i]), int(self._offsets[i + 1])
        return self._blob[a:b].tobytes().decode("utf-8")

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: Any) -> Any:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step == 1 and start >= self._frozen:
                return self._tail[start - self._frozen:stop - self._frozen]
            return [self._one(j) for j in range(start, stop, step)]
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text index out of range")
        return self._one(i)

    def __iter__(self) -> Iterator[str]:
        blob, offsets = self._blob, self._offsets
        step = 4096
        for a in range(0, self._frozen, step):  # a block of texts decoded at once
            b = min(a + step, self._frozen)
            lo = int(offsets[a])
            ends = (offsets[a:b + 1] - lo).tolist()
            chunk = blob[lo:lo + ends[-1]].tobytes()
            for j in range(b - a):
                yield chunk[ends[j]:ends[j + 1]].decode("utf-8")
        yield from self._tail

    def __add__(self, more: Sequence[str]) -> "TextColumn":
        return TextColumn(self._blob, self._offsets, self._tail + list(more))


class CodedColumn(Sequence[Any]):
    """One value per row, stored as ``codes`` (int32; -1: ``default``) into ``values``."""

    def __init__(self, codes: np.ndarray, values: Sequence[Any], default: Any = None,
                 where: dict[Any, int] | None = None) -> None:
        self.codes = codes
        self.values = list(values)
        self.default = default
        self.where = where  #: value -> code (None: made when first needed)

    @classmethod
    def encode(cls, items: Sequence[Any], default: Any = None, values: Sequence[Any] = (),
               where: dict[Any, int] | None = None) -> "CodedColumn":
        """The column of ``items`` (``values``: a table to extend, ``where``: its value -> code)."""
        table = list(values)
        where = {v: i for i, v in enumerate(table)} if where is None else dict(where)
        codes = np.empty(len(items), dtype=np.int32)
        for j, item in enumerate(items):
            if item == default:
                codes[j] = -1
                continue
            code = where.get(item)
            if code is None:
                code = where[item] = len(table)
                table.append(item)
            codes[j] = code
        return cls(codes, table, default, where)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._value(int(c)) for c in self.codes[i].tolist()]
        return self._value(int(self.codes[i]))

    def _value(self, code: int) -> Any:
        return self.default if code < 0 else self.values[code]

    def __iter__(self) -> Iterator[Any]:
        table = [*self.values, self.default]  # [-1]: the default
        return iter([table[c] for c in self.codes.tolist()])

    def __add__(self, more: Sequence[Any]) -> "CodedColumn":
        if self.where is None:
            self.where = {v: i for i, v in enumerate(self.values)}
        added = CodedColumn.encode(list(more), self.default, self.values, self.where)
        return CodedColumn(np.concatenate([self.codes, added.codes]), added.values, self.default, added.where)

    def mask(self, test: Callable[[Any], bool]) -> np.ndarray:
        """Rows whose value passes ``test`` (asked once per distinct value)."""
        lut = np.array([bool(test(v)) for v in self.values] + [bool(test(self.default))], dtype=bool)
        return lut[self.codes]


class TagColumn(Sequence[tuple[str, ...]]):
    """Each row's tags: tag ids (int32, every row's concatenated: row ``i``'s are
    ``ids[offsets[i]:offsets[i + 1]]``) into ``names``, then ``tail``'s tuples."""

    def __init__(self, ids: np.ndarray, offsets: np.ndarray, names: Sequence[str], tail: Sequence[tuple[str, ...]] = ()) -> None:
        self.ids = ids
        self.offsets = offsets
        self.names = list(names)
        self._frozen = int(offsets.shape[0]) - 1
        self._tail = list(tail)

    def __len__(self) -> int:
        return self._frozen + len(self._tail)

    def _one(self, i: int) -> tuple[str, ...]:
        if i >= self._frozen:
            return self._tail[i - self._frozen]
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        names = self.names
        return tuple(names[t] for t in self.ids[a:b].tolist()) if b > a else ()

    @overload
    def __getitem__(self, i: int) -> tuple[str, ...]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, ...]]: ...

    def __getitem__(self, i: Any) -> Any:
        n = len(self)
        if isinstance(i, slice):
            return [self._one(j) for j in range(*i.indices(n))]
        i = int(i)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("tag index out of range")
        return self._one(i)

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        for i in range(self._frozen):
            yield self._one(i)
        yield from self._tail

    def __add__(self, more: Sequence[tuple[str, ...]]) -> "TagColumn":
        return TagColumn(self.ids, self.offsets, self.names, self._tail + list(more))

    def having(self, tag: str) -> np.ndarray:
        """Rows that carry ``tag``."""
        out = np.zeros(len(self), dtype=bool)
        if tag in self.names:
            code = self.names.index(tag)
            at = np.flatnonzero(self.ids == code)
            out[np.searchsorted(self.offsets, at, side="right") - 1] = True
        for j, tags in enumerate(self._tail, start=self._frozen):
            out[j] = tag in tags
        return out


def tag_mask(column: Sequence[tuple[str, ...]], tag: str) -> np.ndarray:
    """Rows of a column of tags (a list of tuples, or a :class:`TagColumn`) that carry ``tag``."""
    if isinstance(column, TagColumn):
        return column.having(tag)
    return np.array([tag in t for t in column], dtype=bool)


def column_mask(column: Sequence[Any], test: Callable[[Any], bool], start: int = 0) -> np.ndarray:
    """Rows ``start…`` of any column (a list, or a :class:`CodedColumn`) whose value passes ``test``."""
    if isinstance(column, CodedColumn):
        return column.mask(test)[start:]
    return np.array([bool(test(v)) for v in column[start:]], dtype=bool)
