"""The figures `bench/arm-check.sh` compares between the host and the arm64 root.

``arm_compare.py dump OUT.json``  (run by each side's own .venv/bin/python, in the repository)
    searches a fresh copy of vault/ for a few queries with ``memkit search --json`` and embeds a
    few texts with the built-in model (memkit/embeddings/models/memkit-m2v) and the judge
    (memkit/embeddings/models/memkit-judge), writing the outputs and vectors to OUT.json.
``arm_compare.py compare HOST.json ARM.json``  (any python3 with numpy)
    prints whether the searches printed the same bytes, and how far apart the vectors are (largest
    absolute difference, smallest cosine of a row with its twin).
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERIES = [
    "MikroTik hAP ax3",
    "what rice do I use",
    "what do I drive?",
    "what does the hound get vaccinated against",
    "when is the next half marathon",
]
TEXTS = [
    "Router is a MikroTik hAP ax3 running RouterOS 7.16",
    "Has no car; gets around by metro and bus",
    "Uses Portuguese carolino rice for arroz de tomate",
    "what do I drive?",
    "k3s cluster on three Raspberry Pi boards",
    "Lisbon flight on Friday morning",
]


def dump(out: Path) -> None:
    repo = Path(__file__).resolve().parent.parent
    result: dict[str, object] = {"machine": platform.machine(), "python": platform.python_version()}
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        shutil.copytree(repo / "vault", vault, ignore=shutil.ignore_patterns(".memkit"))
        env = dict(os.environ, MEMKIT_VAULT=str(vault))
        searches = []
        for q in QUERIES:
            started = time.perf_counter()
            run = subprocess.run([sys.executable, "-m", "memkit", "search", q, "-k", "5", "--json"],
                                 cwd=vault, env=env, capture_output=True, text=True)
            searches.append({"query": q, "rc": run.returncode, "stdout": run.stdout,
                             "stderr": run.stderr[-2000:], "seconds": time.perf_counter() - started})
        result["searches"] = searches
        result["timings"] = _timings(vault)
    import numpy as np

    from memkit.embeddings.static import builtin_model_folder, load_embedder
    folder = builtin_model_folder()
    result["m2v"] = load_embedder(str(folder)).embed(TEXTS).astype(np.float64).tolist()
    try:
        import onnxruntime  # type: ignore[import-untyped]

        from memkit.embeddings.judge import Judge, judge_folder
        result["onnxruntime"] = onnxruntime.__version__
        result["judge"] = Judge(judge_folder() or repo / "memkit/embeddings/models/memkit-judge").embed(TEXTS).astype(np.float64).tolist()
    except Exception as exc:  # the point is to report it, whatever it is
        result["judge_error"] = f"{type(exc).__name__}: {exc}"
    out.write_text(json.dumps(result))


def _timings(vault: Path) -> dict[str, float]:
    """Warm searches of this process, judged and ``fast`` (the median ms of 3 rounds of QUERIES
    after one), and one query's pass through the judge: under emulation, an upper bound of what
    the real chip takes."""
    from memkit import Vault
    from memkit.embeddings.judge import shared_judge

    v = Vault(vault)
    out: dict[str, float] = {}
    for name, fast in (("judged_ms", False), ("fast_ms", True)):
        for q in QUERIES:
            v.search(q, k=5, fast=fast)
        took = []
        for _ in range(3):
            for q in QUERIES:
                started = time.perf_counter()
                v.search(q, k=5, fast=fast)
                took.append((time.perf_counter() - started) * 1e3)
        out[name] = sorted(took)[len(took) // 2]
    judge = shared_judge().judge()
    if judge is not None:
        took = []
        for q in QUERIES * 2:
            started = time.perf_counter()
            judge.embed([q])
            took.append((time.perf_counter() - started) * 1e3)
        out["query_pass_ms"] = sorted(took)[len(took) // 2]
    return out


def _vectors(name: str, a: dict, b: dict) -> str:
    import numpy as np
    if name not in a or name not in b:
        return f"{name}: not compared ({a.get(name + '_error') or b.get(name + '_error')})"
    x, y = np.asarray(a[name]), np.asarray(b[name])
    diff = float(np.abs(x - y).max())
    cos = float(min((x * y).sum(axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))))
    same = "bit-identical" if diff == 0.0 else "differ"
    return f"{name}: {x.shape[0]}x{x.shape[1]} vectors {same}; max abs diff {diff:.3g}, min cosine {cos:.7f}"


def compare(host_path: Path, arm_path: Path) -> None:
    a, b = json.loads(host_path.read_text()), json.loads(arm_path.read_text())
    print(f"host {a['machine']} (Python {a['python']}) vs root {b['machine']} (Python {b['python']})")
    same = order = first = 0
    for sa, sb in zip(a["searches"], b["searches"]):
        ok = sa["rc"] == sb["rc"] == 0 and sa["stdout"] == sb["stdout"]
        same += ok
        top = [r["id"] for r in json.loads(sa["stdout"] or "[]")]
        other = [r["id"] for r in json.loads(sb["stdout"] or "[]")] if sb["rc"] == 0 else []
        order += top == other
        first += top[:1] == other[:1]
        print(f"  search {sa['query']!r}: {'identical' if ok else 'DIFFERENT'} (host {' '.join(top)}; arm64 {' '.join(other)})")
        if sb["rc"]:
            print(f"    host rc {sa['rc']}, arm64 rc {sb['rc']}; arm64 stderr: {sb['stderr'][-300:]}")
    n = len(a["searches"])
    print(f"searches (`memkit search -k 5 --json` on a copy of vault/): {same}/{n} byte-identical, "
          f"{order}/{n} the same ids in the same order, {first}/{n} the same first result")
    print(_vectors("m2v", a, b))
    print(f"onnxruntime: host {a.get('onnxruntime', 'not imported')}, arm64 {b.get('onnxruntime', 'not imported')}")
    print(_vectors("judge", a, b))
    ta, tb = a.get("timings", {}), b.get("timings", {})
    cold = [sorted(s.get("seconds", 0.0) for s in side["searches"])[len(side["searches"]) // 2] for side in (a, b)]
    print(f"cold `memkit search` (median of {n} processes): host {cold[0]:.2f} s, arm64 {cold[1]:.2f} s")
    for key, label in (("judged_ms", "warm search, judged"), ("fast_ms", "warm search, --fast"),
                       ("query_pass_ms", "the judge's pass over a query")):
        if key in ta and key in tb:
            print(f"{label} (median ms): host {ta[key]:.2f}, arm64 {tb[key]:.2f} ({tb[key] / ta[key]:.0f}x)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["dump"]:
        dump(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["compare"]:
        compare(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(__doc__)
