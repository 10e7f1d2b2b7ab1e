"""Models for tests/index/test_embed_process.py that a child process makes again (importable by name)."""
from __future__ import annotations

import os

from memkit.embeddings.static import StaticEmbedder


class FailingStatic(StaticEmbedder):
    """memkit's model, failing on its ``fail_at``-th batch: it raises, or (``how="exit"``) the
    process ends at once, as a crash would."""

    def __init__(self, folder: str, name: str, fail_at: int, how: str = "raise") -> None:
        super().__init__(folder, name)
        self.fail_at = fail_at
        self.how = how
        self.batches = 0

    def embed(self, texts):
        self.batches += 1
        if self.batches == self.fail_at:
            if self.how == "exit":
                os._exit(3)
            raise RuntimeError("the model failed")
        return super().embed(texts)

    def process_spec(self):
        return (__name__, "FailingStatic", (str(self.folder), self.name, self.fail_at, self.how))
