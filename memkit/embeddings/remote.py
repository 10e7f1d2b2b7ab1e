"""An embedding server as memkit's model: anything speaking the OpenAI-compatible
``POST {base_url}/embeddings`` (Ollama, llama.cpp's server, vLLM, LM Studio, OpenAI).

memkit.yaml::

    embedder: {base_url: "http://127.0.0.1:11434/v1", model: "nomic-embed-text"}

The vectors go to the same sidecar as a model2vec model's (one per embedder, named after the
model and the server), keyed by entry text hash, so only new entries are sent, ``batch_size``
texts a request. Every text is redacted first (the vault's rules, :mod:`memkit.formats.redact`):
an entry a person typed with a secret in it, or a search query holding one, never leaves the
process as it is. When the server cannot be reached, :class:`memkit.vault.Vault` searches by
words only, with one warning.
"""
from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping, Sequence

import numpy as np

from ..base.deadline import Deadline
from ..base.http import open_within
from ..config import EmbedderSettings
from ..errors import ModelError
from ..formats.redact import Rule, redact

__all__ = ["HTTPEmbedder"]

MAX_BODY_BYTES = 256 * 1024 * 1024
RETRY_AFTER_S = 60.0  #: after a failure, the server is not asked again for this long (no wait per search)


class HTTPEmbedder:
    """Embeddings from a server (see the module docstring): ``name``, ``dim``, ``embed(texts)``.

    :param settings: from memkit.yaml's ``embedder:``.
    :param env: where ``api_key_env`` is looked up (default ``os.environ``).
    :param rules: the redaction every text goes through before it is sent (the vault's
        ``config.redact.rules``; None: the built-in rules).
    """

    loaded = True  #: nothing to load: asking costs a request, not a model load
    available = True

    def __init__(self, settings: EmbedderSettings, env: Mapping[str, str] | None = None, *,
                 rules: Sequence[Rule] | None = None) -> None:
        self.settings = settings
        self.rules = tuple(rules) if rules is not None else None
        self.url = settings.base_url.rstrip("/") + "/embeddings"
        parts = urllib.parse.urlsplit(self.url)
        self.name = f"{settings.model}@{parts.netloc}"  #: the sidecar's name: two servers on one host differ by port
        self._down: tuple[float, str] | None = None  #: (until when, why) after a failure
        self._dim = settings.dim
        self._key: str | None = None
        if settings.api_key_env:
            key = (os.environ if env is None else env).get(settings.api_key_env, "").strip()
            if not key:
                raise ModelError(f"environment variable {settings.api_key_env} (embedder.api_key_env) is not set")
            self._key = key

    def __repr__(self) -> str:
        return f"HTTPEmbedder(url={self.url!r}, model={self.settings.model!r})"

    @property
    def dim(self) -> int:
        """The vectors' dimension: ``embedder.dim``, else asked of the server once.

        :raises ModelError: the server cannot be reached (or answers nonsense)."""
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 rows, one per text, ``batch_size`` texts a request.

        :raises ModelError: the server cannot be reached, is too slow, or answers nonsense."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [self._request(texts[i:i + self.settings.batch_size])
                 for i in range(0, len(texts), self.settings.batch_size)]
        out = np.concatenate(parts)
        if self._dim is None:
            self._dim = int(out.shape[1])
        elif out.shape[1] != self._dim:
            raise ModelError(f"the embedding server at {self.url} returned {out.shape[1]}-d vectors, "
                             f"not {self._dim}-d (embedder.dim)")
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1
        return (out / norms).astype(np.float32)

    def _request(self, texts: list[str]) -> np.ndarray:
        if self._down is not None:
            if time.monotonic() < self._down[0]:
                raise ModelError(self._down[1])  # not asked again yet: no timeout to wait out per search
            self._down = None
        try:
            return self._send(texts)
        except ModelError as exc:
            self._down = (time.monotonic() + RETRY_AFTER_S, str(exc))
            raise

    def _send(self, texts: list[str]) -> np.ndarray:
        hidden = [redact(t, self.rules).text for t in texts]  # never a secret out (docs/privacy.md)
        payload = json.dumps({"model": self.settings.model, "input": hidden}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=payload, headers=headers, method="POST")
        where = f"the embedding server at {self.url}"
        too_slow = f"{where} did not answer within {self.settings.timeout_s:g} s (embedder.timeout_s)"
        deadline = Deadline(self.settings.timeout_s)  # the whole request, not each read (a server may drip)
        try:
            with open_within(request, deadline) as response:  # a server on this machine: no proxy
                body = response.read(MAX_BODY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            if deadline.expired:
                raise ModelError(too_slow) from None
            detail = exc.read(300).decode("utf-8", errors="replace").strip()
            raise ModelError(f"{where} answered HTTP {exc.code}{': ' + detail if detail else ''}") from None
        except urllib.error.URLError as exc:
            if deadline.expired or isinstance(exc.reason, TimeoutError):
                raise ModelError(too_slow) from None
            raise ModelError(f"{where} cannot be reached ({exc.reason})") from None
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            if deadline.expired or isinstance(exc, TimeoutError):
                raise ModelError(too_slow) from None
            raise ModelError(f"{where} broke off its answer: {exc}") from None
        finally:
            deadline.close()
        if deadline.expired:  # the cut may have left a short body that read() returned
            raise ModelError(too_slow)
        if len(body) > MAX_BODY_BYTES:
            raise ModelError(f"{where} sent more than {MAX_BODY_BYTES >> 20} MB")
        return _vectors(body, len(texts), where)


def _vectors(body: bytes, n: int, where: str) -> np.ndarray:
    """The ``data[].embedding`` rows of a reply, in ``index`` order."""
    try:
        reply: Any = json.loads(body)
        items = reply["data"]
        if not isinstance(items, list) or len(items) != n:
            raise ValueError(f"{len(items) if isinstance(items, list) else 'no'} embeddings for {n} texts")
        items = sorted(items, key=lambda d: int(d.get("index", 0)))
        rows = np.array([item["embedding"] for item in items], dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] == 0 or not np.isfinite(rows).all():
            raise ValueError("embeddings of unequal length, empty or not numbers")
        return rows
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ModelError(f"{where} did not answer with embeddings: {exc}") from None
