"""Ranking: lexical (BM25) and vector (cosine) scores fused into one list.

Every entry has one stored vector: the unit embedding of its own text. Everything else is
computed here over all entries with a handful of numpy operations (no Python loop over entries).
Scoring of a query ``q`` with unit embedding ``qv`` (one value per entry):

1. ``cosine = vectors @ qv`` (the one matrix-vector product), and the context cosine: the cosine
   between ``qv`` and the normalised sum of the entry's vector and half its previous same-file
   entry's, from ``cosine`` shifted by one row and a per-entry norm prepared at load.
   ``vector = (cosine + context cosine) / 2``.
2. ``lexical``: BM25 (:class:`memkit.search.lexical.BM25Index`, light stemming, stop words) over each
   entry's text plus its two previous same-file entries at half weight: a line often only makes
   sense with the one before it.
3. Fusion: ``a * lexical / max + (1 - a) * (vector - min) / (max - min)``. In a conversation
   (files whose entries are ``Name: text`` turns) ``a`` is ``lex_weight`` (0.6): the best lexical
   match outranks every entry holding no query word, so names and rare words ("hAP ax3", "node-3")
   are never drowned by the vector side. In notes, people ask in other words than they wrote
   ("what car do I have" for "I drive a Subaru"), and one common word shared with the wrong note
   ("car" in "car wash") must not win: ``a = lex_weight * min(1, held / lex_full) ** lex_power``,
   ``held`` being the share of the query's IDF mass the best word match holds, a query word no
   entry has counting as the rarest (a query the vault answers word for word keeps the full
   weight; one whose words it mostly lacks is ranked by meaning).
4. People: ``+ speaker_boost`` for entries spoken (``Name: text``) by a person the query names,
   in files that read like a conversation only (:func:`speakers`): a note like "Rice: soak it
   overnight" or "TODO: call the plumber" is nobody speaking.
5. ``+ smooth_next * score(next entry)`` within a file (an answer follows its question), then
   ``+ file_prior * best score in the entry's file``.

Hybrid scores are divided by their largest possible value, so they lie in [0, 1]; they order
results and are not comparable across queries. Mode ``"vector"`` ranks by ``vector``, mode
``"lexical"`` by BM25 (entries with a query word only), scored on 0..1 too: ``1 - exp(-BM25 / I)``
with ``I`` the query words' summed IDF (what an average-length entry holding each query word once
scores, which so gets 0.63).

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

**Vectors** are kept by :class:`memkit.search.rank_matrix.RankMatrix` (this module scores, that
one stores): one float32 ``(n, dim)`` matrix (a vault's is the memory-mapped ``.npy`` of
:mod:`memkit.index.matrix`, never copied), read as two column views: the first ``PREFIX_DIMS``
dimensions and the rest; an exact cosine of every row is one product with the whole matrix.

**Large vaults** (``FAST_MIN_N`` entries and more, hybrid mode, no filter): an approximate cosine
over the first ``PREFIX_DIMS`` dimensions (model2vec dimensions are PCA-ordered, so they carry
most of the signal) and BM25 pick candidates (1/64 of the vault, at least ``MIN_CANDIDATES``,
at most ``CANDIDATES`` or 2 √n; read off a sampled cut-off, not a full partition); the exact
fusion runs on them and their neighbours. The scan reads the prefix transposed,
``(PREFIX_DIMS, n)`` (a frozen index keeps it so in a file, :mod:`memkit.index.frozen`). A
frozen index also keeps the prefix as int8, which onnxruntime scans 3-4x faster
(:mod:`memkit.search.int8_scan`; the float32 one where it cannot run), and its rows whole as
16-bit fixed point (``ROW_SCALE``: within 3e-5 of the float32 product, half the bytes, read
without a float16 conversion) for the candidates' exact cosines, so a searching process never
maps the float32 matrix's rows in the fast path (the rows added after the freeze are read from
it; a filtered search, a vector or lexical one and the exact path read the matrix). Its top
10 holds ≥ 99 % of the exact path's at 100k and 1M entries (``bench/bench_scale.py``); when too
few candidates pass a threshold the exact path answers.

**Rows that died** (``live``: the entries of a file that changed, kept in place until the view
is reloaded) are never returned and count in no minimum, maximum or statistic:
:meth:`Ranker.extended` gives the ranker of a view that gained a file's new rows without
building the others again.
"""
from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..base.limits import SEARCH_MODES
from ..formats.words import terms as text_terms
from . import topk
from .lexical import BM25Index, encode_terms
from .rank_matrix import PREFIX_DIMS, ROW_SCALE, RankMatrix
from .speakers import speaker_of, speakers

