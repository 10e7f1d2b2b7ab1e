"""The extension point for embedding models: :class:`Embedder` declares everything memkit asks of one.

An embedder of your own needs only ``name``, ``dim`` and ``embed(texts)``: :func:`complete`
gives it the two other capabilities with their defaults (it is always available and loaded),
so that memkit reads each capability as an attribute, never probes for it.
"""
from __future__ import annotations

import inspect
from typing import Any, Protocol, Sequence

import numpy as np

__all__ = ["Embedder", "complete"]


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    @property
    def name(self) -> str:
        """What made the vectors; stamped on the sidecar."""
        ...

    @property
    def dim(self) -> int:
        """The vectors' dimension (0: no vectors, see ``available``)."""
        ...

    @property
    def available(self) -> bool:
        """False: the model cannot be found; search by words only (:class:`memkit.embeddings.MissingModel`)."""
        ...

    @property
    def loaded(self) -> bool:
        """Whether an embed costs no model load now (False: a model located but not loaded yet,
        :class:`memkit.embeddings.LazyEmbedder`; a write then indexes without vectors)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` into an ``(len(texts), dim)`` float32 array of unit rows (zero rows for
        texts with no known token)."""
        ...


_CAPABILITIES = ("name", "dim", "available", "loaded", "embed")


def _declares(obj: object, name: str) -> bool:
    try:  # static: a property is not run (a LazyEmbedder's name locates its model)
        inspect.getattr_static(obj, name)
    except AttributeError:
        return False
    return True


class _Completed:
    """An embedder that lacks capabilities of :class:`Embedder`: those it has are its own, the
    others have their defaults (always available and loaded)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._available = _declares(inner, "available")
        self._loaded = _declares(inner, "loaded")

    def __repr__(self) -> str:
        return repr(self.inner)

    @property
    def name(self) -> str:
        return str(self.inner.name)

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    @property
    def available(self) -> bool:
        return bool(self.inner.available) if self._available else True

    @property
    def loaded(self) -> bool:
        return bool(self.inner.loaded) if self._loaded else True

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.inner.embed(texts))


def complete(embedder: object) -> Embedder:
    """``embedder`` itself when it declares every capability of :class:`Embedder`, else it with
    the defaults of those it lacks (``available`` and ``loaded``: True). Without ``name``, ``dim``
    or ``embed`` it is no embedder: :raises TypeError:."""
    missing = [name for name in ("name", "dim", "embed") if not _declares(embedder, name)]
    if missing:
        raise TypeError(f"{embedder!r} is not an embedder: it has no {', '.join(missing)}")
    if all(_declares(embedder, name) for name in _CAPABILITIES):
        return embedder  # type: ignore[return-value]
    return _Completed(embedder)
