#!/usr/bin/env python3
"""Load test of `memkit serve` on loopback (`make bench`): latency, errors, lost entries.

`memkit serve --watch` runs as a subprocess on a copy of a synthetic vault (bench/synth.py, 10k
entries by default) with memkit's built-in model; N clients (threads, one keep-alive connection
each) send searches and adds interleaved in a seeded random order. Afterwards the vault's files
are read again: every add must be there exactly once. Prints the machine, p50/p99 latency per
route, errors and lost entries; exits 1 if any request failed or any entry was lost.

    python bench/bench_http.py                          # 8 clients, 2,000 searches, 200 adds, 10k entries
    python bench/bench_http.py --entries 1k --clients 4 --searches 500 --adds 50
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as bench/bench.py: one BLAS thread (the server pins its own)
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.parse  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from synth import make_queries, parse_size, size_label, working_copy  # noqa: E402
from sysinfo import cpu_model, memory_total, versions  # noqa: E402

from memkit import Vault  # noqa: E402

MARK = "loadtest"  #: every added memory carries "loadtest-NNNN", to count them afterwards


def machine() -> dict[str, str]:
    cpu, mem = cpu_model(), memory_total() or "?"
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip() or "?"
    except Exception:
        commit = "?"
    try:
        load = "%.2f / %.2f / %.2f" % os.getloadavg()
    except OSError:
        load = "?"
    libraries = versions(("starlette", "uvicorn"))
    return {"platform": platform.platform(), "cpu": f"{cpu} ({os.cpu_count()} cores)", "memory": mem,
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "server": ", ".join(libraries), "memkit": commit, "load average at start (1 / 5 / 15 min)": load}


def percentile(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q / 100 * (len(xs) - 1))))]


def start_server(vault: Path, model: str) -> tuple[subprocess.Popen, str, int]:
    env = {**os.environ, "MEMKIT_MODEL": model}
    env.pop("MEMKIT_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "memkit", "--vault", str(vault), "serve", "--port", "0", "--watch"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    m = re.search(r"on http://(127\.0\.0\.1):(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"memkit serve did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
    host, port = m[1], int(m[2])
    deadline = time.monotonic() + 600
    while True:  # the model loads and the vault is indexed before the first answer
        try:
            con = http.client.HTTPConnection(host, port, timeout=600)
            con.request("GET", "/busy")
            if con.getresponse().status == 200:
                con.close()
                return proc, host, port
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise SystemExit("memkit serve did not answer") from None
            time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", default="10k", help="synthetic vault size (default 10k)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--searches", type=int, default=2000)
    ap.add_argument("--adds", type=int, default=200)
    ap.add_argument("--model", default="memkit-m2v", help="the server's model (default: the built-in one)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    n_entries = parse_size(args.entries)
    info = machine()
    rng = random.Random(args.seed)
    queries = make_queries(max(200, args.searches // 10))
    ops: list[tuple[str, str]] = [("search", rng.choice(queries)) for _ in range(args.searches)]
    ops += [("add", f"{MARK}-{i:04d} " + rng.choice(queries)[:200]) for i in range(args.adds)]
    rng.shuffle(ops)
    per_client = [ops[i::args.clients] for i in range(args.clients)]

    with tempfile.TemporaryDirectory(prefix="memkit-bench-http-") as tmp:
        vault = working_copy(n_entries, Path(tmp) / "vault")
        before = len(Vault(vault).entries())
        proc, host, port = start_server(vault, args.model)
        latencies: dict[str, list[float]] = {"search": [], "add": []}
        errors: list[str] = []
        lock = threading.Lock()
        start = threading.Barrier(args.clients + 1)

        def client(n: int, work: list[tuple[str, str]]) -> None:
            con = http.client.HTTPConnection(host, port, timeout=120)
            mine: dict[str, list[float]] = {"search": [], "add": []}
            start.wait()
            for kind, text in work:
                try:
                    t0 = time.perf_counter()
                    if kind == "search":
                        con.request("GET", "/search?" + urllib.parse.urlencode({"q": text, "k": 5}))
                    else:
                        body = json.dumps({"text": text, "topic": f"load-{n}"})
                        con.request("POST", "/add", body=body, headers={"Content-Type": "application/json"})
                    resp = con.getresponse()
                    data = resp.read()
                    mine[kind].append(time.perf_counter() - t0)
                    if resp.status != (201 if kind == "add" else 200):
                        with lock:
                            errors.append(f"{kind} {resp.status}: {data[:200]!r}")
                except Exception as exc:  # noqa: BLE001 - counted as an error
                    with lock:
                        errors.append(f"{kind}: {exc!r}")
                    con.close()
                    con = http.client.HTTPConnection(host, port, timeout=120)
            con.close()
            with lock:
                for key, values in mine.items():
                    latencies[key].extend(values)

        threads = [threading.Thread(target=client, args=(n, work)) for n, work in enumerate(per_client)]
        for t in threads:
            t.start()
        start.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        texts = [e.text for e in Vault(vault).entries()]
        found: dict[str, int] = {}
        for text in texts:
            for m in re.finditer(rf"\b{MARK}-(\d{{4}})\b", text):
                found[m[1]] = found.get(m[1], 0) + 1
        lost = args.adds - len(found)
        doubled = sum(1 for c in found.values() if c > 1)
        after = len(texts)

    print(f"# memkit serve load test ({size_label(n_entries)} entries, {args.clients} clients, loopback)\n")
    for key, value in info.items():
        print(f"- {key}: {value}")
    print(f"- server: `memkit serve --watch` (subprocess), model {args.model}; clients: threads with one "
          f"keep-alive connection each\n")
    total = len(latencies["search"]) + len(latencies["add"])
    print("| route | requests | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
    for key, path in (("search", "GET /search (k=5)"), ("add", "POST /add")):
        xs = latencies[key]
        print(f"| {path} | {len(xs):,} | {percentile(xs, 50) * 1e3:.1f} | {percentile(xs, 99) * 1e3:.1f} | "
              f"{max(xs) * 1e3 if xs else float('nan'):.1f} |")
    both = latencies["search"] + latencies["add"]
    print(f"| all | {total:,} | {percentile(both, 50) * 1e3:.1f} | {percentile(both, 99) * 1e3:.1f} | "
          f"{max(both) * 1e3:.1f} |\n")
    print(f"- {total:,} requests in {wall:.1f} s ({total / wall:,.0f} requests/s)")
    print(f"- errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    print(f"- entries: {before:,} before, {after:,} after; adds lost: {lost}, written twice: {doubled}")
    if "Traceback" in err:
        print("- the server's stderr has a traceback:\n" + err[-2000:])
    return 1 if errors or lost or doubled or after != before + args.adds else 0


if __name__ == "__main__":
    sys.exit(main())
