"""Issue 28.2: Vault composes and delegates. Conversations are ``vault.conversations``, the embedder
choice lives in memkit.embeddings, the split routing of an add in memkit.split, the servers' hooks
under ``vault.frontend_internals``; the extension points (Embedder, LLM) declare every capability memkit uses."""
from __future__ import annotations

import ast
import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from util import FakeEmbedder

import memkit
from memkit.config import Config

VAULT_PY = Path(memkit.__file__).parent / "vault.py"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def test_conversations_are_one_object_with_the_session_verbs(vault):
    conv = vault.conversations
    assert conv is vault.conversations  # one per vault, like db["table"]
    s = conv.new(session_id="trip", title="Lisbon", system_prompt="Be brief.", now=T0)
    conv.append("trip", "user", "Book the tram to Belem", now=T0)
    conv.append("trip", "assistant", "Tram 15 from Praca da Figueira", now=T0)
    assert [i.id for i in conv.list()] == ["trip"]
    assert [m.content for m in conv.show("trip").messages] == ["Book the tram to Belem", "Tram 15 from Praca da Figueira"]
    assert [m.content for m in conv.window("trip", 4096)] == ["Be brief.", "Book the tram to Belem",
                                                              "Tram 15 from Praca da Figueira"]
    exported = conv.export("trip")
    assert json.loads(exported.splitlines()[-1])["content"] == "Tram 15 from Praca da Figueira"
    (imported,) = conv.import_(exported.encode(), session_id="copy")
    assert imported.session.id == "copy" and imported.added == 2 and len(conv.show("copy").messages) == 2
    assert conv.search("tram Belem", k=1)[0].session in ("trip", "copy")
    assert conv.delete("copy").id == "copy" and [i.id for i in conv.list()] == [s.id]


def test_the_facade_is_slim():
    text = VAULT_PY.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 500  # 769 before issue 28.2
    tree = ast.parse(text)
    imported = {(n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "embeddings.remote" not in imported and "HTTPEmbedder" not in names  # the choice: memkit.embeddings
    assert "split_target" not in names  # the routing of an add: memkit.split
    assert not {"SessionSource", "SessionSearch", "Sessions"} & names  # the conversations: memkit.sessions


def test_the_embedder_is_chosen_in_memkit_embeddings(tmp_path):
    from memkit.config import EmbedderSettings
    from memkit.embeddings import HTTPEmbedder, LazyEmbedder, MissingModel, make_embedder

    said: list[str] = []
    missing = make_embedder(str(tmp_path / "no-such-model"), Config(), said.append)
    assert isinstance(missing, MissingModel) and not missing.available and "words only" in said[0]
    server = EmbedderSettings(base_url="http://127.0.0.1:9/v1", model="m", dim=8)
    assert isinstance(make_embedder(None, Config(embedder=server), said.append), HTTPEmbedder)
    chosen = make_embedder(str(tmp_path / "no-such-model"), Config(embedder=server), said.append)
    assert "using the model" in said[-2] and not isinstance(chosen, (HTTPEmbedder, LazyEmbedder))


def test_the_embedder_protocol_declares_every_capability_used():
    from memkit.embeddings import Embedder, complete

    declared = {n for n in vars(Embedder) if not n.startswith("_")}
    assert {"name", "dim", "embed", "available", "loaded"} <= declared
    assert memkit.Embedder is Embedder and "Embedder" in memkit.__all__ and "LLM" in memkit.__all__

    minimal = FakeEmbedder()  # name, dim, embed: the rest has its defaults
    done = complete(minimal)
    assert done.available and done.loaded and done.name == "fake-bow" and done.dim == 32
    assert np.allclose(done.embed(["rice"]), minimal.embed(["rice"]))
    assert complete(done) is done

    class NotLoaded(FakeEmbedder):
        loaded = False

    assert complete(NotLoaded()).loaded is False  # what it declares is its own
    with pytest.raises(TypeError, match="not an embedder"):
        complete(object())


def test_no_capability_is_probed_with_getattr():
    """The capabilities are read as declared attributes of the protocols, never probed."""
    package = Path(memkit.__file__).parent
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                    and node.args[1].value in ("available", "loaded", "name", "dim", "embed", "chat", "chat_text"):
                raise AssertionError(f"{path.name}:{node.lineno} probes {node.args[1].value}")


def test_ask_text_uses_the_declared_text_capability():
    from memkit.llm import LLM, TextChat, ask_text

    class Plain:
        def chat(self, messages):
            return "plain"

    class Texty(Plain):
        def chat_text(self, messages):
            return "as text"

    assert isinstance(Texty(), TextChat) and not isinstance(Plain(), TextChat)
    assert ask_text(Plain(), [{"role": "user", "content": "hi"}]) == "plain"
    assert ask_text(Texty(), [{"role": "user", "content": "hi"}]) == "as text"
    assert memkit.LLM is LLM and memkit.TextChat is TextChat


def test_the_servers_hooks_are_under_frontend_internals(vault):
    """What only the long-running front ends need is one object with a name that says it is
    internal (``vault.serving`` is its deprecated alias: tests/test_vault_aliases.py)."""
    vault.add("Prefers bomba rice", topic="cooking")
    hooks = vault.frontend_internals
    assert hooks is vault.frontend_internals
    assert hooks.index_status()["model"] == vault.embedder.name
    assert hooks.write_locked() is False
    assert "not library API" in (type(vault).frontend_internals.__doc__ or "")
    index = hooks.open_index()
    try:
        assert index.embedder.name == vault.embedder.name
    finally:
        index.close()
