"""The judged search: the second stage (:mod:`memkit.search.judge_rank`) over the first stage's
candidates. The static stage's best ``pool`` (and every entry holding the query's rare identifying
words, :mod:`memkit.search.exact`) are embedded by the judge, fused, and kept in fused order: the
confident ones, and up to ``weak`` close ones marked ``confident=False``; an entry holding the
query's words is never lost."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from ..base.blas import single_thread
from ..index import IndexView, JudgeVectors
from .exact import ExactWords, exact_words
from .hits import Hit, hits_at
from .judge_rank import (
    EXACT_RELEVANCE,
    RELEVANCE_CONFIDENT,
    JudgeParams,
    cosine_relevance,
    fuse,
    relevance,
    relevance_features,
)
from .rank import NOISE_MIN_N, Ranker

__all__ = ["FALLBACK_FLOOR", "JUDGE_SURE", "WEAK_FLOOR", "judged_hits", "judged_relevance"]

WEAK_FLOOR = 0.2  #: a judged hit below this cosine is never shown, not even as weak
JUDGE_WORDS_KEEP = 0.8  #: a judged hit holding this share of the query's word weight is confident
#: a judged hit whose cosine reaches this is confident whatever its lead over the others (several
#: notes that all answer lead each other by little: "what rice do I use" in the cooking topic)
JUDGE_SURE = 0.55
#: with nothing confident nor above ``WEAK_FLOOR``, a judged search still shows the closest few whose
#: cosine reaches this and that stand this many standard deviations above the pool's mean, weak
FALLBACK_FLOOR = 0.1
FALLBACK_STANDING = 1.0

Keys = Callable[[IndexView, np.ndarray], list[int]]  #: the judge's key of each of a view's rows


def judged_relevance(cosines: np.ndarray, reference: int) -> np.ndarray:
    """:func:`memkit.search.judge_rank.relevance` of the judged candidates, its statistics read
    over the first ``reference`` of them (the pool, not the rows an exact word added: ``k`` and
    expired rows do not move it); from the cosine alone where the pool is too small for
    statistics (a few entries, a narrow filter)."""
    if reference < NOISE_MIN_N:
        return cosine_relevance(cosines)
    return relevance(cosines, reference=reference)


def judged_hits(judge: JudgeVectors, keys: Keys, params: JudgeParams, query: str, qt: list[tuple[int, int]],
                qvec: np.ndarray, view: IndexView, ranker: Ranker, k: int, threshold: float | None,
                mask: np.ndarray | None, gone: set[int], weak: int, calibrated: bool = False,
                exact_terms: tuple[Sequence[str], Sequence[int]] = ((), ())) -> list[Hit]:
    """The second stage (:mod:`memkit.search.judge_rank`): the static stage's best ``pool``
    candidates, before any threshold, fused with the judge's cosines, at most ``k`` in fused
    order: the confident ones, and among them up to ``weak`` whose judge cosine reaches
    ``WEAK_FLOOR``, marked ``confident=False``. ``keys``: the judge's key of each row
    (:meth:`memkit.search.Searcher.judge_keys`). :raises ModelError: the judge failed (the static
    stage answers)."""
    pool, reference, exact = _candidates(query, qt, qvec, view, ranker, max(params.pool, k), mask, gone, exact_terms)
    if not pool:
        return []
    rows = np.array([r[0] for r in pool], dtype=np.int64)
    cosines = judge.vectors([view.texts[i] for i in rows.tolist()], keys(view, rows)) @ judge.query(query)
    fused = fuse(np.array([r[1] for r in pool], dtype=np.float32), cosines, ranker.speaker[rows] >= 0, params)
    order = np.argsort(-fused, kind="stable").tolist()
    first = np.isin(rows, exact.rows)
    if first.any():  # the entries holding the query's rare identifying words come first
        order = [i for i in order if first[i]] + [i for i in order if not first[i]]
    own = ranker.lex.coverage(qt)[rows]
    rel = judged_relevance(cosines, reference)
    floor = np.float32(WEAK_FLOOR if threshold is None else min(float(threshold), WEAK_FLOOR))
    # an entry holding the query's rare identifier is confident where the query is hardly more than
    # it ("node-3", "where did I order item7x3?") or the judge does not rule it out
    pinned = first & (exact.alone | (cosines >= floor))
    rel[pinned] = np.maximum(rel[pinned], np.float32(EXACT_RELEVANCE))
    words = own >= np.float32(JUDGE_WORDS_KEEP)
    if threshold is None:
        sure = np.ones(len(rows), dtype=bool)
        chosen = order[:k]
    else:
        if calibrated:  # confident: the calibrated relevance says so and the judge's cosine reaches
            # its threshold (a lone far hit in a small vault leads the rest by far), or an exact rare word
            high = cosines >= np.float32(JUDGE_SURE)
            rel[high] = np.maximum(rel[high], cosine_relevance(cosines[high]))
            sure = ((rel >= np.float32(RELEVANCE_CONFIDENT)) & (cosines >= np.float32(threshold))) | pinned | high
        else:  # a judge_threshold set in memkit.yaml or asked for: on the judge's cosine
            # confident: the judge says so, or the entry holds the query's words (an exact rare word)
            # and the judge does not rule it out
            sure = (cosines >= np.float32(threshold)) | (words & (cosines >= floor))
        chosen = _chosen(order, sure, cosines, words, floor, k, weak,
                         fallback=calibrated and len(rows) >= NOISE_MIN_N)  # (a few entries: no statistics)
    hits = hits_at(view, [(int(rows[i]), float(fused[i]), pool[i][2], pool[i][3]) for i in chosen])
    return [replace(h, judge=float(cosines[i]), confident=bool(sure[i]), relevance=float(rel[i]))
            for h, i in zip(hits, chosen)]


def _candidates(query: str, qt: list[tuple[int, int]], qvec: np.ndarray, view: IndexView, ranker: Ranker, n: int,
                mask: np.ndarray | None, gone: set[int], exact_terms: tuple[Sequence[str], Sequence[int]]
                ) -> tuple[list[tuple[int, float, float, float]], int, ExactWords]:
    """The static stage's best ``n`` (before any threshold, none ``gone``), then every entry holding
    the query's rare identifying words that they missed: (the candidates, how many the static stage
    gave: the relevance's statistics are read over those, the exact rows)."""
    with single_thread():
        pool = ranker.search_hits(query, qvec, k=n + len(gone), mode="hybrid", threshold=None, mask=mask, qterms=qt)
    pool = [r for r in pool if r[0] not in gone]
    pool = pool[:n]
    reference = len(pool)  # the candidates the relevance's statistics are read over (not the rows added below)
    gone_rows = np.fromiter(gone, dtype=np.int64, count=len(gone))

    def allowed(rows: np.ndarray) -> np.ndarray:
        keep = np.ones(rows.shape[0], dtype=bool) if mask is None else mask[rows]
        return rows[keep & ~np.isin(rows, gone_rows)] if gone_rows.size else rows[keep]

    lex = ranker.lex
    exact = exact_words(query, *exact_terms, lambda tid: int(lex.df[tid]) if tid < lex.n_terms else 0,
                        lex.holders, view.texts.__getitem__, allowed)
    if exact.rows.size:  # an entry holding the query's rare identifier is judged even if the pool missed it
        inside = {r[0] for r in pool}
        extra = np.array([int(r) for r in exact.rows.tolist() if int(r) not in inside], dtype=np.int64)
        if extra.size:
            floor_score = min((r[1] for r in pool), default=0.0)
            cos = np.asarray(view.vectors[extra], dtype=np.float32) @ qvec
            bm25 = lex.scores_at(qt, extra)
            pool += [(int(r), floor_score, float(c), float(b)) for r, c, b in zip(extra.tolist(), cos, bm25)]
    return pool, reference, exact


