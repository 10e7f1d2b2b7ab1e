"""The model is loaded only when vectors are needed: lexical search, show, add… never load it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from util import write

from memkit import Vault
from memkit.embeddings.static import (
    BUILTIN_MODEL,
    LazyEmbedder,
    builtin_model_folder,
    model_dim,
    offline_model_folder,
)

needs_offline = pytest.mark.skipif(offline_model_folder() is None,
                                   reason="tokenlearn-static-model is not installed (it has x86_64 wheels only)")
ROOT = Path(__file__).resolve().parents[2]


def _vault(tmp_path: Path) -> Path:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "cooking.md", "- Prefers bomba rice for paella\n- Bakes sourdough with rye\n")
    write(root / "topics" / "home.md", "- Router is a MikroTik hAP ax3\n")
    return root


def test_lexical_search_never_loads_the_model_and_vectors_follow_later(tmp_path: Path) -> None:
    vault = Vault(_vault(tmp_path), model=BUILTIN_MODEL)
    embedder = vault.embedder
    assert isinstance(embedder, LazyEmbedder)
    hits = vault.search("hAP ax3", mode="lexical", threshold=None)
    assert [h.topic for h in hits] == ["home"]
    assert not embedder.loaded  # name and dimension came from the files; the tokenizer never loaded
    assert embedder.dim == model_dim(builtin_model_folder()) and embedder.name == BUILTIN_MODEL
    assert vault.index().new == 3 and embedder.loaded  # the pending vectors are made by the next embedding refresh
    top = vault.search("paella rice", threshold=None)[0]
    assert top.text.startswith("Prefers bomba rice") and top.cosine > 0


def test_cli_commands_that_need_no_vectors_do_not_import_the_tokenizer(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    (root / "memkit.yaml").write_text(f"model: {BUILTIN_MODEL}\n")
    # one fresh process runs the commands one after the other, saying after each whether the
    # tokenizer library has been imported by then
    code = ("import sys, json; from memkit.frontends.cli.group import main\n"
            "for args in json.loads(sys.argv[1]):\n"
            "    try:\n        main(['--vault', sys.argv[2], *args])\n    except SystemExit as e:\n        code = e.code\n"
            "    print(json.dumps({'args': args, 'code': code, 'loaded': 'tokenizers' in sys.modules}), file=sys.stderr)")
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    commands = [["search", "hAP", "--mode", "lexical"], ["topics"], ["show", "cooking"], ["recent"],
                ["add", "Soaks rice overnight", "--topic", "cooking"], ["forget", "--match", "overnight"]]
    out = subprocess.run([sys.executable, "-c", code, json.dumps(commands), str(root)], env=env,
                         capture_output=True, text=True, timeout=60)
    statuses = [json.loads(line) for line in out.stderr.splitlines() if line.startswith('{"args"')]
    assert statuses == [{"args": args, "code": 0, "loaded": False} for args in commands], (out.stdout, out.stderr)


def test_model_dim_reads_only_the_safetensors_header(tmp_path: Path) -> None:
    header = json.dumps({"embeddings": {"dtype": "F32", "shape": [10, 48], "data_offsets": [0, 1920]}}).encode()
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + np.zeros(480, "f4").tobytes())
    assert model_dim(folder) == 48
    (folder / "model.safetensors").write_bytes(b"not a model")
    with pytest.raises(Exception, match="not a model2vec safetensors file"):
        model_dim(folder)
