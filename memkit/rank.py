"""Ranking: fusion of lexical (BM25) and vector (cosine) scores into one list.

Every entry has one stored vector: the L2-normalised embedding of its own text (no neighbours,
so moving a line re-embeds nothing). Everything else is computed here, at load time or at query
time, with a handful of numpy operations over all entries (no Python loop over entries).

Scoring of a query ``q`` with embedding ``qv`` (every array has one value per entry):

1. ``cosine = vectors @ qv`` (the one matrix-vector product).
2. ``ctx_cosine``: the exact cosine between ``qv`` and the normalised sum of the entry's vector
   and its previous same-file entry's (weight ``vec_context_weights``), computed from ``cosine``
   shifted by one row and per-row dot products prepared at load. ``vector = (1 - m) * cosine +
   m * ctx_cosine`` with ``m = vec_context_mix``.
3. ``lexical``: BM25 (``memkit.lexical.BM25Index``, light stemming, stop words) over each entry's
   text plus the ``context`` previous entries of its file at weight ``context_weight`` — a turn
   or a line often only makes sense with the one before it.
4. Hybrid fusion: ``lex_weight * lexical / max(lexical) + (1 - lex_weight) * (vector - min) /
   (max - min)`` (max/min over the entries the mask allows). With ``lex_weight > 0.5`` the best
   lexical match always outranks every entry with no query word (before steps 5-7), so exact
   rare words ("hAP ax3", "node-3") are never drowned by the vector side.
5. Person signal: entries written ``Name: text`` (a speaker, optionally after a list marker or
   ``[kind]``) get ``+ speaker_boost`` when the query names that person. General, not tied to
   any data set: on conversational memory most questions are about someone.
6. Neighbour smoothing: ``+ smooth_next * score(next entry)`` (and ``smooth_prev``) within a
   file: an answer follows its question.
7. File prior: ``+ file_prior * max(score in the entry's file)``: a file holding a very good
   match is a relevant file (a topic, a session).

Hybrid scores are divided by their largest possible value, so they lie in [0, 1]; they only
order results (a top hit typically scores 0.6-0.95) and are not comparable across queries. Mode ``"vector"`` returns ``vector`` (a
cosine) and mode ``"lexical"`` the BM25 score; those two are the pure one-sided rankings.

Threshold (``threshold``; memkit's ``embedding_similarity_threshold`` / ``--threshold``): an
entry is kept when its similarity ``max(cosine, ctx_cosine)`` — a true cosine, on the model's
own scale — is at least ``threshold``, OR when it has a strong lexical match: its own text
holds at least ``lexical_keep`` (0.5) of the IDF mass of the query words the vault knows,
i.e. most of the informative query words (``BM25Index.coverage``). So the threshold removes unrelated results but never an
exact match. ``None`` disables it. Without a query vector (lexical mode with no model) it does
not apply: every entry with a query word is a result.

``RECOMMENDED_THRESHOLD`` holds the default per model dimension, chosen with ``bench/eval.py``
(LoCoMo dev conversations): the highest value, in steps of 0.05, that keeps at least 95 % of
the evidence turns the hybrid top 10 finds without threshold. For the 256-d model2vec model
(m2v-minilm-256, same kind and size as potion-base-8M) that is 0.40 (96.2 % kept; it drops 30 %
of the results of unrelated queries); for the 64-d tokenlearn-static-model 0.45 (96.1 % kept,
16 % of unrelated results dropped: a weaker model separates less). The original design's
0.7 would keep only about half of the evidence with these models.

Large indexes (``FAST_MIN_N`` entries and more, hybrid mode, no mask): ``_search_fast`` gives
the same ranking without the full-length passes of steps 2-7. An approximate cosine of every
entry (from ``PREFIX_MIN_N`` entries: over the first ``PREFIX_DIMS`` dimensions of a contiguous
copy, a quarter of the memory read at 256-d; model2vec's dimensions are PCA-ordered), a proxy of
the fused score on it picks ``CANDIDATES`` entries, and the exact fusion runs on them and their
neighbours. On a synthetic 100k vault its top 10 holds 99.4 % of the exact path's (bench/eval.py
--synth 100k); LoCoMo recall is unchanged with it forced on (--fast).

Tuned defaults (``RankParams``), 3 LoCoMo dev conversations, 383 questions, recall@5 / @10:
lexical-only 0.676 / 0.752, vector-only 0.432 / 0.536 (256-d) and 0.194 / 0.274 (64-d), hybrid
0.738 / 0.807 (256-d) and 0.730 / 0.792 (64-d); hybrid is at or above lexical-only in every
category and metric for both models. Each step above was kept only when it helped both models;
dev figures are optimistic (the other 7 LoCoMo conversations are kept aside).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .lexical import BM25Index, encode_terms
from .text import terms as text_terms

__all__ = ["RankParams", "Ranker", "RECOMMENDED_THRESHOLD", "speaker_of"]

# Recommended value of the user-facing threshold per model dimension (see module docstring).
RECOMMENDED_THRESHOLD: dict[int, float] = {256: 0.40, 64: 0.45}


# Fast path of ``Ranker.search`` on large indexes (see ``_search_fast``).
THRESHOLD_MARGIN = 0.15  # a non-candidate whose estimated cosine is this far below the threshold cannot pass it
FAST_MIN_N = 20000       # from this many entries, the fusion runs on candidates only ...
PREFIX_MIN_N = 20000     # ... when the index has the approximate scan: this many entries, and
                         # >= 128 dimensions (at 64-d the exact scan is as cheap: no gain measured)
PREFIX_DIMS = 64         # ... over the first dimensions (model2vec's are PCA-ordered)
CANDIDATES = 400         # entries kept by the approximate fused score (before neighbours)
VEC_CANDIDATES = 64      # entries of highest approximate cosine, added (the vector half's max)
LOW_CANDIDATES = 64      # entries of lowest approximate cosine, for the fusion's floor ("min")
FLOOR_SAMPLE = 1024      # fixed entries whose exact vector score gives the "median" floor


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
    lex_weight: float = 0.6          # > 0.5: the best lexical match beats any entry with none
    vec_floor: str = "min"           # "min" | "median" | "zero": 0 point of the vector half
    speaker_boost: float = 0.3       # entries spoken by a person the query names
    smooth_prev: float = 0.0         # share of the previous entry's score (context already does it)
    smooth_next: float = 0.1         # share of the next entry's score (an answer follows a question)
    file_prior: float = 0.3          # share of the best score in the entry's file
    # threshold rule
    lexical_keep: float = 0.5        # share of the query's IDF mass that passes any threshold

    def __post_init__(self) -> None:
        if not 0.0 <= self.lex_weight <= 1.0:
            raise ValueError(f"lex_weight must be in [0, 1], got {self.lex_weight}")
        if self.vec_floor not in ("min", "median", "zero"):
            raise ValueError(f"vec_floor must be min, median or zero, got {self.vec_floor!r}")
        if not 0 <= self.context <= 3:
            raise ValueError(f"context must be 0..3, got {self.context}")
        self.vec_context_weights = tuple(float(w) for w in self.vec_context_weights)


_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽΑ-ΩА-Я"
_NAME = rf"[{_UPPER}][\w'’.-]{{1,30}}(?:[ \t][{_UPPER}][\w'’.-]{{0,30}}){{0,2}}"
# What may stand before the colon of "Name: text": a list marker, a "[kind]", the name.
_PREFIX_RE = re.compile(rf"[ \t]*(?:[-*+][ \t]+)?(?:\[[^\]\n]{{1,30}}\][ \t]*)?({_NAME})[ \t]*")
_MAX_PREFIX = 40  # bytes


def speaker_of(text: str) -> str | None:
    """The person an entry is spoken/written by, when it starts with ``Name:`` (else None)."""
    head, colon, rest = text.partition(":")
    if not colon or (rest and not rest[0].isspace()) or len(head.encode("utf-8", "surrogatepass")) > _MAX_PREFIX:
        return None
    m = _PREFIX_RE.fullmatch(head)
    return m.group(1) if m else None


def speaker_of(text: str) -> str | None:
    """The name in an entry written ``Name: text`` (after an optional list marker or ``[kind]``)."""
    colon = text.find(":", 0, _MAX_PREFIX + 1)
    if colon < 1 or (colon + 1 < len(text) and not text[colon + 1].isspace()):
        return None
    m = _PREFIX_RE.fullmatch(text[:colon])
    return m.group(1) if m else None


def _speakers(texts: Sequence[str], file_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Speaker id of every entry (-1: none) and the speaker names.

    A ``Name:`` prefix names a speaker only in a file that reads like a conversation: at least
    half of its entries start with a name, and some name starts two of them or more. So a note
    like ``Rice: soak it overnight`` or ``TODO: call the plumber`` among ordinary entries is never
    taken for a person speaking."""
    n = len(texts)
    sp = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return sp, []
    prefix = [speaker_of(t) for t in texts]
    names: dict[str, int] = {}
    starts = np.flatnonzero(np.concatenate([[True], file_ids[1:] != file_ids[:-1]]))
    ends = np.append(starts[1:], n)
    for a, b in zip(starts.tolist(), ends.tolist()):
        named = [p for p in prefix[a:b] if p is not None]
        if 2 * len(named) < b - a or len(set(named)) == len(named):
            continue
        for i in range(a, b):
            p = prefix[i]
            if p is not None:
                sp[i] = names.setdefault(p, len(names))
    return sp, list(names)


