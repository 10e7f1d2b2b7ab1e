#!/usr/bin/env python3
"""What the second search stage costs (`make bench`): memkit's judge (memkit/judge.py) on and off.

On the synthetic vaults of bench/synth.py, with memkit's default model (memkit-m2v) and the
shipped judge, one process, BLAS pinned to one thread as the CLI does:

1. judge indexing: ``Searcher.fill_judge`` from empty (transformer vectors a second); at sizes over
   ``--fill-max`` entries only the first ``--fill-max`` are timed (the rate does not depend on n);
2. warm ``Vault.search`` p50 / p95 over the bench queries, judge on (every candidate's vector
   stored: the second pass over the queries) and off (``judge=False``), and the numpy exact scan
   of the same static matrix in the same run (the baseline);
3. the first pass over the queries with nothing stored for the candidates not filled (each search
   embeds the ones it meets: what a vault not yet indexed by the judge costs);
4. cold ``memkit search`` (a new process: interpreter, imports, both models, the query): wall
   time and peak RSS (``/usr/bin/time``), with the judge and with ``--fast``;
5. the peak RSS (VmHWM) of a process that ran the warm searches.

    python bench/bench_judge.py                 # 10k and 100k
    python bench/bench_judge.py --sizes 1k,10k --queries 50
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import synth  # noqa: E402
from sysinfo import cpu_model, memory_total, versions  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.embeddings.judge import judge_status, judge_threads  # noqa: E402

RUN_DIR = HERE / "out" / "judge"
K = 10


def p(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) if xs else float("nan")


def each(fn, items) -> list[float]:
    out = []
    for it in items:
        t = time.perf_counter()
        fn(it)
        out.append(time.perf_counter() - t)
    return out


def vmhwm() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cold(root: Path, query: str, fast: bool, runs: int) -> tuple[float, float]:
    """Median wall seconds and peak RSS (MB) of `memkit search` in a new process."""
    exe = Path(sys.executable).parent / "memkit"
    cmd = [str(exe) if exe.exists() else sys.executable, *([] if exe.exists() else ["-m", "memkit"]),
           "--vault", str(root), "search", query, "-k", "10", *(["--fast"] if fast else [])]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(RUN_DIR / "pycache")
    walls, peaks = [], []
    for i in range(runs + 1):
        t = time.perf_counter()
        out = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        if out.returncode != 0:
            raise RuntimeError(out.stderr[-500:])
        if i:  # the first run writes the bytecode
            walls.append(wall)
            peaks.append(int(out.stderr.strip().splitlines()[-1]) / 1024)
    return p(walls, 50), p(peaks, 50)


WARM = r"""
import json, sys, time
import numpy as np
from memkit import Vault
root, qfile = sys.argv[1], sys.argv[2]
qs = json.load(open(qfile))
v = Vault(root)
for q in qs:
    v.search(q, k=10)
for q in qs:
    v.search(q, k=10, judge=False)
