#!/usr/bin/env python3
"""Quick quality check of a model2vec folder, loaded the way memkit loads it (memkit.embeddings.static).

- everyday: bench/everyday.json, cosine only: how often the right note comes first / in the top 3
  (plain questions and the 'rare' group apart);
- LoCoMo: dev vector-only recall@5 from bench/eval.py (when ../shared/eval/ is there).

Run with memkit's own venv: ``.venv/bin/python bench/model_eval.py FOLDER [FOLDER ...]``.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memkit.embeddings.static import StaticEmbedder  # noqa: E402


def everyday(emb: StaticEmbedder, path: Path) -> dict[str, tuple[int, int, int]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    ids = [n["id"] for n in data["notes"]]
    notes = emb.embed([n["text"] for n in data["notes"]])
    out: dict[str, list[int]] = {}
    qs = data["questions"]
    qv = emb.embed([q["q"] for q in qs])
    for q, v in zip(qs, qv):
        order = np.argsort(-(notes @ v), kind="stable")
        top = [ids[i] for i in order[:3]]
        group = q.get("group", "plain")
        acc = out.setdefault(group, [0, 0, 0])
        acc[0] += top[0] in q["answers"]
        acc[1] += any(t in q["answers"] for t in top)
        acc[2] += 1
    return {g: (a[0], a[1], a[2]) for g, a in out.items()}


def locomo(folder: str) -> float | None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "eval.py"), "--model", folder, "--no-thresholds"],
                          capture_output=True, text=True, cwd=ROOT)
    m = re.search(r"^overall\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", proc.stdout, re.M)
    return float(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--everyday", default=str(ROOT / "bench" / "everyday.json"))
    ap.add_argument("--no-locomo", action="store_true")
    args = ap.parse_args()
    for folder in args.folders:
        t = time.perf_counter()
        emb = StaticEmbedder(folder)
        emb.embed(["warm up"])
        load_ms = (time.perf_counter() - t) * 1000
        ev = everyday(emb, Path(args.everyday))
        r5 = None if args.no_locomo else locomo(folder)
        parts = " ".join(f"{g} {a}/{b}/{n}" for g, (a, b, n) in sorted(ev.items()))
        r5s = "n/a" if r5 is None else f"{r5:.3f}"
        print(f"{folder}: dim {emb.dim} | everyday first/top3/n: {parts} | LoCoMo vector r@5 {r5s} | "
              f"load {load_ms:.0f} ms", flush=True)


if __name__ == "__main__":
    main()
