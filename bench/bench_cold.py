#!/usr/bin/env python3
"""Cold start (issue 16.5): a fresh `memkit search` on the 10k synthetic vault next to
`python -c "import numpy, model2vec"`, the same runs interleaved; the target is a ratio of at most 1.4.

Every run is a new process with the bytecode cached (as an installed package has it; the cache lives
under bench/out/cold/pycache), BLAS on one thread and the 256-d model (../shared/models/m2v-minilm-256,
else memkit's built-in model). The vault is a copy of bench/synth.py's 10k vault, indexed once before
timing. Also printed: what `import memkit`, `import memkit.cli` and `memkit --help` cost alone.

    python bench/bench_cold.py              # median of 15 of each
    python bench/bench_cold.py --runs 31
"""
from __future__ import annotations

import argparse
import os
import platform
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
BUILTIN = ROOT / "memkit" / "models" / "memkit-m2v"
QUERIES = ["what rice do I use", "invoice from the plumber", "when is the dentist", "router firmware version",
           "birthday present ideas", "train to Lisbon", "the vet appointment", "running shoes size"]


def environment(model: str) -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", MEMKIT_MODEL=model, PYTHONPYCACHEPREFIX=str(OUT / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MEMKIT_VAULT", None)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    return env


def timed(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="fresh processes of each kind (default 15)")
    args = ap.parse_args()
    python = sys.executable
    model = str(MODEL256 if MODEL256.is_dir() else BUILTIN)
    made = subprocess.run([python, str(HERE / "synth.py"), "10k"], capture_output=True, text=True, check=True)
    source = Path(made.stdout.strip().splitlines()[-1])
    vault = OUT / "vault-10k"
    if not vault.is_dir():
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns(".memkit"))
    env = environment(model)
    memkit = [python, "-m", "memkit", "--vault", str(vault)]
    timed(memkit + ["index"], env)  # indexed (and every .pyc written) before timing
    ref = [python, "-c", "import numpy, model2vec"]
    timed(ref, env)
    searches, refs = [], []
    for i in range(args.runs):  # interleaved: a busy moment of this shared machine hits both
        searches.append(timed(memkit + ["search", QUERIES[i % len(QUERIES)], "-k", "10"], env))
        refs.append(timed(ref, env))
    alone = {what: statistics.median(timed([python, *cmd], env) for _ in range(args.runs))
             for what, cmd in (("python -c pass", ["-c", "pass"]), ("import memkit", ["-c", "import memkit"]),
                               ("import memkit.cli", ["-c", "import memkit.cli"]),
                               ("memkit --help", ["-m", "memkit", "--help"]))}
    search, base = statistics.median(searches), statistics.median(refs)
    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"model: {model}; vault: {vault} (10,000 entries); median of {args.runs} fresh processes each")
    print(f"cold `memkit search`:                 {search:.3f} s (min {min(searches):.3f})")
    print(f"python -c 'import numpy, model2vec': {base:.3f} s (min {min(refs):.3f})")
    print(f"ratio: {search / base:.2f} (target <= 1.4)")
    for what, wall in alone.items():
        print(f"  {what:<18} {wall:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
