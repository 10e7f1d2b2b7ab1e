"""The models: memkit's static model (model2vec), an OpenAI-compatible embedding server, and the judge (a small ONNX transformer)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .judge import Judge, shared_judge, text_keys
    from .remote import HTTPEmbedder
    from .static import Embedder, LazyEmbedder, MissingModel

__all__ = ["Embedder", "HTTPEmbedder", "Judge", "LazyEmbedder", "MissingModel", "shared_judge", "text_keys"]

__getattr__, __dir__ = face(__name__, {
    ".judge": "Judge shared_judge text_keys",
    ".remote": "HTTPEmbedder",
    ".static": "Embedder LazyEmbedder MissingModel",
})
