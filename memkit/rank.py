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
   any data set: on conversational memory most questions are about someone. (``mention_boost``
   does the same for entries that mention a capitalised name of the query; off: no gain.)
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
holds at least ``lexical_keep`` (0.5) of the query's IDF mass, i.e. most of the informative
query words (``BM25Index.coverage``). So the threshold removes unrelated results but never an
exact match. ``None`` disables it. Without a query vector (lexical mode with no model) it does
not apply: every entry with a query word is a result.

``RECOMMENDED_THRESHOLD`` holds the default per model dimension, chosen with ``bench/eval.py``
(LoCoMo dev conversations): the highest value, in steps of 0.05, that keeps at least 95 % of
the evidence turns the hybrid top 10 finds without threshold. For the 256-d model2vec model
(m2v-minilm-256, same kind and size as potion-base-8M) that is 0.40 (95.1 % kept; it drops 39 %
of the results of unrelated queries); for the 64-d tokenlearn-static-model also 0.40 (96.4 %
kept, 10 % of unrelated results dropped: a weaker model separates less). The original design's
0.7 would keep only about half of the evidence with these models.

Tuned defaults (``RankParams``), 3 LoCoMo dev conversations, 383 questions, recall@5 / @10:
lexical-only 0.676 / 0.752, vector-only 0.432 / 0.536 (256-d) and 0.194 / 0.274 (64-d), hybrid
0.738 / 0.807 (256-d) and 0.730 / 0.792 (64-d); hybrid is at or above lexical-only in every
category and metric for both models. Each step above was kept only when it helped both models;
dev figures are optimistic (the other 7 LoCoMo conversations are kept aside).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from memkit.lexical import _MASK, BM25Index, _group_rows, tokenize

__all__ = ["RankParams", "Ranker", "RECOMMENDED_THRESHOLD", "speaker_of"]

# Recommended value of the user-facing threshold per model dimension (see module docstring).
RECOMMENDED_THRESHOLD: dict[int, float] = {256: 0.40, 64: 0.40}


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
    mention_boost: float = 0.0       # entries naming a person the query names (no gain measured)
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
_NAME = rf"[{_UPPER}][\w'’.-]{{0,30}}(?:[ \t][{_UPPER}][\w'’.-]{{0,30}}){{0,2}}"
# What may stand before the colon of "Name: text": a list marker, a "[kind]", the name.
_PREFIX_RE = re.compile(rf"[ \t]*(?:[-*+][ \t]+)?(?:\[[^\]\n]{{1,30}}\][ \t]*)?({_NAME})[ \t]*")
_MAX_PREFIX = 40  # bytes
_CAP_RE = re.compile(rf"(?<![\w'’])([{_UPPER}][\w'’-]*)")


def speaker_of(text: str) -> str | None:
    """The person an entry is spoken/written by, when it starts with ``Name:`` (else None)."""
    head, colon, rest = text.partition(":")
    if not colon or (rest and not rest[0].isspace()) or len(head.encode("utf-8", "surrogatepass")) > _MAX_PREFIX:
        return None
    m = _PREFIX_RE.fullmatch(head)
    return m.group(1) if m else None


