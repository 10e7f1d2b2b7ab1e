"""Issue 28.4: no attribute chains into another layer. Outside memkit/search and memkit/index, nothing
reaches through a searcher into its index (``searcher.index.view()``, ``searcher.index.embedder.embed``):
:class:`memkit.search.Searcher` has the small public methods they need (``view``, ``embed``,
``vectors_for``, ``reindex``, ``wrote``). Nor does a front end reach through the facade into the searcher
(``vault.searcher.fill_judge``): it has Vault's methods and ``vault.frontend_internals``."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memkit"
#: the layers that own the index: the searcher's own code and the index's
OWNERS = ("search", "index")
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] not in OWNERS)


def _ends_in_searcher(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lstrip("_").endswith("searcher")


def index_chains(tree: ast.AST):
    """(line, code) of each ``X.index.Y`` where X is not ``self``, and of each ``….searcher.index``."""
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == "index"):
            continue
        owner = node.value
        chained = any(isinstance(parent, ast.Attribute) and parent.value is node for parent in ast.walk(tree))
        if (chained and not (isinstance(owner, ast.Name) and owner.id == "self")) or _ends_in_searcher(owner):
            yield node.lineno, ast.unparse(node)


def test_the_chain_check_catches_them():
    code = ("def f(searcher, self_like):\n"
            "    a = searcher.index.view()\n"            # 2: a chain
            "    b = searcher.index.embedder.embed(x)\n"  # 3: a chain (reported once, at .index)
            "    index = searcher.index\n"               # 4: a searcher's index taken out
            "    c = self.vault.searcher.index\n"        # 5
            "    d = self.index.view()\n"                # own index: fine
            "    e = body.index(first)\n"                # str.index: fine
            "    g = self._searcher.index.refresh()\n")  # 8
    found = sorted({line for line, _ in index_chains(ast.parse(code))})
    assert found == [2, 3, 4, 5, 8]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_chain_into_a_searcher_s_index(path):
    found = sorted(set(index_chains(ast.parse(path.read_text(encoding="utf-8")))))
    assert not found, f"{path.relative_to(PACKAGE).as_posix()}: " + "; ".join(
        f"line {n}: {code} (give Searcher a method instead)" for n, code in found)


#: the front ends: they see a vault through its facade and its hooks (``vault.frontend_internals``)
FRONTENDS = sorted((PACKAGE / "frontends").rglob("*.py"))


def searcher_reaches(tree: ast.AST):
    """(line, code) of each ``X.searcher`` (``self.vault.searcher.fill_judge(…)``, ``vault._searcher``):
    a front end that reaches through the facade into the search layer."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.lstrip("_") == "searcher":
            yield node.lineno, ast.unparse(node)


def test_the_searcher_check_catches_them():
    code = ("def f(self, vault):\n"
            "    a = self.vault.searcher.fill_judge(index=i)\n"   # 2
            "    b = vault.searcher\n"                            # 3: taken out, to use later
            "    c = vault._searcher.view()\n"                    # 4
            "    d = self.vault.frontend_internals.fill_judge(i)\n"  # the hook: fine
            "    e = researcher.name\n")                          # another word: fine
    assert sorted({line for line, _ in searcher_reaches(ast.parse(code))}) == [2, 3, 4]


@pytest.mark.parametrize("path", FRONTENDS, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_front_end_reaches_into_the_searcher(path):
    found = sorted(set(searcher_reaches(ast.parse(path.read_text(encoding="utf-8")))))
    assert not found, f"{path.relative_to(PACKAGE).as_posix()}: " + "; ".join(
        f"line {n}: {code} (use a Vault method or vault.frontend_internals)" for n, code in found)