__all__ = ["PREFIX_DIMS", "ROW_SCALE", "RankParams", "Ranker", "RECOMMENDED_THRESHOLD", "MODEL_THRESHOLD",
           "speaker_of", "speakers"]

RECOMMENDED_THRESHOLD: dict[int, float] = {256: 0.40, 64: 0.45}
#: models calibrated by name (their training moved their cosines): memkit's own model keeps >= 95 %
#: of the evidence on both evaluation sets (LoCoMo dev, everyday notes) at 0.20
MODEL_THRESHOLD: dict[str, float] = {"memkit-m2v": 0.20}

FAST_MIN_N = 10_000  #: from this many entries (and >= 128 dimensions) hybrid search scores candidates only
CANDIDATES = 400  #: entries the approximate fused score keeps, at most (or 2 √n when larger, to CANDIDATES_MAX) …
CANDIDATES_MAX = 1500  #: (at 1M entries: recall@10 against the exact path 0.992, 2,000 gave 0.993)
CANDIDATE_SHARE = 1 / 64  #: … or this share of the entries (but at least MIN_CANDIDATES)
MIN_CANDIDATES = 150
VEC_CANDIDATES = 64  #: entries of best approximate cosine, added (the vector half's maximum)
LOW_CANDIDATES = 64  #: entries of lowest approximate cosine (the vector half's minimum)
THRESHOLD_MARGIN = 0.15  #: an approximate cosine this far below the threshold cannot reach it
NOISE_Z = 2.0  #: a weak match's cosine stands this many standard deviations above the query's mean
NOISE_FLOOR = 0.1  #: … and above this cosine
NOISE_MIN_N = 10  #: fewer entries than this: no statistics, no weak match by meaning alone
NOISE_SAMPLE = 16_384  #: entries (evenly spaced) the noise statistics read at most


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
    #: notes (not conversations): the lexical weight scales with (share / lex_full) ** lex_power, share
    #: being the query's IDF mass the best word match holds (a query word no entry has counts too); 0: off
    lex_full: float = 1.0
    lex_power: float = 2.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.lex_weight <= 1.0:
            raise ValueError(f"lex_weight must be in [0, 1], got {self.lex_weight}")
        if not 0 <= self.context <= 3:
            raise ValueError(f"context must be 0..3, got {self.context}")


Hit = tuple[int, float, float, float]  #: (entry index, score, cosine, lexical)
_MIN, _MAX = np.minimum.reduce, np.maximum.reduce  # without ndarray.min's Python wrapper


