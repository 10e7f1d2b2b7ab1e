"""Ranking: lexical (BM25) and vector (cosine) scores fused into one list.

Every entry has one stored vector: the unit embedding of its own text. Everything else is
computed here over all entries with a handful of numpy operations (no Python loop over entries).
Scoring of a query ``q`` with unit embedding ``qv`` (one value per entry):

1. ``cosine = vectors @ qv`` (the one matrix-vector product), and the context cosine: the cosine
   between ``qv`` and the normalised sum of the entry's vector and half its previous same-file
   entry's, from ``cosine`` shifted by one row and a per-entry norm prepared at load.
   ``vector = (cosine + context cosine) / 2``.
2. ``lexical``: BM25 (:class:`memkit.lexical.BM25Index`, light stemming, stop words) over each
   entry's text plus its two previous same-file entries at half weight: a line often only makes
   sense with the one before it.
3. Fusion: ``lex_weight * lexical / max + (1 - lex_weight) * (vector - min) / (max - min)``. With
   ``lex_weight`` 0.6 the best lexical match outranks every entry holding no query word, so
   exact rare words ("hAP ax3", "node-3") are never drowned by the vector side.
4. People: ``+ speaker_boost`` for entries spoken (``Name: text``) by a person the query names,
   in files that read like a conversation only (:func:`speakers`): a note like "Rice: soak it
   overnight" or "TODO: call the plumber" is nobody speaking.
5. ``+ smooth_next * score(next entry)`` within a file (an answer follows its question), then
   ``+ file_prior * best score in the entry's file``.

Hybrid scores are divided by their largest possible value, so they lie in [0, 1]; they order
results and are not comparable across queries. Mode ``"vector"`` ranks by ``vector``, mode
``"lexical"`` by BM25 (entries with a query word only).

**Threshold**: an entry is kept when ``max(cosine, context cosine)`` (a true cosine, on the
model's scale) reaches it, or when its own text holds at least ``lexical_keep`` (0.4) of the IDF
mass of the query words the vault knows: the threshold removes unrelated results, never an exact
match. ``RECOMMENDED_THRESHOLD`` is the default per model dimension: the highest value (steps of
0.05) keeping ≥ 95 % of the evidence the hybrid top 10 finds on the LoCoMo dev conversations
(``make eval``): 0.40 at 256-d, 0.45 at 64-d.

Every feature above earns its place on that data with both models: each was kept only if
turning it off alone lowered recall there (``python bench/eval.py --set smooth_next=0``, the
script behind ``make eval``; ``--set`` overrides one :class:`RankParams` weight). The speaker
guard is what lets the person signal hold on ordinary notes too.

**Large vaults** (``FAST_MIN_N`` entries and more, hybrid mode, no filter): an approximate cosine
over the first ``PREFIX_DIMS`` dimensions of a contiguous copy (model2vec dimensions are
PCA-ordered, so they carry most of the signal) and BM25 pick ``CANDIDATES`` entries; the exact
fusion runs on them and their neighbours. Its top 10 holds ≥ 99 % of the exact path's
(``make bench``); when too few candidates pass a threshold the exact path answers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .lexical import BM25Index, encode_terms
from .text import terms as text_terms

__all__ = ["RankParams", "Ranker", "RECOMMENDED_THRESHOLD", "speaker_of", "speakers"]

RECOMMENDED_THRESHOLD: dict[int, float] = {256: 0.40, 64: 0.45}

FAST_MIN_N = 20_000  #: from this many entries (and >= 128 dimensions) hybrid search scores candidates only
PREFIX_DIMS = 64  #: dimensions of the approximate scan
CANDIDATES = 400  #: entries the approximate fused score keeps
VEC_CANDIDATES = 64  #: entries of best approximate cosine, added (the vector half's maximum)
LOW_CANDIDATES = 64  #: entries of lowest approximate cosine (the vector half's minimum)
THRESHOLD_MARGIN = 0.15  #: an approximate cosine this far below the threshold cannot reach it


@dataclass(frozen=True)
class RankParams:
    """The weights of the ranking (defaults chosen with ``make eval``)."""

    k1: float = 1.2  #: BM25 term saturation
    b: float = 0.5  #: BM25 length normalisation
    context: int = 2  #: previous same-file entries indexed with each entry
    context_weight: float = 0.5  #: their term counts' weight
    vec_context: float = 0.5  #: weight of the previous entry's vector in the context cosine
    lex_weight: float = 0.6  #: > 0.5: the best lexical match beats any entry holding no query word
    speaker_boost: float = 0.3
    smooth_next: float = 0.1
    file_prior: float = 0.3
    lexical_keep: float = 0.4  #: share of the query's IDF mass that passes any threshold

    def __post_init__(self) -> None:
        if not 0.0 <= self.lex_weight <= 1.0:
            raise ValueError(f"lex_weight must be in [0, 1], got {self.lex_weight}")
        if not 0 <= self.context <= 3:
            raise ValueError(f"context must be 0..3, got {self.context}")


_UPPER = "A-ZÀ-ÖØ-ÞĀĂĄĆĈĊČĎĐĒĔĖĘĚĜĞĠĢĤĦĨĪĬĮİĲĴĶĹĻĽĿŁŃŅŇŊŌŎŐŒŔŖŘŚŜŞŠŢŤŦŨŪŬŮŰŲŴŶŸŹŻŽΑ-ΩА-Я"
_NAME = rf"[{_UPPER}][\w'’.-]{{0,30}}(?:[ \t][{_UPPER}][\w'’.-]{{0,30}}){{0,2}}"
# What may stand before the colon of "Name: text": a list marker, a "[kind]", the name.
_PREFIX_RE = re.compile(rf"[ \t]*(?:[-*+][ \t]+)?(?:\[[^\]\n]{{1,30}}\][ \t]*)?({_NAME})[ \t]*")
_MAX_PREFIX = 40


#: words often written ``Word: text`` in notes that are labels, never people
LABELS = frozenset("""
note notes todo to-do idea ideas step tip tips warning important reminder question answer summary update
decision action actions goal goals plan status result problem solution context fix bug pro con pros cons
ingredients method methods recipe source sources edit edited see also example examples tldr misc other
monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday morning evening
january february march april may june july august september october november december
""".split())


def speaker_of(text: str) -> str | None:
    """The name of ``Name: text`` (after an optional list marker or ``[kind]``), if it looks like a
    name: capitalised words with a lower-case letter (not ``TODO``, ``Q``), not a common label
    (``Note``, ``Monday``), with something said after the colon. Whether someone is speaking
    depends on the entry's file (:func:`speakers`)."""
    colon = text.find(":", 0, _MAX_PREFIX + 1)
    if colon < 1 or colon + 1 >= len(text) or not text[colon + 1].isspace() or not text[colon + 1:].strip():
        return None
    m = _PREFIX_RE.fullmatch(text[:colon])
    if not m or not any(c.islower() for c in m.group(1)) or m.group(1).casefold() in LABELS:
        return None
    return m.group(1)


