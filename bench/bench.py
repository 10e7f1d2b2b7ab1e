#!/usr/bin/env python3
"""memkit benchmarks (`make bench`): index, search, cold CLI, memory, and baselines, on this machine.

For synthetic vaults of 1k, 10k and 100k entries (bench/synth.py, cached under bench/out/) it
measures, in one run, with medians (the machine may be shared and noisy, so compare the ratios):

1. full index throughput, ``Vault(path, model=M).index(full=True)``, 256-d and 64-d models;
2. re-index after editing one line of one file: with a fresh ``Vault`` (records read from disk)
   and in-process with the index already loaded;
3. one added entry: ``vault.add(...)`` then ``vault.index()``, per size (it must not grow);
4. warm in-process search p50/p95 over ~200 varied queries, ``vault.search(q, k=10,
   threshold=None)``, with its parts: query embedding, memkit's vector scoring alone, the ranker;
5. cold ``memkit search`` wall time (subprocess, 10k vault, 256-d model) and where it goes;
6. peak RSS of a process searching the 100k vault with the 256-d model;
7. baselines over the same vectors and queries: numpy brute force (one BLAS thread), ChromaDB
   (HNSW: approximate, so its recall@10 vs exact is reported) and sqlite-vec (vec0 KNN);
8. edit saved -> searchable with ``memkit watch`` running (when memkit/watch.py exists).

BLAS is pinned to one thread (OPENBLAS_NUM_THREADS=1 etc., set before numpy is imported, as the
memkit CLI does): a single query's matrix-vector product is faster without thread wake-ups.

The 256-d model is ../shared/models/m2v-minilm-256 (``--model256`` or MEMKIT_BENCH_MODEL to
change); without it the 256-d parts are skipped with a message. The 64-d model is the offline
``tokenlearn-static-model`` package. The table is printed and written to bench/RESULTS.md.

    python bench/bench.py                      # 1k, 10k, 100k (a few minutes)
    python bench/bench.py --quick              # 1k and 10k, fewer repeats
    python bench/bench.py --sizes 10k --no-baselines
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
             "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy is imported (here and in every subprocess)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # chromadb
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import synth  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.embed import OFFLINE_MODEL, load_embedder  # noqa: E402

DEFAULT_MODEL256 = os.environ.get("MEMKIT_BENCH_MODEL") or str(ROOT.parent / "shared" / "models" / "m2v-minilm-256")
RUN_DIR = HERE / "out" / "run"
RESULTS = HERE / "RESULTS.md"
K = 10

TARGETS = {  # key -> (label, target text, predicate on the measured value)
    "search10k": ("warm in-process search p50, 10k entries (256-d)", "≤ 0.3 ms", lambda v: v <= 0.3),
    "search100k": ("warm in-process search p50, 100k entries (256-d)", "≤ 3 ms", lambda v: v <= 3.0),
    "cold10k": ("cold `memkit search` wall time, 10k vault, 256-d", "≤ 0.35 s", lambda v: v <= 0.35),
    "index100k": ("full index throughput, 100k entries (256-d)", "≥ 10,000 entries/s", lambda v: v >= 10_000),
    "edit10k_fresh": ("re-index after a one-line edit, 10k (fresh Vault)", "≤ 50 ms", lambda v: v <= 50),
    "edit10k_warm": ("re-index after a one-line edit, 10k (index loaded)", "≤ 50 ms", lambda v: v <= 50),
    "watch": ("edit saved → searchable, `memkit watch` running (10k)", "≤ 1 s", lambda v: v <= 1.0),
    "rss100k": ("peak RSS searching 100k entries, 256-d", "≤ 200 MB", lambda v: v <= 200),
    "add100k": ("one added entry (add + index), 100k vault", "≤ 30 ms", lambda v: v <= 30),
}


# ---- small helpers ----------------------------------------------------------------------------

def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def p50(xs: list[float]) -> float:
    return float(np.median(xs)) if len(xs) else float("nan")


def p95(xs: list[float]) -> float:
    return float(np.percentile(xs, 95)) if len(xs) else float("nan")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def each(fn: Callable[[Any], Any], items: list[Any]) -> list[float]:
    """Seconds of ``fn(x)`` for each item."""
    out = []
    for x in items:
        t = time.perf_counter()
        fn(x)
        out.append(time.perf_counter() - t)
    return out


def ms(x: float | None, digits: int | None = None) -> str:
    if x is None or x != x:
        return "–"
    v = x * 1e3
    if digits is None:
        digits = 3 if v < 1 else 2 if v < 10 else 1 if v < 100 else 0
    return f"{v:,.{digits}f} ms"


def secs(x: float | None) -> str:
    return "–" if x is None or x != x else f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def ratio(a: float | None, b: float | None) -> str:
    if not a or not b or a != a or b != b:
        return "–"
    r = a / b
    return f"{r:.1f}×" if r < 100 else f"{r:,.0f}×"


def rss_mb() -> float:
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def machine() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GB"
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]  # type: ignore[index]
        blas_s = f"{blas.get('name')} {blas.get('version', '')}".strip()
    except Exception:
        blas_s = "?"
    versions = []
    for mod in ("model2vec", "tokenizers", "chromadb", "sqlite_vec"):
        try:
            from importlib.metadata import version

            versions.append(f"{mod} {version(mod.replace('_', '-'))}")
        except Exception:
            versions.append(f"{mod} (not installed)")
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "memkit"], capture_output=True,
                               text=True, timeout=5).stdout.strip()
        commit = (commit + (" + uncommitted changes in memkit/" if dirty else "")) or "?"
    except Exception:
        commit = "?"
    threads = ", ".join(f"{v}={os.environ.get(v)}" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
                        if os.environ.get(v))
    if os.environ.get("OPENBLAS_CORETYPE"):
        threads += f", OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}"
    try:
        load = "load average %.1f / %.1f / %.1f at start" % os.getloadavg()
    except OSError:
        load = ""
    return {
        "platform": platform.platform(),
        "cpu": f"{cpu} ({os.cpu_count()} cores, {usable} usable)",
        "memory": mem,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": f"{np.__version__} ({blas_s}; {threads})",
        "libraries": ", ".join(versions),
        "memkit": commit,
        "load": load,
    }


# ---- results ----------------------------------------------------------------------------------

@dataclass
class Results:
    sizes: list[str] = field(default_factory=list)
    rows: dict[str, dict[str, str]] = field(default_factory=dict)  # figure -> size -> text
    order: list[str] = field(default_factory=list)
    base_rows: dict[str, dict[str, str]] = field(default_factory=dict)
    base_order: list[str] = field(default_factory=list)
    single: list[tuple[str, str]] = field(default_factory=list)  # (figure, text) not per size
    values: dict[str, float] = field(default_factory=dict)  # target key -> measured
    notes: list[str] = field(default_factory=list)

    def put(self, figure: str, size: str, text: str, base: bool = False) -> None:
        rows, order = (self.base_rows, self.base_order) if base else (self.rows, self.order)
        if figure not in rows:
            rows[figure] = {}
            order.append(figure)
        rows[figure][size] = text

    def one(self, figure: str, text: str) -> None:
        self.single.append((figure, text))
        log(f"{figure}: {text}")


def _table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def render(res: Results, info: dict[str, str], args: argparse.Namespace, total_s: float) -> str:
    t_rows = []
    failed = []
    for key, (label, target, ok) in TARGETS.items():
        if key in res.values:
            v = res.values[key]
            good = ok(v)
            unit = {"search10k": "ms", "search100k": "ms", "cold10k": "s", "index100k": "entries/s",
                    "edit10k_fresh": "ms", "edit10k_warm": "ms", "watch": "s", "rss100k": "MB",
                    "add100k": "ms"}[key]
            text = f"{v:,.0f} {unit}" if unit == "entries/s" or v >= 100 else f"{v:.3g} {unit}"
            if key in ("search10k", "search100k") and f"numpy{key[6:]}" in res.values:
                base = res.values[f"numpy{key[6:]}"] * 1e3
                text += f" ({v / base:.1f}× this run's numpy exact scan, {base:.3g} ms)"
            t_rows.append([label, target, text, "✓" if good else "✗"])
            if not good:
                failed.append(label)
        else:
            why = res.rows.get("_skip", {}).get(key, "not measured in this run")
            t_rows.append([label, target, why, "–"])
    parts = [
        "# memkit benchmarks",
        "",
        f"`make bench` (bench/bench.py) on {time.strftime('%Y-%m-%d')}; whole run {total_s / 60:.1f} min. "
        "Medians; the machine is shared, so compare figures measured in the same run (the ratios).",
        "",
        "**Machine:** " + "; ".join(f"{k}: {v}" for k, v in info.items()),
        "",
        "## Targets (issue 3)",
        "",
        _table(["figure", "target", "measured", ""], t_rows),
        "",
        "## Per vault size",
        "",
        _table(["figure", *res.sizes], [[f, *[res.rows[f].get(s, "–") for s in res.sizes]] for f in res.order]),
    ]
    if res.base_order:
        parts += [
            "",
            "## Baselines: the same vectors (256-d) and queries, top-10",
            "",
            "Ratios are baseline ÷ memkit (above 1×: memkit is faster). memkit's *vector part* is "
            "`Ranker.vector_scores` + top-k over the in-memory matrix (no query embedding), the "
            "like-for-like comparison; memkit's *warm search* is the whole hybrid `vault.search` "
            "including the query embedding.",
            "",
            _table(["figure", *res.sizes], [[f, *[res.base_rows[f].get(s, "–") for s in res.sizes]]
                                            for f in res.base_order]),
        ]
    if res.single:
        parts += ["", "## Cold start, memory, watcher", "", _table(["figure", "measured"], [list(x) for x in res.single])]
    if res.notes:
        parts += ["", "## Notes", ""] + [f"- {n}" for n in res.notes]
    parts += ["", f"Command: `{' '.join(['python bench/bench.py', *args.argv])}`", ""]
    return "\n".join(parts)


# ---- the vault operations measured ------------------------------------------------------------

_EDIT_COUNTER = [0]


def edit_one_line(root: Path, rng: np.random.Generator) -> tuple[Path, str]:
    """Change one word of one entry line of one topic file, as a person would in an editor.

    Returns (file, a token now only in that line)."""
    files = sorted((root / "topics").glob("*.md"))
    path = files[int(rng.integers(len(files)))]
    lines = path.read_text(encoding="utf-8").split("\n")
    cand = [i for i, line in enumerate(lines) if line.startswith("- ")]
    i = cand[int(rng.integers(len(cand)))]
    _EDIT_COUNTER[0] += 1
    token = f"zqedit{_EDIT_COUNTER[0]}x{int(rng.integers(1_000_000))}"
    words = lines[i].split(" ")
    j = 2 if len(words) > 3 else 1
    words[j] = token
    lines[i] = " ".join(words)
    tmp = path.with_name(f".{path.name}.bench-tmp")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    os.replace(tmp, path)  # write-temp-then-rename, as most editors save
    return path, token


def search_all(vault: Vault, queries: list[str]) -> list[float]:
    return each(lambda q: vault.search(q, k=K, threshold=None), queries)


def topk_exact(matrix: np.ndarray, q: np.ndarray, k: int = K) -> np.ndarray:
    s = matrix @ q
    top = np.argpartition(-s, k - 1)[:k] if s.shape[0] > k else np.arange(s.shape[0])
    return top[np.argsort(-s[top])]


# ---- baselines ----------------------------------------------------------------------------------

def bench_chroma(matrix: np.ndarray, qvecs: np.ndarray, exact: list[set[int]], name: str) -> dict[str, Any]:
    import logging

    logging.getLogger("chromadb").setLevel(logging.ERROR)
    t_import, chromadb = timed(lambda: __import__("chromadb"))
    from chromadb.config import Settings

    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    col = client.create_collection(f"bench-{name}", metadata={"hnsw:space": "cosine"})
    batch = client.get_max_batch_size()
    ids = [str(i) for i in range(matrix.shape[0])]

    def build() -> None:
        for s in range(0, matrix.shape[0], batch):
            col.add(ids=ids[s:s + batch], embeddings=matrix[s:s + batch])

    t_build, _ = timed(build)
    results: list[list[int]] = []

    def query(q: np.ndarray) -> None:
        r = col.query(query_embeddings=[q], n_results=K, include=["distances"])
        results.append([int(x) for x in r["ids"][0]])

    query(qvecs[0])
    results.clear()
    times = each(query, list(qvecs))
    recall = float(np.mean([len(set(r) & e) / max(1, len(e)) for r, e in zip(results, exact)]))
    try:
        client.delete_collection(f"bench-{name}")
    except Exception:
        pass
    return {"import": t_import, "build": t_build, "p50": p50(times), "recall": recall}


def sqlite_connect() -> tuple[Any, str]:
    """A connection that can load sqlite-vec: the stdlib sqlite3 when built with extension
    loading, else apsw or pysqlite3 when installed."""
    import sqlite_vec

    import sqlite3

    db = sqlite3.connect(":memory:")
    if hasattr(db, "enable_load_extension"):
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        return db, "sqlite3"
    try:
        import apsw

        adb = apsw.Connection(":memory:")
        adb.enable_load_extension(True)
        adb.load_extension(sqlite_vec.loadable_path())
        return adb, "apsw"
    except ImportError:
        pass
    try:
        import pysqlite3  # type: ignore[import-not-found]

        pdb = pysqlite3.connect(":memory:")
        pdb.enable_load_extension(True)
        sqlite_vec.load(pdb)
        return pdb, "pysqlite3"
    except ImportError:
        raise RuntimeError("this Python's sqlite3 cannot load extensions (built without "
                           "--enable-loadable-sqlite-extensions): pip install apsw") from None


def bench_sqlite_vec(matrix: np.ndarray, qvecs: np.ndarray, exact: list[set[int]], max_queries: int) -> dict[str, Any]:
    db, driver = sqlite_connect()
    dim = matrix.shape[1]
    db.execute(f"create virtual table vecs using vec0(embedding float[{dim}] distance_metric=cosine)")

    def build() -> None:
        db.execute("begin")
        db.executemany("insert into vecs(rowid, embedding) values (?, ?)",
                       ((i, matrix[i].tobytes()) for i in range(matrix.shape[0])))
        db.execute("commit")

    t_build, _ = timed(build)
    sql = "select rowid, distance from vecs where embedding match ? and k = ?"
    results: list[list[int]] = []

    def query(q: np.ndarray) -> None:
        results.append([int(r[0]) for r in db.execute(sql, (np.ascontiguousarray(q, np.float32).tobytes(), K))])

    query(qvecs[0])
    results.clear()
    qs = list(qvecs[:max_queries])
    times = each(query, qs)
    recall = float(np.mean([len(set(r) & e) / max(1, len(e)) for r, e in zip(results, exact)]))
    db.close()
    return {"driver": driver, "build": t_build, "p50": p50(times), "recall": recall, "queries": len(qs)}


# ---- subprocess measurements --------------------------------------------------------------------

STAGES_SCRIPT = r"""
import os, sys, time, json
t0 = time.perf_counter()
import numpy
t1 = time.perf_counter()
import memkit.cli
from memkit.vault import Vault
t2 = time.perf_counter()
v = Vault(sys.argv[1], model=sys.argv[2])
v.embedder
t3 = time.perf_counter()
idx = v.index_obj(); idx.load()
t4 = time.perf_counter()
stale = idx.is_stale()
t5 = time.perf_counter()
idx.view()
t6 = time.perf_counter()
v.search(sys.argv[3], k=10, threshold=None)
t7 = time.perf_counter()
print(json.dumps({"numpy": t1 - t0, "memkit_cli": t2 - t1, "model": t3 - t2, "records": t4 - t3,
                  "stale_check": t5 - t4, "view": t6 - t5, "query": t7 - t6, "stale": stale}))
