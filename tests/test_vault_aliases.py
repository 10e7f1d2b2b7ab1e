"""Issue 28 (the house): Vault's 0.1 names of the session verbs and of the servers' hooks still
work for one release, each warning (DeprecationWarning) with its replacement; memkit's own code
calls none of them (tests/frontends/test_frontends_new_api.py checks the front ends)."""
from __future__ import annotations

import ast
import dataclasses
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from util import FakeEmbedder

from memkit import Vault
from memkit.index import Index
from memkit.search import Serving
from memkit.sessions import Conversations
from memkit.vault_aliases import RENAMED, VaultAliases

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
T1 = datetime(2026, 3, 20, 9, 0, tzinfo=timezone.utc)


class NoConclusions:
    """An LLM whose digests find nothing to remember."""

    def chat(self, messages):
        return '{"conclusions": []}'


def _vault(root: Path) -> Vault:
    vault = Vault(Vault.init(root, profile=False).root, embedder=FakeEmbedder())
    conv = vault.conversations
    conv.new(session_id="trip", title="Lisbon", system_prompt="Be brief.", now=T0)
    conv.append("trip", "user", "Book the tram to Belem", now=T0)
    conv.append("trip", "assistant", "Tram 15 from Praca da Figueira", now=T0)
    return vault


#: old name -> (the call by the old name, the same call by the new one)
CALLS = {
    "sessions": (lambda v: v.sessions(), lambda v: v.conversations.list()),
    "session": (lambda v: v.session("trip"), lambda v: v.conversations.show("trip")),
    "raw_session": (lambda v: v.raw_session("trip"), lambda v: v.conversations.show_raw("trip")),
    "create_session": (lambda v: v.create_session(session_id="new", title="New", now=T0),
                       lambda v: v.conversations.new(session_id="new", title="New", now=T0)),
    "save_message": (lambda v: v.save_message("trip", "user", "And back", now=T0),
                     lambda v: v.conversations.append("trip", "user", "And back", now=T0)),
    "digest_new_messages": (lambda v: v.digest_new_messages("trip", llm=NoConclusions()),
                            lambda v: v.conversations.digest_new("trip", llm=NoConclusions())),
    "recent_messages": (lambda v: v.recent_messages("trip", 4096, now=T0),
                        lambda v: v.conversations.window("trip", 4096, now=T0)),
    "delete_session": (lambda v: v.delete_session("trip"), lambda v: v.conversations.delete("trip")),
    "prune_sessions": (lambda v: v.prune_sessions(1, dry_run=True, now=T1),
                       lambda v: v.conversations.prune(1, dry_run=True, now=T1)),
    "digest_session": (lambda v: v.digest_session("trip", llm=NoConclusions(), dry_run=True),
                       lambda v: v.conversations.digest("trip", llm=NoConclusions(), dry_run=True)),
    "export_session": (lambda v: v.export_session("trip"), lambda v: v.conversations.export("trip")),
    "import_sessions": (lambda v: v.import_sessions(v.conversations.export("trip").encode(), session_id="copy", now=T0),
                        lambda v: v.conversations.import_(v.conversations.export("trip").encode(), session_id="copy",
                                                          now=T0)),
    "search_sessions": (lambda v: v.search_sessions("tram Belem", k=2),
                        lambda v: v.conversations.search("tram Belem", k=2)),
    "serving": (lambda v: type(v.serving), lambda v: type(v.frontend_internals)),
    "open_index": (lambda v: v.open_index(), lambda v: v.frontend_internals.open_index()),
    "fill_judge_aside": (lambda v: v.fill_judge_aside(), lambda v: v.frontend_internals.fill_judge_aside()),
    "index_status": (lambda v: v.index_status(), lambda v: v.frontend_internals.index_status()),
    "write_locked": (lambda v: v.write_locked(), lambda v: v.frontend_internals.write_locked()),
}


def _plain(value):
    """What a call gave, comparable across two vaults (their folders aside)."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, threading.Thread):
        value.join(30)
        return ("thread", value.name, value.is_alive())
    if isinstance(value, Index):
        try:
            return ("index", value.embedder.name)
        finally:
            value.close()
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "file"}
    if hasattr(value, "to_dict"):
        return _plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    return value


def test_every_old_name_is_covered():
    assert set(CALLS) == set(RENAMED)
    for old, new in RENAMED.items():
        assert hasattr(VaultAliases, old) and not hasattr(Conversations, old), old
        owner, _, verb = new.partition(".")
        assert owner in ("conversations", "frontend_internals"), new
        assert not verb or callable(getattr(Conversations if owner == "conversations" else Serving, verb)), new


@pytest.mark.parametrize("old", list(CALLS))
def test_an_old_name_works_and_warns(tmp_path, old):
    """The old name does what its replacement does, and says which replacement, at the caller's line."""
    by_old, by_new = CALLS[old]
    with pytest.warns(DeprecationWarning, match=rf"^Vault\.{old} is deprecated .*; use vault\.{RENAMED[old]}$") as got:
        before = _plain(by_old(_vault(tmp_path / "old")))
    assert {Path(w.filename).name for w in got if w.category is DeprecationWarning} == {Path(__file__).name}
    after = _plain(by_new(_vault(tmp_path / "new")))
    assert before == after


def test_the_new_names_do_not_warn(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for _, by_new in CALLS.values():
            _plain(by_new(_vault(tmp_path / f"v{len(list(tmp_path.iterdir()))}")))


def test_each_alias_is_a_warning_and_one_call_of_its_replacement():
    """No flow logic left in the aliases: ``_deprecated(old)`` then ``return self.<replacement>(…)``."""
    import memkit.vault_aliases as aliases
    tree = ast.parse(Path(aliases.__file__).read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "VaultAliases"]
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    for old, new in RENAMED.items():
        body = [n for n in methods[old].body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        assert len(body) == 2, old
        assert ast.unparse(body[0]) == f"_deprecated({old!r})", old
        assert ast.unparse(body[1]).startswith(f"return self.{new}" + ("" if old == "serving" else "(")), old


def test_the_python_api_page_lists_every_old_name_with_its_replacement():
    page = (Path(__file__).resolve().parent.parent / "docs" / "python-api.md").read_text(encoding="utf-8")
    rows = {line for line in page.splitlines() if line.startswith("| `vault.")}
    for old, new in RENAMED.items():
        call = "" if old == "serving" else "()"
        assert any(row.startswith(f"| `vault.{old}{call}` | `vault.{new}{call}`") for row in rows), old
    assert "vault.conversations" in page and "not library API" in page