def _chosen(order: list[int], sure: np.ndarray, cosines: np.ndarray, words: np.ndarray, floor: np.float32, k: int,
            weak: int, fallback: bool) -> list[int]:
    """Which candidates a thresholded judged search shows, in fused ``order``: the confident ones
    (``sure``), and up to ``weak`` close ones among them; with nothing confident nor close and a
    ``fallback`` (a calibrated threshold, a pool large enough for statistics), the closest few that
    stand out of the pool; and the entries holding the query's words (``words``), never lost."""
    chosen, unsure = [], 0
    for i in order:  # in fused order: the confident ones, and up to ``weak`` close ones among them
        if sure[i] or (unsure < weak and cosines[i] >= floor):
            unsure += not sure[i]
            chosen.append(i)
            if len(chosen) == k:
                break
    if fallback and not chosen and weak > 0:
        # nothing confident nor close: the closest few that stand out of the pool, weak (not
        # "no memories match" for a question whose answer the judge merely rates low: "is
        # there anything I react badly to?" -> the peanut allergy at a cosine of 0.11)
        standing = relevance_features(cosines)[:, 2]
        chosen = [i for i in order if cosines[i] >= FALLBACK_FLOOR and standing[i] >= FALLBACK_STANDING][:min(k, weak)]
    # an entry holding the query's words is never lost: one the judge rates below the floor
    # (a rare name or part number it does not know: "Garcima" ~0.15) is shown weak, in the room left
    if weak > 0:  # weak=0: confident hits only
        lost = [i for i in order if words[i] and not sure[i] and cosines[i] < floor][:k]
        while lost and len(chosen) + len(lost) > k and any(not sure[i] for i in chosen):
            chosen.remove(next(i for i in reversed(chosen) if not sure[i]))  # a close one makes room
        chosen += lost[:max(0, k - len(chosen))]
    return chosen