def speakers(texts: Sequence[str], file_ids: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """The speaker of every entry (index into the names returned; -1: none).

    ``Name:`` names a speaker only in a file that reads like a dialogue: at least half of its
    entries start with a name, at least two names start two entries or more each, and they take
    turns (most consecutive ``Name:`` entries change name); a name the file also uses in lower
    case (``Rice:`` beside "bomba rice") is a word, not a person. A notes file's ``Rice: soak it
    overnight`` or a pantry list's ``Rice: …`` / ``Water: …`` is nobody speaking, and neither is
    an entry with a ``[kind]``."""
    n = len(texts)
    sp = np.full(n, -1, dtype=np.int32)
    names: dict[str, int] = {}
    # a conversation turn never carries a [kind]: "[tip] Rice: rinse it" is a note
    prefix = [speaker_of(t) if ":" in t[:_MAX_PREFIX + 1] and not t.lstrip("-*+ \t").startswith("[") else None
              for t in texts]
    starts = np.flatnonzero(np.diff(file_ids, prepend=-1)) if n else np.zeros(0, np.int64)
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), n]):
        said = [p for p in prefix[a:b] if p is not None]
        counts: dict[str, int] = {}
        for p in said:
            counts[p] = counts.get(p, 0) + 1
        real = {p for p, c in counts.items() if c >= 2}
        if len(real) < 2 or 2 * len(said) < b - a:
            continue
        turns = sum(x != y for x, y in zip(said, said[1:]))
        if 2 * turns < len(said) - 1:
            continue
        words = {w for t in texts[a:b] for w in re.findall(r"\w+", t) if w.islower()}
        real = {p for p in real if not any(part.lower() in words for part in p.split())}
        if len(real) < 2:
            continue
        for i in range(a, b):
            if prefix[i] in real:
                sp[i] = names.setdefault(prefix[i], len(names))  # type: ignore[arg-type]
    return sp, list(names)


