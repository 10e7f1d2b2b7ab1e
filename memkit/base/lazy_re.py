"""A regular expression compiled on its first use, not when its module is imported.

``re.compile`` of memkit's ~120 module-level patterns cost ~40 ms of every cold command (issue 42.3),
most of them for flows the command never runs (a search redacts nothing). A module writes

    _CODE = lazy(r"...", re.I)

and uses ``_CODE.search(text)`` as before; the pattern is compiled (and kept) the first time any
attribute is read. It is not an ``re.Pattern``: pass its methods, not the object, to ``re.sub`` and
friends (``_CODE.sub(...)``), and do not test it with ``isinstance``.
"""
from __future__ import annotations

import re
from typing import Any, cast, overload


class _Lazy:
    __slots__ = ("_args", "_compiled")

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._args = (pattern, flags)
        self._compiled: re.Pattern[Any] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(*self._args)
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self._args[0]!r})"


@overload
def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]: ...
@overload
def lazy(pattern: bytes, flags: int = 0) -> re.Pattern[bytes]: ...


def lazy(pattern: str | bytes, flags: int = 0) -> re.Pattern[Any]:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    return cast("re.Pattern[Any]", _Lazy(pattern, flags))
