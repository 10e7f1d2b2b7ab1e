"""BM25 over the entries' search terms (pure numpy).

Documents arrive already analysed: every entry's terms as ids (the index stores the terms of each
entry when it is indexed, see :func:`memkit.formats.words.terms`), so building is one sort. Postings are
stored by term (CSC: for term ``t``, ``docs[indptr[t]:indptr[t + 1]]`` and their term
frequencies); the BM25 weights are computed when a query asks, for its terms only, from the
document frequencies and lengths kept beside, all its postings in a few array operations.

Context indexing: with ``context=c`` every entry is scored together with the ``c`` entries before
it in the same file, their term counts (and lengths) weighted by ``context_weight``: a line of a
topic file, or a turn of a conversation, is often only understandable with the one before it
("Where did you go?" / "To the lake."). Document frequencies count an entry's own terms only.
Below ``COMBINED_MAX_DOCS`` documents a term's postings are folded with their context when a
query first asks for the term and kept (a later query reads them as they are); a larger index
adds the context for the query's terms at every query (its memory stays a third).

Rows can die (:meth:`BM25Index.extended`: the entries of a file that changed) and new rows be
appended without building the postings of the others again: statistics (document frequencies,
average length, document count) count live rows only, so scores are those of an index built from
the live rows alone.
"""
from __future__ import annotations

import threading
from typing import Any, Sequence

import numpy as np

from ..formats.words import terms as text_terms
from .topk import distinct

__all__ = ["BM25Index", "encode_terms"]

_MAX_TF = 255
_BLOCK = 1 << 15  # elements worked on at a time while building (bounds the temporaries)
_TERMS_AT_ONCE = 8  #: query terms scored together (a long pasted query is scored 8 terms at a time)
COMBINED_MAX_DOCS = 50_000  #: below this many documents a queried term's postings are kept with the context folded in
_FOLDED_MAX = 1 << 21  #: folded postings kept, at most (then forgotten, all at once)


