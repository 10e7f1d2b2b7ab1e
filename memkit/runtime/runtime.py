"""The runtime context: what every service of a vault is handed, built once in the composition root
(:class:`memkit.vault.Vault`) instead of lambdas that climb back into the facade.

It holds the vault's :class:`~memkit.store.Store`, its embedder (chosen at once, loaded on first
use), a lazy :class:`~memkit.search.Searcher` (built on first use: a write loads no model), the LLM
factory (``llm("auto")``: memkit.yaml's, None: none, or a client of one's own) and the two hooks a
write calls: ``wrote(topic)`` (index that one file now) and ``changed()`` (re-check the files at the
next search). A service takes a ``Runtime`` and asks it for what it needs, when it needs it.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..embeddings import Embedder, complete, make_embedder
from ..index import Index
from ..llm import LLMChoice
from ..search import Searcher
from ..store import Store

if TYPE_CHECKING:
    from ..formats.topic import Topic
    from ..llm import LLM

__all__ = ["Runtime"]


class Runtime:
    """A vault's store, embedder, lazy searcher, LLM factory and write hooks (see the module docstring).

    :param store: the vault's files.
    :param model: the embedding model's id or folder (ignored when ``embedder`` is given).
    :param embedder: an embedder of one's own.
    """

    def __init__(self, store: Store, model: str | None, embedder: Embedder | None = None) -> None:
        self.store = store
        self.model = model
        self._embedder = complete(embedder) if embedder is not None else None
        self._searcher: Searcher | None = None

    def __repr__(self) -> str:
        return f"Runtime({str(self.store.root)!r})"

    @property
    def embedder(self) -> Embedder:
        """The embedding model, chosen once (:func:`memkit.embeddings.make_embedder`)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.model, self.store.config, self.store.warn_once)
        return self._embedder

    @property
    def searcher(self) -> Searcher:
        """The vault's index and ranker, built on first use (the model loads then)."""
        if self._searcher is None:
            self._searcher = Searcher(self.store, Index(self.store, self.embedder))
        return self._searcher

    @property
    def searching(self) -> bool:
        """Whether the searcher was built (a write before it indexes nothing)."""
        return self._searcher is not None

    def llm(self, choice: LLMChoice = "auto") -> LLM | None:
        """The LLM for ``choice``: ``"auto"`` memkit.yaml's ``llm:`` (None when unset), None none,
        or a client given; either way its requests are redacted (docs/privacy.md)."""
        from ..llm import choose
        return choose(choice, self.store.config.llm, self.store.config.redact.rules)

    def wrote(self, topic: str, path: Path | None = None, parsed: Topic | None = None) -> None:
        """One topic file was just written (``path``, when known): index that file now (not the
        whole vault), so a search finds it at once. Nothing is done before the first search."""
        if self._searcher is not None:
            self._searcher.wrote(path if path is not None else self.store.topic_path(topic), parsed)

    def changed(self) -> None:
        """The files were just written: the next search re-checks them at once."""
        if self._searcher is not None:
            self._searcher.changed()