def _speakers(texts: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Speaker id of every entry (-1: none) and the speaker names, without a Python loop over
    entries: the text before each entry's first colon is located, grouped and deduplicated in
    numpy (like the lexical index's chunks), and only distinct prefixes go through the regex."""
    n = len(texts)
    sp = np.full(n, -1, dtype=np.int32)
    if n == 0:
        return sp, []
    joined = "\x00".join(texts)
    if joined.count("\x00") != n - 1:
        joined = "\x00".join(t.replace("\x00", " ") for t in texts)
    raw = joined.encode("utf-8", "surrogatepass")
    size = len(raw)
    buf = np.zeros(size + _MAX_PREFIX + 16, dtype=np.uint8)
    buf[:size] = np.frombuffer(raw, dtype=np.uint8)
    colons = np.flatnonzero(buf[:size] == 58)  # ':'
    if colons.size == 0:
        return sp, []
    seps = np.flatnonzero(buf[:size] == 0)
    starts = np.concatenate([[0], seps + 1])
    ends = np.append(seps, size)
    j = np.searchsorted(colons, starts)
    cpos = colons[np.minimum(j, colons.size - 1)]
    plen = cpos - starts
    cand = (j < colons.size) & (cpos < ends) & (plen >= 1) & (plen <= _MAX_PREFIX) & (buf[cpos + 1] <= 32)
    idx = np.flatnonzero(cand)
    if idx.size == 0:
        return sp, []
    s, ln = starts[idx], plen[idx]
    u64 = np.ndarray(shape=(size + _MAX_PREFIX + 9,), dtype="<u8", buffer=buf, strides=(1,))
    cols = [u64[s + off] & _MASK[np.clip(ln - off, 0, 8)] for off in range(0, _MAX_PREFIX, 8)]
    gid, first = _group_rows(cols)
    names: dict[str, int] = {}
    lut = np.full(first.shape[0], -1, dtype=np.int32)
    for g in np.argsort(first).tolist():  # in entry order, so ids follow first appearance
        a = int(s[first[g]])
        m = _PREFIX_RE.fullmatch(raw[a:a + int(ln[first[g]])].decode("utf-8", "surrogatepass"))
        if m:
            lut[g] = names.setdefault(m.group(1), len(names))
    sp[idx] = lut[gid]
    return sp, list(names)


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

    def _prepare_people(self, texts: Sequence[str]) -> None:
        self.speaker, self.speaker_names = _speakers(texts)
        self._speaker_terms = [set(tokenize(s)) for s in self.speaker_names]

    # -- query time -----------------------------------------------------------------------------
    def _shift(self, x: np.ndarray, lag: int) -> np.ndarray:
        """x[i - lag] where that entry is in i's file, else 0."""
        out = np.zeros_like(x)
        if lag < self.n:
            out[lag:] = x[:-lag]
        out *= self._ctx_ok[lag]
        return out

    def vector_scores(self, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, ctx_cosine, vector score) of every entry; one matrix-vector product."""
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, index has {self.dim}")
        nq = float(np.linalg.norm(q))
        if nq > 0 and abs(nq - 1.0) > 1e-3:
            q = q / np.float32(nq)
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

    def _named_speakers(self, qterms: set[str]) -> list[int]:
        return [i for i, ts in enumerate(self._speaker_terms) if ts and ts & qterms]

    def _people_boost(self, query: str, qterms: set[str]) -> np.ndarray | None:
        p = self.params
        out = None
        named = self._named_speakers(qterms) if self.speaker_names else []
        if p.speaker_boost and named:
            m = np.isin(self.speaker, np.asarray(named, dtype=np.int32))
            out = m.astype(np.float32) * np.float32(p.speaker_boost)
        if p.mention_boost:
            # capitalised words of the query (not its first word) and the speakers it names
            caps = set(_CAP_RE.findall(query)[1:]) | {self.speaker_names[i] for i in named}
            ids = {self.lex.vocab.get(t, -1) for c in caps for t in tokenize(c)} - {-1}
            if ids:
                m = np.zeros(self.n, dtype=bool)
                for tid in ids:
                    s, e = self.lex.indptr[tid], self.lex.indptr[tid + 1]
                    m[self.lex.docs[s:e][self.lex.own[s:e]]] = True
                add = m.astype(np.float32) * np.float32(p.mention_boost)
                out = add if out is None else out + add
        return out

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
            span = vmax - floor
            if span > 0:
                fused += np.maximum(vec - np.float32(floor), 0) * ((1 - a) / np.float32(span))
        top = 1.0
        boost = self._people_boost(query, qterms)
        if boost is not None:
            fused += boost
        top += p.speaker_boost + p.mention_boost
        if (p.smooth_prev or p.smooth_next) and n > 1:
            sm = fused.copy()
            if p.smooth_prev:
                sm += np.float32(p.smooth_prev) * self._shift(fused, 1)
            if p.smooth_next:
                sm[:-1] += np.float32(p.smooth_next) * fused[1:] * self.prev_ok[1:]
            fused = sm
        top *= 1 + p.smooth_prev + p.smooth_next
        if p.file_prior and self.seg_starts.size:
            segmax = np.maximum.reduceat(fused, self.seg_starts)
            fused += np.float32(p.file_prior) * segmax[self.seg_of]
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
        lex = self.lex.scores_for(qt)
        out: dict[str, np.ndarray] = {"lexical": lex, "coverage": self.lex.coverage_for(qt)}
        if query_vec is not None:
            cos, ctx, vec = self.vector_scores(query_vec)
            out.update(cosine=cos, ctx_cosine=ctx, vector=vec, similarity=np.maximum(cos, ctx))
            mask = self._check_mask(mask)
            out["fused"] = self._fuse(query, {t for _, _, t in qt}, lex, vec, mask)
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
        allowed = np.ones(self.n, dtype=bool) if mask is None else mask.copy()
        lex = None
        if mode != "vector":
            lex = self.lex.scores_for(qt)
        if query_vec is not None and (mode != "lexical" or threshold is not None):
            cos, ctx, vec = self.vector_scores(query_vec)
        if mode == "lexical":
            score = lex
            allowed &= lex > 0
        elif mode == "vector":
            score = vec
        else:
            score = self._fuse(query, {t for _, _, t in qt}, lex, vec, mask)
        if threshold is not None and query_vec is not None:
            keep = np.maximum(cos, ctx) >= np.float32(threshold)
            keep |= self.lex.coverage_for(qt) >= np.float32(self.params.lexical_keep)
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
