"""memkit's own model ships in the package and is the default: it loads without a network, from
plain data files (safetensors + tokenizer.json, no pickle, no native code of its own)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import memkit.embeddings.static as embed_mod
from memkit import Vault
from memkit.embeddings.static import BUILTIN_MODEL, builtin_model_folder, load_embedder, locate_model


def test_the_builtin_model_is_shipped_small_and_documented():
    folder = builtin_model_folder()
    assert folder is not None, "memkit/embeddings/models/memkit-m2v is missing: `make model` builds it"
    files = {p.name: p.stat().st_size for p in folder.iterdir()}
    assert {"model.safetensors", "tokenizer.json", "config.json", "README.md"} <= set(files)
    assert sum(files.values()) <= 20 * 1024 * 1024
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "all-MiniLM-L6-v2" in readme and "WordNet" in readme and "licen" in readme.lower()


def test_it_is_the_default_when_nothing_is_named_and_potion_is_not_cached(monkeypatch):
    monkeypatch.setattr(embed_mod, "cached_hub_folder", lambda model_id: None)
    folder, name = locate_model(None)
    assert name == BUILTIN_MODEL and folder == builtin_model_folder()
    model = load_embedder(BUILTIN_MODEL)
    vectors = model.embed(["I drive a 2014 Subaru Outback", "what car do I have", "Allergic to penicillin"])
    assert vectors.dtype == np.float32 and vectors.shape == (3, model.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[2] @ vectors[1]  # the car is closer to the car question


def test_a_new_vault_searches_with_it_offline_in_a_fresh_process(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics" / "car.md").write_text("- I drive a 2014 Subaru Outback\n- Allergic to penicillin\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MEMKIT_MODEL", "HF_HOME", "HF_HUB_CACHE")}
    env.update(HF_HUB_OFFLINE="1", HOME=str(tmp_path), HF_HUB_CACHE=str(tmp_path / "no-cache"))
    out = subprocess.run([sys.executable, "-m", "memkit", "--vault", str(root), "search", "what car do I have",
                          "--json", "-k", "1"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # no fallback warning: the default is right here
    assert json.loads(out.stdout)[0]["text"] == "I drive a 2014 Subaru Outback"
    assert any(p.name.startswith("memkit-m2v-") for p in (root / ".memkit" / "index").iterdir())