"""

RSS_SCRIPT = r"""
import os, sys, json
def st():
    d = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS:", "VmHWM:")):
            d[line.split(":")[0]] = int(line.split()[1]) / 1024
    return d
out = {"python": st()}
import numpy
from memkit import Vault
out["imports"] = st()
v = Vault(sys.argv[1], model=sys.argv[2])
v.embedder
out["model"] = st()
idx = v.index_obj(); idx.load()
out["records"] = st()
idx.view()
out["view"] = st()
for q in json.loads(sys.argv[3]):
    v.search(q, k=10, threshold=None)
out["searches"] = st()
print(json.dumps(out))
"""


def run_py(code: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> tuple[float, str]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=timeout)
    dt = time.perf_counter() - t
    if p.returncode != 0:
        raise RuntimeError(f"subprocess failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    return dt, p.stdout


def memkit_cmd() -> list[str]:
    script = Path(sys.executable).parent / "memkit"
    return [str(script)] if script.exists() else [sys.executable, "-m", "memkit"]


def cold_cli(res: Results, root: Path, model: str, queries: list[str], runs: int) -> None:
    env = dict(os.environ, MEMKIT_MODEL=model, HF_HUB_OFFLINE="1")
    env.pop("MEMKIT_VAULT", None)
    cmd = memkit_cmd() + ["--vault", str(root), "search"]
    first = subprocess.run(cmd + [queries[0], "-k", "10"], capture_output=True, text=True, env=env, timeout=600)
    if first.returncode != 0:
        raise RuntimeError(f"memkit search failed: {first.stderr.strip()[-500:]}")
    walls = []
    for i in range(runs):
        t = time.perf_counter()
        p = subprocess.run(cmd + [queries[1 + i % (len(queries) - 1)], "-k", "10"], capture_output=True, text=True,
                           env=env, timeout=600)
        walls.append(time.perf_counter() - t)
        if p.returncode != 0:
            raise RuntimeError(f"memkit search failed: {p.stderr.strip()[-500:]}")
    cold = p50(walls)
    res.values["cold10k"] = cold
    res.one("cold `memkit search` wall, 10k vault, 256-d model (median of "
            f"{runs}, min {min(walls):.3f} s)", secs(cold))
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # this environment forbids .pyc files, so every process above compiled memkit's sources;
        # an installed package has them (pip compiles at install): measure that too (cache in RUN_DIR)
        env_pyc = dict(env, PYTHONPYCACHEPREFIX=str(RUN_DIR / "pycache"))
        env_pyc.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(cmd + [queries[0], "-k", "10"], capture_output=True, text=True, env=env_pyc, timeout=600)
        walls_pyc = []
        for i in range(runs):
            t = time.perf_counter()
            subprocess.run(cmd + [queries[1 + i % (len(queries) - 1)], "-k", "10"], capture_output=True, text=True,
                           env=env_pyc, timeout=600, check=True)
            walls_pyc.append(time.perf_counter() - t)
        res.one("└ the same with bytecode cached, as an installed package (this environment sets "
                "PYTHONDONTWRITEBYTECODE=1: the figure above compiles memkit's sources in every process)",
                secs(p50(walls_pyc)))
    bare = p50([run_py("pass")[0] for _ in range(runs)])
    imp_np = p50([run_py("import numpy")[0] for _ in range(runs)])
    imp_cli = p50([run_py("import memkit.cli")[0] for _ in range(runs)])
    res.one("└ `python -c pass` / `-c 'import numpy'` / `-c 'import memkit.cli'` (wall)",
            f"{secs(bare)} / {secs(imp_np)} / {secs(imp_cli)}")
    stages: dict[str, list[float]] = {}
    for i in range(runs):
        _, out = run_py(STAGES_SCRIPT, str(root), model, queries[1 + i % (len(queries) - 1)], env=env)
        for k, v in json.loads(out).items():
            if k != "stale":
                stages.setdefault(k, []).append(v)
    st = {k: p50(v) for k, v in stages.items()}
    res.one("└ in a fresh process: import numpy / + import memkit.cli / model load / read index records "
            "/ stale check / build search view (ranker) / first query",
            " / ".join(ms(st[k], 0) for k in ("numpy", "memkit_cli", "model", "records", "stale_check", "view",
                                               "query")))
    res.notes.append(
        f"Cold CLI breakdown (medians of {runs} fresh processes): interpreter start {ms(bare, 0)}, "
        f"numpy import {ms(st['numpy'], 0)}, memkit.cli import {ms(st['memkit_cli'], 0)}, 256-d model load "
        f"{ms(st['model'], 0)}, reading the sidecar records {ms(st['records'], 0)}, stale check "
        f"{ms(st['stale_check'], 0)}, building the search view (BM25 + ranker) {ms(st['view'], 0)}, "
        f"the query itself {ms(st['query'], 0)}.")


def peak_rss(res: Results, root: Path, model: str, label: str, queries: list[str]) -> None:
    _, out = run_py(RSS_SCRIPT, str(root), model, json.dumps(queries), timeout=600)
    d = json.loads(out)
    peak = d["searches"]["VmHWM"]  # not ru_maxrss: Linux carries it over from the forked parent
    res.values[f"rss{label}"] = peak
    res.one(f"peak RSS (VmHWM) of a process searching the {label} vault, 256-d model (snapshot current)", f"{peak:,.0f} MB")
    res.one(f"└ RSS after: python / imports / model load / records read / search view built / {len(queries)} searches",
            " / ".join(f"{d[k]['VmRSS']:,.0f}" for k in ("python", "imports", "model", "records", "view", "searches"))
            + " MB")


def model64_rss(res: Results) -> None:
    code = (RSS_SCRIPT.split("out = {")[0] + "import time\nt = time.perf_counter()\n"
            "from memkit.embed import load_embedder\nload_embedder(sys.argv[1])\n"
            "print(json.dumps({'s': time.perf_counter() - t, **st()}))\n")
    _, out = run_py(code, OFFLINE_MODEL)
    d = json.loads(out)
    res.one("64-d offline model alone in a fresh process: load time / peak RSS", f"{secs(d['s'])} / {d['VmHWM']:,.0f} MB")


# ---- watcher ----------------------------------------------------------------------------------

def bench_watch(res: Results, root: Path, model: str, reps: int) -> None:
    try:
        from memkit.watch import Watcher  # type: ignore[import-not-found]
    except ImportError:
        res.one("edit saved → searchable, `memkit watch` running", "n/a (watch not built yet)")
        res.rows.setdefault("_skip", {})["watch"] = "n/a (watch not built yet)"
        return
    from memkit.index import Index

    vault = Vault(root, model=model)
    watch_reader = Index(Vault(root, model=model, embedder=vault.embedder), vault.embedder)
    rng = np.random.default_rng(7)
    lat = []
    with Watcher(vault):
        time.sleep(1.0)  # let the observer start
        for _ in range(reps):
            path, token = edit_one_line(root, rng)
            t0 = time.perf_counter()
            # the sidecar on disk is current again when a reader reloading it sees nothing stale
            while time.perf_counter() - t0 < 10:
                watch_reader.load()
                if not watch_reader.is_stale():
                    break
                time.sleep(0.005)
            else:
                raise RuntimeError("the watcher did not index the edit within 10 s")
            lat.append(time.perf_counter() - t0)
            time.sleep(0.3)
    # a fresh reader finds the edit without indexing anything itself
    reader = Vault(root, model=model)
    idx = reader.index_obj()
    idx.load()
    found = any(token in h.text for h in reader.search(token, k=3, threshold=None, refresh=False))
    res.values["watch"] = p50(lat)
    res.one(f"edit saved → sidecar record current, `memkit watch` running, 10k (median of {reps})",
            f"{secs(p50(lat))} (max {secs(max(lat))}; a fresh reader finds it without indexing: {'yes' if found else 'NO'})")


# ---- one vault size -----------------------------------------------------------------------------

def bench_size(res: Results, n: int, args: argparse.Namespace, queries: list[str], model256: str | None) -> None:
    label = synth.size_label(n)
    res.sizes.append(label)
    t, src = timed(lambda: synth.generate(n, quiet=False))
    root = synth.working_copy(n, RUN_DIR / f"vault-{label}")
    log(f"{label}: vault {root} ready ({t:.1f} s)")
    reps = args.reps if n < 100_000 else max(3, args.reps - 2)

    # -- 64-d offline model: full index and warm search --------------------------------------
    if args.model64:
        try:
            emb64 = load_embedder(OFFLINE_MODEL, allow_fallback=False)
        except Exception as exc:  # noqa: BLE001
            log(f"64-d model unavailable: {exc}")
            args.model64 = False
            res.notes.append(f"64-d offline model skipped: {exc}")
        else:
            v64 = Vault(root, model=OFFLINE_MODEL, embedder=emb64)
            dt, rep = timed(lambda: v64.index(full=True))
            res.put("full index, 64-d model (entries/s)", label, f"{n / dt:,.0f}/s ({secs(dt)})")
            log(f"{label}: 64-d full index {n / dt:,.0f} entries/s")
            for q in queries[:10]:
                v64.search(q, k=K, threshold=None)
            t64 = search_all(v64, queries)
            res.put("warm search p50 / p95, 64-d", label, f"{ms(p50(t64))} / {ms(p95(t64))}")
            del v64
            gc.collect()

    if not model256:
        return

    # -- 256-d: full index ------------------------------------------------------------------
    emb = load_embedder(model256)
    vault = Vault(root, model=model256, embedder=emb)
    dt, rep = timed(lambda: vault.index(full=True))
    res.put("full index, 256-d model (entries/s)", label, f"{n / dt:,.0f}/s ({secs(dt)})")
    if n == 100_000:
        res.values["index100k"] = n / dt
    log(f"{label}: 256-d full index {n / dt:,.0f} entries/s ({rep.summary()})")
    index = vault.index_obj()
    texts = [t for r in index.records.values() for t in r.texts]
    from memkit.index import EMBED_BATCH, _body

    bodies = [_body(t) for t in texts]
    de, _ = timed(lambda: [emb.embed(bodies[s:s + EMBED_BATCH]) for s in range(0, len(bodies), EMBED_BATCH)])
    res.put("└ of which model2vec embedding alone (entries/s)", label, f"{n / de:,.0f}/s ({secs(de)})")
    del texts, bodies

    # -- warm search ------------------------------------------------------------------------
    t_view, _ = timed(lambda: vault.search(queries[0], k=K, threshold=None))
    res.put("first search after indexing (builds the in-memory view)", label, ms(t_view))
    for q in queries[:20]:
        vault.search(q, k=K, threshold=None)
    times = search_all(vault, queries)
    res.put(f"warm search p50 / p95, 256-d ({len(queries)} queries, k={K})", label, f"{ms(p50(times))} / {ms(p95(times))}")
    if n in (10_000, 100_000):
        res.values[f"search{label}"] = p50(times) * 1e3
    view = index.view()
    ranker = view.ranker
    qvecs = emb.embed(queries)
    t_embed = each(lambda q: emb.embed([q]), queries)
    t_rank = each(lambda i: ranker.search(queries[i], qvecs[i], k=K, threshold=None), list(range(len(queries))))

    def vector_part(q: np.ndarray) -> np.ndarray:
        _, _, vec = ranker.vector_scores(q)
        top = np.argpartition(-vec, K - 1)[:K] if vec.shape[0] > K else np.arange(vec.shape[0])
        return top[np.argsort(-vec[top])]

    t_vec = each(vector_part, list(qvecs))
    t_lex = each(ranker.lex.scores, queries)
    res.put("└ query embedding p50", label, ms(p50(t_embed)))
    res.put("└ Ranker.search (hybrid, vector given) p50", label, ms(p50(t_rank)))
    res.put("└ of which BM25 scores p50", label, ms(p50(t_lex)))
    res.put("└ memkit vector part p50 (Ranker.vector_scores + top-k)", label, ms(p50(t_vec)))
    log(f"{label}: warm search p50 {ms(p50(times))} p95 {ms(p95(times))}; embed {ms(p50(t_embed))}, "
        f"ranker {ms(p50(t_rank))}, bm25 {ms(p50(t_lex))}, vector part {ms(p50(t_vec))}")

    # -- baselines over the same vectors ------------------------------------------------------
    if args.baselines:
        matrix = np.ascontiguousarray(view.vectors, dtype=np.float32)
        exact_lists = [topk_exact(matrix, q) for q in qvecs]
        exact = [set(int(i) for i in e) for e in exact_lists]
        t_np = each(lambda q: topk_exact(matrix, q), list(qvecs))
        vp, ws = p50(t_vec), p50(times)
        res.values[f"numpy{label}"] = p50(t_np)
        res.put("numpy brute force p50 (f32 M @ q + argpartition, 1 BLAS thread)", label,
                f"{ms(p50(t_np))} ({ratio(p50(t_np), ws)} / {ratio(p50(t_np), vp)})", base=True)
        vec_hits = [set(vector_part(q).tolist()) for q in qvecs]
        res.put("memkit vector part: overlap of its top-10 with the exact cosine top-10", label,
                f"{np.mean([len(a & b) / K for a, b in zip(vec_hits, exact)]):.2f} (it adds context cosines, by design)",
                base=True)
        if args.chroma:
            try:
                c = bench_chroma(matrix, qvecs, exact, label)
                res.put("ChromaDB in-memory (HNSW, cosine): build", label, secs(c["build"]), base=True)
                res.put("ChromaDB query p50 (× memkit warm search / × memkit vector part)", label,
                        f"{ms(c['p50'])} ({ratio(c['p50'], ws)} / {ratio(c['p50'], vp)})", base=True)
                res.put("ChromaDB recall@10 vs exact", label, f"{c['recall']:.3f}", base=True)
                log(f"{label}: chroma build {c['build']:.1f} s, p50 {ms(c['p50'])}, recall {c['recall']:.3f}")
                if "chroma_import" not in res.values:
                    res.values["chroma_import"] = c["import"]
            except Exception as exc:  # noqa: BLE001
                res.put("ChromaDB query p50 (× memkit warm search / × memkit vector part)", label,
                        f"failed: {type(exc).__name__}: {exc}"[:120], base=True)
        if args.sqlite:
            try:
                s = bench_sqlite_vec(matrix, qvecs, exact, args.sqlite_queries if n >= 100_000 else len(qvecs))
                res.put("sqlite-vec vec0 (exact KNN): build", label, secs(s["build"]), base=True)
                res.put("sqlite-vec KNN p50 (× memkit warm search / × memkit vector part)", label,
                        f"{ms(s['p50'])} ({ratio(s['p50'], ws)} / {ratio(s['p50'], vp)})", base=True)
                res.put("sqlite-vec recall@10 vs exact", label, f"{s['recall']:.3f} ({s['queries']} queries)", base=True)
                log(f"{label}: sqlite-vec build {s['build']:.1f} s, p50 {ms(s['p50'])} via {s['driver']}")
                if s["driver"] != "sqlite3":
                    note = (f"sqlite-vec is loaded through {s['driver']}: this Python's sqlite3 module cannot load "
                            "extensions.")
                    if note not in res.notes:
                        res.notes.append(note)
            except Exception as exc:  # noqa: BLE001
                res.put("sqlite-vec KNN p50 (× memkit warm search / × memkit vector part)", label,
                        f"skipped: {exc}"[:160], base=True)
        del matrix

    # -- re-index after editing one line ----------------------------------------------------
    rng = np.random.default_rng(n)
    warm, fresh, new_counts = [], [], []
    for _ in range(reps):  # in-process, index already loaded
        edit_one_line(root, rng)
        dt, rep = timed(lambda: vault.index())
        warm.append(dt)
        new_counts.append(rep.new)
    for _ in range(reps):  # a new Vault (model already loaded): records come from disk
        edit_one_line(root, rng)
        v2 = Vault(root, model=model256, embedder=emb)
        dt, rep = timed(lambda: v2.index())
        fresh.append(dt)
        new_counts.append(rep.new)
        del v2
    res.put("re-index after a one-line edit, fresh Vault", label, ms(p50(fresh)))
    res.put("re-index after a one-line edit, index loaded", label,
            ms(p50(warm)) + ("" if set(new_counts) == {1} else f" (re-embedded {sorted(set(new_counts))})"))
    if n == 10_000:
        res.values["edit10k_fresh"] = p50(fresh) * 1e3
        res.values["edit10k_warm"] = p50(warm) * 1e3
    log(f"{label}: edit re-index fresh {ms(p50(fresh))}, loaded {ms(p50(warm))}")

    # -- one added entry --------------------------------------------------------------------
    # topics below the split threshold: an add to a fuller topic also splits it (another figure)
    limit = vault.config.topic_split_threshold_lines - reps - 1
    topics = [p.stem for p in sorted((root / "topics").glob("*.md"))
              if sum(1 for line in p.read_text(encoding="utf-8").split("\n") if line.startswith("- ")) < limit]
    t_add, t_idx, t_first = [], [], []
    for i in range(reps):
        token = f"QX{n}-{i}-{int(rng.integers(1_000_000))}"
        topic = topics[int(rng.integers(len(topics)))]
        dt_a, _ = timed(lambda: vault.add(f"Bought a spare {token} power supply for the workshop bench",
                                          topic=topic, kind="event"))
        dt_i, rep = timed(lambda: vault.index())
        dt_s, hits = timed(lambda: vault.search(token, k=3, threshold=None, refresh=False))
        t_add.append(dt_a)
        t_idx.append(dt_i)
        t_first.append(dt_s)
        if not any(token in h.text for h in hits):
            res.notes.append(f"{label}: an added entry was not found by the next search")
    total = [a + b for a, b in zip(t_add, t_idx)]
    res.put("one added entry: vault.add + vault.index", label,
            f"{ms(p50(total))} ({ms(p50(t_add))} + {ms(p50(t_idx))})")
    res.put("└ then the first search (rebuilds the in-memory view)", label, ms(p50(t_first)))
    if n == 100_000:
        res.values["add100k"] = p50(total) * 1e3
    log(f"{label}: add {ms(p50(t_add))} + index {ms(p50(t_idx))}; next search {ms(p50(t_first))}")

    del vault, index, view, ranker
    gc.collect()

    # -- process-level figures ----------------------------------------------------------------
    if n == 10_000:
        try:
            cold_cli(res, root, model256, queries, args.cli_runs)
        except Exception as exc:  # noqa: BLE001
            res.one("cold `memkit search` wall, 10k vault, 256-d model", f"failed: {exc}"[:200])
        try:
            bench_watch(res, root, model256, reps=5)
        except Exception as exc:  # noqa: BLE001
            res.one("edit saved → searchable, `memkit watch` running", f"failed: {type(exc).__name__}: {exc}"[:200])
    if n == args.rss_size:
        try:  # the adds above left the snapshot behind (a big vault's add does not rewrite it)
            _, out = run_py(RSS_SCRIPT, str(root), model256, json.dumps(queries[:20]), timeout=600)
            d = json.loads(out)
            res.one(f"peak RSS searching the {label} vault with the snapshot stale (after the adds above; view built from records)",
                    f"{d['searches']['VmHWM']:,.0f} MB")
        except Exception as exc:  # noqa: BLE001
            res.one(f"peak RSS searching the {label} vault, stale snapshot", f"failed: {exc}"[:200])
        try:  # `memkit index` with nothing to index (the watcher's idle rescan does the same) catches it up
            env = dict(os.environ, MEMKIT_MODEL=model256, HF_HUB_OFFLINE="1")
            env.pop("MEMKIT_VAULT", None)
            t = time.perf_counter()
            subprocess.run(memkit_cmd() + ["--vault", str(root), "index"], capture_output=True, text=True,
                           env=env, timeout=600, check=True)
            res.one(f"`memkit index` with nothing to index, {label} (writes the snapshot + ranker state)",
                    secs(time.perf_counter() - t))
            peak_rss(res, root, model256, label, queries[:20])
            res.notes.append(
                "Index snapshot (memkit/index.py): a new process maps one vectors.npy and loads the saved "
                "ranker state instead of reading every record and rebuilding BM25. Up to 20k entries every "
                "index write refreshes it; above, one added entry does not rewrite it (the add stays O(files)), "
                "so readers fall back to building the view from the records until `memkit index` (nothing to "
                "index) or the watcher's idle rescan catches it up: the RSS table shows both cases. With a "
                "current snapshot the rest of the peak is the mapped matrix (~100 MB at 100k x 256-d, touched "
                "by every exact scan) plus the ranker's own arrays.")
        except Exception as exc:  # noqa: BLE001
            res.one(f"peak RSS searching the {label} vault", f"failed: {exc}"[:200])


# ---- main ---------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description="memkit benchmarks (see the module docstring)")
    ap.add_argument("--sizes", default="1k,10k,100k", help="vault sizes, comma-separated (default 1k,10k,100k)")
    ap.add_argument("--quick", action="store_true", help="1k and 10k only, fewer repeats, no ChromaDB")
    ap.add_argument("--queries", type=int, default=200, help="queries per size (default 200)")
    ap.add_argument("--reps", type=int, default=5, help="repeats of the edit / add measurements (default 5)")
    ap.add_argument("--cli-runs", type=int, default=5, help="cold CLI runs (default 5)")
    ap.add_argument("--model256", default=DEFAULT_MODEL256, help="the 256-d model folder")
    ap.add_argument("--no-64", dest="model64", action="store_false", help="skip the 64-d offline model")
    ap.add_argument("--no-baselines", dest="baselines", action="store_false", help="skip numpy/chroma/sqlite-vec")
    ap.add_argument("--no-chroma", dest="chroma", action="store_false", help="skip ChromaDB")
    ap.add_argument("--no-sqlite", dest="sqlite", action="store_false", help="skip sqlite-vec")
    ap.add_argument("--sqlite-queries", type=int, default=50, help="sqlite-vec queries at >= 100k (default 50)")
    ap.add_argument("--output", default=str(RESULTS), help="where to write the table (default bench/RESULTS.md)")
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args(argv)
    args.argv = argv
    if args.quick:
        if "--sizes" not in " ".join(argv):
            args.sizes = "1k,10k"
        args.reps = min(args.reps, 3)
        args.cli_runs = min(args.cli_runs, 3)
        args.queries = min(args.queries, 100)
        args.chroma = False
    sizes = sorted({synth.parse_size(s) for s in args.sizes.split(",") if s.strip()})
    args.rss_size = 100_000 if 100_000 in sizes else max(sizes)
    started = time.perf_counter()
    info = machine()
    for k, v in info.items():
        log(f"{k}: {v}")

    model256: str | None = args.model256
    res = Results()
    if not (Path(model256) / "model.safetensors").is_file():
        msg = f"256-d model folder {model256} not found: 256-d parts skipped (set --model256 or MEMKIT_BENCH_MODEL)"
        log(msg)
        res.notes.append(msg)
        for key in TARGETS:
            if key != "watch":
                res.rows.setdefault("_skip", {})[key] = "skipped (no 256-d model)"
        model256 = None
    else:
        dt, _ = timed(lambda: load_embedder(model256))
        res.notes.append(f"256-d model: {model256} (loaded in-process in {secs(dt)}); 64-d: {OFFLINE_MODEL}.")
    queries = synth.make_queries(args.queries)
    res.notes.append(f"{len(queries)} queries made by bench/synth.py (keyword paraphrases of entries, rare part "
                     "numbers, topic themes, free questions, one-word and pasted-paragraph queries); each "
                     "latency is one query at a time, k=10, threshold=None, after a warm-up.")
    res.notes.append(f"Edit and add figures are medians of {args.reps} repeats ({max(3, args.reps - 2)} at 100k "
                     "and above), each on a different topic file. 'fresh Vault' is a new Vault object (the model "
                     "already loaded, the records read from disk), as in a new `memkit index` process; 'index "
                     "loaded' reuses the Vault that just searched. Entries are added to topics below "
                     "topic_split_threshold_lines, so no add triggers the automatic split.")
    res.notes.append("BLAS pinned to one thread (OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1, "
                     "set before numpy is imported), in this process and its subprocesses, like the memkit CLI.")
    if args.model64:
        try:
            model64_rss(res)
        except Exception as exc:  # noqa: BLE001
            res.notes.append(f"64-d model RSS not measured: {exc}")

    for n in sizes:
        bench_size(res, n, args, queries, model256)
        gc.collect()
    if "chroma_import" in res.values:
        res.notes.append(f"`import chromadb` took {secs(res.values.pop('chroma_import'))} in this process. "
                         "ChromaDB's HNSW index is approximate: its recall@10 vs the exact top-10 is in the table.")
    total = time.perf_counter() - started
    try:
        info["load"] += ", %.1f / %.1f / %.1f at the end (1 / 5 / 15 min)" % os.getloadavg()
    except OSError:
        pass
    text = render(res, info, args, total)
    print(text)
    if not args.no_write:
        Path(args.output).write_text(text, encoding="utf-8")
        log(f"wrote {args.output}")
    log(f"done in {total / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
