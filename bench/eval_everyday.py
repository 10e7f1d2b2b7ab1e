#!/usr/bin/env python3
"""memkit's everyday-notes retrieval evaluation (`make eval`, beside LoCoMo).

``bench/everyday.json`` holds one fictional person's memory notes in nine categories (family,
health, home, work, food, hobbies, travel, money, tech; near-miss notes beside the ones asked
for) and questions worded the way people ask. The *plain* questions share no search term with
their answer (checked with memkit's own tokeniser and stemmer by tests/search/test_everyday_set.py):
they test whether a question finds its note by meaning. The *rare* group shares one rare exact
word (a part number, a name) with its answer: exact rare words must not be lost.

The notes are written into a real vault in a temporary folder (``Vault.init``, one topic file
per category, one ``- `` entry per note, in the JSON's order) and every question is run through
``Vault.search``:

- ``default``: ``Vault.search(q)`` as a user gets it: the default k (``max_memories_per_search``)
  and the default (``auto``) threshold; *empty* = no result at all; *cut* = the right note is in
  the hybrid top k without a threshold but absent from the default answer (the threshold removed it);
- ``hybrid``, ``lexical``, ``vector``: the ranker's modes with no threshold, k = 10.

Scores per category and overall: @1 = the right note first, @3 = in the top 3, MRR@10.

Two more groups test the assistant's flow and the scores' honesty:

- *message*: things a person says to their assistant ("should I order the shrimp pasta?") where
  exactly one note matters. Each goes through ``Vault.context(message)`` (stateless, the default
  budget) and the table says how often the block it returns holds that note's text, and through
  what: the *memories* layer (search hits) or the detected *topic*'s file; plus the default
  ``Vault.search(message)``'s @1 / @3 and whether the note is in the hybrid top 10 at all.
- *unanswerable*: questions that sound answerable but no note answers. The confidence table counts
  the default ``Vault.search`` answers whose first hit is ``confident`` (right or wrong), those
  with only weak hits (``confident=False``) and the empty ones, for every group; an unanswerable
  question should get nothing confident.

Targets (issue 40): with the default model, plain questions @1 >= 0.80 and @3 >= 0.95 through
``Vault.search``, first *and* confident >= 80 %; the block holds the note for >= 90 % of the
messages and for every safety message (a health note bears on it: ``"safety": true``); <= 5 % of
the unanswerable questions get a confident hit; every exact-word lookup (an
identifier one note alone holds, searched alone and in a question) finds its note first. ``--data bench/everyday-heldout.json`` runs the
held-out set (another person's notes, for confirmation only); ``--json FILE`` writes every item's
results.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as in the memkit CLI
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import memkit  # noqa: E402
import memkit.search.searcher  # noqa: E402
from memkit import Vault  # noqa: E402
from memkit.formats.words import terms  # noqa: E402
from memkit.search.rank import Ranker, RankParams  # noqa: E402

DEFAULT_DATA = ROOT / "bench" / "everyday.json"
MODES = ("default", "hybrid", "lexical", "vector")
TARGET_AT1, TARGET_AT3 = 0.80, 0.95  #: issue 40's targets
TARGET_BLOCK, TARGET_UNANSWERABLE = 0.90, 0.05  #: messages whose block holds the note; unanswerable with a confident hit
TARGET_RIGHT_CONFIDENT = 0.80  #: plain questions whose first hit is right and confident
GROUPS = ("plain", "rare", "message", "unanswerable")


def load_set(path: Path = DEFAULT_DATA) -> dict:
    """The set, each question given its ``group`` (``plain`` unless said) and ``category``
    (its first answer's; None for an unanswerable question)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    notes = {n["id"]: n for n in data["notes"]}
    for q in data["questions"]:
        q.setdefault("group", "plain")
        q["category"] = notes[q["answers"][0]]["category"] if q["answers"] else None
    return data


def shared_terms(question: str, note: str) -> set[str]:
    """Search terms (memkit.formats.words.terms: stop words dropped, stemmed) the two texts share."""
    return set(terms(question)) & set(terms(note))


def build_vault(root: Path, data: dict, model: str | None = None,
                embedder=None) -> tuple[Vault, dict[tuple[str, int], str]]:
    """A vault at ``root`` with one topic per category, using ``model`` (None: memkit's default
    resolution) or ``embedder``; (vault, (file, line) -> note id)."""
    Vault.init(root, profile=False)
    where: dict[tuple[str, int], str] = {}
    for cat in data["categories"]:
        lines = ["---", f"title: {cat.capitalize()}", "---", f"# {cat.capitalize()}", ""]
        for n in data["notes"]:
            if n["category"] == cat:
                lines.append(f"- {n['text']}")
                where[(f"topics/{cat}.md", len(lines))] = n["id"]  # 1-based line number
        (root / "topics" / f"{cat}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Vault(root, model=model, embedder=embedder), where


def _patch_params(overrides: dict) -> None:
    """Make the searcher's rankers use these RankParams (Searcher builds Ranker with defaults)."""
    params = dataclasses.replace(RankParams(), **overrides)

    class _Ranker(Ranker):
        def __init__(self, *a, **kw):
            if kw.get("base") is None and kw.get("params") is None and len(a) < 4:
                kw["params"] = params
            super().__init__(*a, **kw)

    memkit.search.searcher.Ranker = _Ranker  # type: ignore[misc]


def parse_set(items: list[str], ap: argparse.ArgumentParser) -> dict:
    types = {f.name for f in dataclasses.fields(RankParams)}
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in types:
            ap.error(f"unknown parameter {name!r}; known: {', '.join(sorted(types))}")
        cur = getattr(RankParams(), name)
        out[name] = (value.lower() in ("1", "true", "yes")) if isinstance(cur, bool) else type(cur)(value)
    try:
        RankParams(**out)
    except ValueError as exc:
        ap.error(str(exc))
    return out


def _search(vault: Vault, q: str, threshold, mode: str) -> list:
    if mode == "default":
        return vault.search(q) if threshold == "auto" else vault.search(q, threshold=threshold)
    return vault.search(q, k=10, threshold=None, mode=mode)  # type: ignore[arg-type]


def _in_block(block: str, text: str) -> bool:
    """Whether the context block shows the note ``text`` as an entry (``- text`` in the topic file
    layer, ``- text (topic: t)`` in the memories layer)."""
    return any(line == f"- {text}" or line.startswith(f"- {text} (") for line in block.splitlines())


def run(data: dict, vault: Vault, where: dict, threshold) -> list[dict]:
    """Per item: the ranked note ids of each mode (plain and rare questions: every mode; messages:
    default and hybrid; unanswerable: default), the default answer's hits with their scores and
    ``confident`` flags, and for a message what ``Vault.context`` made of it."""
    from memkit.search.safety import is_safety_note

    notes = {n["id"]: n for n in data["notes"]}
    health = [n for n in data["notes"] if is_safety_note(n["text"])]  # the notes a block adds when they bear
    rows = []
    for q in data["questions"]:
        modes = {"plain": MODES, "rare": MODES, "message": ("default", "hybrid")}.get(q["group"], ("default",))
        res, default = {}, []
        for mode in modes:
            hits = _search(vault, q["q"], threshold, mode)
            res[mode] = [where.get((h.file, h.line), "?") for h in hits]
            if mode == "default":
                default = [{"id": nid, "score": round(h.score, 4), "cosine": round(h.cosine, 4),
                            "lexical": round(h.lexical, 4), "confident": h.confident}
                           for nid, h in zip(res[mode], hits)]
        row = {**q, "ranked": res, "default": default}
        if q["group"] == "message":
            ctx = vault.context(q["q"])
            text = notes[q["answers"][0]]["text"]
            row["context"] = {"held": _in_block(ctx.text, text), "topic": ctx.topic, "tokens": ctx.tokens,
                              "memories": [where.get((h.file, h.line), "?") for h in ctx.memories],
                              "health": [n["id"] for n in health if _in_block(ctx.text, n["text"])]}
        rows.append(row)
    return rows


def lookup_words(data: dict) -> list[tuple[str, str]]:
    """(word as written, note id) for every identifying word (a digit or a joiner in it:
    memkit.search.exact.identifying) that one note alone holds."""
    from memkit.search.exact import identifying

    holders: dict[str, set[str]] = {}
    written: dict[str, str] = {}
    for n in data["notes"]:
        for t in terms(n["text"]):
            holders.setdefault(t, set()).add(n["id"])
        for raw in n["text"].split():
            word = raw.strip("\"'’‘“”.,;:!?()[]{}<>*`~")
            if identifying(word.lower()) and terms(word)[:1] == [word.lower().replace("'", "")]:
                written.setdefault(word.lower().replace("'", ""), word)
    return [(written[t], next(iter(holders[t]))) for t in sorted(written) if len(holders.get(t, ())) == 1]


def run_lookups(data: dict, vault: Vault, where: dict) -> list[dict]:
    """Each :func:`lookup_words` word searched alone and in a question: is its note first, and confident?"""
    out = []
    for word, nid in lookup_words(data):
        for q in (word, f"what do I have about {word}?"):
            hits = vault.search(q)
            got = [where.get((h.file, h.line), "?") for h in hits]
            out.append({"q": q, "note": nid, "first": bool(got) and got[0] == nid,
                        "confident": bool(hits) and hits[0].confident, "got": got[:3]})
    return out


def _rank(ranked: list[str], answers: list[str]) -> int | None:
    return next((i for i, nid in enumerate(ranked) if nid in answers), None)


def scores(rows: list[dict], mode: str) -> tuple[int, float, float, float]:
    """(n, @1, @3, MRR@10) of ``rows`` in ``mode``."""
    n = len(rows)
    if not n:
        return 0, 0.0, 0.0, 0.0
    ranks = [_rank(r["ranked"][mode][:10], r["answers"]) for r in rows]
    at1 = sum(1 for k in ranks if k == 0) / n
    at3 = sum(1 for k in ranks if k is not None and k < 3) / n
    mrr = sum(1 / (k + 1) for k in ranks if k is not None) / n
    return n, at1, at3, mrr


def print_table(rows: list[dict], title: str, cats: list[str], k_default: int) -> dict:
    print(f"\n{title}")
    head = f"{'category':<10}{'n':>4}" + "".join(f"  {m + ' @1':>11}{'@3':>6}{'MRR':>6}" for m in MODES)
    print(head + f"  {'empty':>6}{'cut':>5}")
    out = {}
    for cat in [*cats, "overall"]:
        sel = rows if cat == "overall" else [r for r in rows if r["category"] == cat]
        if not sel:
            continue
        cells = ""
        for m in MODES:
            n, a1, a3, mrr = scores(sel, m)
            out[(cat, m)] = (n, a1, a3, mrr)
            cells += f"  {a1:>11.3f}{a3:>6.3f}{mrr:>6.3f}"
        empty = sum(1 for r in sel if not r["ranked"]["default"])
        cut = sum(1 for r in sel if _rank(r["ranked"]["hybrid"][:k_default], r["answers"]) is not None
                  and _rank(r["ranked"]["default"], r["answers"]) is None)
        print(f"{cat:<10}{len(sel):>4}{cells}  {empty:>6}{cut:>5}")
    return out


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} {100 * k / n:3.0f} %" if n else "-"


def print_messages(rows: list[dict], cats: list[str]) -> tuple[int, int]:
    """The messages table; (messages whose block holds the note, messages)."""
    print("\nMessages (things said to the assistant; one note matters): block = Vault.context(message) "
          "holds the note (via its memories layer / via the detected topic's file); topic = the detected "
          "topic is the note's (right), another (wrong) or none; default @1/@3 = Vault.search(message); "
          "hybrid@10 = in the hybrid top 10 with no threshold")
    print(f"{'category':<10}{'n':>4}{'block':>15}{'memories':>10}{'topic':>7}  {'topic right/wrong/none':>22}"
          f"{'default @1':>12}{'@3':>6}{'empty':>7}{'hybrid@10':>11}")
    held = total = 0
    for cat in [*cats, "overall"]:
        sel = rows if cat == "overall" else [r for r in rows if r["category"] == cat]
        if not sel:
            continue
        n = len(sel)
        got = [r for r in sel if r["context"]["held"]]
        via_topic = sum(1 for r in got if r["context"]["topic"])
        right = sum(1 for r in sel if r["context"]["topic"] == r["category"])
        none = sum(1 for r in sel if not r["context"]["topic"])
        _, a1, a3, _ = scores(sel, "default")
        empty = sum(1 for r in sel if not r["ranked"]["default"])
        h10 = sum(1 for r in sel if _rank(r["ranked"]["hybrid"][:10], r["answers"]) is not None)
        print(f"{cat:<10}{n:>4}{_pct(len(got), n):>15}{len(got) - via_topic:>10}{via_topic:>7}  "
              f"{f'{right}/{n - right - none}/{none}':>22}{a1:>12.3f}{a3:>6.3f}{empty:>7}{h10:>11}")
        if cat == "overall":
            held, total = len(got), n
    safety = [r for r in rows if r.get("safety")]
    if safety:
        kept = sum(1 for r in safety if r["context"]["held"])
        print(f"safety messages (a health or safety note bears on them: an allergy and a dish to order, ...): "
              f"the block holds the note for {kept}/{len(safety)}")
        for r in safety:
            if not r["context"]["held"]:
                print(f"  missed: {r['q']!r} (needs {r['answers'][0]})")
    stray = [(r, strays(r)) for r in rows if strays(r)]
    if any("health" in r["context"] for r in rows):
        print(f"health notes in a block where they do not bear (neither the message's note nor named in its 'bears'): "
              f"{len(stray)}/{len(rows)} messages, {sum(len(s) for _, s in stray)} notes")
    return held, total


def strays(row: dict) -> list[str]:
    """The health notes (:func:`memkit.search.safety.is_safety_note`) in a message's block that do not
    bear on it: neither its note nor one its ``bears`` names."""
    bear = set(row["answers"]) | set(row.get("bears", ()))
    return [i for i in row["context"].get("health", ()) if i not in bear]


def confidence(row: dict) -> str:
    """What the default search answered: ``right`` / ``wrong`` (its first confident hit, in practice
    the first hit, is the right note or not), ``weak`` (only hits marked confident=False) or ``empty``."""
    hits = row["default"]
    if not hits:
        return "empty"
    first = next((h for h in hits if h["confident"]), None)  # the first hit, when the answer is confident
    if first is None:
        return "weak"
    return "right" if first["id"] in row["answers"] else "wrong"


def print_confidence(rows: list[dict]) -> tuple[int, int]:
    """The confidence table; (unanswerable questions with a confident hit, unanswerable questions)."""
    print("\nConfidence of the default Vault.search(q): first hit confident and right / confident "
          "and wrong (for unanswerable questions every confident hit is wrong), only weak hits "
          "(confident=False), nothing at all")
    print(f"{'group':<14}{'n':>4}{'confident right':>18}{'confident wrong':>18}{'weak only':>15}{'empty':>15}")
    out = (0, 0)
    for group in GROUPS:
        sel = [r for r in rows if r["group"] == group]
        if not sel:
            continue
        kinds = [confidence(r) for r in sel]
        n = len(sel)
        cells = [_pct(kinds.count(k), n) for k in ("right", "wrong", "weak", "empty")]
        if group == "unanswerable":
            cells[0] = "-"
            out = (kinds.count("wrong"), n)
        print(f"{group:<14}{n:>4}{cells[0]:>18}{cells[1]:>18}{cells[2]:>15}{cells[3]:>15}")
    return out


def print_misses(rows: list[dict], notes: dict, mode: str = "default") -> None:
    miss = [r for r in rows if _rank(r["ranked"][mode][:1], r["answers"]) is None]
    print(f"\nQuestions whose right note is not first ({mode}; rank of the right note in hybrid "
          f"without threshold, then what came first):")
    for r in miss:
        k = _rank(r["ranked"]["hybrid"][:10], r["answers"])
        got = r["ranked"][mode]
        first = notes[got[0]]["text"] if got and got[0] in notes else "(nothing)"
        d = _rank(got, r["answers"])
        print(f"  [{r['group']}/{r['category']}] {r['q']!r}: default rank {'-' if d is None else d + 1}, "
              f"hybrid rank {'-' if k is None else k + 1}; first: {first!r}")



def print_message_misses(rows: list[dict], notes: dict) -> None:
    print("\nMessages whose block does not hold the note (detected topic, default search rank, what came first):")
    for r in rows:
        if r["context"]["held"]:
            continue
        d = _rank(r["ranked"]["default"], r["answers"])
        got = r["ranked"]["default"]
        first = notes[got[0]]["text"] if got and got[0] in notes else "(nothing)"
        print(f"  [{r['category']}] {r['q']!r} -> {r['answers'][0]}: topic {r['context']['topic']}, "
              f"default rank {'-' if d is None else d + 1}; first: {first!r}")


def print_confident_unanswerable(rows: list[dict], notes: dict) -> None:
    print("\nUnanswerable questions with a confident hit (the first confident hit, its cosine):")
    for r in rows:
        hit = next((h for h in r["default"] if h["confident"]), None)
        if hit is not None:
            text = notes[hit["id"]]["text"] if hit["id"] in notes else hit["id"]
            print(f"  {r['q']!r}: {text!r} ({hit['cosine']:.3f})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="the set (default: %(default)s)")
    ap.add_argument("--model", default=None,
                    help="embedding model: a model2vec folder or id, or 'tokenlearn-static-model' "
                         "(default: what memkit resolves for a new vault: MEMKIT_MODEL, else memkit.yaml's "
                         "model, falling back to the offline model when that cannot be had)")
    ap.add_argument("--embedder", metavar="BASE_URL",
                    help="embed with an OpenAI-compatible /v1/embeddings server instead of a model "
                         "(memkit.yaml's embedder:), e.g. bench/teacher_server.py's URL")
    ap.add_argument("--threshold", default="auto",
                    help="threshold of the 'default' column: auto (memkit's default), a cosine, or none")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a RankParams default in the vault's searcher (repeatable)")
    ap.add_argument("--misses", action="store_true",
                    help="list the questions not answered first, the messages whose block lacks the note and "
                         "the unanswerable questions given a confident hit")
    ap.add_argument("--json", metavar="FILE", help="also write every item's results (rankings, hits, context) to FILE")
    ap.add_argument("--no-judge", action="store_true",
                    help="without the second stage (memkit.yaml judge: false): the static model and words alone")
    args = ap.parse_args(argv)
    threshold = args.threshold if args.threshold == "auto" else (
        None if args.threshold.lower() == "none" else float(args.threshold))
    overrides = parse_set(args.set, ap)
    if overrides:
        _patch_params(overrides)
    data = load_set(Path(args.data))
    notes = {n["id"]: n for n in data["notes"]}

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memkit-everyday-") as tmp:
        try:
            embedder = None
            if args.embedder:
                from memkit.config.settings import EmbedderSettings
                from memkit.embeddings.remote import HTTPEmbedder

                embedder = HTTPEmbedder(EmbedderSettings(base_url=args.embedder, model="server", timeout_s=300))
            vault, where = build_vault(Path(tmp) / "vault", data, args.model, embedder)
            if args.no_judge:
                with open(vault.root / "memkit.yaml", "a", encoding="utf-8") as fh:
                    fh.write("\njudge: false\n")
                vault = Vault(vault.root, model=args.model, embedder=embedder)
            report = vault.index()
            model, dim = vault.embedder.name, vault.embedder.dim
        except memkit.MemkitError as exc:
            print(f"eval_everyday: cannot build the vault / load the model: {exc}", file=sys.stderr)
            return 1
        t_index = time.perf_counter() - t0
        thr_used = vault.searcher.threshold() if threshold == "auto" else threshold
        t1 = time.perf_counter()
        rows = run(data, vault, where, threshold)
        t_search = time.perf_counter() - t1
        lookups = run_lookups(data, vault, where)
    n_search = sum(len(r["ranked"]) for r in rows)
    n_context = sum(1 for r in rows if "context" in r)

    by_group = {g: [r for r in rows if r["group"] == g] for g in GROUPS}
    plain, rare = by_group["plain"], by_group["rare"]
    cats = data["categories"]
    print(f"memkit retrieval eval — everyday notes ({_shown(Path(args.data))}, through Vault.search and Vault.context)")
    print(f"machine: {platform.platform()} | {platform.machine()} | {os.cpu_count()} cpus | "
          f"Python {platform.python_version()} | memkit {getattr(memkit, '__version__', '?')}")
    judged = vault.searcher.judge() is not None
    print(f"model: {model} ({dim}-d); second stage (the judge): "
          + (f"on, judge threshold {vault.searcher.judge_threshold():.2f}" if judged else
             f"off, default threshold: {thr_used}"))
    print(f"set: {len(data['notes'])} notes in {len(cats)} topics; {len(plain)} plain questions "
          f"(no shared search term with the answer), {len(rare)} rare-word questions, "
          f"{len(by_group['message'])} messages, {len(by_group['unanswerable'])} unanswerable questions")
    print("parameters: " + (f"RankParams defaults except {overrides}" if overrides else "RankParams defaults"))
    print("modes: default = Vault.search(q) (k=max_memories_per_search, threshold auto); "
          "hybrid/lexical/vector = no threshold, k=10")
    k_default = vault.config.max_memories_per_search
    res = print_table(plain, "Plain questions: right note first (@1), in the top 3 (@3), MRR@10; empty = the default "
                             f"search returned nothing; cut = right note in the hybrid top {k_default} without a threshold, "
                             "absent from the default answer (the threshold removed it)", cats, k_default)
    if rare:
        print_table(rare, "Rare exact-word questions (share one rare word with the answer):", [], k_default)
    held, n_msg = print_messages(by_group["message"], cats) if by_group["message"] else (0, 0)
    conf_wrong, n_un = print_confidence(rows)

    if lookups:
        first = sum(1 for r in lookups if r["first"])
        print(f"\nExact-word lookups (every identifier one note alone holds, asked as written and in a question): "
              f"first {first}/{len(lookups)}, confident {sum(1 for r in lookups if r['confident'])}/{len(lookups)}")
        for r in lookups:
            if not r["first"]:
                print(f"  missed: {r['q']!r} -> {r['got']!r}")

    print("\ntargets:")
    if lookups:
        print(f"  exact-word lookups first: 100%: {first}/{len(lookups)} -> {'met' if first == len(lookups) else 'NOT met'}")
    if plain:
        _, a1, a3, _ = res[("overall", "default")]
        ok = a1 >= TARGET_AT1 and a3 >= TARGET_AT3
        print(f"  plain questions, default search: @1 >= {TARGET_AT1:.2f} and @3 >= {TARGET_AT3:.2f}: "
              f"@1 {a1:.3f}, @3 {a3:.3f} -> {'met' if ok else 'NOT met'}")
        rc = sum(1 for r in plain if confidence(r) == "right") / len(plain)
        print(f"  plain questions, first hit right and confident: >= {TARGET_RIGHT_CONFIDENT:.0%}: {rc:.0%} -> "
              f"{'met' if rc >= TARGET_RIGHT_CONFIDENT else 'NOT met'}")
    if n_msg:
        print(f"  messages, the block holds the note: >= {TARGET_BLOCK:.0%}: {held}/{n_msg} = {held / n_msg:.0%} -> "
              f"{'met' if held / n_msg >= TARGET_BLOCK else 'NOT met'}")
    safety = [r for r in by_group["message"] if r.get("safety")]
    if safety:
        kept = sum(1 for r in safety if r["context"]["held"])
        print(f"  safety messages, the block holds the health note: 100%: {kept}/{len(safety)} -> "
              f"{'met' if kept == len(safety) else 'NOT met'}")
    if n_un:
        print(f"  unanswerable questions with a confident hit: <= {TARGET_UNANSWERABLE:.0%}: {conf_wrong}/{n_un} = "
              f"{conf_wrong / n_un:.0%} -> {'met' if conf_wrong / n_un <= TARGET_UNANSWERABLE else 'NOT met'}")
    print(f"timings: vault + index (model load included) {t_index:.1f} s ({report.entries} entries), "
          f"{1000 * t_search / max(n_search + n_context, 1):.1f} ms per search or context "
          f"({n_search} searches, {n_context} context blocks)")
    if args.misses:
        print_misses(plain + rare, notes)
        if by_group["message"]:
            print_message_misses(by_group["message"], notes)
        if by_group["unanswerable"]:
            print_confident_unanswerable(by_group["unanswerable"], notes)
    if args.json:
        Path(args.json).write_text(json.dumps({"data": _shown(Path(args.data)), "model": model, "dim": dim,
                                               "threshold": thr_used, "rows": rows}, indent=1, ensure_ascii=False),
                                   encoding="utf-8")
    return 0


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
