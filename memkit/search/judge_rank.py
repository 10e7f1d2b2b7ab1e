"""The second search stage: the judge re-scores the static stage's best candidates.

The static stage (:class:`memkit.search.rank.Ranker`: words and the static model) ranks every entry and
hands over its best ``pool`` candidates, before any threshold. The judge (:mod:`memkit.embeddings.judge`)
gives each its cosine with the query; the two are fused by min-max over the pool::

    fused = a * (score - min) / (max - min) + (1 - a) * (judge - min) / (max - min)

(a score alike for every candidate — one candidate — counts 1) with ``a`` per entry:
``note_weight`` in notes, where people ask in other words than they wrote and the judge knows best, ``conversation_weight`` in conversations (``Name: text`` turns), where
questions name people, dates and rare words that the word score holds. Each weight was chosen on
memkit's own sets (``make eval``: the everyday notes and LoCoMo's dev conversations) as the one
at least as good as the better of the two scores alone on each.

**Confident** hits are those whose judge cosine reaches the threshold (``judge_threshold``,
calibrated on the everyday set's answerable and unanswerable questions) or whose own text holds
``JUDGE_WORDS_KEEP`` of the query's word weight with a cosine of at least ``WEAK_FLOOR``
(:mod:`memkit.search.searcher`); a word holder the judge puts below that floor (a name it never
saw) is shown weak, in the room ``k`` leaves: an exact name or part number is never dropped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["JudgeParams", "fuse", "relevance", "relevance_features", "JUDGE_THRESHOLD", "RELEVANCE_WEIGHTS",
           "RELEVANCE_CONFIDENT", "EXACT_RELEVANCE", "COSINE_RELEVANCE", "cosine_relevance"]

#: the judge's cosine a confident hit reaches where memkit.yaml sets ``judge_threshold`` to a
#: number (before the calibrated relevance, the default's own rule)
JUDGE_THRESHOLD = 0.40
#: the calibrated relevance's weights over :func:`relevance_features` and its bias
#: (``bench/calibrate_relevance.py``: a logistic fit on bench/everyday.json's questions, checked on
#: bench/everyday-heldout.json)
RELEVANCE_WEIGHTS = (1.01, 0.0, 1.98, 0.0, -6.84)
#: the same fit on the judge's cosine alone (weight, bias): the relevance of a hit whose cosine is
#: high whatever the others' (``memkit.search.searcher.JUDGE_SURE``: several notes that all answer)
COSINE_RELEVANCE = (20.84, -8.30)
RELEVANCE_CONFIDENT = 0.7  #: a hit whose relevance reaches this (and whose cosine reaches the threshold) is confident
EXACT_RELEVANCE = 0.95  #: the relevance of an entry holding the query's rare identifying word (:mod:`.exact`)


def relevance_features(cosines: np.ndarray, coverage: np.ndarray | None = None,
                       reference: int | None = None) -> np.ndarray:
    """What the relevance reads of each candidate, from the judge's cosines of the pool (float64
    ``(n, 4)``): its cosine, its lead over the best other candidate (negative for all but the
    first), how far it stands above the pool's mean in standard deviations, and the share of the
    query's word weight its own text holds (``coverage``; None: 0). ``reference``: the mean and
    deviation are those of the first this many candidates (the pool the search asked for, not
    rows added to it), so that the number a hit gets does not move with ``k``."""
    c = np.asarray(cosines, dtype=np.float64)
    n = c.shape[0]
    out = np.zeros((n, 4), dtype=np.float64)
    if coverage is not None:
        out[:, 3] = np.asarray(coverage, dtype=np.float64)
    if not n:
        return out
    out[:, 0] = c
    if n > 1:
        order = np.argsort(-c, kind="stable")
        best, second = c[order[0]], c[order[1]]
        out[:, 1] = c - best
        out[order[0], 1] = best - second
    ref = c if reference is None else c[:reference]
    if ref.shape[0] > 2:
        out[:, 2] = (c - ref.mean()) / max(float(ref.std()), 1e-3)
    return out


def cosine_relevance(cosines: np.ndarray) -> np.ndarray:
    """:func:`relevance` from the judge's cosine alone (``COSINE_RELEVANCE``), float32."""
    a, b = COSINE_RELEVANCE
    return (1.0 / (1.0 + np.exp(-(np.asarray(cosines, dtype=np.float64) * a + b)))).astype(np.float32)


def relevance(cosines: np.ndarray, coverage: np.ndarray | None = None,
              weights: tuple[float, ...] = RELEVANCE_WEIGHTS, reference: int | None = None) -> np.ndarray:
    """How likely each candidate answers the query (0..1, float32): a logistic of
    :func:`relevance_features` (``reference`` as there) with ``weights`` (four, then the bias),
    calibrated on memkit's everyday sets. Not normalised to the best hit: a query the vault
    cannot answer gets low values throughout."""
    f = relevance_features(cosines, coverage, reference)
    w = np.asarray(weights[:4], dtype=np.float64)
    return (1.0 / (1.0 + np.exp(-(f @ w + float(weights[4]))))).astype(np.float32)


@dataclass(frozen=True)
class JudgeParams:
    """The second stage's settings (defaults chosen with ``make eval``)."""

    pool: int = 50  #: candidates the static stage hands over (before any threshold)
    note_weight: float = 0.05  #: the static score's share in notes
    conversation_weight: float = 0.8  #: … in conversations

    def __post_init__(self) -> None:
        for name in ("note_weight", "conversation_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.pool < 1:
            raise ValueError(f"pool must be at least 1, got {self.pool}")


def _minmax(x: np.ndarray) -> np.ndarray:
    """``x`` scaled to [0, 1]; all alike (one candidate: a search filtered down to one entry) are
    each the best, 1 (a lone hit scored 0.00)."""
    lo, hi = float(x.min()), float(x.max())
    return (x - np.float32(lo)) * np.float32(1 / (hi - lo)) if hi > lo else np.ones_like(x)


def fuse(static: np.ndarray, judge: np.ndarray, conversation: np.ndarray,
         params: JudgeParams = JudgeParams()) -> np.ndarray:
    """The fused score of each candidate (see the module docstring), in [0, 1].

    :param static: the static stage's scores; :param judge: the judge's cosines;
    :param conversation: whether each candidate is a conversation turn.
    """
    static = np.asarray(static, dtype=np.float32)
    judge = np.asarray(judge, dtype=np.float32)
    a = np.where(np.asarray(conversation, dtype=bool), np.float32(params.conversation_weight),
                 np.float32(params.note_weight))
    return a * _minmax(static) + (1 - a) * _minmax(judge)
