"""The architecture holds: imports run one way, and no module uses another's private names."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memkit"
SOURCES = sorted(PACKAGE.glob("*.py"))


def test_layers_contract_is_kept():
    """import-linter reads every import of the package, those inside functions included."""
    import subprocess
    import sys

    import importlinter  # noqa: F401  (a test dependency: never skipped)
    config = PACKAGE.parent / ".importlinter"
    assert config.is_file(), "the layers contract (.importlinter) is missing"
    result = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--config", str(config)],
                            cwd=PACKAGE.parent, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def _private_uses(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield node.lineno, f"imports {alias.name} from {node.module}"
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.lineno, f"uses {ast.unparse(node)}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_private_names_of_other_objects(path):
    found = list(_private_uses(ast.parse(path.read_text(encoding="utf-8"))))
    assert not found, f"{path.name}: " + "; ".join(f"line {n} {what}" for n, what in found)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_memkit_modules_are_imported_at_the_top(path):
    """A function-level import is for a heavy optional library, never to dodge an import cycle."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    late = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("memkit")):
                    late.append(node.lineno)
                elif isinstance(node, ast.Import) and any(a.name.startswith("memkit") for a in node.names):
                    late.append(node.lineno)
    assert not late, f"{path.name}: memkit imported inside a function at line(s) {late}"


def test_importing_memkit_has_no_side_effects(monkeypatch):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    code = ("import os, sys, memkit, memkit.cli; "
            "print(sorted(k for k in ('OPENBLAS_NUM_THREADS','OMP_NUM_THREADS','MKL_NUM_THREADS') if k in os.environ)); "
            "print(sorted(m for m in ('watchdog', 'tokenizers', 'safetensors', 'huggingface_hub', 'model2vec') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "[]"]  # no environment changed, no heavy library loaded
