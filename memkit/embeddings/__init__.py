"""The models: memkit's static model (model2vec), an OpenAI-compatible embedding server, and the judge (a small ONNX transformer).

:class:`Embedder` is the extension point: an object of your own with ``name``, ``dim`` and
``embed(texts)`` (``Vault(path, embedder=...)``); :func:`complete` gives it the defaults of the rest.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .choice import make_embedder
    from .judge import Judge, judge_threads, prefetch_query, prefetched, preload_judge, shared_judge, text_keys
    from .judge_speed import judge_known_fast, judge_too_slow
    from .protocol import Embedder, complete
    from .remote import HTTPEmbedder
    from .static import LazyEmbedder, MissingModel

__all__ = ["Embedder", "HTTPEmbedder", "Judge", "LazyEmbedder", "MissingModel", "complete", "make_embedder",
           "judge_known_fast", "judge_threads", "judge_too_slow", "prefetch_query", "prefetched", "preload_judge", "shared_judge", "text_keys"]

__getattr__, __dir__ = face(__name__, {
    ".choice": "make_embedder",
    ".judge": "Judge judge_threads prefetch_query prefetched preload_judge shared_judge text_keys",
    ".judge_speed": "judge_known_fast judge_too_slow",
    ".protocol": "Embedder complete",
    ".remote": "HTTPEmbedder",
    ".static": "LazyEmbedder MissingModel",
})
