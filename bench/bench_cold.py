#!/usr/bin/env python3
"""Cold start (issue 16.5): a fresh `memkit search` on the 10k synthetic vault next to
`python -c "import numpy, model2vec"`, the same runs interleaved; the target is a ratio of at most 1.4.

Every run is a new process with the bytecode cached (as an installed package has it; the cache lives
under bench/out/cold/pycache), BLAS on one thread and the 256-d model (../shared/models/m2v-minilm-256,
else memkit's built-in model; --model to choose). The vault is a copy of bench/synth.py's 10k vault, indexed once before
timing. Also printed: what `import memkit`, `import memkit.frontends.cli.group` and `memkit --help` cost alone.

    python bench/bench_cold.py              # median of 15 of each
    python bench/bench_cold.py --runs 31
    git archive b11ed5d | tar -x -C /tmp/before && python bench/bench_cold.py --before /tmp/before
                                            # ... and memkit from another source tree, interleaved too
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out" / "cold"
MODEL256 = ROOT.parent / "shared" / "models" / "m2v-minilm-256"
BUILTIN = ROOT / "memkit" / "embeddings" / "models" / "memkit-m2v"
QUERIES = ["what rice do I use", "invoice from the plumber", "when is the dentist", "router firmware version",
           "birthday present ideas", "train to Lisbon", "the vet appointment", "running shoes size"]


def environment(model: str) -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", MEMKIT_MODEL=model, PYTHONPYCACHEPREFIX=str(OUT / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MEMKIT_VAULT", None)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def timed(cmd: list[str], env: dict[str, str], cpu: list[float] | None = None) -> float:
    """The wall time of one fresh process; its CPU time (user + system) is appended to ``cpu``:
    on this shared machine the CPU time is the steadier figure (a busy neighbour stretches the wall)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=OUT)  # not the checkout: -c/-m put cwd first
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    if cpu is not None:
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="fresh processes of each kind (default 15)")
    ap.add_argument("--model", metavar="MODEL", help="the model (default: ../shared/models/m2v-minilm-256 when "
                    "present, else memkit's built-in model memkit/embeddings/models/memkit-m2v)")
    ap.add_argument("--before", type=Path, metavar="DIR",
                    help="also time `memkit search` from the memkit source tree in DIR (PYTHONPATH), interleaved")
    args = ap.parse_args()
    python = sys.executable
    model = args.model or str(MODEL256 if MODEL256.is_dir() else BUILTIN)
    if os.path.isdir(model):
        model = os.path.abspath(model)  # the processes run in bench/out/cold
    made = subprocess.run([python, str(HERE / "synth.py"), "10k"], capture_output=True, text=True, check=True)
    source = Path(made.stdout.strip().splitlines()[-1])
    vault = OUT / "vault-10k"
    OUT.mkdir(parents=True, exist_ok=True)
    if not vault.is_dir():
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".memkit"))
    env = environment(model)
    memkit = [python, "-m", "memkit", "--vault", str(vault)]
    timed(memkit + ["index"], env)  # indexed (and every .pyc written) before timing
    ref = [python, "-c", "import numpy, model2vec"]
    timed(ref, env)
    before_env = dict(env, PYTHONPATH=str(args.before.resolve())) if args.before else None
    if before_env is not None:
        where = subprocess.run([python, "-c", "import memkit; print(memkit.__file__)"], env=before_env, cwd=OUT,
                               capture_output=True, text=True, check=True).stdout.strip()
        if not where.startswith(str(args.before.resolve())):
            raise SystemExit(f"--before: memkit imports from {where}, not from {args.before}")
        timed(memkit + ["search", "warm", "-k", "10"], before_env)
    searches, refs, befores = [], [], []
    cpu: dict[str, list[float]] = {"search": [], "ref": [], "before": []}
    for i in range(args.runs):  # interleaved: a busy moment of this shared machine hits all
        query = QUERIES[i % len(QUERIES)]
        searches.append(timed(memkit + ["search", query, "-k", "10"], env, cpu["search"]))
        refs.append(timed(ref, env, cpu["ref"]))
        if before_env is not None:
            befores.append(timed(memkit + ["search", query, "-k", "10"], before_env, cpu["before"]))
    med = {k: statistics.median(v) for k, v in cpu.items() if v}
    alone = {what: statistics.median(timed([python, *cmd], env) for _ in range(args.runs))
             for what, cmd in (("python -c pass", ["-c", "pass"]), ("import memkit", ["-c", "import memkit"]),
                               ("import memkit.frontends.cli.group", ["-c", "import memkit.frontends.cli.group"]),
                               ("memkit --help", ["-m", "memkit", "--help"]))}
    search, base = statistics.median(searches), statistics.median(refs)
    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"model: {model}; vault: {vault} (10,000 entries); median of {args.runs} fresh processes each")
    print(f"cold `memkit search`:                 wall {search:.3f} s (min {min(searches):.3f}), "
          f"CPU {med['search']:.3f} s")
    print(f"python -c 'import numpy, model2vec': wall {base:.3f} s (min {min(refs):.3f}), CPU {med['ref']:.3f} s")
    print(f"ratio: wall {search / base:.2f}, CPU {med['search'] / med['ref']:.2f} (target <= 1.4)")
    if befores:
        before = statistics.median(befores)
        print(f"`memkit search` from {args.before}: wall {before:.3f} s (min {min(befores):.3f}), CPU "
              f"{med['before']:.3f} s; ratio: wall {before / base:.2f}, CPU {med['before'] / med['ref']:.2f}")
    for what, wall in alone.items():
        print(f"  {what:<18} {wall:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