def _top(x: np.ndarray, c: int, largest: bool = True) -> np.ndarray:
    """Indexes of the ``c`` largest (or smallest) values of ``x``, unsorted."""
    if c >= x.shape[0]:
        return np.arange(x.shape[0])
    return np.argpartition(-x if largest else x, c - 1)[:c]


class Ranker:
    """Scores a vault's entries for queries (see the module docstring).

    :param texts: the entries' texts, in file order.
    :param vectors: ``(n, dim)`` unit rows.
    :param file_ids: the file of each entry (entries of a file are contiguous).
    :param params: the weights.
    :param terms: the texts' search terms already encoded (``(term ids, offsets, vocab)`` as
        :func:`memkit.lexical.encode_terms` gives them); encoded from ``texts`` when None.
    """

    def __init__(self, texts: Sequence[str], vectors: np.ndarray, file_ids: np.ndarray | Sequence[int] | None = None,
                 params: RankParams | None = None, *,
                 terms: tuple[np.ndarray, np.ndarray, dict[str, int]] | None = None) -> None:
        self.params = p = params or RankParams()
        n = self.n = len(texts)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or self.vectors.shape[0] != n:
            raise ValueError(f"vectors must be ({n}, d); got {self.vectors.shape}")
        self.dim = self.vectors.shape[1]
        files = np.zeros(n, dtype=np.int64) if file_ids is None else np.asarray(file_ids, dtype=np.int64).reshape(-1)
        if files.shape[0] != n:
            raise ValueError(f"file_ids has {files.shape[0]} items for {n} entries")
        self.lex = BM25Index(*(terms if terms is not None else encode_terms(texts)), file_ids=files, k1=p.k1, b=p.b,
                             context=p.context, context_weight=p.context_weight)
        self.prev_ok = np.zeros(n, dtype=bool)  #: entry i - 1 is in entry i's file
        self.prev_ok[1:] = files[1:] == files[:-1]
        self.next_ok = np.append(self.prev_ok[1:], False)  #: entry i + 1 is in entry i's file
        self.seg_starts = np.flatnonzero(~self.prev_ok)  #: first entry of each file
        self.seg_of = np.cumsum(~self.prev_ok) - 1  #: file (segment) of each entry
        # |v_i + w v_{i-1}| = sqrt(1 + w^2 + 2 w v_i.v_{i-1}) for unit rows (1 without a previous entry)
        dots = np.zeros(n, dtype=np.float32)
        if n > 1:
            dots[1:] = np.einsum("ij,ij->i", self.vectors[1:], self.vectors[:-1])
        w = np.float32(p.vec_context)
        self.ctx_inv = np.where(self.prev_ok, 1 / np.sqrt(np.maximum(1 + w * w + 2 * w * dots, 1e-12)),
                                1).astype(np.float32)
        self.speaker, self.speaker_names = speakers(texts, files)
        self._speaker_terms = [set(text_terms(s)) for s in self.speaker_names]
        self.top = (1 + p.speaker_boost) * (1 + p.smooth_next) * (1 + p.file_prior)  #: the largest fused score
        use_prefix = n >= FAST_MIN_N and self.dim >= 2 * PREFIX_DIMS
        self.prefix = np.ascontiguousarray(self.vectors[:, :PREFIX_DIMS]) if use_prefix else None

    # ---- the pieces ----------------------------------------------------------------------------
    def _unit(self, query_vec: np.ndarray) -> np.ndarray:
        q = np.asarray(query_vec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query vector has {q.shape[0]} dimensions, index has {self.dim}")
        norm = float(np.linalg.norm(q))
        return q / np.float32(norm) if norm > 0 and abs(norm - 1.0) > 1e-3 else q

    def _vector(self, cos: np.ndarray, prev_cos: np.ndarray, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        """(context cosine, vector score) of ``rows`` from their cosines and their previous entries'."""
        ctx = (cos + np.float32(self.params.vec_context) * prev_cos * self.prev_ok[rows]) * self.ctx_inv[rows]
        return ctx, (cos + ctx) * np.float32(0.5)

    def vector_scores(self, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, context cosine, vector score) of every entry."""
        cos = self.vectors @ self._unit(query_vec)
        prev = np.zeros_like(cos)
        prev[1:] = cos[:-1]
        return (cos, *self._vector(cos, prev, slice(None)))

    def _boost(self, qwords: set[str]) -> np.ndarray | None:
        """The speaker boost per entry, when the query names a speaker."""
        named = [i for i, ts in enumerate(self._speaker_terms) if ts & qwords]
        if not named or not self.params.speaker_boost:
            return None
        lut = np.zeros(len(self.speaker_names) + 1, dtype=np.float32)  # [-1]: no speaker
        lut[named] = np.float32(self.params.speaker_boost)
        return lut[self.speaker]

    def _fuse(self, lex: np.ndarray, vec: np.ndarray, vmin: float, vmax: float, lmax: float,
              boost: np.ndarray | None, next_ok: np.ndarray, seg: np.ndarray) -> np.ndarray:
        """Steps 3-5 over a run of entries (all of them, or the fast path's candidates)."""
        p = self.params
        a = np.float32(p.lex_weight)
        fused = lex * (a / np.float32(lmax)) if lmax > 0 else np.zeros(lex.shape[0], dtype=np.float32)
        if vmax > vmin:
            fused += np.maximum(vec - np.float32(vmin), 0) * ((1 - a) / np.float32(vmax - vmin))
        if boost is not None:
            fused += boost
        if p.smooth_next and fused.shape[0] > 1:
            fused[:-1] += np.float32(p.smooth_next) * fused[1:] * next_ok[:-1]
        if p.file_prior and fused.shape[0]:
            starts = np.flatnonzero(np.diff(seg, prepend=-1))
            best = np.maximum.reduceat(fused, starts)
            fused += np.float32(p.file_prior) * np.repeat(best, np.diff(np.append(starts, fused.shape[0])))
        fused *= np.float32(1 / self.top)
        return fused

    def component_scores(self, query: str, query_vec: np.ndarray | None) -> dict[str, np.ndarray]:
        """Every per-entry score, for debugging: ``lexical``, ``coverage``, and with a query vector
        ``cosine``, ``ctx_cosine``, ``vector``, ``similarity`` (what the threshold compares),
        ``fused``."""
        qt = self.lex.query_terms(query)
        lex = self.lex.scores(qt)
        out = {"lexical": lex, "coverage": self.lex.coverage(qt), "fused": lex}
        if query_vec is not None:
            cos, ctx, vec = self.vector_scores(query_vec)
            out.update(cosine=cos, ctx_cosine=ctx, vector=vec, similarity=np.maximum(cos, ctx))
            out["fused"] = self._fuse(lex, vec, float(vec.min()), float(vec.max()), float(lex.max()),
                                      self._boost(set(text_terms(query))), self.next_ok, self.seg_of)
        return out

    # ---- searching -----------------------------------------------------------------------------
    def search(self, query: str, query_vec: np.ndarray | None, k: int = 10, mode: str = "hybrid",
               threshold: float | None = None, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best entries as (entry index, score), best first (ties in entry order).

        :param mode: ``hybrid``, ``vector`` or ``lexical`` (``query_vec`` may be None for lexical).
        :param threshold: see the module docstring; None: none.
        :param mask: only entries where it is True (filters by topic, kind, date…).
        """
        if mode not in ("hybrid", "vector", "lexical"):
            raise ValueError(f"unknown search mode {mode!r}: use hybrid, vector or lexical")
        if query_vec is None and mode != "lexical":
            raise ValueError(f"search mode {mode!r} needs a query vector")
        if mask is not None:
            mask = np.asarray(mask, dtype=bool).reshape(-1)
            if mask.shape[0] != self.n:
                raise ValueError(f"mask has {mask.shape[0]} items for {self.n} entries")
        if self.n == 0 or k <= 0:
            return []
        qt = self.lex.query_terms(query)
        lex = self.lex.scores(qt) if mode != "vector" else None
        if mode == "hybrid" and mask is None and self.prefix is not None and k <= CANDIDATES // 4:
            assert lex is not None and query_vec is not None
            got = self._search_fast(query, qt, lex, self._unit(query_vec), k, threshold)
            if got is not None:
                return got
        allowed = np.ones(self.n, dtype=bool) if mask is None else mask.copy()
        cos = ctx = None
        if query_vec is not None:
            cos, ctx, vec = self.vector_scores(query_vec)
        if mode == "lexical":
            assert lex is not None
            score = lex
            allowed &= lex > 0
        elif mode == "vector":
            score = vec
        else:
            assert lex is not None
            vv, lv = (vec, lex) if mask is None else (vec[mask], lex[mask])
            score = self._fuse(lex, vec, float(vv.min()) if vv.size else 0.0, float(vv.max()) if vv.size else 0.0,
                               float(lv.max()) if lv.size else 0.0, self._boost(set(text_terms(query))),
                               self.next_ok, self.seg_of)
        if threshold is not None and cos is not None and ctx is not None:
            allowed &= (np.maximum(cos, ctx) >= np.float32(threshold)) | (
                self.lex.coverage(qt) >= np.float32(self.params.lexical_keep))
        return _best(np.flatnonzero(allowed), score, k)

    def _search_fast(self, query: str, qt: list[tuple[int, int]], lex: np.ndarray, q: np.ndarray, k: int,
                     threshold: float | None) -> list[tuple[int, float]] | None:
        """Hybrid search on a large vault scoring candidates only (see the module docstring);
        None when too few candidates pass the threshold and others might."""
        assert self.prefix is not None
        p, n = self.params, self.n
        a = np.float32(p.lex_weight)
        approx = self.prefix @ q[:PREFIX_DIMS]
        amin, amax, lmax = float(approx.min()), float(approx.max()), float(lex.max())
        proxy = (approx - np.float32(amin)) * ((1 - a) / np.float32(max(amax - amin, 1e-9)))
        if lmax > 0:
            proxy += lex * (a / np.float32(lmax))
        boost = self._boost(set(text_terms(query)))
        if boost is not None:
            proxy += boost
        if p.file_prior:
            proxy += np.float32(p.file_prior) * np.maximum.reduceat(proxy, self.seg_starts)[self.seg_of]
        top = np.concatenate([_top(proxy, CANDIDATES), _top(approx, VEC_CANDIDATES)])
        # candidates and the entry after each (its smoothing); exact cosines for them and the
        # entries before them (context cosine), and for the lowest ones (the vector half's floor)
        mark = np.zeros(n + 1, dtype=bool)
        mark[top] = True
        mark[top + 1] = True
        e = np.flatnonzero(mark[:n])
        low = _top(approx, LOW_CANDIDATES, largest=False)
        rows = np.unique(np.concatenate([e, np.maximum(e - 1, 0), low, np.maximum(low - 1, 0)]))
        exact = self.vectors[rows] @ q

        def cos_of(r: np.ndarray) -> np.ndarray:
            return exact[np.searchsorted(rows, r)]

        cos = cos_of(e)
        ctx, vec = self._vector(cos, cos_of(np.maximum(e - 1, 0)), e)
        vmin = min(float(vec.min()), float(self._vector(cos_of(low), cos_of(np.maximum(low - 1, 0)), low)[1].min()))
        next_ok = self.next_ok[e] & np.append(e[1:] == e[:-1] + 1, False)
        fused = self._fuse(lex[e], vec, vmin, float(vec.max()), lmax, None if boost is None else boost[e],
                           next_ok, self.seg_of[e])
        # an entry's score is complete when its next entry is a candidate too (or it has none)
        ok = next_ok | ~self.next_ok[e]
        if threshold is not None:
            coverage = self.lex.coverage(qt)
            ok &= (np.maximum(cos, ctx) >= np.float32(threshold)) | (coverage[e] >= np.float32(p.lexical_keep))
            if int(ok.sum()) < k:
                outside = np.ones(n, dtype=bool)
                outside[e] = False
                strong = coverage >= np.float32(p.lexical_keep)
                if (strong & outside).any() or (approx[outside] >= threshold - THRESHOLD_MARGIN).any():
                    return None  # an entry outside the candidates might pass: the exact path decides
        order = _best(np.flatnonzero(ok), fused, k)
        return [(int(e[i]), s) for i, s in order]


def _best(cand: np.ndarray, score: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The ``k`` best of ``cand`` by ``score``, best first, ties in entry order."""
    s = score[cand]
    if cand.size > k:
        part = np.argpartition(-s, k - 1)[:k]
        cand, s = cand[part], s[part]
    order = np.lexsort((cand, -s))
    return [(int(cand[i]), float(s[i])) for i in order]
