"""A large batch gathers from a table of pre-weighted float32 rows: the vectors are those of small
batches (each multiplying its own rows), bit for bit, on every model layout."""
from __future__ import annotations

import numpy as np
import pytest
from test_embed_chunks import TRICKY

from memkit.embeddings.static import BULK_BATCH, StaticEmbedder, builtin_model_folder


def many_texts(words: list[str], n: int = 700, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(words, int(rng.integers(0, 40)))) for _ in range(n)]
    texts[::37] = TRICKY * (len(texts[::37]) // len(TRICKY)) + TRICKY[:len(texts[::37]) % len(TRICKY)]
    return texts


def small_batches(folder, texts: list[str]) -> np.ndarray:
    e = StaticEmbedder(folder)
    return np.vstack([e.embed(texts[i:i + 100]) for i in range(0, len(texts), 100)])


def test_a_bulk_batch_gives_the_vectors_of_small_batches_with_memkits_model():
    folder = builtin_model_folder()
    assert folder is not None
    e = StaticEmbedder(folder)
    words = [w for w in e.tokenizer.get_vocab() if w.isalpha()][:3000] + ["zyzzyva", "Ünïcödé", "#tag", "(2026-02-12)"]
    texts = many_texts(words)
    bulk = e.embed(texts)
    assert len(texts) >= BULK_BATCH and e._bulk_table() is not None
    np.testing.assert_array_equal(bulk, small_batches(folder, texts))
    assert e._bulk_table() is e._bulk_table()  # built once
    assert e._bulk_table().nbytes == e.embeddings.shape[0] * e.dim * 4


@pytest.mark.parametrize("dtype, weighted", [(np.float16, False), (np.float16, True), (np.float32, True),
                                             (np.int8, True), (np.int8, False), (np.float32, False)])
def test_a_bulk_batch_gives_the_vectors_of_small_batches_on_other_layouts(tmp_path, dtype, weighted):
    from test_embed import save_toy_model

    words = sorted({w for t in TRICKY for w in t.lower().split()} | {f"w{i}" for i in range(300)})
    save_toy_model(tmp_path / "m", words, dtype, weighted)
    texts = [t.lower() for t in many_texts(words + ["unknownword"])]
    e = StaticEmbedder(tmp_path / "m")
    np.testing.assert_array_equal(e.embed(texts), small_batches(tmp_path / "m", texts))
    assert e._bulk_table() is not None


def test_a_model_too_large_for_the_bulk_table_multiplies_each_batch(monkeypatch):
    import memkit.embeddings.static as static

    monkeypatch.setattr(static, "MAX_BULK_TABLE_BYTES", 1000)
    folder = builtin_model_folder()
    e = StaticEmbedder(folder)
    texts = many_texts([w for w in e.tokenizer.get_vocab() if w.isalpha()][:500], n=300)
    bulk = e.embed(texts)
    assert e._bulk_table() is None
    np.testing.assert_array_equal(bulk, small_batches(folder, texts))
