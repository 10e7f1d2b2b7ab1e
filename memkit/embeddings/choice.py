"""Which embedder a vault uses: an injected one, a model2vec model (located now, loaded on first
use), an embedding server (memkit.yaml ``embedder:``), or, where none can be found, none (search by
words only, with a warning)."""
from __future__ import annotations

from typing import Callable

from ..config import Config
from ..errors import ModelError
from .protocol import Embedder
from .static import LazyEmbedder, MissingModel

__all__ = ["make_embedder"]


def make_embedder(model: str | None, config: Config, warn: Callable[[str], None]) -> Embedder:
    """The embedder for ``model`` (a model2vec id or folder, None: the default) and memkit.yaml's
    ``embedder:`` (a server, used unless a model is named): located at once (a model's files read,
    a server asked once), loaded on its first use, so what needs no vectors (lexical search, show,
    add…) never loads it. ``warn`` says once what the choice could not honour; a model that cannot
    be found gives a :class:`MissingModel` (words only)."""
    chosen: Embedder = LazyEmbedder(model)
    try:
        if config.embedder is not None and model is None:  # a server, unless a model is named
            from .remote import HTTPEmbedder  # urllib's HTTP client: only for a server
            chosen = HTTPEmbedder(config.embedder, rules=config.redact.rules)
        elif config.embedder is not None:
            warn(f"both a model ({model}) and an embedder: are set; using the model")
        _ = chosen.dim  # located now, loaded later
        return chosen
    except ModelError as exc:  # what needs no vectors still works: words only, with a warning
        warn(f"{exc}; searching by words only until the model is found")
        return MissingModel(model, str(exc))
