#!/usr/bin/env python3
"""Calibrate the judged search's ``relevance`` (memkit/search/judge_rank.py: ``RELEVANCE_WEIGHTS``).

Every question of bench/everyday.json (plain, rare-word, message and unanswerable) is searched in
its vault as ``Vault.search`` does it, and each candidate the judge scored is recorded with what
the relevance reads (:func:`memkit.search.judge_rank.relevance_features`: the judge's cosine, its
lead over the best other candidate, its standing in the pool) and whether it is the question's
note. A logistic regression over those features is fitted on that set and checked on the held-out
set (bench/everyday-heldout.json, another person's notes, never fitted on): per decile of the
predicted relevance, how often such a hit was right (calibration), and at the confident cut
(``RELEVANCE_CONFIDENT``) how many first hits are right and confident, and how many unanswerable
questions get a confident first hit.

    python bench/calibrate_relevance.py            # fit, report, print the weights to paste
    python bench/calibrate_relevance.py --check    # report the shipped weights only
    python bench/calibrate_relevance.py --signals  # which signals tell "the vault answers this"

``--signals`` measures, on both sets, how well each signal of a question's first hit tells a right
answer from an unanswerable question and from a wrong first hit (the area under the ROC curve: 0.5
is chance): the judge's cosine, its lead over the next candidate, its standing in the pool, the first
stage's score and static cosine, the share of the query's word weight the hit holds, and the
shipped relevance. Then logistic refits on bench/everyday.json over the judge's signals, each cut
where at most 5 % of that set's unanswerable questions get a confident first hit, reported on both
sets beside the shipped rule (the default ``Vault.search``).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import eval_everyday as ee  # noqa: E402

import memkit.search.judged as judged_module  # noqa: E402
from memkit.search import judge_rank  # noqa: E402


def collect(path: Path) -> list[dict]:
    """For each question: its group, its answers, and each judged candidate's note id and features."""
    data = ee.load_set(path)
    seen: list[np.ndarray] = []
    original = judged_module.relevance

    def recording(cosines, coverage=None, *a, **kw):
        seen.append(judge_rank.relevance_features(cosines, coverage, kw.get("reference")))
        return original(cosines, coverage, *a, **kw)

    judged_module.relevance = recording
    out = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            vault, where = ee.build_vault(Path(tmp) / "v", data)
            for q in data["questions"]:
                seen.clear()
                hits = vault.search(q["q"], k=50, threshold=None)
                if not seen:
                    continue
                # the hits are the pool in fused order; their judge cosines identify the rows
                ids = [where.get((h.file, h.line), "?") for h in hits]
                cos = np.array([h.judge for h in hits], dtype=np.float64)
                feats = seen[-1]
                # match each hit to its pool candidate by the judge's cosine
                pool = feats[:, 0]
                idx = [int(np.argmin(np.abs(pool - c))) for c in cos]
                out.append({"group": q["group"], "answers": q["answers"], "ids": ids,
                            "features": feats[idx], "cosines": cos})
    finally:
        judged_module.relevance = original
    return out


#: the features fitted: the cosine and its standing in the pool. Not the word coverage: the plain
#: questions share no word with their note by construction, so a fit would learn that holding
#: the query's words makes a hit less likely right (exact words have their own rule, search/exact.py);
#: not the lead over the next candidate: it fitted best (plain right-and-confident 44 %) but is
#: small wherever several notes answer alike (the sample vault's paella notes: 0.32 for the best)
FITTED = [0, 2]


def examples(items: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    X = np.concatenate([it["features"] for it in items])
    y = np.concatenate([[1.0 if i in it["answers"] else 0.0 for i in it["ids"]] for it in items])
    return X, y


def fit(X: np.ndarray, y: np.ndarray, l2: float = 1e-2) -> np.ndarray:
    """Logistic regression by Newton's method (weights then bias)."""
    Xb = np.c_[X, np.ones(len(X))]
    w = np.zeros(Xb.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(Xb @ w)))
        grad = Xb.T @ (p - y) + l2 * np.r_[w[:-1], 0]
        H = Xb.T @ (Xb * (p * (1 - p))[:, None]) + l2 * np.eye(len(w))
        w -= np.linalg.solve(H, grad)
    return w


def predict(X: np.ndarray, w) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.c_[X, np.ones(len(X))] @ np.asarray(w))))


def sweep(name: str, items: list[dict], w) -> None:
    """Right-and-confident first hits and confident unanswerable ones at each cut."""
    print(f"\n{name}: the confident cut's trade-off (first hit)")
    print("  cut    plain right+confident   message right+confident   unanswerable confident")
    for cut in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        cells = []
        for group in ("plain", "message", "unanswerable"):
            sel = [it for it in items if it["group"] == group]
            conf = [len(it["ids"]) > 0 and predict(it["features"][:1], w)[0] >= cut for it in sel]
            if group != "unanswerable":
                conf = [c and it["ids"][0] in it["answers"] for c, it in zip(conf, sel)]
            cells.append(f"{sum(conf) / max(1, len(sel)):>6.0%}")
        print(f"  {cut:.1f}   {cells[0]:>21}   {cells[1]:>23}   {cells[2]:>22}")