def encode_terms(texts: Sequence[str], vocab: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(term ids, offsets, vocab) of ``texts``, as :class:`BM25Index` takes them."""
    vocab = {} if vocab is None else vocab
    ids: list[int] = []
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    for i, text in enumerate(texts):
        ids.extend(vocab.setdefault(t, len(vocab)) for t in text_terms(text))
        offsets[i + 1] = len(ids)
    return np.asarray(ids, dtype=np.int32), offsets, vocab


class _Postings:
    """Own-text postings of rows ``[row0, row0 + n)``: per term, the rows holding it (ascending)
    and how often (uint8, capped at 255). :meth:`folded` gives a term's postings with the context
    folded in, worked out when first asked and kept."""

    def __init__(self, term_ids: np.ndarray, offsets: np.ndarray, row0: int = 0, live: np.ndarray | None = None) -> None:
        n = len(offsets) - 1
        self.row0, self.rows = row0, n
        self.tf: np.ndarray
        self._folded: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._folded_size = 0
        self.alive = None if live is None or live.all() else live.copy()  #: rows left out (None: none)
        lengths = np.diff(offsets)
        if self.alive is not None:  # dead rows hold nothing
            term_ids = term_ids[np.repeat(self.alive, lengths)]
            lengths = np.where(self.alive, lengths, 0)
        if term_ids.size == 0:
            self.n_terms = 0
            self.docs = np.zeros(0, np.int32)
            self.tf = np.zeros(0, np.uint8)
            self.indptr = np.zeros(1, np.int64)
            return
        self._build(term_ids, lengths, n, row0)

    @classmethod
    def restored(cls, docs: np.ndarray, tf: np.ndarray, indptr: np.ndarray, rows: int,
                 alive: np.ndarray | None) -> "_Postings":
        """Postings kept from an earlier build (:meth:`BM25Index.postings`), e.g. memory-mapped."""
        self = cls.__new__(cls)
        self.row0, self.rows = 0, rows
        self._folded, self._folded_size = {}, 0
        self.alive = None if alive is None or alive.all() else alive
        self.docs, self.tf, self.indptr = docs, tf, indptr
        self.n_terms = int(indptr.shape[0]) - 1
        return self

    def _build(self, term_ids: np.ndarray, lengths: np.ndarray, n: int, row0: int) -> None:
        """Sort one int64 key per term occurrence (term * n + row); equal keys are one posting.
        The postings are read off the sorted keys a block at a time (few temporaries at once)."""
        span = max(n, 1)
        key = term_ids.astype(np.int64)
        key *= span
        ends = np.cumsum(lengths)
        for a in range(0, n, _BLOCK):  # + the row of each occurrence, a block of rows at a time
            b = min(a + _BLOCK, n)
            first = int(ends[a - 1]) if a else 0
            key[first:int(ends[b - 1])] += np.arange(a, b, dtype=np.int64).repeat(lengths[a:b])
        del ends
        key.sort()
        m = key.shape[0]
        brk = np.empty(m + 1, dtype=bool)  # a posting starts here (and one past the end)
        brk[0] = brk[m] = True
        np.not_equal(key[1:], key[:-1], out=brk[1:m])
        u = int(np.count_nonzero(brk)) - 1
        self.docs = np.empty(u, dtype=np.int32)
        self.tf = np.empty(u, dtype=np.uint8)
        v = int(key[-1] // span) + 1
        counts = np.zeros(v, dtype=np.int64)
        block = _BLOCK
        j = a = 0
        while a < m:
            b = min(a + block, m)
            starts = np.flatnonzero(brk[a:b]) + a
            stop = b + int(np.argmax(brk[b:]))  # the run open at b ends at the next start
            k = len(starts)
            ends = np.empty(k, dtype=np.int64)
            ends[:-1] = starts[1:]
            ends[-1:] = stop
            np.minimum(ends - starts, _MAX_TF, out=ends)
            self.tf[j:j + k] = ends
            term, doc = np.divmod(key[starts], span)
            self.docs[j:j + k] = doc
            counts += np.bincount(term, minlength=v)
            j += k
            a = stop
        del key, brk
        if row0:
            self.docs += np.int32(row0)
        self.n_terms = v
        self.indptr = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(counts, out=self.indptr[1:])

    def folded(self, tids: list[int], successors: list[np.ndarray], cw: float) -> list[tuple[np.ndarray, np.ndarray]]:
        """(rows, frequency with the context folded in) of each term: row d's count also goes,
        times ``cw``, to rows d + 1 … d + c of its file (``successors[c - 1]`` says row d + c is
        in row d's file). The terms not kept from an earlier query are worked out together, and
        kept."""
        out = [self._folded.get(t) for t in tids]
        todo = [i for i, got in enumerate(out) if got is None]
        if todo:
            spans = [self.span(tids[i]) for i in todo]
            lens = [e - s for s, e in spans]
            d = np.concatenate([self.docs[s:e] for s, e in spans])
            f = np.concatenate([self.tf[s:e] for s, e in spans]).astype(np.float32)
            width = self.row0 + self.rows + len(successors) + 1
            key = np.arange(len(todo), dtype=np.int64).repeat(lens) * width + d
            keys, tfs = [key], [f]
            for c, nxt in enumerate(successors, start=1):
                ok = nxt[d]
                keys.append(key[ok] + c)
                tfs.append(f[ok] * np.float32(cw))
            key = np.concatenate(keys)
            order = np.argsort(key, kind="stable")  # equal keys summed in one order on every CPU
            key = key[order]
            brk = np.empty(key.shape[0], dtype=bool)
            brk[:1] = True
            np.not_equal(key[1:], key[:-1], out=brk[1:])
            starts = brk.nonzero()[0]
            tf = np.add.reduceat(np.concatenate(tfs)[order], starts) if starts.size else np.zeros(0, np.float32)
            term, row = np.divmod(key[starts], width)
            bounds = np.searchsorted(term, np.arange(len(todo) + 1))
            if self._folded_size + starts.shape[0] > _FOLDED_MAX:
                self._folded.clear()
                self._folded_size = 0
            self._folded_size += starts.shape[0]
            for n, i in enumerate(todo):
                a, b = int(bounds[n]), int(bounds[n + 1])
                out[i] = self._folded[tids[i]] = (row[a:b].astype(np.int32), tf[a:b])
        return out  # type: ignore[return-value]

    def df(self, size: int) -> np.ndarray:
        """Documents holding each term (int64, ``size`` terms)."""
        out = np.zeros(size, dtype=np.int64)
        out[:self.n_terms] = np.diff(self.indptr)
        return out

    def span(self, tid: int) -> tuple[int, int]:
        if tid >= self.n_terms:
            return 0, 0
        return int(self.indptr[tid]), int(self.indptr[tid + 1])


class BM25Index:
    """Okapi BM25 over documents given as term ids, optionally with same-file context.

    :param term_ids: every document's term ids, concatenated.
    :param offsets: ``(n + 1,)``: document ``i`` is ``term_ids[offsets[i]:offsets[i + 1]]``.
    :param vocab: term -> id (query terms are looked up in it): a dict, or an object whose
        ``ids(terms)`` gives the ids (-1: unknown) such as :class:`memkit.index.index.TermIds`.
    :param file_ids: the file of each document (context never crosses files).
    :param context: previous same-file documents indexed with each document (0..3).
    :param context_weight: their term counts' weight.
    :param live: which documents count (None: all); the others score 0 and are left out of the
        statistics.
    """

    def __init__(self, term_ids: np.ndarray, offsets: np.ndarray, vocab: Any, *,
                 file_ids: np.ndarray | Sequence[int] | None = None, k1: float = 1.2, b: float = 0.5, context: int = 2,
                 context_weight: float = 0.5, live: np.ndarray | None = None, _main: _Postings | None = None) -> None:
        if not 0 <= context <= 3:
            raise ValueError("context is at most 3 previous entries")
        n = len(offsets) - 1
        self.n_docs, self.vocab = n, vocab
        self.k1, self.b = float(k1), float(b)
        self.context, self.context_weight = context, float(context_weight)
        files = np.zeros(n, dtype=np.int64) if file_ids is None else np.asarray(file_ids).reshape(-1)
        if files.shape[0] != n:
            raise ValueError(f"file_ids has {files.shape[0]} items for {n} documents")
        term_ids = np.asarray(term_ids, dtype=np.int32)
        offsets = np.asarray(offsets, dtype=np.int64)
        self.live = None if live is None or live.all() else np.asarray(live, dtype=bool)
        self.dead = np.zeros(0, np.int64) if self.live is None else np.flatnonzero(~self.live)
        # same-file successors: _next[c - 1][d] says document d + c is in d's file
        self._next: list[np.ndarray] = []
        for c in range(1, context + 1):
            nxt = np.zeros(n, dtype=bool)
            if n > c:
                nxt[:-c] = files[c:] == files[:-c]
            self._next.append(nxt)
        if _main is None or _main.rows > n:
            _main = _Postings(term_ids, offsets, 0, self.live)
        parts = [_main]
        if _main.rows < n:  # rows appended since the main postings were built
            m = _main.rows
            base = offsets[m]
            parts.append(_Postings(term_ids[base:offsets[-1]], offsets[m:] - base, m,
                                   None if self.live is None else self.live[m:]))
        # a smaller index keeps each queried term's postings with the context folded in (read as
        # they are by the next query); a large one works the context out for every query
        self._fold = bool(context) and n < COMBINED_MAX_DOCS
        self._parts = parts
        vsize = max(len(vocab) if isinstance(vocab, dict) else 0, *(p.n_terms for p in parts))
        self.n_terms = vsize
        df = parts[0].df(vsize)
        for p in parts[1:]:
            df += p.df(vsize)
        if self.live is not None:  # rows of the main postings that died since they were built
            died = self.dead[self.dead < _main.rows]
            if _main.alive is not None:
                died = died[_main.alive[died]]
            if died.size:
                df -= _row_terms_df(term_ids, offsets, died, vsize)
        self.df = df
        lengths = np.diff(offsets).astype(np.float32)
        dl = lengths.copy()
        for c, nxt in enumerate(self._next, start=1):
            if n > c:
                dl[c:] += np.where(nxt[:-c], np.float32(context_weight) * lengths[:-c], np.float32(0))
        self.live_docs = n - len(self.dead)
        live_dl = dl if self.live is None else dl[self.live]
        avgdl = float(live_dl.mean()) if live_dl.size else 1.0
        self.norm = (self.k1 * (1.0 - self.b + self.b * dl / (avgdl if avgdl > 0 else 1.0))).astype(np.float32)
        self._local = threading.local()

    def __len__(self) -> int:
        return self.n_docs

    def postings(self) -> dict[str, np.ndarray]:
        """The own-text postings of an index built in one piece (to keep: :meth:`restored`)."""
        if len(self._parts) != 1:
            raise ValueError("an extended index's postings are in parts")
        main = self._parts[0]
        return {"docs": main.docs, "tf": main.tf, "indptr": main.indptr}

    @classmethod
    def restored(cls, postings: dict[str, np.ndarray], term_ids: np.ndarray, offsets: np.ndarray, vocab: Any, *,
                 live: np.ndarray | None, built_live: np.ndarray | None, **options: Any) -> "BM25Index":
        """The index of these documents from postings kept by :meth:`postings` (built when
        ``built_live`` rows were live; ``live``: which are now)."""
        main = _Postings.restored(postings["docs"], postings["tf"], postings["indptr"], len(offsets) - 1, built_live)
        return cls(term_ids, offsets, vocab, live=live, _main=main, **options)

    def extended(self, term_ids: np.ndarray, offsets: np.ndarray, file_ids: np.ndarray,
                 live: np.ndarray | None, vocab: Any = None) -> "BM25Index":
        """The index of these documents: the ones before ``len(self)`` the same as here (some
        of them now dead per ``live``), the others appended; only the appended ones (and the
        statistics) are worked out."""
        return BM25Index(term_ids, offsets, self.vocab if vocab is None else vocab, file_ids=file_ids, k1=self.k1, b=self.b, context=self.context,
                         context_weight=self.context_weight, live=live, _main=self._parts[0])

    def idf(self, tid: int) -> float:
        df = float(self.df[tid])
        n = float(self.live_docs)
        return float(np.log1p((n - df + 0.5) / (df + 0.5)))

    def query_terms(self, query: str) -> list[tuple[int, int]]:
        """(term id, count) of each distinct query term that some live document holds, the ids
        looked up in ``vocab`` (a searcher over an index's view has them from the view instead:
        :meth:`counted`)."""
        terms = text_terms(query)
        if not terms:
            return []
        vocab = self.vocab
        return self.counted([vocab.get(t, -1) for t in terms] if isinstance(vocab, dict) else vocab.ids(terms))

    def counted(self, ids: Sequence[int]) -> list[tuple[int, int]]:
        """(term id, count) of the query's term ids (-1: unknown) that some live document holds."""
        counts: dict[int, int] = {}
        for tid in ids:
            if 0 <= tid < self.n_terms and self.df[tid] > 0:
                counts[tid] = counts.get(tid, 0) + 1
        return list(counts.items())

    def _postings(self, qterms: list[tuple[int, int]], folded: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(rows, frequencies, query term number) of every posting of the query's terms: their
        own counts, or (``folded``) with the context."""
        tids = [tid for tid, _ in qterms]
        if not folded:  # the same query's own postings serve its scores and its coverage
            memo = getattr(self._local, "postings", None)
            if memo is not None and memo[0] == tids:
                return memo[1]
        got = self._gather(tids, folded)
        if not folded:
            self._local.postings = (tids, got)
        return got

    def _gather(self, tids: list[int], folded: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """:meth:`_postings` of these term ids, read from every part."""
        per_part = [part.folded(tids, self._next, self.context_weight) if folded else
                    [(part.docs[s:e], part.tf[s:e]) for s, e in map(part.span, tids)] for part in self._parts]
        docs, tfs, lens = [], [], []
        for j in range(len(tids)):  # term by term, each part's postings in turn
            count = 0
            for got in per_part:
                d, f = got[j]
                if d.shape[0]:
                    docs.append(d)
                    tfs.append(f)
                    count += d.shape[0]
            lens.append(count)
        if not docs:
            return None
        return (np.concatenate(docs), np.concatenate(tfs).astype(np.float32, copy=False),
                np.arange(len(tids), dtype=np.int32).repeat(lens))

    def scores(self, qterms: list[tuple[int, int]]) -> np.ndarray:
        """BM25 score of every document (float32, shape (N,); 0 = no query term)."""
        return self.scores_rows(qterms)[0]

    def scores_rows(self, qterms: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`scores`, and the rows they may be above 0 at (some twice, unsorted): every other
        score is 0, so a large vault's search reads these few instead of all N."""
        n = self.n_docs
        out = np.zeros(n, dtype=np.float32)
        rows = [self._score_into(out, qterms[i:i + _TERMS_AT_ONCE]) for i in range(0, len(qterms), _TERMS_AT_ONCE)]
        if self.dead.size:
            out[self.dead] = 0
        return out, (rows[0] if len(rows) == 1 else np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64))

    def _score_into(self, out: np.ndarray, qterms: list[tuple[int, int]]) -> np.ndarray:
        """Add the scores of these query terms to ``out``, all their postings at once; returns
        the rows added to."""
        tids = np.array([tid for tid, _ in qterms], dtype=np.int64)
        df = self.df[tids].astype(np.float64)
        scale = (np.log1p((self.live_docs - df + 0.5) / (df + 0.5)) * (self.k1 + 1)
                 * np.array([cnt for _, cnt in qterms])).astype(np.float32)
        none = np.zeros(0, dtype=np.int64)
        if self._fold:  # the context folded in (kept per term)
            got = self._postings(qterms, True)
            if got is None:
                return none
            d0, tf, j = got
            np.add.at(out, d0, scale[j] * tf / np.maximum(tf + self.norm[d0], np.float32(1e-12)))
            return d0
        got = self._postings(qterms, False)
        if got is None:
            return none
        d0, f0, j = got
        if not self.context:
            np.add.at(out, d0, scale[j] * f0 / np.maximum(f0 + self.norm[d0], np.float32(1e-12)))
            return d0
        # a document's frequency of a term is its own plus context_weight times each previous
        # same-file document's, summed in a scratch array (a block of n + context per term)
        n, c_max = self.n_docs, self.context
        width = n + c_max
        scratch = self._scratch(len(qterms) * width)
        key = j.astype(np.int64) if len(qterms) * width >= 2 ** 31 else j
        key = key * width + d0
        scratch[key] += f0  # (term, row) pairs are distinct: a plain scatter adds them
        cwf = np.float32(self.context_weight) * f0
        for c, nxt in enumerate(self._next, start=1):
            scratch[key + c] += cwf * nxt[d0]  # 0 where row + c is in another file
        tfs, rows = [], []
        for c in range(c_max + 1):  # each (term, row) once: a sum read is cleared
            at = key + c if c else key
            tfs.append(scratch[at])
            scratch[at] = 0
            rows.append(np.minimum(d0 + c, n - 1) if c else d0)
        tf = np.concatenate(tfs)
        row = np.concatenate(rows)
        weight = self.norm[row]
        weight += tf
        np.maximum(weight, np.float32(1e-12), out=weight)
        np.divide(tf, weight, out=weight)
        weight *= np.tile(scale[j], c_max + 1)
        np.add.at(out, row, weight)
        return row

    def _scratch(self, size: int) -> np.ndarray:
        """A zeroed float32 array of at least ``size`` (one per thread; given back zeroed)."""
        arr = getattr(self._local, "scratch", None)
        if arr is None or arr.shape[0] < size:
            arr = np.zeros(size, dtype=np.float32)
            self._local.scratch = arr
        return arr

    def scores_at(self, qterms: list[tuple[int, int]], rows: np.ndarray) -> np.ndarray:
        """``scores(qterms)[rows]``."""
        return BM25Index.scores(self, qterms)[np.asarray(rows, dtype=np.int64)]

    def holders(self, tid: int) -> np.ndarray:
        """The live rows whose own text holds term ``tid`` (ascending)."""
        got = self._gather([tid], False)
        if got is None:
            return np.zeros(0, dtype=np.int64)
        rows = distinct(got[0].astype(np.int64))
        if self.dead.size:
            rows = rows[~np.isin(rows, self.dead)]
        return rows

    def coverage(self, qterms: list[tuple[int, int]]) -> np.ndarray:
        """Share (0..1) of the query's IDF mass found in each document's own text, over the query
        words the vault knows: a word no entry holds can be matched by nothing, so it does not
        dilute the others (in a small vault "what rice do I use" must still find the entry about
        rice when no entry says "use"). A query with no known word covers nothing."""
        return self.coverage_rows(qterms)[0]

    def coverage_rows(self, qterms: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`coverage`, and the rows it may be above 0 at (as :meth:`scores_rows`)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        none = np.zeros(0, dtype=np.int64)
        idf = [self.idf(tid) for tid, _ in qterms]
        total = sum(idf)
        if total <= 0:
            return out, none
        share = np.array(idf, dtype=np.float32) / np.float32(total)
        got = self._postings(qterms, False)
        if got is None:
            return out, none
        d0, _, j = got
        np.add.at(out, d0, share[j])
        if self.dead.size:
            out[self.dead] = 0
        return out, d0


def _row_terms_df(term_ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """How many of ``rows`` hold each term (int64, ``size`` terms)."""
    lengths = (offsets[rows + 1] - offsets[rows]).astype(np.int64)
    if not lengths.sum():
        return np.zeros(size, np.int64)
    idx = np.repeat(offsets[rows] - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    key = term_ids[idx].astype(np.int64) * (len(offsets)) + np.repeat(rows, lengths)
    key = distinct(key)
    return np.bincount(key // len(offsets), minlength=size)[:size].astype(np.int64)
