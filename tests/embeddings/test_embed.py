"""The embedder: the direct loader gives model2vec's own vectors; model resolution and fallback."""
from __future__ import annotations

import logging
import time

import numpy as np
import pytest

from memkit import ModelError
from memkit.embeddings import static as embed_mod
from memkit.embeddings.static import (
    BUILTIN_MODEL,
    OFFLINE_MODEL,
    StaticEmbedder,
    builtin_model_folder,
    load_embedder,
    offline_model_folder,
)

TEXTS = [
    "Prefers bomba rice for paella (2026-02-12)",
    "Router is a MikroTik hAP ax3 running RouterOS 7.16",
    "",
    "🙂🙂🙂",
    "word " * 3000,  # longer than max_length tokens: truncated the same way
    "Ünïcödé naïve café — déjà vu",
]

needs_offline = pytest.mark.skipif(offline_model_folder() is None, reason="tokenlearn-static-model not installed (non-x86_64)")


def test_same_vectors_as_model2vec_encode():
    from model2vec import StaticModel

    folder = builtin_model_folder()  # memkit's own model: shipped, on every platform
    assert folder is not None
    ours = StaticEmbedder(folder).embed(TEXTS)
    theirs = StaticModel.from_pretrained(str(folder)).encode(TEXTS).astype(np.float32)
    assert ours.shape == theirs.shape and ours.dtype == np.float32
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    norms = np.linalg.norm(ours, axis=1)
    assert np.allclose(norms[[0, 1, 4, 5]], 1, atol=1e-5)


def save_toy_model(folder, words: list[str], dtype, weighted: bool):
    """A tiny model2vec model of ``words`` (a whitespace word-level tokenizer, 12 dimensions) saved
    in ``folder``: a table of ``dtype``, and with ``weighted`` per-token weights and a vocabulary
    mapping onto half as many rows."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(words)}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    rng = np.random.default_rng(0)
    rows = len(vocab) // 2 if weighted else len(vocab)
    table = rng.standard_normal((rows, 12))
    table = (table * 40).clip(-127, 127).astype(dtype) if dtype == np.int8 else table.astype(dtype)
    kwargs = {}
    if weighted:
        kwargs = {"weights": rng.random(len(vocab)).astype(np.float32),
                  "token_mapping": rng.integers(0, rows, len(vocab)).astype(np.int64)}
    StaticModel(vectors=table, tokenizer=tokenizer, normalize=True, **kwargs).save_pretrained(str(folder))
    return folder


@pytest.mark.parametrize("dtype, weighted", [(np.float16, False), (np.float32, True), (np.int8, True)])
def test_same_vectors_on_other_layouts(tmp_path, dtype, weighted):
    """Other model2vec layouts (float16 table; per-token weights + vocabulary mapping), on a tiny model."""
    from model2vec import StaticModel

    save_toy_model(tmp_path / "m", sorted({w for t in TEXTS for w in t.lower().split()} | {"rice", "paella"}),
                   dtype, weighted)
    ours = StaticEmbedder(tmp_path / "m").embed([t.lower() for t in TEXTS])
    theirs = StaticModel.from_pretrained(str(tmp_path / "m")).encode([t.lower() for t in TEXTS]).astype(np.float32)
    np.testing.assert_allclose(ours, theirs, atol=2e-3 if dtype == np.float16 else 1e-5)


@needs_offline
def test_default_model_offline_falls_back_fast(monkeypatch, caplog):
    monkeypatch.setattr(embed_mod, "_CACHE", {})
    monkeypatch.setenv("HF_HUB_CACHE", "/nonexistent-cache")
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="memkit"):
        e = load_embedder("minishlab/potion-base-8M")
    assert time.monotonic() - start < 30
    assert e.name in (BUILTIN_MODEL, OFFLINE_MODEL)
    assert "is not available" in caplog.text and f"using {e.name} instead" in caplog.text
    assert load_embedder("minishlab/potion-base-8M") is e  # loaded once per process


def test_no_model_at_all_says_how_to_fix(monkeypatch):
    monkeypatch.setattr(embed_mod, "_CACHE", {})
    monkeypatch.setenv("HF_HUB_CACHE", "/nonexistent-cache")
    monkeypatch.setattr(embed_mod, "offline_model_folder", lambda: None)
    monkeypatch.setattr(embed_mod, "builtin_model_folder", lambda: None)
    with pytest.raises(ModelError, match=r"not available.*memkit-m2v, memkit's own model"):
        load_embedder("minishlab/potion-base-8M")


@pytest.mark.parametrize("spec, message", [("./no/such/folder", "neither a folder nor a model id"),
                                           ("a/b/c", "neither a folder nor a model id")])
def test_bad_model_specs(monkeypatch, spec, message):
    monkeypatch.setattr(embed_mod, "_CACHE", {})
    with pytest.raises(ModelError, match=message):
        load_embedder(spec)


def test_folder_that_is_not_a_model(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError, match="cannot load the model"):
        load_embedder(str(tmp_path))


def test_cached_hub_folder(tmp_path, monkeypatch):
    snap = tmp_path / "models--org--m" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "model.safetensors").write_bytes(b"x")
    (snap / "tokenizer.json").write_text("{}")
    (tmp_path / "models--org--m" / "refs").mkdir()
    (tmp_path / "models--org--m" / "refs" / "main").write_text("abc")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert embed_mod.cached_hub_folder("org/m") == snap
    assert embed_mod.cached_hub_folder("org/other") is None
