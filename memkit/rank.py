"""Ranking: fusion of lexical (BM25) and vector (cosine) scores into one list.

Every entry has one stored vector: the L2-normalised embedding of its own text. Everything
else is computed here, at load or at query time, with a handful of numpy operations over all
entries (no Python loop over entries at query time).

Scoring, for a query q with embedding ``qv`` (all arrays have one value per entry):

1. ``cosine = vectors @ qv``.
2. Context vector: ``vector = (1 - m) * cosine + m * ctx_cosine``, where ``ctx_cosine`` is the
   exact cosine between q and the normalised sum of the entry's vector and its previous same-file
   entries' vectors (weights ``vec_context_weights``). Computed from ``cosine`` shifted by one or two
   rows and per-row dot products prepared at load, so no extra vectors are stored.
3. Lexical: BM25 (``memkit.lexical.BM25Index``) over each entry's text plus, at a lower weight,
   the entries before it in the same file (``context``, ``context_weight``), light stemming.
4. Fusion (hybrid mode): ``lex_weight * lexical / max(lexical)`` +
   ``(1 - lex_weight) * (vector - floor) / (max(vector) - floor)`` where ``floor`` is the median
   vector score (so the vector half spreads over the entries that are more similar than usual).
5. Person/entity signal: when the query names someone who speaks entries (entries written
   ``Name: text``), those entries get ``+ speaker_boost``; entries whose own text mentions a
   capitalised name the query names get ``+ mention_boost``.
6. Neighbour smoothing: ``+ smooth_prev * score(previous entry) + smooth_next * score(next
   entry)`` within a file (an answer sits next to its question).
7. File prior: ``+ file_prior * max(score over the entry's file)`` (a file that holds a very good
   match is a relevant file).

The result score of hybrid mode is the fused score divided by its maximum possible value, so
it lies in [0, 1] and is only meant for ordering. Modes ``"vector"`` and ``"lexical"`` return
the raw ``vector`` similarity (a cosine) and the raw BM25 score.

Threshold semantics (``threshold`` argument, memkit's ``embedding_similarity_threshold``): an
entry is kept when its vector similarity (``max(cosine, ctx_cosine)``, a real cosine, so the same
scale the model's users know) is at least ``threshold``, OR when it has a strong lexical match:
its own text holds at least ``lexical_keep`` (default 0.5) of the query's IDF mass — i.e. most of
the informative query words (see ``BM25Index.coverage``). Rare exact words are never lost to the
threshold. ``threshold=None`` keeps everything (pure top-k). In lexical mode only entries with a
lexical match are returned at all. Recommended thresholds (chosen with ``bench/eval.py``, see
its ``--thresholds`` report) are in ``RECOMMENDED_THRESHOLD``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from memkit.lexical import BM25Index, tokenize

__all__ = ["RankParams", "Ranker", "RECOMMENDED_THRESHOLD", "speaker_of"]

# Recommended value of the user-facing threshold per model dimension (see module docstring).
RECOMMENDED_THRESHOLD: dict[int, float] = {256: 0.30, 64: 0.30}


@dataclass
class RankParams:
    """Every weight of the ranking, with the defaults tuned on bench/eval.py."""

    # lexical index
    k1: float = 1.2
    b: float = 0.5
    context: int = 2                 # previous same-file entries indexed with each entry
    context_weight: float = 0.5      # their term counts' weight
    # vector side
    vec_context_weights: tuple[float, ...] = (0.5,)   # weights of previous entries in ctx vector
    vec_context_mix: float = 0.5     # share of ctx_cosine in the vector score
    # fusion
    lex_weight: float = 0.5
    vec_floor: str = "median"        # "median" | "min" | "zero": 0 point of the vector half
    speaker_boost: float = 0.0
    mention_boost: float = 0.0
    smooth_prev: float = 0.0
    smooth_next: float = 0.0
    file_prior: float = 0.0
    # threshold rule
    lexical_keep: float = 0.5


_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽΑ-ΩА-Я"
_NAME = rf"[{_UPPER}][\w'’.-]{{0,30}}(?:[ \t][{_UPPER}][\w'’.-]{{0,30}}){{0,2}}"
# "Name: text", optionally after a list marker and a "[kind]" prefix; \x00 separates entries.
_SPEAKER_BODY = rf"[ \t]*(?:[-*+][ \t]+)?(?:\[[^\]\n\x00]{{1,30}}\][ \t]*)?({_NAME})[ \t]*:[ \t\n]"
_SPEAKER_RE = re.compile(_SPEAKER_BODY)
_SPEAKERS_RE = re.compile("\x00" + _SPEAKER_BODY)


def speaker_of(text: str) -> str | None:
    """The speaker/person an entry is written by, when it starts with ``Name:`` (or None)."""
    m = _SPEAKER_RE.match(text)
    return m.group(1) if m else None


class Ranker:
    """Scores entries for a query; see the module docstring for the formula."""

    def __init__(
        self,
        texts: Sequence[str],
        vectors: np.ndarray,
        file_ids: np.ndarray | Sequence[int] | None = None,
        params: RankParams | None = None,
    ) -> None:
        self.params = p = params or RankParams()
        n = len(texts)
        self.n = n
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != n:
            raise ValueError(f"vectors must be ({n}, d); got {vecs.shape}")
        self.vectors = vecs
        self.dim = vecs.shape[1]
        if file_ids is None:
            files = np.zeros(n, dtype=np.int64)
        else:
            files = np.asarray(file_ids, dtype=np.int64).reshape(-1)
            if files.shape[0] != n:
                raise ValueError(f"file_ids has {files.shape[0]} items for {n} entries")
        self.file_ids = files
        self.lex = BM25Index(texts, k1=p.k1, b=p.b, file_ids=files, context=p.context,
                             context_weight=p.context_weight)
        # same-file neighbours: prev_ok[i] = entry i-1 is in i's file
        self.prev_ok = np.zeros(n, dtype=bool)
        if n > 1:
            self.prev_ok[1:] = files[1:] == files[:-1]
        # contiguous runs of one file (segments) for the file prior
        starts = np.flatnonzero(np.concatenate([[True], ~self.prev_ok[1:]])) if n else np.zeros(0, np.int64)
        self.seg_starts = starts
        self.seg_of = (np.cumsum(~self.prev_ok) - 1) if n else np.zeros(0, np.int64)
        self._prepare_vector_context()
        self._prepare_people(texts)

    # -- load-time preparation ------------------------------------------------------------------
    def _prepare_vector_context(self) -> None:
        """Per-row pieces of ||sum_j w_j v_{i-j}||, so ctx cosines need only shifted cosines."""
        w = [1.0, *[float(x) for x in self.params.vec_context_weights]]
        n, v = self.n, self.vectors
        lags = len(w) - 1
        # ok[l][i]: entry i-l exists and is in i's file
        ok = [np.ones(n, dtype=bool)]
        for lag in range(1, lags + 1):
            o = np.zeros(n, dtype=bool)
            if n > lag:
                o[lag:] = ok[lag - 1][lag:] & self.prev_ok[1:n - lag + 1]
            ok.append(o)
        dots = {}
        for lag in range(1, lags + 1):
            d = np.zeros(n, dtype=np.float32)
            if n > lag:
                d[lag:] = np.einsum("ij,ij->i", v[lag:], v[:-lag])
            dots[lag] = d
        norm2 = np.zeros(n, dtype=np.float32)
        for j in range(lags + 1):
            for k in range(lags + 1):
                wjk = np.float32(w[j] * w[k])
                both = ok[max(j, k)]
                if j == k:
                    norm2 += np.where(both, wjk, 0).astype(np.float32)
                else:
                    lag = abs(j - k)
                    lo = min(j, k)  # dot(v_{i-j}, v_{i-k}) = dots[lag][i - lo]
                    dd = np.zeros(n, dtype=np.float32)
                    if lo:
                        dd[lo:] = dots[lag][:-lo]
                    else:
                        dd = dots[lag]
                    norm2 += np.where(both, wjk * dd, 0).astype(np.float32)
        self._ctx_w = w
        self._ctx_ok = ok
        self._ctx_inv = (1.0 / np.sqrt(np.maximum(norm2, 1e-12))).astype(np.float32)

    def _prepare_people(self, texts: Sequence[str]) -> None:
        """Speaker of each entry (``Name: ...``), found in one regex pass over all texts."""
        sp = np.full(self.n, -1, dtype=np.int32)
        names: list[str] = []
        if self.n:
            joined = "\x00" + "\x00".join(texts)
            if joined.count("\x00") != self.n:
                joined = "\x00" + "\x00".join(t.replace("\x00", " ") for t in texts)
            found = [(m.start(), m.group(1)) for m in _SPEAKERS_RE.finditer(joined)]
            if found:
                lens = np.fromiter(map(len, texts), dtype=np.int64, count=self.n) + 1
                starts = np.cumsum(lens) - lens
                pos = np.fromiter((f[0] for f in found), dtype=np.int64, count=len(found))
                idx = np.searchsorted(starts, pos)
                names = list(dict.fromkeys(f[1] for f in found))
                name_id = dict(zip(names, range(len(names))))
                sp[idx] = np.fromiter((name_id[f[1]] for f in found), dtype=np.int32, count=len(found))
        self.speaker = sp
        self.speaker_names = names
        self._speaker_terms = [set(tokenize(s)) for s in names]

    # -- query time -----------------------------------------------------------------------------
    def _shift(self, x: np.ndarray, lag: int) -> np.ndarray:
        """x[i - lag] where that entry is in i's file, else 0."""
        out = np.zeros_like(x)
        if lag < self.n:
            out[lag:] = x[:-lag]
        out *= self._ctx_ok[lag]
        return out

    def vector_scores(self, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, ctx_cosine, vector score)."""
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, index has {self.dim}")
        nq = float(np.linalg.norm(q))
        if nq > 0 and abs(nq - 1.0) > 1e-3:
            q = q / nq
        cos = self.vectors @ q
        if len(self._ctx_w) > 1:
            acc = cos.copy()
            for lag in range(1, len(self._ctx_w)):
                acc += np.float32(self._ctx_w[lag]) * self._shift(cos, lag)
            ctx = acc * self._ctx_inv
        else:
            ctx = cos
        m = np.float32(self.params.vec_context_mix)
        vec = (1 - m) * cos + m * ctx
        return cos, ctx, vec

    def _people_boost(self, query: str, qterms: set[str]) -> np.ndarray | None:
        p = self.params
        out = None
        if p.speaker_boost and self.speaker_names:
            hit = [i for i, ts in enumerate(self._speaker_terms) if ts and ts & qterms]
            if hit:
                m = np.isin(self.speaker, np.asarray(hit, dtype=np.int32))
                out = m.astype(np.float32) * np.float32(p.speaker_boost)
        if p.mention_boost:
            # capitalised words of the query that are not its first word, plus speaker names
            caps = {w for w in _CAP_RE.findall(query)[1:]} | {
                self.speaker_names[i] for i, ts in enumerate(self._speaker_terms) if ts and ts & qterms
            }
            ids = {self.lex.vocab.get(t, -1) for c in caps for t in tokenize(c)}
            ids.discard(-1)
            if ids:
                m = np.zeros(self.n, dtype=bool)
                for tid in ids:
                    s, e = self.lex.indptr[tid], self.lex.indptr[tid + 1]
                    m[self.lex.docs[s:e][self.lex.own[s:e]]] = True
                add = m.astype(np.float32) * np.float32(p.mention_boost)
                out = add if out is None else out + add
        return out

    def component_scores(self, query: str, query_vec: np.ndarray | None,
                         mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """All per-entry scores: cosine, ctx_cosine, vector, lexical, coverage, fused."""
        p = self.params
        n = self.n
        lex = self.lex.scores(query)
        out: dict[str, np.ndarray] = {"lexical": lex}
        if query_vec is None:
            out["fused"] = lex.copy()
            return out
        cos, ctx, vec = self.vector_scores(query_vec)
        out.update(cosine=cos, ctx_cosine=ctx, vector=vec)
        sel = slice(None) if mask is None else mask
        if n == 0:
            out["fused"] = np.zeros(0, np.float32)
            return out
        lv = lex[sel]
        lmax = float(lv.max()) if lv.size else 0.0
        lex_n = lex / np.float32(lmax) if lmax > 0 else np.zeros_like(lex)
        vv = vec[sel]
        vmax = float(vv.max()) if vv.size else 0.0
        if p.vec_floor == "median":
            floor = float(np.median(vv)) if vv.size else 0.0
        elif p.vec_floor == "min":
            floor = float(vv.min()) if vv.size else 0.0
        else:
            floor = 0.0
        span = vmax - floor
        vec_n = np.maximum(vec - np.float32(floor), 0) / np.float32(span) if span > 0 else np.zeros_like(vec)
        a = np.float32(p.lex_weight)
        fused = a * lex_n + (1 - a) * vec_n
        top = 1.0
        qterms = set(tokenize(query))
        boost = self._people_boost(query, qterms)
        if boost is not None:
            fused += boost
        top += p.speaker_boost + p.mention_boost
        if p.smooth_prev or p.smooth_next:
            sm = fused.copy()
            if p.smooth_prev:
                sm += np.float32(p.smooth_prev) * self._shift(fused, 1)
            if p.smooth_next and n > 1:
                nxt = np.zeros_like(fused)
                nxt[:-1] = fused[1:] * self.prev_ok[1:]
                sm += np.float32(p.smooth_next) * nxt
            fused = sm
            top *= 1 + p.smooth_prev + p.smooth_next
        if p.file_prior and self.seg_starts.size:
            segmax = np.maximum.reduceat(fused, self.seg_starts)
            fused = fused + np.float32(p.file_prior) * segmax[self.seg_of]
            top *= 1 + p.file_prior
        out["fused"] = fused / np.float32(top)
        return out

    def search(
        self,
        query: str,
        query_vec: np.ndarray | None,
        k: int = 10,
        mode: str = "hybrid",
        threshold: float | None = None,
        mask: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best entries as (index, score), best first. See module docstring."""
        if mode not in ("hybrid", "vector", "lexical"):
            raise ValueError(f"unknown search mode {mode!r}")
        if self.n == 0 or k <= 0:
            return []
        if mask is not None:
            mask = np.asarray(mask, dtype=bool).reshape(-1)
            if mask.shape[0] != self.n:
                raise ValueError(f"mask has {mask.shape[0]} items for {self.n} entries")
        if query_vec is None and mode != "lexical":
            raise ValueError(f"mode {mode!r} needs a query vector")
        comp = self.component_scores(query, query_vec if mode != "lexical" else None, mask)
        if mode == "lexical":
            score = comp["lexical"]
            allowed = score > 0
        elif mode == "vector":
            score = comp["vector"]
            allowed = np.ones(self.n, dtype=bool)
        else:
            score = comp["fused"]
            allowed = np.ones(self.n, dtype=bool)
        if mask is not None:
            allowed &= mask
        if threshold is not None:
            keep = self.lex.coverage(query) >= self.params.lexical_keep
            if mode != "lexical" and "cosine" in comp:
                keep |= np.maximum(comp["cosine"], comp["ctx_cosine"]) >= threshold
            elif query_vec is not None:
                cos, ctx, _ = self.vector_scores(query_vec)
                keep |= np.maximum(cos, ctx) >= threshold
            allowed &= keep
        cand = np.flatnonzero(allowed)
        if cand.size == 0:
            return []
        s = score[cand]
        if cand.size > k:
            part = np.argpartition(-s, k - 1)[:k]
            cand, s = cand[part], s[part]
        order = np.lexsort((cand, -s))  # best first, ties by entry order
        return [(int(cand[i]), float(s[i])) for i in order]
