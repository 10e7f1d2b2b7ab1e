#!/usr/bin/env python3
"""Calibrate ``duplicate_similarity`` (issue 30.6): the static model's cosine from which a digest
takes a new conclusion for a near duplicate of an entry and does not store it.

The data (``bench/duplicates.json``): pairs of an entry already in a vault (``a``) and a conclusion
a digest brings (``b``); ``same`` says whether ``b`` says what ``a`` says. The path measured is the
digest's own: every ``a`` is added to one vault, each ``b`` is searched as the digest searches
(``words_first``, no threshold) and ``a``'s hit gives the cosine. For each threshold the script
prints:

- **caught**: the share of same-meaning pairs the cosine alone takes for duplicates (higher: fewer
  memories stored twice);
- **merged**: the share of different memories it takes for duplicates — a memory the digest then
  drops (lower is better: a dropped memory is worse than a stored twice one);
- the same two with the digest's whole rule (the cosine, or words that mostly coincide).

``auto`` is the most similar pair of different memories plus a margin of 0.06, rounded to 0.01
(a static model hardly weighs names: "Lina's birthday is on 14 May" and "Tom's birthday is on
14 May" are the closest different pair): it is what memkit uses for the model (``MODEL_DUPLICATE``
in memkit/search/searcher.py).

    .venv/bin/python bench/calibrate_duplicates.py                 # memkit's built-in model
    .venv/bin/python bench/calibrate_duplicates.py --model DIR     # another model2vec folder
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MEMKIT_NO_JUDGE", "1")  # the digest's duplicate check uses the static stage

from memkit import Vault  # noqa: E402
from memkit.digest.duplicates import near_duplicate_by_words  # noqa: E402
from memkit.formats.lifecycle import core_text  # noqa: E402

THRESHOLDS = [round(0.70 + 0.02 * i, 2) for i in range(16)]  # 0.70 .. 1.00


def cosines(model: str, pairs: list[dict]) -> list[tuple[float, bool, bool]]:
    """(cosine of a's hit for b, same, words alone call it a duplicate) for each pair."""
    with tempfile.TemporaryDirectory() as tmp:
        vault = Vault.init(Path(tmp) / "v", profile=False)
        vault = Vault(Path(tmp) / "v", model=model)
        for i, a in enumerate(sorted({p["a"] for p in pairs})):
            vault.add(a, topic=f"t{i % 8}")
        out = []
        for p in pairs:
            hits = vault.searcher.search(p["b"], k=20, threshold=None, words_first=True)
            hit = next((h for h in hits if core_text(h.text) == core_text(p["a"])), None)
            words = hit is not None and near_duplicate_by_words(hit.text, p["b"])
            out.append((hit.cosine if hit is not None else 0.0, bool(p["same"]), words))
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="memkit-m2v", help="a model2vec folder or id (default: memkit-m2v)")
    parser.add_argument("--data", default=str(ROOT / "bench" / "duplicates.json"))
    args = parser.parse_args()
    pairs = json.loads(Path(args.data).read_text())["pairs"]
    rows = cosines(args.model, pairs)
    same = [r for r in rows if r[1]]
    diff = [r for r in rows if not r[1]]
    print(f"machine: {platform.platform()}, Python {platform.python_version()}")
    print(f"model: {args.model}; {len(same)} same-meaning pairs, {len(diff)} different-memory pairs ({args.data})")
    print(f"cosines of same pairs: min {min(r[0] for r in same):.3f}, median "
          f"{sorted(r[0] for r in same)[len(same) // 2]:.3f}; of different pairs: max {max(r[0] for r in diff):.3f}")
    print("\n| threshold | caught (cosine) | merged (cosine) | caught (digest rule) | merged (digest rule) |")
    print("|---|---|---|---|---|")
    for t in THRESHOLDS:
        def share(group: list[tuple[float, bool, bool]], rule: bool) -> str:
            hit = sum(1 for c, _, words in group if c >= t or (rule and words))
            return f"{hit / len(group):.0%} ({hit})"
        print(f"| {t:.2f} | {share(same, False)} | {share(diff, False)} | {share(same, True)} | {share(diff, True)} |")
    safe = max(c for c, *_ in diff)
    auto = min(1.0, round(safe + 0.06, 2))
    print(f"\nauto for {args.model}: {auto:.2f} (the most similar different pair is at {safe:.3f}; +0.06 margin)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
