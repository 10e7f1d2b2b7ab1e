"""The architecture holds: imports run one way, and no module uses another's private names."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memkit"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


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
    assert "4 kept, 0 broken" in result.stdout


def _private_uses(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield node.lineno, f"imports {alias.name} from {node.module}"
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                yield node.lineno, f"uses {ast.unparse(node)}"


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_no_private_names_of_other_objects(path):
    found = list(_private_uses(ast.parse(path.read_text(encoding="utf-8"))))
    assert not found, f"{_name(path)}: " + "; ".join(f"line {n} {what}" for n, what in found)


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
    "frontends/cli/jobs.py": {"..watch"}, "frontends/cli/vault.py": {"..mcp"}, "frontends/cli/serve.py": {"..http"},
    "frontends/cli/search.py": {".session"},  # `search --sessions` prints as `memkit session search`: not a plain search
    "frontends/hook/warm.py": {"...vault"},  # the hook's cold path: a warm answer never loads the library
    "vault.py": {".context", ".digest", ".embeddings", ".formats.session", ".formats.transcript", ".git", ".llm",
                 ".sessions", ".split", ".upkeep"},
    # moved out of vault.py with the flows they serve (issue 28.2), lazy as they were there:
    "embeddings/choice.py": {".remote"},  # the embedding server's client (urllib, http.client): only for a server
    "memories/adding.py": {"..split"},  # the clustering: only when an add pushes a topic past the threshold
    "runtime/runtime.py": {"..llm"},  # the LLM client (http.client, ssl): only when a flow asks for one
    "sessions/conversations.py": {"..digest"},  # the digest and its LLM client: only when a conversation is digested
    # onnxruntime, imported the one way that turns its telemetry off (issue 41.16): as lazy as the
    # `import onnxruntime` each replaced (``from ..base.ort import onnxruntime as ort``)
    "embeddings/judge.py": {"..base.ort"}, "search/int8_scan.py": {"..base.ort"},
}


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_imports_are_at_the_top(path):
    """A function-level import is for a heavy or optional library (LAZY_IMPORTS) or the memkit
    module of one command (LAZY_MODULES), never to dodge an import cycle and never for a module
    that is cheap anyway (json, inspect, numpy…)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    allowed = LAZY_MODULES.get(_name(path), set())
    late = [(line, module) for line, module in _late_imports(tree) if module not in allowed and
            (module.startswith(".") or module.split(".")[0] not in LAZY_IMPORTS)]
    assert not late, f"{_name(path)}: imported inside a function: " + ", ".join(f"{m} (line {n})" for n, m in late)


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
    code = ("import os, sys, memkit, memkit.frontends.cli.group; "
            "print(sorted(k for k in ('OPENBLAS_NUM_THREADS','OMP_NUM_THREADS','MKL_NUM_THREADS') if k in os.environ)); "
            "print(sorted(m for m in ('watchdog', 'tokenizers', 'safetensors', 'huggingface_hub', 'model2vec') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "[]"]  # no environment changed, no heavy library loaded


#: what a search never needs: the digest and its LLM client, the sessions, capture, git, the servers
NOT_FOR_SEARCH = ("memkit.digest.digest", "memkit.digest.extract", "memkit.llm.client", "memkit.digest.captured", "memkit.upkeep.check",
                  "memkit.sessions.folder", "memkit.sessions.io", "memkit.sessions.budget", "memkit.sessions.live_digest",
                  "memkit.sessions.aging", "memkit.git.sync", "memkit.upkeep.upkeep",
                  "memkit.upkeep.schedule", "memkit.split.split", "memkit.frontends.mcp.server", "memkit.frontends.http.api", "memkit.frontends.http.routes",
                  "memkit.embeddings.remote",
                  "memkit.frontends.watch", "memkit.frontends.cli.jobs", "memkit.frontends.cli.vault", "memkit.frontends.cli.memories", "memkit.frontends.cli.session",
                  "memkit.frontends.cli.serve", "http.client", "ssl",
                  "memkit.context.nudge")


def test_a_search_imports_only_what_it_uses(tmp_path):
    """Issue 16.5: `memkit search` imports the search command's module and the vault's core, not
    every service (the cold start is measured by bench/bench_cold.py)."""
    import subprocess
    import sys

    code = ("import sys, click; from memkit.frontends.cli.group import main\n"
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
    assert "memkit.frontends.cli.search" in loaded and "memkit.vault" in loaded
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


#: the packages seen from outside through their face (__init__.py) alone; formats/ and base/ are
#: libraries of small modules, each module its own face
FACED = ("config", "store", "embeddings", "index", "search", "llm", "split", "digest", "memories", "sessions", "upkeep", "git",
         "context", "frontends.cli", "frontends.http", "frontends.mcp")


def _module_of(path: Path) -> list[str]:
    parts = ["memkit", *path.relative_to(PACKAGE).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _faced_package(parts: list[str]) -> str | None:
    dotted = ".".join(parts[1:])
    return next((p for p in FACED if dotted == p or dotted.startswith(p + ".")), None)


def _imports_behind_faces(path: Path):
    """(line, what) of each import, in ``path``, of a module inside another package's face."""
    here = _module_of(path)
    base = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            target = base[:len(base) - node.level + 1] + (node.module.split(".") if node.module else [])
        elif node.module and node.module.split(".")[0] == "memkit":
            target = node.module.split(".")
        else:
            continue
        package = _faced_package(target)
        if package and package != _faced_package(here) and ".".join(target[1:]) != package:
            yield node.lineno, ".".join(target)


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_outside_a_package_only_its_face_is_imported(path):
    found = list(_imports_behind_faces(path))
    assert not found, f"{_name(path)}: " + "; ".join(f"line {n} imports {m} (import it from its package)"
                                                  for n, m in found)


def test_the_face_check_catches_a_module_behind_a_face(tmp_path, monkeypatch):
    (tmp_path / "context").mkdir()
    (tmp_path / "context" / "block.py").write_text("from ..search.searcher import Hit\nfrom ..search import Searcher\n"
                                                  "from ..formats.topic import Entry\nfrom .nudge import proactive\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", tmp_path, raising=False)
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path
    try:
        assert list(_imports_behind_faces(tmp_path / "context" / "block.py")) == [(1, "memkit.search.searcher")]
    finally:
        PACKAGE = saved


@pytest.mark.parametrize("package", FACED)
def test_each_face_exports_what_it_declares(package):
    """A face's __all__, its type-checking imports and its lazy table name the same things; each
    resolves; none is also the name of a module of the package (a submodule would shadow it)."""
    import importlib

    folder = PACKAGE / package.replace(".", "/")
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    typed = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.If)
             for sub in node.body if isinstance(sub, ast.ImportFrom) for alias in sub.names}
    module = importlib.import_module("memkit." + package)
    assert set(module.__all__) == typed
    assert set(module.__all__) <= set(dir(module))
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    submodules = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
    assert not set(module.__all__) & submodules
    assert len(module.__all__) <= 20, "a face is a package's few entry points"


def test_no_shim_module_is_left():
    """Nothing was released before the reorganisation: no module keeps old paths or names alive."""
    import subprocess
    import sys

    names = {p.stem for p in PACKAGE.glob("*.py")}
    assert not names & {"moved", "vault_aliases", "vault_facts", "topic", "cli"}, names
    code = "import memkit, importlib\ntry:\n    importlib.import_module('memkit.topic')\nexcept ImportError:\n    print('gone')\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "gone", out.stderr[-2000:]


def _module_imports() -> dict[str, set[str]]:
    """memkit module -> the memkit modules it imports (type-checking imports included; a package's
    face is left out: it imports on use)."""
    faces = {".".join(p.parent.relative_to(PACKAGE.parent).parts) for p in PACKAGE.rglob("__init__.py")}
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        package = parts[:-1]
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package[:len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                found |= {target} | {f"{target}.{a.name}" for a in node.names}
        graph[name] = found
    return {m: {d for d in deps if d in graph and d != m and d not in faces} for m, deps in graph.items()}


def test_no_import_circle_between_modules():
    """Issue 43.3: no two modules import each other, even only for their types (``index.py`` and
    ``writer.py`` did: the writer now sees the index through its narrow ``Sink``)."""
    graph = _module_imports()

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()] - seen:
                if nxt == goal:
                    return True
                seen.add(nxt)
                todo.append(nxt)
        return False

    circles = sorted((m, d) for m, deps in graph.items() for d in deps if m < d and reaches(d, m))
    assert not circles, circles