def _floor_pick(n: int) -> np.ndarray:
    """The fixed sample of entries whose vector scores give the fast path's floor."""
    return np.unique(np.linspace(0, n - 1, min(n, FLOOR_SAMPLE)).astype(np.int64)) if n else np.zeros(0, np.int64)


def _top_candidates(x: np.ndarray, c: int, largest: bool = True) -> np.ndarray:
    """Indexes of the ``c`` largest (or smallest) values of ``x`` (ties broken arbitrarily),
    unsorted: the cut is estimated on a strided subsample, so the whole array is read only by
    one comparison (an argpartition over all of it costs several times more)."""
    n = x.shape[0]
    if n <= 4 * c:
        sel = np.argpartition(-x if largest else x, c - 1)[:c] if c < n else np.arange(n)
        return sel
    sub = np.sort(x[::max(1, n // (4 * c))])
    m = sub.shape[0]
    kth = min(m - 1, int(2 * c * m / n) + 2)  # about twice c above the cut
    if largest:
        idx = np.flatnonzero(x >= sub[m - 1 - kth])
    else:
        idx = np.flatnonzero(x <= sub[kth])
    if idx.shape[0] < c:
        return np.argpartition(-x if largest else x, c - 1)[:c]
    if idx.shape[0] > c:
        v = x[idx]
        idx = idx[np.argpartition(-v if largest else v, c - 1)[:c]]
    return idx


def _add_vector_half(fused: np.ndarray, vec: np.ndarray, floor: float, vmax: float, a: np.float32) -> None:
    """Add the vector half of the fusion in place: ``(1 - a) * (vec - floor) / (vmax - floor)``,
    clipped at 0 (entries below the floor add nothing)."""
    span = vmax - floor
    if span > 0:
        t = vec - np.float32(floor)
        np.maximum(t, 0, out=t)
        t *= (1 - a) / np.float32(span)
        fused += t


class Ranker:
    """Scores entries for a query; see the module docstring for the formula."""

    def __init__(
        self,
        texts: Sequence[str],
        vectors: np.ndarray,
        file_ids: np.ndarray | Sequence[int] | None = None,
        params: RankParams | None = None,
        *,
        terms: tuple[np.ndarray, np.ndarray, dict[str, int]] | None = None,
    ) -> None:
        """:param terms: the texts' search terms already encoded (``(term ids, offsets, vocab)``
        as :func:`memkit.lexical.encode_terms` gives them); encoded from ``texts`` when None."""
        self.params = p = params or RankParams()
        n = len(texts)
        self.n = n
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != n:
            raise ValueError(f"vectors must be ({n}, d); got {vecs.shape}")
        self.vectors = vecs
        self.dim = vecs.shape[1]
        files = np.zeros(n, dtype=np.int64) if file_ids is None else np.asarray(file_ids, dtype=np.int64).reshape(-1)
        if files.shape[0] != n:
            raise ValueError(f"file_ids has {files.shape[0]} items for {n} entries")
        self.file_ids = files
        term_ids, offsets, vocab = terms if terms is not None else encode_terms(texts)
        self.lex = BM25Index(term_ids, offsets, vocab, k1=p.k1, b=p.b, file_ids=files, context=p.context,
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
        self._prepare_fast()

    # -- load-time preparation ------------------------------------------------------------------
    def _prepare_vector_context(self) -> None:
        """Per-row pieces of ||sum_j w_j v_{i-j}||, so ctx cosines need only shifted cosines."""
        w = [1.0, *[float(x) for x in self.params.vec_context_weights]]
        n, v = self.n, self.vectors
        lags = len(w) - 1
        # ok[l][i]: entry i-l exists and is in i's file
        ok = [np.ones(n, dtype=bool)]
        for lag in range(1, max(lags, 1) + 1):  # lag 1 is also used by neighbour smoothing
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

    def _use_prefix(self) -> bool:
        return self.n >= PREFIX_MIN_N and self.dim >= 128

    def _prepare_fast(self) -> None:
        """For the fast path: a fixed sample of entries (and the entries before them, for their
        context cosines) whose exact vector scores give the fusion's floor; from PREFIX_MIN_N
        entries, a contiguous copy of the first PREFIX_DIMS dimensions (the approximate scan)
        and of the sample's rows."""
        n = self.n
        lags = len(self._ctx_w) - 1
        pick = self._floor_pick = _floor_pick(n)
        rows = np.unique(np.concatenate([np.maximum(pick - lag, 0) for lag in range(lags + 1)]))
        self._floor_rows = rows  # the sample's rows and their previous entries (sorted)
        self._prefix = self._floor_vecs = None
        if self._use_prefix():
            self._prefix = np.ascontiguousarray(self.vectors[:, :PREFIX_DIMS])
            self._floor_vecs = np.ascontiguousarray(self.vectors[rows])

    def _prepare_people(self, texts: Sequence[str]) -> None:
        self.speaker, self.speaker_names = _speakers(texts, self.file_ids)
        self._speaker_terms = [set(text_terms(s)) for s in self.speaker_names]

    # -- query time -----------------------------------------------------------------------------
    def _shift(self, x: np.ndarray, lag: int) -> np.ndarray:
        """x[i - lag] where that entry is in i's file, else 0."""
        out = np.zeros_like(x)
        if lag < self.n:
            out[lag:] = x[:-lag]
        out *= self._ctx_ok[lag]
        return out

    def _unit_query(self, query_vec: np.ndarray) -> np.ndarray:
        """The query vector as float32 of the index's dimension, scaled to unit length."""
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, index has {self.dim}")
        nq = float(np.linalg.norm(q))
        if nq > 0 and abs(nq - 1.0) > 1e-3:
            q = q / np.float32(nq)
        return q

    def vector_scores(self, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, ctx_cosine, vector score) of every entry; one matrix-vector product."""
        q = self._unit_query(query_vec)
        cos = self.vectors @ q
        if len(self._ctx_w) > 1:
            acc = cos.copy()
            for lag in range(1, len(self._ctx_w)):
                acc += np.float32(self._ctx_w[lag]) * self._shift(cos, lag)
            ctx = acc * self._ctx_inv
        else:
            ctx = cos
        m = np.float32(self.params.vec_context_mix)
        vec = (1 - m) * cos + m * ctx if m else cos
        return cos, ctx, vec

    def _vector_only(self, query_vec: np.ndarray) -> np.ndarray:
        """``vector_scores(q)[2]`` as ``cos * A + sum_lag cos[i - lag] * B_lag``, with per-entry
        coefficients folded from the context norms and weights (3 passes instead of ~10)."""
        m = float(self.params.vec_context_mix)
        if not m or len(self._ctx_w) == 1:
            return self.vector_scores(query_vec)[2]
        q = self._unit_query(query_vec)
        cos = self.vectors @ q
        key = (m, tuple(self._ctx_w))
        coef_a = self._cached("vec_a", key, lambda: ((1 - m) + m * self._ctx_inv).astype(np.float32))
        vec = cos * coef_a
        for lag in range(1, len(self._ctx_w)):
            if lag >= self.n:
                break
            coef_b = self._cached(f"vec_b{lag}", key, lambda: (m * self._ctx_w[lag] * self._ctx_inv
                                                                * self._ctx_ok[lag]).astype(np.float32))
            vec[lag:] += cos[:-lag] * coef_b[lag:]
        return vec

    def _named_speakers(self, qterms: set[str]) -> list[int]:
        return [i for i, ts in enumerate(self._speaker_terms) if ts and ts & qterms]

    def _people_boost(self, query: str, qterms: set[str]) -> np.ndarray | None:
        p = self.params
        out = None
        named = self._named_speakers(qterms) if self.speaker_names else []
        if p.speaker_boost and named:
            lut = np.zeros(len(self.speaker_names) + 1, dtype=np.float32)  # [-1]: no speaker
            lut[named] = np.float32(p.speaker_boost)
            out = lut[self.speaker]
        return out

    def _cached(self, name: str, key: object, make) -> np.ndarray:
        """A per-entry array derived at query time from the built arrays and a query-time weight."""
        cache = self.__dict__.setdefault("_derived", {})
        got = cache.get(name)
        if got is None or got[0] != key:
            got = cache[name] = (key, make())
        return got[1]

    def _fuse(self, query: str, qterms: set[str], lex: np.ndarray, vec: np.ndarray,
              mask: np.ndarray | None) -> np.ndarray:
        p = self.params
        n = self.n
        lv = lex if mask is None else lex[mask]
        vv = vec if mask is None else vec[mask]
        lmax = float(lv.max()) if lv.size else 0.0
        a = np.float32(p.lex_weight)
        fused = lex * (a / np.float32(lmax)) if lmax > 0 else np.zeros(n, dtype=np.float32)
        if vv.size:
            vmax = float(vv.max())
            floor = {"min": lambda: float(vv.min()), "median": lambda: float(np.median(vv)),
                     "zero": lambda: 0.0}[p.vec_floor]()
            _add_vector_half(fused, vec, floor, vmax, a)
        top = 1.0
        boost = self._people_boost(query, qterms)
        if boost is not None:
            fused += boost
        top += p.speaker_boost
        if (p.smooth_prev or p.smooth_next) and n > 1:
            sm = fused.copy()
            if p.smooth_prev:
                sm += np.float32(p.smooth_prev) * self._shift(fused, 1)
            if p.smooth_next:
                sm[:-1] += fused[1:] * self._cached("next_w", p.smooth_next, lambda: (
                    np.float32(p.smooth_next) * self.prev_ok[1:]).astype(np.float32))
            fused = sm
        top *= 1 + p.smooth_prev + p.smooth_next
        if p.file_prior and self.seg_starts.size:
            segmax = np.maximum.reduceat(fused, self.seg_starts)
            segmax *= np.float32(p.file_prior)
            fused += np.repeat(segmax, self._cached("seg_len", 0, lambda: np.diff(np.append(self.seg_starts, n))))
        top *= 1 + p.file_prior
        fused *= np.float32(1.0 / top)
        return fused

    def component_scores(self, query: str, query_vec: np.ndarray | None,
                         mask: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Every per-entry score, for debugging and ``--json``: ``lexical`` (BM25),
        ``coverage`` (share of the query's IDF mass in the entry's own text), and with a query
        vector ``cosine``, ``ctx_cosine``, ``vector``, ``similarity`` (what the threshold
        compares: max of cosine and ctx_cosine); ``fused`` is the hybrid score (the BM25 score
        when there is no query vector)."""
        qt = self.lex.query_terms(query)
        lex = self.lex.scores(qt)
        out: dict[str, np.ndarray] = {"lexical": lex, "coverage": self.lex.coverage(qt)}
        if query_vec is not None:
            cos, ctx, vec = self.vector_scores(query_vec)
            out.update(cosine=cos, ctx_cosine=ctx, vector=vec, similarity=np.maximum(cos, ctx))
            mask = self._check_mask(mask)
            out["fused"] = self._fuse(query, set(text_terms(query)), lex, vec, mask)
        else:
            out["fused"] = lex  # without a query vector the ranking is the lexical one
        return out

    def _check_mask(self, mask: np.ndarray | None) -> np.ndarray | None:
        if mask is None:
            return None
        mask = np.asarray(mask, dtype=bool).reshape(-1)
        if mask.shape[0] != self.n:
            raise ValueError(f"mask has {mask.shape[0]} items for {self.n} entries")
        return mask

    def _vec_at(self, e: np.ndarray, cosfn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, ctx_cosine, vector) of the entries ``e`` only, as ``vector_scores`` computes
        them; ``cosfn(rows)`` gives the exact cosine of any rows."""
        cos = cosfn(e)
        if len(self._ctx_w) > 1:
            acc = cos.copy()
            for lag in range(1, len(self._ctx_w)):
                acc += np.float32(self._ctx_w[lag]) * (cosfn(np.maximum(e - lag, 0)) * self._ctx_ok[lag][e])
            ctx = acc * self._ctx_inv[e]
        else:
            ctx = cos
        m = np.float32(self.params.vec_context_mix)
        vec = (1 - m) * cos + m * ctx if m else cos
        return cos, ctx, vec

    def _search_fast(self, query: str, qt: list, q: np.ndarray, k: int,
                     threshold: float | None) -> list[tuple[int, float]] | None:
        """``search`` (hybrid mode, no mask) on large indexes without full-length
        passes beyond a handful: the fused score is computed exactly, but only for candidates.

        1. An approximate cosine of every entry, over the first PREFIX_DIMS dimensions of a
           contiguous copy (a quarter of the memory read at 256-d; model2vec dimensions come
           in decreasing variance); the exact ``vectors @ q`` when there is no such copy.
        2. A proxy of the fused score (BM25 and approximate cosine, normalised as in the
           fusion, plus the person boost) over all entries; its ~CANDIDATES best, and the
           entries just before and after them (context cosine, smoothing), are the candidates.
        3. The exact cosines of the candidates and of their previous entries, the exact fusion
           on them. The vector half's floor: for "min", the lowest exact score among the
           candidates and the LOW_CANDIDATES entries of lowest approximate cosine (and the ones
           after them); for "median", the median over a fixed sample of FLOOR_SAMPLE entries.
           The file prior uses the best candidate of each file.
        None when fewer than ``k`` candidates pass the threshold (the caller then runs the
        exact path, which may find more further down).
        Its top 10 agrees with the exact path's on nearly every query (bench/eval.py --synth 100k,
        --fast). Vector and lexical modes, and masked searches, take the exact path."""
        p = self.params
        n = self.n
        lags = len(self._ctx_w) - 1
        prefix = self._prefix
        if prefix is None:
            approx = self.vectors @ q
            exact = approx
        else:
            approx = prefix @ q[:prefix.shape[1]]
            exact = None
        lex = self.lex.scores(qt)
        a = np.float32(p.lex_weight)
        amax, amin = float(approx.max()), float(approx.min())
        proxy = approx * np.float32((1 - a) / (amax - amin)) if amax > amin else np.zeros(n, dtype=np.float32)
        lmax = float(lex.max())
        if lmax > 0:
            proxy += lex * np.float32(a / lmax)
        named = self._named_speakers(set(text_terms(query))) if self.speaker_names else []
        boosted = None
        if p.speaker_boost and named:
            boosted = np.isin(self.speaker, np.asarray(named, dtype=np.int32))
            proxy[boosted] += np.float32(p.speaker_boost)
        if p.file_prior and self.seg_starts.size:
            segmax = np.maximum.reduceat(proxy, self.seg_starts)
            segmax *= np.float32(p.file_prior)
            proxy += np.repeat(segmax, self._cached("seg_len", 0, lambda: np.diff(np.append(self.seg_starts, n))))
        top = _top_candidates(proxy, min(CANDIDATES, n))
        if VEC_CANDIDATES:  # the best cosines too, even without a query word: the vector half's max
            top = np.concatenate([top, _top_candidates(approx, min(VEC_CANDIDATES, n))])
        # candidates: top, their previous and next entries (context cosine, smoothing); scores
        # also on the one after, so that every candidate's smoothing is complete
        mark = np.zeros(n + 3, dtype=bool)  # sorted, deduplicated without a sort
        for off in (0, 1, 2, 3):
            mark[top + off] = True
        e = np.flatnonzero(mark[1:n + 1])
        low = None
        if p.vec_floor == "min":
            # the lowest vector scores belong to entries of low cosine, or just after one
            mark[:] = False
            lo = _top_candidates(approx, min(LOW_CANDIDATES, n), largest=False)
            mark[lo + 1] = True
            mark[lo + 2] = True
            low = np.flatnonzero(mark[1:n + 1])
        if exact is not None:
            cosfn = exact.__getitem__
        else:
            mark[:] = False
            for lag in range(lags + 1):
                mark[np.maximum(e - lag, 0) + 1] = True
                if low is not None:
                    mark[np.maximum(low - lag, 0) + 1] = True
            rows = np.flatnonzero(mark[1:n + 1])
            rc = self.vectors[rows] @ q
            cosfn = lambda r: rc[np.searchsorted(rows, r)]  # noqa: E731
        cos, ctx, vec = self._vec_at(e, cosfn)
        vmax = float(vec.max())
        if p.vec_floor == "min":
            floor = min(float(vec.min()), float(self._vec_at(low, cosfn)[2].min()))
        elif p.vec_floor == "median":
            if exact is not None:
                fl_cos = exact.__getitem__
            else:
                fc = self._floor_vecs @ q
                fl_cos = lambda r: fc[np.searchsorted(self._floor_rows, r)]  # noqa: E731
            floor = float(np.median(self._vec_at(self._floor_pick, fl_cos)[2]))
        else:
            floor = 0.0
        lexe = lex[e]
        fused = lexe * (a / np.float32(lmax)) if lmax > 0 else np.zeros(e.shape[0], dtype=np.float32)
        _add_vector_half(fused, vec, floor, vmax, a)
        topv = 1.0
        if boosted is not None:
            fused += boosted[e].astype(np.float32) * np.float32(p.speaker_boost)
        topv += p.speaker_boost
        # neighbour smoothing, where the neighbour is a candidate too (e is sorted, unique)
        m_ = e.shape[0]
        has_next = np.zeros(m_, dtype=bool)
        has_next[:-1] = e[1:] == e[:-1] + 1
        sm = fused.copy()
        if p.smooth_prev:
            has_prev = np.zeros(m_, dtype=bool)
            has_prev[1:] = has_next[:-1]
            sm[1:] += np.float32(p.smooth_prev) * fused[:-1] * (has_prev[1:] & self._ctx_ok[1][e[1:]])
        nok = self.prev_ok[np.minimum(e + 1, n - 1)]  # the next entry is in the same file
        nok[e == n - 1] = False
        if p.smooth_next:
            sm[:-1] += np.float32(p.smooth_next) * fused[1:] * (has_next[:-1] & nok[:-1])
        fused = sm
        topv *= 1 + p.smooth_prev + p.smooth_next
        # scores are complete for entries whose neighbours are candidates
        sel = has_next | ~nok
        if p.smooth_prev:
            sel &= has_prev | ~self.prev_ok[e]
        if p.file_prior:
            seg = self.seg_of[e]
            new_seg = np.empty(m_, dtype=bool)
            new_seg[:1] = True
            np.not_equal(seg[1:], seg[:-1], out=new_seg[1:])
            segmax = np.maximum.reduceat(fused, np.flatnonzero(new_seg))
            fused += np.float32(p.file_prior) * segmax[np.cumsum(new_seg) - 1]
        topv *= 1 + p.file_prior
        fused *= np.float32(1.0 / topv)
        score = fused
        coverage = None
        if threshold is not None:
            keep = np.maximum(cos, ctx) >= np.float32(threshold)
            coverage = self.lex.coverage(qt)
            keep |= coverage[e] >= np.float32(p.lexical_keep)
            sel &= keep
        cand = e[sel]
        s = score[sel]
        if cand.size < k and not self._threshold_complete(e, approx, coverage, threshold):
            return None  # entries outside the candidates might pass the threshold: the exact path decides
        if cand.size > k:
            part = np.argpartition(-s, k - 1)[:k]
            cand, s = cand[part], s[part]
        order = np.lexsort((cand, -s))
        return [(int(cand[i]), float(s[i])) for i in order]

    def _threshold_complete(self, e: np.ndarray, approx: np.ndarray, coverage: np.ndarray | None,
                            threshold: float | None) -> bool:
        """Whether no entry outside the candidates ``e`` can pass the threshold, so fewer than k
        results is the answer: every entry with a strong lexical match is a candidate, and every
        non-candidate's estimated cosine is ``THRESHOLD_MARGIN`` below the threshold."""
        if threshold is None or coverage is None:
            return False
        strong = np.flatnonzero(coverage >= np.float32(self.params.lexical_keep))
        if strong.size and np.setdiff1d(strong, e, assume_unique=True).size:
            return False
        outside = np.ones(approx.shape[0], dtype=bool)
        outside[e] = False
        return not outside.any() or float(approx[outside].max()) < threshold - THRESHOLD_MARGIN

    def search(
        self,
        query: str,
        query_vec: np.ndarray | None,
        k: int = 10,
        mode: str = "hybrid",
        threshold: float | None = None,
        mask: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The ``k`` best entries as (entry index, score), best first.

        ``mode``: ``"hybrid"`` (fused score in [0, 1]), ``"vector"`` (vector similarity) or
        ``"lexical"`` (BM25; only entries with a lexical match; ``query_vec`` may be None).
        ``threshold``: see the module docstring (None: no threshold). ``mask``: boolean array,
        only entries where it is True are returned (filters by topic, kind, date...).
        """
        if mode not in ("hybrid", "vector", "lexical"):
            raise ValueError(f"unknown search mode {mode!r}: use hybrid, vector or lexical")
        if query_vec is None and mode != "lexical":
            raise ValueError(f"search mode {mode!r} needs a query vector")
        mask = self._check_mask(mask)
        if self.n == 0 or k <= 0:
            return []
        qt = self.lex.query_terms(query)
        if (mask is None and mode == "hybrid" and self.n >= FAST_MIN_N and self._prefix is not None
                and k <= CANDIDATES // 4):
            q = self._unit_query(query_vec)
            got = self._search_fast(query, qt, q, k, threshold)
            if got is not None:
                return got
        allowed = np.ones(self.n, dtype=bool) if mask is None else mask.copy()
        lex = None
        if mode != "vector":
            lex = self.lex.scores(qt)
        if query_vec is not None and threshold is None and mode != "lexical":
            vec = self._vector_only(query_vec)  # same as vector_scores' vec, fewer passes
        elif query_vec is not None and (mode != "lexical" or threshold is not None):
            cos, ctx, vec = self.vector_scores(query_vec)
        if mode == "lexical":
            score = lex
            allowed &= lex > 0
        elif mode == "vector":
            score = vec
        else:
            score = self._fuse(query, set(text_terms(query)), lex, vec, mask)
        if mask is None and mode != "lexical" and threshold is None:
            cand = _top_candidates(score, min(k, self.n))  # no full-length index arrays
            s = score[cand]
            order = np.lexsort((cand, -s))  # best first, ties in entry order
            return [(int(cand[i]), float(s[i])) for i in order]
        if threshold is not None and query_vec is not None:
            keep = np.maximum(cos, ctx) >= np.float32(threshold)
            keep |= self.lex.coverage(qt) >= np.float32(self.params.lexical_keep)
            allowed &= keep
        cand = np.flatnonzero(allowed)
        if cand.size == 0:
            return []
        s = score[cand]
        if cand.size > k:
            part = np.argpartition(-s, k - 1)[:k]
            cand, s = cand[part], s[part]
        order = np.lexsort((cand, -s))  # best first, ties in entry order
        return [(int(cand[i]), float(s[i])) for i in order]
