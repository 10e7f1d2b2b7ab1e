#!/usr/bin/env python3
"""What a cold command spends importing (issue 42.3): runs it N times under ``python -X importtime``
and prints, per module, the least self time it took in any run (the least is the steadiest figure
on a shared machine), grouped by library, then the memkit modules that cost most.

    python bench/bench_imports.py --vault bench/out/judge/vault-10k -- search --fast "what rice do I use"
    python bench/bench_imports.py --runs 15 -- --help
"""
from __future__ import annotations

import argparse
import collections
import os
import platform
import subprocess
import sys

GROUPS = ("numpy", "memkit", "click", "yaml", "tokenizers", "onnxruntime", "sqlite3", "frontmatter")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=8, help="fresh processes (default 8)")
    ap.add_argument("--vault", help="the vault (MEMKIT_VAULT) the command runs on")
    ap.add_argument("--top", type=int, default=25, help="modules to list (default 25)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="memkit's arguments, after --")
    args = ap.parse_args()
    command = [a for a in args.command if a != "--"] or ["--help"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", OPENBLAS_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: bytecode cached
    if args.vault:
        env["MEMKIT_VAULT"] = os.path.abspath(args.vault)
    least: dict[str, int] = {}
    for _ in range(args.runs):
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "memkit", *command],
                              capture_output=True, text=True, env=env, cwd="/")
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "self [us]" in line:
                continue
            own, _, name = line[len("import time:"):].split("|")
            least[name.strip()] = min(least.get(name.strip(), 1 << 62), int(own))
    groups: collections.Counter[str] = collections.Counter()
    for name, us in least.items():
        top = name.split(".")[0]
        groups[top if top in GROUPS else "standard library and others"] += us
    print(f"machine: {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"memkit {' '.join(command)}: least self time of each module over {args.runs} runs, "
          f"{sum(least.values()) / 1000:.1f} ms in all ({len(least)} modules)")
    for group, us in groups.most_common():
        print(f"  {group:<28} {us / 1000:6.1f} ms")
    print("memkit's modules that cost most:")
    mine = sorted(((us, n) for n, us in least.items() if n.startswith("memkit")), reverse=True)[:args.top]
    for us, name in mine:
        print(f"  {us / 1000:6.2f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