hwm = [int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"vmhwm": hwm}))
"""


def bench_size(n: int, args: argparse.Namespace, queries: list[str]) -> dict:
    label = synth.size_label(n)
    synth.generate(n, quiet=True)
    root = synth.working_copy(n, RUN_DIR / f"vault-{label}")
    out: dict = {"size": label}
    v = Vault(root)
    t = time.perf_counter()
    v.searcher.index.refresh()
    out["static_index_s"] = time.perf_counter() - t
    s = v.searcher
    judge = s.judge()
    assert judge is not None, judge_status()
    view = s.index.view()
    fill_n = min(n, args.fill_max)
    live = [i for i in range(len(view)) if view.is_live(i)][:fill_n]
    texts = [view.texts[i] for i in live]
    # two halves: the fill beside searches (servers, the watcher: a pass at a time), then
    # `memkit index --judge`'s (passes side by side on every core, the same vectors)
    half = len(texts) // 2
    t = time.perf_counter()
    judge.fill(texts[:half])
    dt1 = time.perf_counter() - t
    t = time.perf_counter()
    judge.fill(texts[half:], workers=judge_threads())
    dt = time.perf_counter() - t
    out["fill_rate_aside"] = half / dt1
    out["fill_rate"] = (len(texts) - half) / dt
    out["filled"] = len(texts)
    print(f"{label}: static index {out['static_index_s']:.1f} s; judge vectors {out['fill_rate']:,.0f}/s with "
          f"`index --judge` ({len(texts) - half:,} in {dt:.1f} s, {judge_threads()} passes side by side), "
          f"{out['fill_rate_aside']:,.0f}/s a pass at a time (servers, the watcher)", flush=True)

    first = each(lambda q: v.search(q, k=K), queries)  # candidates not stored yet are embedded now
    on = each(lambda q: v.search(q, k=K), queries)
    off = each(lambda q: v.search(q, k=K, judge=False), queries)
    on2 = each(lambda q: v.search(q, k=K), queries)  # interleaved again: the machine is shared
    _, ranker = s.ranker()
    m = np.ascontiguousarray(view.vectors)
    embed = v.embedder.embed

    def scan(query: str) -> None:  # the query's embedding included, as memkit's figure has it
        sc = m @ embed([query])[0]
        np.argpartition(-sc, K)[:K]

    npy = each(scan, queries)
    out.update(first_p50=p(first, 50), on_p50=p(on + on2, 50), on_p95=p(on + on2, 95), off_p50=p(off, 50),
               off_p95=p(off, 95), numpy_p50=p(npy, 50))
    print(f"{label}: warm search judge on {out['on_p50'] * 1e3:.2f} ms (p95 {out['on_p95'] * 1e3:.2f}), "
          f"off {out['off_p50'] * 1e3:.2f} ms, numpy scan {out['numpy_p50'] * 1e3:.2f} ms; "
          f"first pass {out['first_p50'] * 1e3:.1f} ms", flush=True)
    qfile = RUN_DIR / "queries.json"
    qfile.write_text(json.dumps(queries[:50]))
    got = subprocess.run([sys.executable, "-c", WARM, str(root), str(qfile)], capture_output=True, text=True)
    out["warm_vmhwm"] = json.loads(got.stdout)["vmhwm"] if got.returncode == 0 else float("nan")
    if args.cold:
        out["cold_on"], out["cold_on_rss"] = cold(root, queries[3], False, args.cold)
        out["cold_off"], out["cold_off_rss"] = cold(root, queries[3], True, args.cold)
        print(f"{label}: cold `memkit search` {out['cold_on']:.2f} s / {out['cold_on_rss']:.0f} MB, "
              f"--fast {out['cold_off']:.2f} s / {out['cold_off_rss']:.0f} MB", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10k,100k", help="vault sizes (default %(default)s)")
    ap.add_argument("--queries", type=int, default=100, help="bench queries (default %(default)s)")
    ap.add_argument("--fill-max", type=int, default=10_000, help="entries whose judge vectors are timed")
    ap.add_argument("--cold", type=int, default=5, help="cold CLI runs per variant (0: none)")
    args = ap.parse_args(argv)
    if judge_status() is not None:
        print(f"bench_judge: the judge cannot run here ({judge_status()}); nothing to measure")
        return 0
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    print(f"machine: {platform.machine()}, {cpu_model()}, {os.cpu_count()} cpus, {memory_total()}; "
          f"load {os.getloadavg()[0]:.1f}; " + ", ".join(versions(("numpy", "onnxruntime", "model2vec"))), flush=True)
    queries = synth.make_queries(args.queries)
    rows = [bench_size(synth.parse_size(s), args, queries) for s in args.sizes.split(",") if s.strip()]
    print("\n| figure | " + " | ".join(r["size"] for r in rows) + " |")
    print("|---|" + "---|" * len(rows))

    def line(name: str, fmt) -> None:
        print(f"| {name} | " + " | ".join(fmt(r) for r in rows) + " |")

    line("warm search p50, judge on (ms)", lambda r: f"{r['on_p50'] * 1e3:.2f} (p95 {r['on_p95'] * 1e3:.2f})")
    line("warm search p50, judge off / numpy exact scan (ms)",
         lambda r: f"{r['off_p50'] * 1e3:.2f} / {r['numpy_p50'] * 1e3:.2f}")
    line("judge on ÷ numpy scan", lambda r: f"{r['on_p50'] / r['numpy_p50']:.1f}×")
    line("first search of a query, candidates not yet stored (ms)", lambda r: f"{r['first_p50'] * 1e3:.1f}")
    line("judge vectors a second, `memkit index --judge`", lambda r: f"{r['fill_rate']:,.0f}/s")
    line("judge vectors a second, filled beside searches", lambda r: f"{r['fill_rate_aside']:,.0f}/s")
    line("peak RSS of a process that searched (MB)", lambda r: f"{r['warm_vmhwm']:,.0f}")
    if args.cold:
        line("cold `memkit search`: wall / peak RSS", lambda r: f"{r['cold_on']:.2f} s / {r['cold_on_rss']:.0f} MB")
        line("cold `memkit search --fast`", lambda r: f"{r['cold_off']:.2f} s / {r['cold_off_rss']:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