def report(name: str, items: list[dict], w, cut: float) -> None:
    X, y = examples(items)
    p = predict(X, w)
    brier = float(((p - y) ** 2).mean())
    print(f"\n{name}: {len(items)} questions, {len(y)} judged candidates, Brier {brier:.4f}")
    print("  predicted relevance   candidates   right (observed)")
    for lo in np.arange(0, 1, 0.1):
        sel = (p >= lo) & (p < lo + 0.1 + (1e-9 if lo >= 0.9 else 0))
        if sel.any():
            print(f"  {lo:.1f}-{lo + 0.1:.1f}            {int(sel.sum()):>10}   {y[sel].mean():.2f}")
    for group in ("plain", "rare", "message", "unanswerable"):
        sel = [it for it in items if it["group"] == group]
        if not sel:
            continue
        first = [predict(it["features"][:1], w)[0] if len(it["ids"]) else 0.0 for it in sel]
        right = [bool(it["ids"]) and it["ids"][0] in it["answers"] for it in sel]
        conf = [f >= cut for f in first]
        if group == "unanswerable":
            print(f"  {group:<13} n {len(sel):>3}: first hit confident {sum(conf)}/{len(sel)} = {sum(conf) / len(sel):.0%}")
        else:
            rc = sum(c and r for c, r in zip(conf, right))
            wc = sum(c and not r for c, r in zip(conf, right))
            print(f"  {group:<13} n {len(sel):>3}: first right {sum(right) / len(sel):.0%}, right and confident "
                  f"{rc / len(sel):.0%}, confident and wrong {wc / len(sel):.0%}")


def collect_signals(path: Path) -> list[dict]:
    """For each question: its group, whether the first hit of ``Vault.search(q, k=60, threshold=None)``
    is right, that hit's signals (see the module docstring), and the default search's first confident
    hit (right or not)."""
    from memkit.formats.words import terms as text_terms

    data = ee.load_set(path)
    seen: dict[str, np.ndarray] = {}
    original = judged_module.fuse

    def recording(static, judge, conversation, *params):
        seen["static"] = np.asarray(static, dtype=np.float64).copy()
        seen["judge"] = np.asarray(judge, dtype=np.float64).copy()
        return original(static, judge, conversation, *params)

    judged_module.fuse = recording
    out = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            vault, where = ee.build_vault(Path(tmp) / "v", data)
            for q in data["questions"]:
                seen.clear()
                hits = vault.search(q["q"], k=60, threshold=None)
                if not hits or hits[0].judge is None or "judge" not in seen:
                    continue
                default = vault.search(q["q"])
                first_conf = next((h for h in default if h.confident), None)
                view, ranker = vault.searcher.ranker()
                top = hits[0]
                row = next(i for i in range(len(view)) if view.files[view.file_ids[i]] == top.file
                           and int(view.lines[i]) == top.line)
                qt = ranker.lex.counted(view.term_ids_of(text_terms(q["q"])))
                pool_j, pool_s = seen["judge"], seen["static"]
                at = int(np.argmin(np.abs(pool_j - top.judge)))
                others = np.sort(np.array([h.judge for h in hits[1:]], dtype=np.float64))[::-1]
                signals = {
                    "judge cosine": float(top.judge),
                    "lead over next": float(top.judge - (others[0] if others.size else 0.0)),
                    "standing (sd)": float((top.judge - pool_j.mean()) / max(float(pool_j.std()), 1e-3)),
                    "first-stage score": float(pool_s[at]),
                    "static cosine": float(top.cosine),
                    "word coverage": float(ranker.lex.coverage(qt)[row]),
                    "relevance": float(top.relevance if top.relevance is not None else 0.0),
                }
                out.append({"group": q["group"], "right": where.get((top.file, top.line)) in q["answers"],
                            "signals": signals, "confident": first_conf is not None,
                            "confident_right": first_conf is not None
                            and where.get((first_conf.file, first_conf.line)) in q["answers"]})
    finally:
        judged_module.fuse = original
    return out


def _auc(pos: list[float], neg: list[float]) -> float:
    if not pos or not neg:
        return float("nan")
    a, b = np.asarray(pos)[:, None], np.asarray(neg)[None, :]
    return float((a > b).mean() + 0.5 * (a == b).mean())


