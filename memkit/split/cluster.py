"""Grouping a topic's entries for a split: TF-IDF rows over shared words, mixed with the
embeddings, then spherical k-means for each k with the best cosine silhouette winning (see
:mod:`memkit.split.split`). Pure numpy; same input, same result. Every similarity goes through
:func:`memkit.base.similarity.similarities` (never a BLAS self-product; never inf/NaN used)."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ..base.similarity import similarities

__all__ = ["SEED", "lexical", "features", "cluster"]

SEED = 20260212  #: k-means seed: a split is reproducible
_N_INIT = 4  #: k-means restarts per k
_MAX_ITER = 60
_SILHOUETTE_SAMPLE = 1000  #: rows the silhouette is computed on (evenly spaced): bounds time and memory
_FIT_SAMPLE = 1000  #: rows k-means is fitted on
_LEXICAL_WEIGHT = 0.5  #: share of shared words (TF-IDF) against the embedding in the similarity
_LEXICAL_WORDS = 512
_LEXICAL_CELLS = 4_000_000


def lexical(docs: list[set[str]]) -> np.ndarray:
    """TF-IDF rows, one per document (its words), over the words that at least two documents share
    (the most shared ``_LEXICAL_WORDS``)."""
    df: Counter[str] = Counter(w for d in docs for w in d)
    n = len(docs)
    width = max(32, min(_LEXICAL_WORDS, _LEXICAL_CELLS // max(n, 1)))  # bounded memory on huge topics
    vocab = sorted((w for w, c in df.items() if c >= 2), key=lambda w: (-df[w], w))[:width]
    column = {w: j for j, w in enumerate(vocab)}
    L = np.zeros((n, len(vocab)), dtype=np.float32)
    for i, d in enumerate(docs):
        for w in d:
            j = column.get(w)
            if j is not None:
                L[i, j] = math.log(n / df[w]) + 0.1  # +0.1: a word every entry has still counts a little
    norms = np.linalg.norm(L, axis=1, keepdims=True)
    return np.divide(L, norms, out=np.zeros_like(L), where=norms > 1e-12)


def features(E: np.ndarray, L: np.ndarray) -> np.ndarray:
    """Unit rows whose dot product is the mean of the embedding cosine and the lexical cosine."""
    X = np.hstack([E * math.sqrt(1 - _LEXICAL_WEIGHT), L * math.sqrt(_LEXICAL_WEIGHT)])
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 1e-12)


def cluster(X: np.ndarray, min_part: int, max_parts: int) -> tuple[np.ndarray, int]:
    """Labels 0..k-1 per row, -1 for the general part (small clusters, zero rows); and k."""
    n = len(X)
    labels = np.full(n, -1, dtype=np.int64)
    valid = np.flatnonzero(np.linalg.norm(X, axis=1) > 0.5)
    Xv = X[valid]
    m = len(Xv)
    k_max = min(max_parts, max(2, m // min_part), m)
    best: tuple[float, int, np.ndarray] | None = None
    for k in range(2, k_max + 1):
        assign = _kmeans(Xv, k)
        sizes = np.bincount(assign, minlength=k)
        kept = sizes >= min_part
        if not kept.any():
            continue
        score = _silhouette(Xv, np.where(kept[assign], assign, -1))
        if best is None or score > best[0] + 1e-9:
            best = (score, k, assign)
    if best is None:
        return labels, 0
    _, k, assign = best
    sizes = np.bincount(assign, minlength=k)
    # Parts in the order their first entry appears in the parent; small clusters -> general.
    order = [c for c in dict.fromkeys(int(a) for a in assign) if sizes[c] >= min_part]
    remap = {c: i for i, c in enumerate(order)}
    for row, c in zip(valid, assign):
        labels[row] = remap.get(int(c), -1)
    return labels, len(order)


def _kmeans(X: np.ndarray, k: int) -> np.ndarray:
    """Spherical k-means (cosine), seeded k-means++ start, best of a few restarts.

    A large topic is fitted on evenly spaced sample rows, then every row joins its nearest centroid.
    """
    if len(X) > _FIT_SAMPLE:
        sample = X[np.linspace(0, len(X) - 1, _FIT_SAMPLE).astype(np.int64)]
        C = _centroids(sample, _kmeans(sample, k), k)
        assign = np.argmax(similarities(X, C), axis=1)
        counts = np.bincount(assign, minlength=k)
        for empty in np.flatnonzero(counts == 0).tolist():  # keep k clusters: an empty one takes its closest row
            assign[int(np.argmax(similarities(X, C[empty:empty + 1])[:, 0]))] = empty
        return assign
    best_assign: np.ndarray | None = None
    best_score = -math.inf
    for run in range(_N_INIT):
        rng = np.random.default_rng(SEED + 7919 * k + run)
        C = _kmeanspp(X, k, rng)
        assign = np.full(len(X), -1, dtype=np.int64)
        for _ in range(_MAX_ITER):
            sims = similarities(X, C)
            new = np.argmax(sims, axis=1).astype(np.int64)
            for c in range(k):  # an emptied cluster takes the point its centroid fits worst
                if not np.any(new == c):
                    fit = sims[np.arange(len(X)), new]
                    counts = np.bincount(new, minlength=k)
                    fit = np.where(counts[new] > 1, fit, np.inf)
                    new[int(np.argmin(fit))] = c
            if np.array_equal(new, assign):
                break
            assign = new
            C = _centroids(X, assign, k)
        score = float(np.sum(similarities(X, C)[np.arange(len(X)), assign]))
        if score > best_score + 1e-9:
            best_score, best_assign = score, assign.copy()
    assert best_assign is not None
    return best_assign


def _kmeanspp(X: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = len(X)
    chosen = [int(rng.integers(n))]
    closest = 1.0 - similarities(X, X[chosen[0]:chosen[0] + 1])[:, 0]
    for _ in range(1, k):
        weights = np.clip(closest.astype(np.float64), 0.0, None) ** 2
        total = weights.sum()
        idx = int(rng.choice(n, p=weights / total)) if total > 1e-12 else int(rng.integers(n))
        chosen.append(idx)
        closest = np.minimum(closest, 1.0 - similarities(X, X[idx:idx + 1])[:, 0])
    return X[chosen].copy()


def _centroids(X: np.ndarray, assign: np.ndarray, k: int) -> np.ndarray:
    C = np.zeros((k, X.shape[1]), dtype=X.dtype)
    for c in range(k):
        C[c] = X[assign == c].sum(axis=0)
    norms = np.linalg.norm(C, axis=1, keepdims=True)
    return np.divide(C, norms, out=np.zeros_like(C), where=norms > 1e-12)


def _silhouette(X: np.ndarray, labels: np.ndarray) -> float:
    """Mean cosine silhouette; rows labelled -1 (not a cluster) score 0."""
    n = len(X)
    if n > _SILHOUETTE_SAMPLE:
        pick = np.linspace(0, n - 1, _SILHOUETTE_SAMPLE).astype(np.int64)
        X, labels = X[pick], labels[pick]
        n = len(X)
    clusters = sorted(set(int(c) for c in labels if c >= 0))
    if len(clusters) < 2:
        return -1.0 if not clusters else 0.0
    D = 1.0 - similarities(X)  # never numpy's X @ X.T (BLAS SYRK: wrong on some Arm chips)
    onehot = np.stack([(labels == c).astype(np.float64) for c in clusters], axis=1)
    sums = D @ onehot
    counts = onehot.sum(axis=0)
    scores = np.zeros(n)
    for i in range(n):
        if labels[i] < 0:
            continue
        own = clusters.index(int(labels[i]))
        if counts[own] <= 1:
            continue
        a = (sums[i, own] - D[i, i]) / (counts[own] - 1)
        b = min(sums[i, j] / counts[j] for j in range(len(clusters)) if j != own)
        scores[i] = (b - a) / max(a, b, 1e-12)
    return float(scores.mean())

