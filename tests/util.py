from __future__ import annotations

from pathlib import Path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


class FakeEmbedder:
    """Deterministic bag-of-words embedder (llm's EmbedDemo idea): each word a fixed random unit
    vector seeded by its crc32; a text is their normalised mean. Shared words -> similar vectors."""

    name = "fake-bow"
    dim = 32

    def __init__(self) -> None:
        self.calls: list[int] = []

    def _word(self, word: str):
        import zlib

        import numpy as np

        rng = np.random.default_rng(zlib.crc32(word.encode()))
        v = rng.standard_normal(self.dim).astype("float32")
        return v / np.linalg.norm(v)

    def embed(self, texts):
        import re

        import numpy as np

        texts = list(texts)
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype="float32")
        for i, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            if words:
                v = np.mean([self._word(w) for w in words], axis=0)
                out[i] = v / np.linalg.norm(v)
        return out