def _rates(items: list[dict], confident: list[bool]) -> tuple[float, float, float, float]:
    """(plain right and confident, plain confident and wrong, messages right and confident,
    unanswerable with a confident first hit) for these first-hit flags."""
    def share(group: str, right: bool | None) -> float:
        sel = [(it, c) for it, c in zip(items, confident) if it["group"] == group]
        hit = [c and (right is None or it["right"] == right) for it, c in sel]
        return sum(hit) / max(1, len(sel))
    return share("plain", True), share("plain", False), share("message", True), share("unanswerable", None)


def signals(train: list[dict], held: list[dict]) -> None:
    names = list(train[0]["signals"])
    print("\nSignals of the first hit: AUC right-first plain questions vs unanswerable ones, and vs plain "
          "questions whose first hit is wrong (0.5 = chance)")
    print(f"  {'signal':<20}{'everyday: vs unanswerable':>27}{'vs wrong':>10}{'held-out: vs unanswerable':>28}{'vs wrong':>10}")
    for name in names:
        cells = []
        for items in (train, held):
            pos = [it["signals"][name] for it in items if it["group"] == "plain" and it["right"]]
            una = [it["signals"][name] for it in items if it["group"] == "unanswerable"]
            wrong = [it["signals"][name] for it in items if it["group"] == "plain" and not it["right"]]
            cells += [_auc(pos, una), _auc(pos, wrong)]
        print(f"  {name:<20}{cells[0]:>27.3f}{cells[1]:>10.3f}{cells[2]:>28.3f}{cells[3]:>10.3f}")
    print("\nRefits on bench/everyday.json (every question's first hit: right = 1), cut where at most 5 % of its "
          "unanswerable questions are confident; plain right+confident / confident+wrong, messages right+confident, "
          "unanswerable confident")
    shipped = [(_rates(items, [it["confident"] for it in items])) for items in (train, held)]
    rows = [("shipped rule (default search)", None, None, shipped)]
    for cols in (["judge cosine"], ["judge cosine", "standing (sd)"], ["judge cosine", "lead over next"],
                 ["judge cosine", "lead over next", "standing (sd)"]):
        X = np.array([[it["signals"][c] for c in cols] for it in train])
        y = np.array([1.0 if it["right"] and it["group"] != "unanswerable" else 0.0 for it in train])
        w = fit(X, y)
        p_train = predict(X, w)
        una = p_train[[it["group"] == "unanswerable" for it in train]]
        cut = float(np.sort(una)[::-1][int(0.05 * len(una))]) + 1e-9 if una.size else 0.5
        figs = []
        for items in (train, held):
            p = predict(np.array([[it["signals"][c] for c in cols] for it in items]), w)
            figs.append(_rates(items, [bool(v >= cut) for v in p]))
        rows.append((" + ".join(cols), w, cut, figs))
    print(f"  {'rule':<62}{'everyday':>24}{'held-out':>24}")
    for name, _, cut, figs in rows:
        cells = ["  ".join(f"{v:4.0%}" for v in f) for f in figs]
        label = name if cut is None else f"{name} (p >= {cut:.2f})"
        print(f"  {label:<62}{cells[0]:>24}{cells[1]:>24}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report the shipped weights, fit nothing")
    ap.add_argument("--signals", action="store_true", help="measure which signals tell an answer from none, fit nothing")
    args = ap.parse_args(argv)
    if args.signals:
        print(f"memkit confidence signals | {platform.machine()} | the default judge and settings")
        signals(collect_signals(ee.DEFAULT_DATA), collect_signals(HERE / "everyday-heldout.json"))
        return 0
    print(f"memkit relevance calibration | {platform.machine()} | {ee.cpu_name() if hasattr(ee, 'cpu_name') else platform.processor()}")
    train = collect(ee.DEFAULT_DATA)
    held = collect(HERE / "everyday-heldout.json")
    cut = judge_rank.RELEVANCE_CONFIDENT
    shipped = judge_rank.RELEVANCE_WEIGHTS
    if not args.check:
        X, y = examples(train)
        part = fit(X[:, FITTED], y)
        w = np.zeros(X.shape[1] + 1)
        w[FITTED] = part[:-1]
        w[-1] = part[-1]
        print("fitted on bench/everyday.json: RELEVANCE_WEIGHTS = (" + ", ".join(f"{v:.2f}" for v in w) + ")")
        alone = fit(X[:, [0]], y)
        print(f"the cosine alone: COSINE_RELEVANCE = ({alone[0]:.2f}, {alone[1]:.2f})")
        report("fitted weights, bench/everyday.json (fitted on)", train, w, cut)
        report("fitted weights, bench/everyday-heldout.json (held out)", held, w, cut)
        sweep("fitted weights, bench/everyday.json", train, w)
        sweep("fitted weights, bench/everyday-heldout.json", held, w)
    print(f"\nshipped RELEVANCE_WEIGHTS = {shipped}, confident from {cut}")
    report("shipped weights, bench/everyday.json", train, shipped, cut)
    report("shipped weights, bench/everyday-heldout.json", held, shipped, cut)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
