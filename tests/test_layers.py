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
    assert "3 kept, 0 broken" in result.stdout


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


#: the only libraries a function may import (for what it alone needs), by top-level package
LAZY_IMPORTS = {
    "safetensors", "tokenizers", "huggingface_hub",  # loading the model: on its first use only
    "onnxruntime",  # the judge (the second search stage): loaded on the first judged search
    "mcp", "anyio",  # the optional mcp extra
    "starlette", "uvicorn", "h11",  # `memkit serve`'s web framework, server and its HTTP/1.1 parser (the mcp extra)
    "watchdog",  # the observers (threads, platform backends): `memkit watch` alone needs them
    "fcntl", "msvcrt",  # one platform's file locking
}


def _late_imports(tree: ast.AST):
    """(line, module) of every import inside a function, nested functions included (once each)."""
    seen = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, (ast.Import, ast.ImportFrom)) or node.lineno in seen:
                continue
            seen.add(node.lineno)
            if isinstance(node, ast.ImportFrom):
                yield node.lineno, "." * node.level + (node.module or "")
            else:
                for alias in node.names:
                    yield node.lineno, alias.name


#: memkit modules imported when they are used (issue 16.5: a command imports only what it uses).
#: The cli modules: the front end of a heavy library, imported by the one command that needs it.
#: vault.py: the facade's services, each imported by the methods that use it, so that `memkit search`
#: (or a library user's Vault.search) loads neither the digest and its LLM client (http.client,
#: ssl), the sessions, git's plumbing, capture nor the checks; the embedding server's client only
#: when memkit.yaml names one. Vault's core (store, index, search, route, the date helpers) stays at
#: the top. Nothing here is to dodge an import cycle: .importlinter checks these imports too.
LAZY_MODULES = {
    "cli_jobs.py": {".watch"}, "cli_vault.py": {".mcp_server"}, "cli_serve.py": {".http_api"},
    "cli_search.py": {".cli_session"},  # `search --sessions` prints as `memkit session search`: not a plain search
    "vault.py": {".check", ".context", ".proactive", ".schedule", ".digest", ".gitsync", ".llm", ".split", ".upkeep",
                 ".transcript", ".capture", ".sessions", ".session_format", ".session_window", ".session_io",
                 ".session_search", ".session_digest", ".http_embed"},
}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_imports_are_at_the_top(path):
    """A function-level import is for a heavy or optional library (LAZY_IMPORTS) or the memkit
    module of one command (LAZY_MODULES), never to dodge an import cycle and never for a module
    that is cheap anyway (json, inspect, numpy…)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = LAZY_MODULES.get(path.name, set())
    late = [(line, module) for line, module in _late_imports(tree) if module not in allowed and
            (module.startswith(".") or module.split(".")[0] not in LAZY_IMPORTS)]
    assert not late, f"{path.name}: imported inside a function: " + ", ".join(f"{m} (line {n})" for n, m in late)


def test_the_late_import_check_catches_them():
    code = ("import json\n"
            "def f():\n    import inspect\n    from . import store\n    from memkit import vault\n"
            "    import watchdog.observers\n"
            "    def g():\n        import numpy as np\n")
    found = [(n, m) for n, m in _late_imports(ast.parse(code))
             if m.startswith(".") or m.split(".")[0] not in LAZY_IMPORTS]
    assert found == [(3, "inspect"), (4, "."), (5, "memkit"), (8, "numpy")]


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


#: what a search never needs: the digest and its LLM client, the sessions, capture, git, the servers
NOT_FOR_SEARCH = ("memkit.digest", "memkit.digest_extract", "memkit.llm", "memkit.capture", "memkit.check",
                  "memkit.sessions", "memkit.session_io", "memkit.session_window", "memkit.session_digest",
                  "memkit.session_aging", "memkit.gitsync", "memkit.upkeep",
                  "memkit.schedule", "memkit.split", "memkit.mcp_server", "memkit.http_api", "memkit.http_routes",
                  "memkit.http_embed",
                  "memkit.watch", "memkit.cli_jobs", "memkit.cli_vault", "memkit.cli_memories", "memkit.cli_session",
                  "memkit.cli_serve", "http.client", "ssl",
                  "memkit.proactive")


def test_a_search_imports_only_what_it_uses(tmp_path):
    """Issue 16.5: `memkit search` imports the search command's module and the vault's core, not
    every service (the cold start is measured by bench/bench_cold.py)."""
    import subprocess
    import sys

    code = ("import sys, click; from memkit.cli import main\n"
            "import memkit\n"
            "assert set(memkit.__all__) <= set(dir(memkit))\n"
            "main.get_command(click.Context(main), 'search')\n"
            "from memkit import Vault\n"
            "v = Vault.init(sys.argv[1], profile=False)\n"
            "v.add('Prefers bomba rice for paella', topic='cooking')\n"
            "assert v.search('bomba', mode='lexical')\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith(('memkit', 'http', 'ssl')))))")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "v")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = set(out.stdout.split())
    assert "memkit.cli_search" in loaded and "memkit.vault" in loaded
    assert not loaded & set(NOT_FOR_SEARCH), sorted(loaded & set(NOT_FOR_SEARCH))


def test_every_public_name_still_imports():
    """memkit exports its names lazily (module __getattr__): each resolves, to the same object the
    module that defines it has."""
    import importlib

    import memkit
    from memkit import vault

    for name in memkit.__all__:
        assert getattr(memkit, name) is not None, name
    for name in vault.__all__:
        assert getattr(vault, name) is not None, name
    assert memkit.Vault is importlib.import_module("memkit.vault").Vault
    with pytest.raises(AttributeError):
        memkit.no_such_name  # noqa: B018
