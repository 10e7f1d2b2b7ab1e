"""Issue 28.2: Vault composes and delegates. Conversations are ``vault.conversations``, the embedder
choice lives in memkit.embeddings, the split routing of an add in memkit.split, the servers' hooks
under ``vault.frontend_internals``; the extension points (Embedder, LLM) declare every capability memkit uses."""
from __future__ import annotations

import ast
import json
from datetime import date, datetime, timezone
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


def _public_members(cls: type, vault) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_")} | {n for n in vars(vault) if not n.startswith("_")}


def test_the_facade_is_measured_by_its_surface(vault):
    """Issue 43.2: Vault keeps its verbs and hands out objects for the groups of verbs, as
    sqlite_utils.Database hands out tables; at most 30 public members."""
    members = _public_members(memkit.Vault, vault)
    assert len(members) <= 30, sorted(members)  # vault.links (issue 44); check is vault.upkeep.check
    assert {"conversations", "facts", "upkeep", "frontend_internals"} <= members
    assert not members & {"forget_every", "reset_session", "digest_text", "upkeep_due", "fact_history",
                          "add_person", "process_inbox", "show_topic", "rebuild_recent", "check"}  # said through a verb's option
    assert vault.facts is vault.facts and vault.upkeep is vault.upkeep


def test_no_service_logic_in_the_facade():
    """Each of Vault's methods delegates: no loop, no comprehension, no module-level logic of its
    own, at most a handful of statements; the services are imported by the methods (lazily)."""
    tree = ast.parse(VAULT_PY.read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Vault"]
    assert not cls.bases, "Vault inherits nothing: no mixins to meet a line count"
    for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
        loops = [n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While, ast.ListComp, ast.DictComp,
                                                             ast.SetComp, ast.GeneratorExp))]
        assert not loops, f"Vault.{fn.name} line {loops[0].lineno}: a loop is service logic"
        body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert len(body) <= 8, f"Vault.{fn.name}: {len(body)} statements; move the logic to its service"
    imported = {(n.module or "") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert "embeddings.remote" not in imported and "HTTPEmbedder" not in names  # the choice: memkit.embeddings
    assert "split_target" not in names  # the routing of an add: memkit.split
    assert not {"SessionSource", "SessionSearch", "Sessions"} & names  # the conversations: memkit.sessions
    assert not {"set_fact", "get_fact", "tidy", "run_upkeep"} & names  # vault.facts, vault.upkeep


def test_facts_and_upkeep_are_objects_with_their_verbs(vault):
    change = vault.facts.set("city", "Porto", today=date(2026, 3, 1))
    assert change.changed and vault.facts.get("city").value == "Porto"
    vault.facts.set("city", "Lisbon", today=date(2026, 3, 2))
    assert [v.value for v in vault.facts.history("city")] == ["Porto", "Lisbon"]
    assert list(vault.facts.all()) == ["city"]
    vault.facts.add_person("Ana", relation="sister")
    assert [p.name for p in vault.facts.people()] == ["Ana"]
    entry = vault.add("Call the plumber", due="2026-03-05")
    assert [f.entry.id for f in vault.upkeep.pending(today=date(2026, 3, 1))] == [entry.id]
    assert vault.upkeep.done(entry.id).id == entry.id and vault.upkeep.pending() == []
    assert vault.upkeep.stats()["entries"] == 1 and vault.upkeep.waiting_transcripts() == []
    assert vault.upkeep.tidy(dry_run=True, today=date(2026, 3, 1)).expired == []
    again = vault.add("Buy bread", topic="errands")
    assert [e.id for e in vault.forget(again.id, every=True)] == [again.id]


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
    internal."""
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


def test_value_sets_are_declared_once():
    """Issue 43.1: the search modes and the session strategies, one tuple each (memkit.base.limits),
    which the types, the config table and the front ends' choices agree with."""
    from typing import get_args

    from memkit.base.limits import SEARCH_MODES, SESSION_STRATEGIES
    from memkit.config.table import SETTINGS
    from memkit.frontends.operations import operation
    from memkit.search.query import MODES, Mode
    from memkit.sessions.budget import STRATEGIES, Strategy

    assert MODES is SEARCH_MODES and get_args(Mode) == SEARCH_MODES
    assert STRATEGIES is SESSION_STRATEGIES and get_args(Strategy) == SESSION_STRATEGIES
    (strategy,) = [s for s in SETTINGS if s.name == "session_strategy"]
    assert strategy.kind.words == SESSION_STRATEGIES  # type: ignore[attr-defined]
    choices = {p.name: p.choices for p in operation("load_session").params}
    assert choices["strategy"] is SESSION_STRATEGIES
    assert {p.name: p.choices for p in operation("search").params}["mode"] is SEARCH_MODES
