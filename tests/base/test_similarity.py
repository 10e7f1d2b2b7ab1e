"""Similarity matrices never take the BLAS's self-product path, and are never used with inf/NaN
(issue 32: OpenBLAS's float32 SYRK returns inf/NaN or wrong values on Arm chips with SME)."""
from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from util import FakeEmbedder, write

from memkit import MemkitError, Vault
from memkit.base import similarity as sim
from memkit.base.similarity import similarities
from memkit.errors import NumericError
from memkit.frontends.cli.group import main

PACKAGE = Path(__file__).resolve().parents[2] / "memkit"


def rows(n: int = 40, d: int = 24, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.einsum("ik,jk->ij", a.astype(np.float64), b.astype(np.float64))  # numpy's own loops, no BLAS


@pytest.fixture
def products(monkeypatch):
    """Every product the helper hands the BLAS, as (left, right)."""
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    real = sim._matmul

    def spy(a, b):
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(sim, "_matmul", spy)
    return seen


def faulty_float32(a, b):
    """A BLAS like OpenBLAS's SME kernels: float32 products half NaN and inf, float64 right."""
    out = np.matmul(a, b)
    if out.dtype == np.float32:
        out = out.copy()
        out.flat[::2] = np.nan
        out.flat[1::4] = np.inf
    return out


def broken(a, b):
    return np.full((a.shape[0], b.shape[1]), np.nan, dtype=np.result_type(a, b))


def test_the_helper_never_hands_the_blas_one_buffer_twice(products):
    x = rows()
    got = similarities(x)
    np.testing.assert_allclose(got, reference(x, x), atol=1e-5)
    assert got.dtype == np.float32 and got.shape == (40, 40)
    c = x[3:6]  # a view of the same buffer, as k-means++ takes its seeds
    np.testing.assert_allclose(similarities(x, c), reference(x, c), atol=1e-5)
    assert len(products) == 2
    for a, b in products:
        assert not np.shares_memory(a, b)  # so numpy never takes its A @ A.T shortcut (SYRK)


def test_no_self_product_is_written_anywhere_in_memkit():
    """`X @ X.T` (or np.matmul(X, X.T), X.dot(X.T)) is SYRK: every similarity goes through the helper."""
    pattern = re.compile(r"(\b[\w.]+(?:\[[^\]]*\])?)\s*@\s*\1\.T\b|matmul\(\s*([\w.]+)\s*,\s*\2\.T\b|"
                         r"(\b[\w.]+)\.dot\(\s*\3\.T\b")
    found = [f"{p.name}:{n}: {line.strip()}" for p in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line.split("#")[0]) and p.name != "similarity.py"]
    assert not found, found
    for name in ("split/cluster.py", "digest/digest.py"):  # the two that computed X @ X.T (issue 32)
        code = "\n".join(line.split("#")[0] for line in (PACKAGE / name).read_text(encoding="utf-8").splitlines())
        assert re.search(r"@\s*[\w.\[\]]+\.T\b", code) is None, f"{name} computes a similarity matrix itself"


def test_a_faulty_float32_product_is_worked_out_again_in_float64(monkeypatch, caplog):
    monkeypatch.setattr(sim, "_matmul", faulty_float32)
    x = rows()
    with caplog.at_level(logging.WARNING, logger="memkit"):
        got = similarities(x)
    assert np.isfinite(got).all() and got.dtype == np.float32
    np.testing.assert_allclose(got, reference(x, x), atol=1e-5)
    assert "inf/NaN" in caplog.text and "float64" in caplog.text


def test_a_product_that_stays_wrong_or_wrong_vectors_are_refused(monkeypatch):
    x = rows()
    bad = x.copy()
    bad[2, 5] = np.nan
    with pytest.raises(NumericError, match="vectors hold inf or NaN"):
        similarities(bad)
    monkeypatch.setattr(sim, "_matmul", broken)
    with pytest.raises(NumericError, match="even in float64"):
        similarities(x)
    assert issubclass(NumericError, MemkitError)  # the CLI prints it as one line


# ---- the callers: a split recovers or refuses, a digest groups by words ---------------------------

THEMES = {
    "rice": ["bomba", "paella", "saffron", "sushi", "risotto", "arborio", "basmati", "steamed"],
    "bread": ["sourdough", "starter", "loaf", "flour", "oven", "crust", "yeast", "knead"],
    "kimchi": ["napa", "cabbage", "gochugaru", "ferment", "jar", "brine", "radish", "garlic"],
}


def themed_vault(tmp_path: Path) -> Vault:
    import random

    rng = random.Random(3)
    lines = [f"- Likes {t} with {' and '.join(rng.sample(w, 3))} (2026-02-{i % 28 + 1:02d})"
             for t, w in THEMES.items() for i in range(15)]
    rng.shuffle(lines)
    root = tmp_path / "v"
    Vault.init(root, profile=False)
    write(root / "topics" / "cooking.md", "# Cooking\n\n" + "\n".join(lines) + "\n")
    return Vault(root, embedder=FakeEmbedder())


def plan_of(vault: Vault) -> list[tuple[str, list[int]]]:
    from memkit.split.split import plan_split

    return [(p.name, [e.line for e in p.entries]) for p in plan_split(vault.searcher, "cooking").parts]


def test_a_split_with_a_faulty_float32_blas_plans_what_a_right_one_does(tmp_path, monkeypatch, products):
    vault = themed_vault(tmp_path)
    right = plan_of(vault)
    assert sorted(name for name, _ in right) == ["cooking-bread", "cooking-kimchi", "cooking-rice"]
    assert products and all(not np.shares_memory(a, b) for a, b in products)
    monkeypatch.setattr(sim, "_matmul", faulty_float32)
    assert plan_of(vault) == right


def test_a_split_with_a_broken_blas_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    vault = themed_vault(tmp_path)
    before = (vault.root / "topics" / "cooking.md").read_bytes()
    monkeypatch.setattr(sim, "_matmul", broken)
    got = CliRunner().invoke(main, ["--vault", str(vault.root), "split", "cooking"], obj={"vault_obj": vault})
    assert got.exit_code == 1, got.output
    assert "memkit: error:" in got.output and "inf/NaN" in got.output and "Traceback" not in got.output
    assert sorted(p.name for p in (vault.root / "topics").glob("*.md")) == ["cooking.md"]
    assert (vault.root / "topics" / "cooking.md").read_bytes() == before


def test_a_digest_groups_conclusions_by_words_when_the_blas_is_broken(tmp_path, monkeypatch, caplog):
    from memkit.digest.extract import Conclusion
    from memkit.digest.routing import together

    root = tmp_path / "v"
    Vault.init(root, profile=False)
    vault = Vault(root, embedder=FakeEmbedder())
    # close in meaning (the same short words) but no shared word of four letters: linked by vectors only
    texts = ["tea tea tea tea tea in a cup", "tea tea tea tea tea by the pot", "router firmware upgraded"]
    conclusions = [Conclusion(t, "fact") for t in texts]
    assert [c.text for c in together(vault.searcher, conclusions)] == texts[:2]
    monkeypatch.setattr(sim, "_matmul", faulty_float32)
    assert [c.text for c in together(vault.searcher, conclusions)] == texts[:2]  # recovered in float64
    monkeypatch.setattr(sim, "_matmul", broken)
    with caplog.at_level(logging.WARNING, logger="memkit"):
        alone = together(vault.searcher, conclusions)
    assert len(alone) == 1  # by shared words only: nothing links them
    assert "shared words only" in caplog.text