class Ranker:
    """Scores a vault's entries for queries (see the module docstring).

    :param texts: the entries' texts, in file order.
    :param vectors: ``(n, dim)`` unit rows (float32 rows are used in place, not copied), or the
        pair (first ``PREFIX_DIMS`` dimensions, the rest).
    :param file_ids: the file of each entry (entries of a file are contiguous).
    :param params: the weights.
    :param terms: the texts' search terms already encoded (``(term ids, offsets, vocab)`` as
        :func:`memkit.search.lexical.encode_terms` gives them); encoded from ``texts`` when None.
    :param live: which entries count (None: all): the others are never returned nor counted
        (the rows of a file that changed, see :meth:`extended`).
    """

    def __init__(self, texts: Sequence[str], vectors: np.ndarray | tuple[np.ndarray, np.ndarray],
                 file_ids: np.ndarray | Sequence[int] | None = None, params: RankParams | None = None, *,
                 terms: tuple[np.ndarray, np.ndarray, Any] | None = None, live: np.ndarray | None = None,
                 base: "Ranker | None" = None, kept: dict[str, Any] | None = None, scan: bool = True,
                 pages: Callable[[], object] | None = None) -> None:
        self.params = p = params or RankParams()
        n = self.n = len(texts)
        if kept is not None and base is None:
            self._restore(vectors, file_ids, terms, live, kept)
            return
        self.matrix = RankMatrix(vectors, n, pages)
        self.dim = self.matrix.dim
        files = np.zeros(n, dtype=np.int64) if file_ids is None else np.asarray(file_ids, dtype=np.int64).reshape(-1)
        if files.shape[0] != n:
            raise ValueError(f"file_ids has {files.shape[0]} items for {n} entries")
        self._set_live(live)
        start = 0 if base is None else base.n  # rows before it are base's (see extended())
        term_args = terms if terms is not None else encode_terms(texts)
        if base is None:
            self.lex = BM25Index(*term_args, file_ids=files, k1=p.k1, b=p.b, context=p.context,
                                 context_weight=p.context_weight, live=self.live)
        else:
            self.lex = base.lex.extended(term_args[0], term_args[1], files, self.live, term_args[2])
        self._set_files(files)
        new_ctx = self._ctx_inv(start, n)
        self.ctx_inv: np.ndarray = new_ctx if base is None else np.concatenate([base.ctx_inv, new_ctx])
        sp, names = speakers(texts[start:] if start else texts, files[start:])
        self.speaker_names: list[str] = [] if base is None else list(base.speaker_names)
        self.speaker_terms: list[set[str]] = [] if base is None else list(base.speaker_terms)  #: per speaker
        where = {name: i for i, name in enumerate(self.speaker_names)}
        ids = []
        for name in names:
            if name not in where:
                where[name] = len(self.speaker_names)
                self.speaker_names.append(name)
                self.speaker_terms.append(set(text_terms(name)))
            ids.append(where[name])
        sp = np.array(ids + [-1], dtype=np.int32)[sp]  # -1 (no speaker) stays -1
        self.speaker: np.ndarray = sp if base is None else np.concatenate([base.speaker, sp])
        self.top = (1 + p.speaker_boost) * (1 + p.smooth_next) * (1 + p.file_prior)  #: the largest fused score
        self.matrix.set_prefix(base.matrix if base is not None and scan else None,
                               extend_frozen=self.n >= FAST_MIN_N, build=scan and self._scans())

    def kept(self) -> dict[str, Any]:
        """What a new process needs to rebuild this ranker without working it out again
        (:meth:`restored`): arrays (BM25 postings, context norms, speakers, the prefix scan's
        matrix) and a JSON ``info`` (the parameters, the speakers' names). An array given as
        (shape, dtype, fill) is filled in the order given (:func:`memkit.index.frozen.write`):
        the prefix's fill finds each dimension's largest value, which the int8 prefix and its
        factors then use (every row read once, none clipped)."""
        arrays: dict[str, Any] = {f"bm25_{k}": v for k, v in self.lex.postings().items()}
        arrays.update(ctx_inv=self.ctx_inv, speaker=self.speaker)
        if self._scans():  # the prefix scan's matrix, transposed a block at a time into the file
            arrays.update(self.matrix.kept())
        return {"arrays": arrays, "info": {"params": asdict(self.params), "speakers": self.speaker_names}}

    @classmethod
    def restored(cls, n: int, vectors: np.ndarray, file_ids: np.ndarray, terms: tuple[np.ndarray, np.ndarray, Any],
                 live: np.ndarray | None, arrays: dict[str, np.ndarray], info: dict[str, Any],
                 built_live: np.ndarray | None, params: RankParams | None = None) -> "Ranker | None":
        """The ranker of ``n`` entries from what :meth:`kept` gave (memory-mapped), when it was
        made with these parameters; None otherwise (build it)."""
        params = params or RankParams()
        if info.get("params") != asdict(params) or "bm25_docs" not in arrays:
            return None
        self = cls.__new__(cls)
        self.params = params
        self.n = n
        self._restore(vectors, file_ids, terms, live, {**arrays, "built_live": built_live,
                                                      "speakers": list(info.get("speakers", []))})
        return self

    def _restore(self, vectors: Any, file_ids: Any, terms: Any, live: np.ndarray | None, kept: dict[str, Any]) -> None:
        p, n = self.params, self.n
        self.matrix = RankMatrix(vectors, n)
        self.dim = self.matrix.dim
        files = np.asarray(file_ids, dtype=np.int64).reshape(-1)
        self._set_live(live)
        postings = {k[5:]: v for k, v in kept.items() if k.startswith("bm25_")}
        self.lex = BM25Index.restored(postings, terms[0], terms[1], terms[2], live=self.live,
                                      built_live=kept.get("built_live"), file_ids=files, k1=p.k1, b=p.b,
                                      context=p.context, context_weight=p.context_weight)
        self._set_files(files)
        self.ctx_inv = kept["ctx_inv"]
        self.speaker = kept["speaker"]
        self.speaker_names = list(kept["speakers"])
        self.speaker_terms = [set(text_terms(name)) for name in self.speaker_names]
        self.top = (1 + p.speaker_boost) * (1 + p.smooth_next) * (1 + p.file_prior)
        self.matrix.restore_scan(kept)

    def _scans(self) -> bool:
        """Whether this ranker takes the fast path (a prefix scan) on large vaults."""
        return self.n >= FAST_MIN_N and self.matrix.scannable

    def _set_live(self, live: np.ndarray | None) -> None:
        self.live = None if live is None or live.all() else np.asarray(live, dtype=bool)  #: None: every row
        self.dead = np.zeros(0, np.int64) if self.live is None else np.flatnonzero(~self.live)
        self._a_live_row = 0 if self.live is None else int(np.argmax(self.live))

    def _set_files(self, files: np.ndarray) -> None:
        n = self.n
        self.prev_ok = np.zeros(n, dtype=bool)  #: entry i - 1 is in entry i's file
        self.prev_ok[1:] = files[1:] == files[:-1]
        self.next_ok = np.append(self.prev_ok[1:], False)  #: entry i + 1 is in entry i's file
        self.seg_starts = np.flatnonzero(~self.prev_ok)  #: first entry of each file
        self.seg_lens = np.diff(np.append(self.seg_starts, n))  #: entries of each file
        self.seg_of = np.cumsum(~self.prev_ok) - 1  #: file (segment) of each entry
        #: the previous entry's weight in the context cosine (0 at the start of a file)
        self.prev_w = np.where(self.prev_ok, np.float32(self.params.vec_context), np.float32(0))

    def _ctx_inv(self, start: int, stop: int) -> np.ndarray:
        """1 / |v_i + w v_{i-1}| for rows [start, stop) (1 without a previous entry): for unit rows
        it is 1 / sqrt(1 + w^2 + 2 w v_i.v_{i-1})."""
        dots = self.matrix.neighbour_dots(start, stop)
        w = np.float32(self.params.vec_context)
        return np.where(self.prev_ok[start:stop], 1 / np.sqrt(np.maximum(1 + w * w + 2 * w * dots, 1e-12)),
                        1).astype(np.float32)

    @property
    def vectors(self) -> np.ndarray:
        """The ``(n, dim)`` unit rows (a copy: kept split)."""
        return self.matrix.vectors

    @property
    def prefix(self) -> np.ndarray | None:
        """The fast path's scan (:attr:`memkit.search.rank_matrix.RankMatrix.prefix`); None: the
        exact path only (set it to None to take the exact path)."""
        return self.matrix.prefix

    @prefix.setter
    def prefix(self, value: np.ndarray | None) -> None:
        self.matrix.prefix = value

    @property
    def prefix_tail(self) -> np.ndarray | None:
        """The scan's rows after a frozen index's prefix, in memory."""
        return self.matrix.prefix_tail

    @property
    def rows_frozen(self) -> np.ndarray | None:
        """A frozen index's rows in fixed point (the fast path's exact cosines of those rows)."""
        return self.matrix.rows_frozen

    @property
    def prefix8(self) -> tuple[np.ndarray, np.ndarray] | None:
        """A frozen index's prefix as int8 and its dimensions' factors."""
        return self.matrix.prefix8

    def extended(self, texts: Sequence[str], vectors: np.ndarray | tuple[np.ndarray, np.ndarray], file_ids: np.ndarray,
                 terms: tuple[np.ndarray, np.ndarray, Any], live: np.ndarray | None) -> "Ranker":
        """The ranker of these entries, when the first ``self.n`` are this ranker's (some now
        dead per ``live``) and the others new: only the new ones are worked out (their BM25
        postings, context norms, speakers); the statistics follow."""
        if len(texts) < self.n:
            raise ValueError("extended() appends entries; build a new Ranker instead")
        return Ranker(texts, vectors, file_ids, self.params, terms=terms, live=live, base=self)

    # ---- the pieces ----------------------------------------------------------------------------
    def _unit(self, query_vec: np.ndarray) -> np.ndarray:
        return self.matrix.unit(query_vec)

    def _cosines(self, q: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        return self.matrix.cosines(q, rows)

    def _vector(self, cos: np.ndarray, prev_cos: np.ndarray, rows: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        """(context cosine, vector score) of ``rows`` from their cosines and their previous entries'."""
        ctx = prev_cos * self.prev_w[rows]
        ctx += cos
        ctx *= self.ctx_inv[rows]
        vec = cos + ctx
        vec *= np.float32(0.5)
        return ctx, vec

    def vector_scores(self, query_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cosine, context cosine, vector score) of every entry."""
        cos = self._cosines(self._unit(query_vec))
        prev = np.empty_like(cos)
        prev[0:1] = 0
        prev[1:] = cos[:-1]
        return (cos, *self._vector(cos, prev, slice(None)))

    def cosine_noise(self, query_vec: np.ndarray, mask: np.ndarray | None = None) -> float:
        """The cosine an unrelated entry reaches for this query: the mean of the query's cosines
        over the vault plus ``NOISE_Z`` standard deviations (at least ``NOISE_FLOOR``); with fewer
        than ``NOISE_MIN_N`` entries there are no statistics and it is 1 (only a shared word shows
        a weak match). A hit below it that shares no word with the query is noise, never shown.
        Over ``NOISE_SAMPLE`` allowed entries at most, in 16 runs spread over the vault (the
        statistics of a large vault without reading all of its vectors)."""
        allowed = self.live if mask is None else (mask if self.live is None else mask & self.live)
        rows = np.arange(self.n) if allowed is None else np.flatnonzero(allowed)
        if rows.shape[0] > NOISE_SAMPLE:  # 16 runs of consecutive rows: few pages of the matrix read
            run = NOISE_SAMPLE // 16
            starts = np.linspace(0, rows.shape[0] - run, 16).astype(np.int64)
            rows = rows[(starts[:, None] + np.arange(run)).reshape(-1)]
        cos = self._cosines(self._unit(query_vec), rows) if rows.shape[0] < self.n else self._cosines(self._unit(query_vec))
        if cos.size < NOISE_MIN_N:
            return 1.0
        return max(NOISE_FLOOR, float(cos.mean() + NOISE_Z * cos.std()))

    def _boost(self, qwords: frozenset[str]) -> np.ndarray | None:
        """The speaker boost per entry, when the query names a speaker."""
        named = [i for i, ts in enumerate(self.speaker_terms) if ts & qwords]
        if not named or not self.params.speaker_boost:
            return None
        lut = np.zeros(len(self.speaker_names) + 1, dtype=np.float32)  # [-1]: no speaker
        lut[named] = np.float32(self.params.speaker_boost)
        return lut[self.speaker]

    def note_weight(self, query: str, qt: list[tuple[int, int]], coverage: np.ndarray,
                    cov_max: float | None = None) -> float:
        """The lexical weight for entries of notes (see the module docstring, step 3): the full
        ``lex_weight`` when the best word match holds the whole query, less as it holds less of it.

        :param coverage: :meth:`memkit.search.lexical.BM25Index.coverage` of ``qt``.
        :param cov_max: its maximum, when known.
        """
        p = self.params
        words = _query_words(query)
        if not p.lex_full or not words or not qt:
            return p.lex_weight if qt else 0.0
        known = sum(self.lex.idf(tid) for tid, _ in qt)
        n = float(self.lex.live_docs)
        unknown = (len(words) - len(qt)) * float(np.log1p((n + 0.5) / 0.5))  # as rare as a word can be
        if cov_max is None:
            cov_max = float(coverage.max()) if coverage.size else 0.0
        held = cov_max * known / (known + max(0.0, unknown))
        return p.lex_weight * min(1.0, held / p.lex_full) ** p.lex_power

    @property
    def has_speakers(self) -> bool:
        """Whether some file reads like a conversation (its entries have speakers)."""
        return bool(self.speaker_names)

    def _weights(self, query: str, qt: list[tuple[int, int]], coverage: np.ndarray,
                 rows: np.ndarray | slice, words_first: bool = False,
                 cov_max: float | None = None) -> np.ndarray | float:
        """The lexical weight of each of ``rows``: ``lex_weight`` in conversations (and everywhere
        for ``words_first``), the query's note weight elsewhere (a float when they are all alike)."""
        if words_first:
            return self.params.lex_weight
        note = self.note_weight(query, qt, coverage, cov_max)
        if note == self.params.lex_weight or not self.has_speakers:
            return note
        return np.where(self.speaker[rows] >= 0, np.float32(self.params.lex_weight), np.float32(note))

    def _fuse(self, lex: np.ndarray, vec: np.ndarray, vmin: float, vmax: float, lmax: float,
              boost: np.ndarray | None, next_ok: np.ndarray, seg: np.ndarray | None,
              weight: np.ndarray | float | None = None) -> np.ndarray:
        """Steps 3-5 over a run of entries: all of them (``seg`` None: the files are known), or
        the fast path's candidates (``seg``: the file of each); ``weight``: the lexical weight
        (of each entry, or of all; default ``lex_weight``)."""
        p = self.params
        a = np.float32(p.lex_weight) if weight is None else (
            weight.astype(np.float32) if isinstance(weight, np.ndarray) else np.float32(weight))
        fused = lex * (a / np.float32(lmax)) if lmax > 0 else np.zeros(lex.shape[0], dtype=np.float32)
        if vmax > vmin:
            fused += np.maximum(vec - np.float32(vmin), 0) * ((1 - a) / np.float32(vmax - vmin))
        if boost is not None:
            fused += boost
        if p.smooth_next and fused.shape[0] > 1:
            fused[:-1] += np.float32(p.smooth_next) * fused[1:] * next_ok[:-1]
        if p.file_prior and fused.shape[0]:
            starts, lens = (self.seg_starts, self.seg_lens) if seg is None else topk.runs(seg)
            fused += (np.maximum.reduceat(fused, starts) * np.float32(p.file_prior)).repeat(lens)
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
            live = vec if self.live is None else vec[self.live]
            out["fused"] = self._fuse(lex, vec, float(live.min()) if live.size else 0.0,
                                      float(live.max()) if live.size else 0.0, float(lex.max()),
                                      self._boost(_query_words(query)), self.next_ok, None,
                                      self._weights(query, qt, out["coverage"], slice(None)))
        return out

    # ---- searching -----------------------------------------------------------------------------
    def search(self, query: str, query_vec: np.ndarray | None, k: int = 10, mode: str = "hybrid",
               threshold: float | None = None, mask: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best entries as (entry index, score), best first (ties in entry order).

        :param mode: ``hybrid``, ``vector`` or ``lexical`` (``query_vec`` may be None for lexical).
        :param threshold: see the module docstring; None: none.
        :param mask: only entries where it is True (filters by topic, kind, date…).
        """
        return [(i, s) for i, s, _, _ in self.search_hits(query, query_vec, k, mode, threshold, mask)]

    def search_hits(self, query: str, query_vec: np.ndarray | None, k: int = 10, mode: str = "hybrid",
                    threshold: float | None = None, mask: np.ndarray | None = None, *,
                    words_first: bool = False, qterms: list[tuple[int, int]] | None = None) -> list[Hit]:
        """As :meth:`search`, each result with the entry's cosine to the query (0 without a query
        vector) and its BM25 score: (entry index, score, cosine, lexical).

        :param words_first: fuse with ``lex_weight`` everywhere, notes included: for a text that is
            itself a memory (a digest's conclusion, looking for the entries it repeats or updates),
            not a person's question.
        :param qterms: the query's (term id, count) (:meth:`BM25Index.counted`), when the caller
            has its term ids already (a searcher, from the index's view); else looked up in the vocab."""
        if mode not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {mode!r}: use hybrid, vector or lexical")
        if query_vec is None and mode != "lexical":
            raise ValueError(f"search mode {mode!r} needs a query vector")
        if mask is not None:
            mask = np.asarray(mask, dtype=bool).reshape(-1)
            if mask.shape[0] != self.n:
                raise ValueError(f"mask has {mask.shape[0]} items for {self.n} entries")
        if self.n == 0 or k <= 0:
            return []
        q = self._unit(query_vec) if query_vec is not None else None
        qt = self.lex.query_terms(query) if qterms is None else qterms
        lex, lex_rows = self.lex.scores_rows(qt)
        if mode == "hybrid" and mask is None and self.prefix is not None and k <= self._candidates() // 4:
            assert q is not None
            got = self._search_fast(query, qt, lex, lex_rows, q, k, threshold, words_first)
            if got is not None:
                return got
        allowed = self.live if mask is None else (mask if self.live is None else mask & self.live)
        cos = ctx = vec = None
        if q is not None:
            cos = self._cosines(q)
            prev = np.empty_like(cos)
            prev[0:1] = 0
            prev[1:] = cos[:-1]
            ctx, vec = self._vector(cos, prev, slice(None))
        keep: np.ndarray | None = allowed
        coverage: np.ndarray | None = None
        if mode == "lexical":  # on a 0..1 scale like the others, order kept: 0.63 = every query word once
            ideal = sum(self.lex.idf(tid) for tid, _ in qt)
            score = -np.expm1(lex * np.float32(-1 / ideal)) if ideal > 0 else lex
            coverage = self.lex.coverage(qt)
            own = coverage > 0  # a query word in the entry's own text, not only in its context
            keep = own if keep is None else keep & own
        elif mode == "vector":
            assert vec is not None
            score = vec
        else:
            assert vec is not None
            if allowed is None:
                vmin, vmax, lmax = float(vec.min()), float(vec.max()), float(lex.max())
            else:
                vv, lv = vec[allowed], lex[allowed]
                vmin, vmax = (float(vv.min()), float(vv.max())) if vv.size else (0.0, 0.0)
                lmax = float(lv.max()) if lv.size else 0.0
            coverage = self.lex.coverage(qt)
            score = self._fuse(lex, vec, vmin, vmax, lmax, self._boost(_query_words(query)), self.next_ok, None,
                               self._weights(query, qt, coverage, slice(None), words_first))
        if threshold is not None and cos is not None and ctx is not None:
            passed = (np.maximum(cos, ctx) >= np.float32(threshold)) | (
                (self.lex.coverage(qt) if coverage is None else coverage) >= np.float32(self.params.lexical_keep))
            keep = passed if keep is None else keep & passed
        best = topk.best(None if keep is None else keep.nonzero()[0], score, k)
        return [(i, s, float(cos[i]) if cos is not None else 0.0, float(lex[i])) for i, s in best]

    def _candidates(self) -> int:
        """How many candidates the fast path scores exactly: 1/64 of the entries, at least
        ``MIN_CANDIDATES``, at most ``CANDIDATES`` or 2 √n up to ``CANDIDATES_MAX`` (632 at 100k,
        1,500 at 1M: the recall@10 against the exact path stays ≥ 0.99 as the vault grows,
        ``bench/bench_scale.py``)."""
        cap = max(CANDIDATES, min(CANDIDATES_MAX, int(2 * math.sqrt(self.n))))
        return min(cap, max(MIN_CANDIDATES, int(self.n * CANDIDATE_SHARE)))

    def _search_fast(self, query: str, qt: list[tuple[int, int]], lex: np.ndarray, lex_rows: np.ndarray,
                     q: np.ndarray, k: int, threshold: float | None, words_first: bool = False) -> list[Hit] | None:
        """Hybrid search on a large vault scoring candidates only (see the module docstring);
        None when too few candidates pass the threshold and others might, or when notes and
        conversations get different lexical weights for this query (the exact path answers).
        ``lex_rows``: the rows ``lex`` may be above 0 at (the others are read as 0)."""
        assert self.prefix is not None
        p, n, dead = self.params, self.n, self.dead
        coverage, cov_rows = self.lex.coverage_rows(qt)
        dense = 8 * cov_rows.shape[0] > n  # many rows reached: whole passes beat gathers (0 elsewhere)
        cov_at = coverage if dense else coverage[cov_rows]
        weight = self._weights(query, qt, coverage, slice(None), words_first,
                               float(_MAX(cov_at)) if cov_at.size else 0.0)
        if isinstance(weight, np.ndarray):
            return None  # notes and conversations weighted apart: the candidates' proxy would not hold
        a = np.float32(weight)
        q0 = q[:PREFIX_DIMS]
        approx = np.empty(n, dtype=np.float32)  # the scan, written in place (no concatenation)
        self.matrix.scan(q0, approx)
        if dead.size:  # a live row's value: changes neither the minimum nor the maximum
            approx[dead] = approx[self._a_live_row]
        # the best and the lowest approximate cosines hold the maximum and the minimum
        # (the best trimmed to VEC_CANDIDATES: each is a candidate whose rows are read; the lowest
        # not, ~1,800 at 1M: their floor is nearer the exact path's, recall@10 0.991 against 0.985)
        best_vec = topk.top(approx, VEC_CANDIDATES, trim=True)
        low = topk.top(approx, LOW_CANDIDATES, largest=False)
        amin, amax = float(_MIN(approx[low])), float(_MAX(approx[best_vec]))
        dense = 8 * lex_rows.shape[0] > n
        lex_at = lex if dense else lex[lex_rows]
        lmax = float(_MAX(lex_at)) if lex_at.size else 0.0
        # (approx - amin) scaled like the fusion's vector half, less a constant: same candidates
        proxy = approx * ((1 - a) / np.float32(max(amax - amin, 1e-9)))
        if lmax > 0:  # 0 outside lex_rows (a row listed twice is added to once)
            if dense:
                proxy += lex * (a / np.float32(lmax))
            else:
                proxy[lex_rows] += lex_at * (a / np.float32(lmax))
        boost = self._boost(_query_words(query))
        if boost is not None:
            proxy += boost
        if p.file_prior:
            proxy += (np.maximum.reduceat(proxy, self.seg_starts) * np.float32(p.file_prior)).repeat(self.seg_lens)
        e, low, rows = self._candidate_rows(proxy, best_vec, low)
        exact = np.empty(n + 2, dtype=np.float32)  # read at the rows computed only (and [-1]: 0)
        # the scan's products are the first dimensions' share of the exact cosines
        exact[rows] = self.matrix.exact_rows(q, rows, approx)
        exact[-1] = 0
        m = e.shape[0]
        both = np.concatenate([e, low])  # the candidates, then the lowest (their vector scores only)
        cos = exact[both]
        ctx, vec = self._vector(cos, exact[both - 1], both)
        vmin = float(_MIN(vec))
        cos, ctx, vec = cos[:m], ctx[:m], vec[:m]
        follows = np.zeros(e.shape[0], dtype=bool)  # the next candidate is the next entry
        np.equal(e[1:], e[:-1] + 1, out=follows[:-1])
        next_ok = self.next_ok[e] & follows
        fused = self._fuse(lex[e], vec, vmin, float(_MAX(vec)), lmax, None if boost is None else boost[e],
                           next_ok, self.seg_of[e], weight)
        # an entry's score is complete when its next entry is a candidate too (or it has none)
        ok = next_ok | ~self.next_ok[e]
        if threshold is not None:
            ok &= (np.maximum(cos, ctx) >= np.float32(threshold)) | (coverage[e] >= np.float32(p.lexical_keep))
            if int(ok.sum()) < k:
                outside = np.ones(n, dtype=bool) if self.live is None else self.live.copy()
                outside[e] = False
                strong = coverage >= np.float32(p.lexical_keep)
                if (strong & outside).any() or (approx[outside] >= threshold - THRESHOLD_MARGIN).any():
                    return None  # an entry outside the candidates might pass: the exact path decides
        return [(int(e[i]), s, float(cos[i]), float(lex[e[i]])) for i, s in topk.best(ok.nonzero()[0], fused, k)]


    def _candidate_rows(self, proxy: np.ndarray, best_vec: np.ndarray,
                        low: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fast path's candidates (the best of ``proxy``, the entry after each for its
        smoothing, the best approximate cosines ``best_vec``), the lowest ones that live (``low``:
        the vector half's floor), and the rows whose exact cosines those need (each, and the entry
        before it for its context cosine): (candidates, lowest, rows), sorted, none dead."""
        n, dead = self.n, self.dead
        mark = np.zeros(n + 2, dtype=bool)
        top = topk.top(proxy, self._candidates())
        mark[top] = True
        mark[top + 1] = True
        mark[best_vec] = True
        mark[n:] = False
        if dead.size:
            mark[dead] = False
        e = mark.nonzero()[0]
        if dead.size:
            low = low[self.live[low]]  # type: ignore[index]
        mark[:-1] |= mark[1:]  # now: the candidates and the entries before them
        mark[low] = True
        mark[low - 1] = True  # -1: the spare slot at the end, set to 0 below
        return e, low, mark[:n].nonzero()[0]

@functools.lru_cache(maxsize=256)
def _query_words(query: str) -> frozenset[str]:
    """The search terms of a query (a search asks for them more than once)."""
    return frozenset(text_terms(query))

