#!/usr/bin/env python3
"""Retrieval evaluation of memkit's ranking on LoCoMo (`make eval`).

Each LoCoMo conversation is loaded as its own "vault": one file per session, one entry per turn
written ``Speaker: text [image: caption] (YYYY-MM-DD)`` — the turn's image caption when it has one
and the session's date the way memkit dates entries — in file order. Every question with
evidence (categories 1-4) is searched in its conversation with the same ``memkit.search.rank.Ranker``
the product uses, in the three modes, and scored against the evidence turns:

- recall@k: fraction of the question's evidence turns in the top k, averaged over questions;
- MRR: mean of 1 / rank of the first evidence turn (0 when none is in the top 10).

The data (CC BY-NC 4.0) is read from ../shared/eval/ at run time and never copied into the
project; without it the script says so and exits 0.

It also calibrates the user-facing similarity threshold (``--thresholds``, on by default): for
each candidate value, the share of the evidence turns found in the hybrid top 10 that the
threshold keeps, and the share of results it drops for unrelated queries (every question run
against the *other* conversations). The recommended value is the highest one keeping >= 95 % of
the evidence found.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one query = one thread,
    os.environ.setdefault(_var, "1")                                          # as in the memkit CLI
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memkit.embeddings.judge import judge_status, shared_judge  # noqa: E402
from memkit.search.judge_rank import JudgeParams, fuse  # noqa: E402
from memkit.search.rank import RECOMMENDED_THRESHOLD, Ranker, RankParams  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "eval" / "locomo-dev.json"
DEFAULT_MODEL = ROOT.parent / "shared" / "models" / "m2v-minilm-256"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("lexical", "vector", "hybrid")
_DIA_RE = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")


@dataclass
class Conversation:
    texts: list[str]
    file_ids: np.ndarray
    questions: list[tuple[str, list[int], int]]  # (question, evidence entry indexes, category)
    vectors: np.ndarray | None = None
    query_vectors: np.ndarray | None = None
    judge_vectors: np.ndarray | None = None  # the judge's (memkit.embeddings.judge), for the "judged" mode
    judge_query_vectors: np.ndarray | None = None
    skipped: int = 0  # questions of categories 1-4 whose evidence names no turn


def _dia_key(s: str) -> tuple[int, int] | None:
    m = _DIA_RE.search(s)
    return (int(m.group(1)), int(m.group(2))) if m else None


_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}


def _iso_date(s: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08' (memkit's entry date format); else unchanged."""
    m = re.search(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", s)
    if not m or m.group(2).lower() not in _MONTHS:
        return s
    return f"{int(m.group(3)):04d}-{_MONTHS[m.group(2).lower()]:02d}-{int(m.group(1)):02d}"


def load_conversations(path: Path, *, captions: bool = True, dates: bool | str = False) -> list[Conversation]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    convs = []
    for item in data:
        conv = item["conversation"]
        sessions = sorted(
            (int(m.group(1)), k) for k in conv if (m := re.fullmatch(r"session_(\d+)", k))
        )
        texts: list[str] = []
        files: list[int] = []
        where: dict[tuple[int, int], int] = {}
        for fidx, (_num, key) in enumerate(sessions):
            date = conv.get(f"{key}_date_time", "")
            for turn in conv[key] or []:
                text = f"{turn.get('speaker', '?')}: {turn.get('text', '')}"
                if captions and turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                if dates and date:
                    text += f" ({_iso_date(date) if dates == 'iso' else date})"
                dk = _dia_key(str(turn.get("dia_id", "")))
                if dk is not None:
                    where.setdefault(dk, len(texts))
                texts.append(text)
                files.append(fidx)
        questions = []
        skipped = 0
        for qa in item.get("qa", []):
            cat = int(qa.get("category", 0))
            if cat not in CATEGORIES:
                continue
            ev: list[int] = []
            for e in qa.get("evidence") or []:
                for part in re.split(r"[;,]", str(e)):
                    dk = _dia_key(part)
                    if dk is not None and dk in where and where[dk] not in ev:
                        ev.append(where[dk])
            if ev:
                questions.append((str(qa["question"]), ev, cat))
            else:
                skipped += 1
        convs.append(Conversation(texts, np.asarray(files, dtype=np.int32), questions, skipped=skipped))
    return convs


def load_model(spec: str | None):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from model2vec import StaticModel

    if spec in (None, "", "default"):
        from memkit.embeddings.static import builtin_model_folder

        builtin = builtin_model_folder()  # memkit's default model, as a new vault gets it
        spec = str(builtin) if builtin else str(DEFAULT_MODEL) if DEFAULT_MODEL.exists() else "offline"
    if spec.startswith(("http://", "https://")):  # an embedding server (memkit.yaml's embedder:)
        from memkit.config.settings import EmbedderSettings
        from memkit.embeddings.remote import HTTPEmbedder

        server = HTTPEmbedder(EmbedderSettings(base_url=spec, model="server", timeout_s=300))

        class _Server:
            def encode(self, texts):
                return server.embed(list(texts))

        return _Server(), spec
    if spec == "offline":
        import static_model  # the tokenlearn-static-model package

        spec = os.path.join(os.path.dirname(static_model.__file__), "model")
    return StaticModel.from_pretrained(spec), spec


def embed(model, texts: list[str]) -> np.ndarray:
    v = np.asarray(model.encode(texts), dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.maximum(norms, 1e-12)


def embed_all(model, convs: list[Conversation]) -> None:
    for c in convs:
        c.vectors = embed(model, c.texts)
        c.query_vectors = embed(model, [q for q, _, _ in c.questions])


def judge_all(convs: list[Conversation]) -> bool:
    """The judge's vectors of every entry and question (memkit.embeddings.judge); False where it cannot run."""
    judge = shared_judge().judge()
    if judge is None:
        return False
    from memkit.index.judge_vectors import FILL_PASS

    for c in convs:
        c.judge_vectors = judge.embed(c.texts, FILL_PASS)  # as `memkit index` stores them (one a pass)
        c.judge_query_vectors = judge.embed([q for q, _, _ in c.questions])
    return True


def judged(r: Ranker, c: Conversation, qi: int, q: str, qv: np.ndarray, k: int = 10,
           jp: JudgeParams | None = None) -> list[int]:
    """The second stage as memkit.search.searcher runs it: the hybrid top ``jp.pool`` (no threshold)
    fused with the judge's cosines (memkit.search.judge_rank.fuse)."""
    jp = jp or JudgeParams()
    pool = r.search_hits(q, qv, k=jp.pool, threshold=None)
    if not pool:
        return []
    rows = np.array([p[0] for p in pool])
    cos = c.judge_vectors[rows] @ c.judge_query_vectors[qi]
    fused = fuse(np.array([p[1] for p in pool], dtype=np.float32), cos, r.speaker[rows] >= 0, jp)
    return rows[np.argsort(-fused, kind="stable")][:k].tolist()


def evaluate(convs: list[Conversation], params: RankParams | None = None, modes=MODES,
             threshold: float | None = None, rankers: list[Ranker] | None = None) -> dict:
    """Per-mode, per-question (category, recall@5, recall@10, rr) lists."""
    res: dict[str, list[tuple[int, float, float, float]]] = {m: [] for m in modes}
    for ci, c in enumerate(convs):
        r = rankers[ci] if rankers else Ranker(c.texts, c.vectors, c.file_ids, params)
        for qi, ((q, ev, cat), qv) in enumerate(zip(c.questions, c.query_vectors)):
            evs = set(ev)
            for mode in modes:
                if mode == "judged":
                    hits = judged(r, c, qi, q, qv)
                else:
                    hits = [i for i, _ in r.search(q, qv, k=10, mode=mode, threshold=threshold)]
                r5 = sum(1 for i in hits[:5] if i in evs) / len(evs)
                r10 = sum(1 for i in hits[:10] if i in evs) / len(evs)
                rr = next((1.0 / (rank + 1) for rank, i in enumerate(hits[:10]) if i in evs), 0.0)
                res[mode].append((cat, r5, r10, rr))
    return res


def summarise(rows: list[tuple[int, float, float, float]]) -> dict:
    out = {}
    a = np.asarray(rows, dtype=np.float64).reshape(-1, 4)
    for cat in [*CATEGORIES, 0]:
        sel = a if cat == 0 else a[a[:, 0] == cat]
        out[cat] = (len(sel), *(sel[:, 1:].mean(axis=0) if len(sel) else (0.0, 0.0, 0.0)))
    return out


def print_table(res: dict, title: str) -> None:
    print(f"\n{title}")
    print(f"{'category':<13}{'n':>5}  " + "  ".join(f"{m + ' r@5':>12}{'r@10':>7}{'MRR':>7}" for m in res))
    sums = {m: summarise(rows) for m, rows in res.items()}
    for cat in [*CATEGORIES, 0]:
        name = "overall" if cat == 0 else f"{cat} {CATEGORIES[cat]}"
        n = next(iter(sums.values()))[cat][0]
        cells = "  ".join(f"{s[cat][1]:>12.3f}{s[cat][2]:>7.3f}{s[cat][3]:>7.3f}" for s in sums.values())
        print(f"{name:<13}{n:>5}  {cells}")


def threshold_report(convs: list[Conversation], rankers: list[Ranker], grid: np.ndarray) -> float:
    """Print keep/drop shares per threshold; return the recommended one (>= 95 % kept)."""
    found_sims: list[float] = []    # similarity of evidence turns found in the hybrid top 10
    found_strong: list[bool] = []   # ... and whether they pass by the lexical rule anyway
    unrel_sims: list[float] = []    # results of unrelated queries (other conversations)
    unrel_strong: list[bool] = []
    keep = rankers[0].params.lexical_keep if rankers else 0.5
    for ci, (c, r) in enumerate(zip(convs, rankers)):
        for (q, ev, _), qv in zip(c.questions, c.query_vectors):
            comp = r.component_scores(q, qv)
            sim, cov = comp["similarity"], comp["coverage"]
            for i, _ in r.search(q, qv, k=10):
                if i in ev:
                    found_sims.append(float(sim[i]))
                    found_strong.append(bool(cov[i] >= keep))
        for cj, (_c2, r2) in enumerate(zip(convs, rankers)):
            if cj == ci:
                continue
            for (q, _, _), qv in zip(c.questions, c.query_vectors):
                comp = r2.component_scores(q, qv)
                sim, cov = comp["similarity"], comp["coverage"]
                for i, _ in r2.search(q, qv, k=10):
                    unrel_sims.append(float(sim[i]))
                    unrel_strong.append(bool(cov[i] >= keep))
    fs, fk = np.asarray(found_sims), np.asarray(found_strong)
    us, uk = np.asarray(unrel_sims), np.asarray(unrel_strong)
    print(f"\nThreshold calibration (hybrid top 10; kept = similarity >= T or lexical coverage >= {keep}):")
    print(f"{'T':>6} {'evidence kept':>14} {'unrelated dropped':>18}")
    best = float(grid[0])
    for t in grid:
        kept = float(((fs >= t) | fk).mean()) if fs.size else 0.0
        dropped = float(((us < t) & ~uk).mean()) if us.size else 0.0
        if kept >= 0.95:
            best = float(t)
        print(f"{t:>6.2f} {kept:>14.3f} {dropped:>18.3f}")
    print(f"recommended threshold (highest keeping >= 95 % of the evidence found): {best:.2f}")
    return best


def _top_overlap(a: list, b: list) -> float:
    """Share of the exact top-k ``b`` that the fast top-k ``a`` holds (1.0 when b is empty)."""
    ib = {i for i, _ in b}
    return len({i for i, _ in a} & ib) / len(ib) if ib else 1.0


def _exact_path(r: Ranker, fn):
    """Run ``fn`` with ranker ``r``'s fast path disabled."""
    saved, r.prefix = r.prefix, None
    try:
        return fn()
    finally:
        r.prefix = saved


def fast_report(convs: list[Conversation], rankers: list[Ranker], params: RankParams, candidates: int) -> int:
    """LoCoMo recall of the fast path (forced on, prefix scan included when the model has >= 128
    dimensions) next to the exact path's, and how often their top 10 agree."""
    import memkit.search.rank as rank

    saved = {k: getattr(rank, k) for k in ("FAST_MIN_N", "CANDIDATES", "LOW_CANDIDATES")}
    exact = evaluate(convs, params, modes=("lexical", "hybrid"), rankers=rankers)
    try:
        rank.FAST_MIN_N = 0
        rank.CANDIDATES, rank.LOW_CANDIDATES = candidates, max(4, candidates // 6)
        fast_rankers = [Ranker(c.texts, c.vectors, c.file_ids, params) for c in convs]
        if any(r.prefix is None for r in fast_rankers):
            print(f"note: the fast path needs >= 128 dimensions (this model: {convs[0].vectors.shape[1]}); "
                  "it is forced on anyway below, over the first dimensions")
            for r in fast_rankers:
                r.prefix = np.ascontiguousarray(r.vectors[:, :rank.PREFIX_DIMS].T)
        fast = evaluate(convs, params, modes=("lexical", "hybrid"), rankers=fast_rankers)
        agree = []
        for c, r in zip(convs, fast_rankers):
            for (q, _, _), qv in zip(c.questions, c.query_vectors):
                for thr in (None, 0.4):
                    agree.append(_top_overlap(r.search(q, qv, k=10, threshold=thr),
                                              _exact_path(r, lambda: r.search(q, qv, k=10, threshold=thr))))
    finally:
        for k, v in saved.items():
            setattr(rank, k, v)
    print(f"fast path forced on (CANDIDATES={candidates}, conversations of "
          f"{min(len(c.texts) for c in convs)}-{max(len(c.texts) for c in convs)} entries)")
    print_table(exact, "Exact path:")
    print_table(fast, "Fast path:")
    print(f"fast top 10 vs exact top 10 (hybrid, without and with threshold 0.4): "
          f"mean overlap {np.mean(agree):.3f}, identical sets {np.mean(np.asarray(agree) == 1.0):.3f}")
    return 0


def synth_fast_report(size: str, model_spec: str | None, n_queries: int = 200) -> int:
    """Fast path vs exact path of ``Ranker.search`` on a synthetic vault (bench/synth.py)."""
    import memkit.search.rank as rank
    sys.path.insert(0, str(ROOT / "bench"))
    from synth import iter_topics, make_queries, parse_size  # noqa: E402

    n = parse_size(size)
    model, model_path = load_model(model_spec)
    texts: list[str] = []
    files: list[int] = []
    for i, topic in enumerate(iter_topics(n)):
        texts += topic.entries
        files += [i] * len(topic.entries)
    t0 = time.perf_counter()
    vecs = embed(model, texts)
    t_embed = time.perf_counter() - t0
    queries = make_queries(n_queries)
    qvecs = embed(model, queries)
    t0 = time.perf_counter()
    r = Ranker(texts, vecs, np.asarray(files, dtype=np.int32))
    t_build = time.perf_counter() - t0
    fast_on = len(texts) >= rank.FAST_MIN_N
    print(f"synthetic vault {size}: {len(texts)} entries, {vecs.shape[1]}-d ({model_path}); embed {t_embed:.1f} s, "
          f"ranker build {t_build:.2f} s; fast path {'on' if fast_on else 'OFF (fewer than FAST_MIN_N entries)'}"
          f" (FAST_MIN_N={rank.FAST_MIN_N}, prefix scan: {r.prefix is not None}, PREFIX_DIMS={rank.PREFIX_DIMS}, "
          f"CANDIDATES={rank.CANDIDATES}); {len(queries)} queries, k=10, BLAS threads: "
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    print(f"{'mode / threshold':<22} {'recall@10 fast vs exact':>24} {'identical lists':>16} "
          f"{'exact p50':>10} {'fast p50':>9} {'ratio':>6}")
    for mode, thr in (("hybrid", None), ("hybrid", 0.4), ("vector", None)):
        res, times = {}, {}
        for name in ("exact", "fast"):
            run = (lambda f: _exact_path(r, f)) if name == "exact" else (lambda f: f())
            out, ts = [], []
            for rep in range(2):  # the second pass is timed warm
                for q, qv in zip(queries, qvecs):
                    t = time.perf_counter()
                    hits = run(lambda: r.search(q, qv, k=10, mode=mode, threshold=thr))
                    ts.append(time.perf_counter() - t)
                    if rep == 0:
                        out.append(hits)
            res[name], times[name] = out, float(np.median(ts[len(queries):])) * 1000
        rec = np.mean([_top_overlap(a, b) for a, b in zip(res["fast"], res["exact"])])
        same = np.mean([[i for i, _ in a] == [i for i, _ in b] for a, b in zip(res["fast"], res["exact"])])
        print(f"{mode + ' / ' + str(thr):<22} {rec:>24.3f} {same:>16.2f} {times['exact']:>8.2f}ms "
              f"{times['fast']:>7.2f}ms {times['exact'] / times['fast']:>5.1f}x")
    return 0


def parse_params(items: list[str], ap: argparse.ArgumentParser) -> RankParams:
    """RankParams with ``NAME=VALUE`` overrides (RankParams is frozen: a new one is made with
    dataclasses.replace, which also runs its checks)."""
    defaults = RankParams()
    names = [f.name for f in fields(RankParams)]
    overrides: dict[str, object] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in names:
            ap.error(f"--set {item!r}: use NAME=VALUE with NAME one of {', '.join(names)}")
        cur = getattr(defaults, name)
        try:
            if isinstance(cur, tuple):
                overrides[name] = tuple(float(x) for x in value.split(",") if x)
            elif isinstance(cur, bool):
                overrides[name] = value.strip().lower() in ("1", "true", "yes")
            else:
                overrides[name] = type(cur)(value)
        except ValueError:
            ap.error(f"--set {item!r}: {value!r} is not a {type(cur).__name__}")
    try:
        return replace(defaults, **overrides)
    except (TypeError, ValueError) as exc:
        ap.error(f"--set: {exc}")
    raise AssertionError("unreachable")  # ap.error exits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="LoCoMo JSON (default: %(default)s)")
    ap.add_argument("--model", default=None,
                    help="model2vec folder, 'offline' for the 64-d tokenlearn-static-model, or the base URL "
                         "of an OpenAI-compatible /v1/embeddings server (default: memkit's built-in model, "
                         f"else {DEFAULT_MODEL} if present, else offline)")
    ap.add_argument("--no-captions", action="store_true", help="leave image captions out of entries")
    ap.add_argument("--dates", choices=("iso", "raw", "none"), default="iso",
                    help="append the session date to each entry: as memkit writes entry dates "
                         "'(YYYY-MM-DD)' (iso, default), as LoCoMo writes it (raw), or not (none)")
    ap.add_argument("--no-thresholds", action="store_true", help="skip the threshold calibration")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a RankParams default (repeatable), e.g. --set lex_weight=0.6")
    ap.add_argument("--fast", type=int, nargs="?", const=50, default=None, metavar="CANDIDATES",
                    help="force the ranker's large-index fast path (memkit.search.rank._search_fast) on these "
                         "small conversations, with this many candidates (default 50; the product "
                         "uses it from FAST_MIN_N entries with CANDIDATES), and compare it with the exact path")
    ap.add_argument("--synth", metavar="SIZE", default=None,
                    help="instead of LoCoMo: on a synthetic vault of SIZE entries (bench/synth.py, e.g. "
                         "100k), the fast path's top 10 against the exact path's, and both latencies")
    args = ap.parse_args(argv)
    if args.synth:
        return synth_fast_report(args.synth, args.model)

    data = Path(args.data)
    if not data.exists():
        print(f"eval: LoCoMo data not found at {data}; nothing to evaluate (it is not shipped "
              "with memkit: CC BY-NC 4.0). Skipping.")
        return 0
    params = parse_params(args.set, ap)

    t0 = time.perf_counter()
    try:
        model, model_path = load_model(args.model)
    except (ImportError, OSError, ValueError) as exc:
        print(f"eval: cannot load the embedding model {args.model or 'default'!r}: {exc}", file=sys.stderr)
        return 1
    dates = {"iso": "iso", "raw": True, "none": False}[args.dates]
    convs = load_conversations(data, captions=not args.no_captions, dates=dates)
    embed_all(model, convs)
    t_embed = time.perf_counter() - t0
    dim = convs[0].vectors.shape[1] if convs else 0
    t1 = time.perf_counter()
    rankers = [Ranker(c.texts, c.vectors, c.file_ids, params) for c in convs]
    t_build = time.perf_counter() - t1
    if args.fast is not None:
        return fast_report(convs, rankers, params, args.fast)
    t_judge = time.perf_counter()
    modes = MODES + ("judged",) if judge_all(convs) else MODES
    t_judge = time.perf_counter() - t_judge
    t2 = time.perf_counter()
    res = evaluate(convs, params, modes=modes, rankers=rankers)
    t_search = time.perf_counter() - t2
    nq = sum(len(c.questions) for c in convs)

    print("memkit retrieval eval — LoCoMo dev conversations (turn level, categories 1-4)")
    print(f"machine: {platform.platform()} | {platform.machine()} | {os.cpu_count()} cpus | "
          f"Python {platform.python_version()} | numpy {np.__version__}")
    print(f"model: {model_path} ({dim}-d)")
    print(f"data: {data} — {len(convs)} conversations, {sum(len(c.texts) for c in convs)} entries, "
          f"{nq} questions ({sum(c.skipped for c in convs)} without usable evidence skipped); entries 'Speaker: text'{'' if args.no_captions else ' + image caption'}"
          f"{'' if args.dates == 'none' else ' + session date (' + args.dates + ')'}")
    changed = {f.name: getattr(params, f.name) for f in fields(RankParams)
               if getattr(params, f.name) != getattr(RankParams(), f.name)}
    print("parameters: " + ("RankParams defaults (memkit/rank.py)" if not changed
                            else f"defaults except {changed}"))
    print("judged: the second stage (memkit.search.judge_rank: the hybrid top "
          f"{JudgeParams().pool} re-scored with the judge, as Vault.search runs it)" if "judged" in modes
          else f"judged: not measured ({judge_status()})")
    print_table(res, "Recall@5 / recall@10 / MRR@10 by mode (no threshold):")
    sl, sh = summarise(res["lexical"]), summarise(res["hybrid"])
    worse = [f"{CATEGORIES.get(c, 'overall')} {m}" for c in sl for j, m in ((1, "r@5"), (2, "r@10"), (3, "MRR"))
             if sh[c][j] < sl[c][j] - 1e-9]
    print("hybrid vs lexical-only: " + ("never below" if not worse else "BELOW in " + ", ".join(worse)))
    print(f"\ntimings: embed+load {t_embed:.1f} s, ranker build {1000 * t_build / max(len(convs), 1):.1f} ms "
          f"per conversation, {1000 * t_search / max(nq * len(modes), 1):.2f} ms per search"
          + (f", judge vectors {t_judge:.1f} s" if "judged" in modes else ""))
    if not args.no_thresholds:
        grid = np.round(np.arange(0.0, 0.71, 0.05), 2)
        best = threshold_report(convs, rankers, grid)
        print(f"memkit's default for {dim}-d models (memkit.search.rank.RECOMMENDED_THRESHOLD): "
              f"{RECOMMENDED_THRESHOLD.get(dim, 'none')}")
        res_t = evaluate(convs, params, modes=("lexical", "hybrid"), threshold=best, rankers=rankers)
        print_table(res_t, f"With the recommended threshold {best:.2f} (applied in both modes):")
    return 0


if __name__ == "__main__":
    sys.exit(main())
