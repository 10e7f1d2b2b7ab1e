"""BM25 over the entries' search terms (pure numpy).

Documents arrive already analysed: every entry's terms as ids (the index stores the terms of each
entry when it is indexed, see :func:`memkit.text.terms`), so building is a few numpy sorts.
Postings are stored by term (CSC: for term ``t``, ``docs[indptr[t]:indptr[t + 1]]`` and their
precomputed BM25 weights), and a query is one scatter-add per query term.

Context indexing: with ``context=c`` every entry is indexed together with the ``c`` entries before
it in the same file, their term counts (and lengths) weighted by ``context_weight``: a line of a
topic file, or a turn of a conversation, is often only understandable with the one before it
("Where did you go?" / "To the lake."). Document frequencies count an entry's own terms only.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .text import terms as text_terms

__all__ = ["BM25Index", "encode_terms"]


def encode_terms(texts: Sequence[str], vocab: dict[str, int] | None = None) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """(term ids, offsets, vocab) of ``texts``, as :class:`BM25Index` takes them."""
    vocab = {} if vocab is None else vocab
    ids: list[int] = []
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    for i, text in enumerate(texts):
        ids.extend(vocab.setdefault(t, len(vocab)) for t in text_terms(text))
        offsets[i + 1] = len(ids)
    return np.asarray(ids, dtype=np.int32), offsets, vocab


class BM25Index:
    """Okapi BM25 over documents given as term ids, optionally with same-file context.

    :param term_ids: every document's term ids, concatenated.
    :param offsets: ``(n + 1,)``: document ``i`` is ``term_ids[offsets[i]:offsets[i + 1]]``.
    :param vocab: term -> id (query terms are looked up in it).
    :param file_ids: the file of each document (context never crosses files).
    :param context: previous same-file documents indexed with each document (0..3).
    :param context_weight: their term counts' weight.
    """

    def __init__(self, term_ids: np.ndarray, offsets: np.ndarray, vocab: dict[str, int], *,
                 file_ids: np.ndarray | None = None, k1: float = 1.2, b: float = 0.5, context: int = 2,
                 context_weight: float = 0.5) -> None:
        if not 0 <= context <= 3:
            raise ValueError("context is at most 3 previous entries")
        n = len(offsets) - 1
        v = max(len(vocab), int(term_ids.max()) + 1 if term_ids.size else 0)
        self.n_docs, self.n_terms, self.vocab = n, v, vocab
        self.k1, self.b = float(k1), float(b)
        files = np.zeros(n, dtype=np.int64) if file_ids is None else np.asarray(file_ids, dtype=np.int64)
        lengths = np.diff(offsets)
        # Every posting is one int64: (term * n + doc) << 8 | source << 6 | min(tf, 63), source 0
        # for the document's own text and c for the c-th previous document (context); one
        # in-place sort then groups the postings of a (term, doc) with its own one first.
        span = max(n, 1)
        key = term_ids.astype(np.int64) * span + np.repeat(np.arange(n, dtype=np.int64), lengths)
        key.sort()
        first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]])) if key.size else key
        tf = np.diff(np.append(first, key.shape[0]))
        key = key[first]
        df = np.bincount(key // span, minlength=v)
        packed = [(key << 8) | np.minimum(tf, 63)]
        dl = lengths.astype(np.float32)
        for c in range(1, context + 1):
            if n <= c:
                break
            same = np.zeros(n, dtype=bool)
            same[c:] = files[c:] == files[:-c]  # document d + c holds document d as context
            d = key % span
            ok = (d + c < n) & same[np.minimum(d + c, n - 1)]
            packed.append(((key[ok] + c) << 8) | (c << 6) | np.minimum(tf[ok], 63))
            dl[c:] += np.where(same[c:], np.float32(context_weight) * lengths[:-c].astype(np.float32), np.float32(0))
        del key, tf
        allp = np.concatenate(packed)
        del packed
        allp.sort()
        start = np.flatnonzero(np.concatenate([[True], (allp[1:] >> 8) != (allp[:-1] >> 8)])) if allp.size else allp
        weight = np.array([1.0] + [context_weight] * 3, dtype=np.float32)
        tfs = (allp & 63).astype(np.float32) * weight[(allp >> 6) & 3]
        tfs = np.add.reduceat(tfs, start) if start.size else np.zeros(0, np.float32)
        self.own = ((allp[start] >> 6) & 3) == 0 if start.size else np.zeros(0, dtype=bool)
        ukey = allp[start] >> 8
        del allp
        term = ukey // span
        self.docs = (ukey % span).astype(np.int32)
        del ukey
        self.indptr = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=v), out=self.indptr[1:])
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        avgdl = float(dl.mean()) if n else 1.0
        norm = (self.k1 * (1.0 - self.b + self.b * dl / (avgdl if avgdl > 0 else 1.0))).astype(np.float32)
        self.weights = self.idf[term] * tfs * np.float32(self.k1 + 1) / (tfs + norm[self.docs])

    def __len__(self) -> int:
        return self.n_docs

    def query_terms(self, query: str) -> list[tuple[int, int]]:
        """(term id, count) of each distinct query term the index knows."""
        counts: dict[int, int] = {}
        for t in text_terms(query):
            tid = self.vocab.get(t, -1)
            if 0 <= tid < self.n_terms:
                counts[tid] = counts.get(tid, 0) + 1
        return list(counts.items())

    def scores(self, qterms: list[tuple[int, int]]) -> np.ndarray:
        """BM25 score of every document (float32, shape (N,); 0 = no query term)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for tid, cnt in qterms:
            s, e = self.indptr[tid], self.indptr[tid + 1]
            out[self.docs[s:e]] += self.weights[s:e] * np.float32(cnt) if cnt > 1 else self.weights[s:e]
        return out

    def scores_at(self, qterms: list[tuple[int, int]], rows: np.ndarray) -> np.ndarray:
        """``scores(qterms)[rows]`` without scoring every document (a term's postings are
        sorted by document, so each row is found by binary search)."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(rows.shape[0], dtype=np.float32)
        for tid, cnt in qterms:
            s, e = int(self.indptr[tid]), int(self.indptr[tid + 1])
            docs = self.docs[s:e]
            pos = np.minimum(np.searchsorted(docs, rows), max(e - s - 1, 0))
            hit = docs[pos] == rows if e > s else np.zeros(rows.shape[0], dtype=bool)
            out[hit] += self.weights[s:e][pos[hit]] * np.float32(cnt)
        return out

    def coverage(self, qterms: list[tuple[int, int]]) -> np.ndarray:
        """Share (0..1) of the query's IDF mass found in each document's own text, over the query
        words the vault knows: a word no entry holds can be matched by nothing, so it does not
        dilute the others (in a small vault "what rice do I use" must still find the entry about
        rice when no entry says "use"). A query with no known word covers nothing."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        total = sum(float(self.idf[tid]) for tid, _ in qterms)
        if total <= 0:
            return out
        for tid, _ in qterms:
            s, e = self.indptr[tid], self.indptr[tid + 1]
            out[self.docs[s:e][self.own[s:e]]] += np.float32(self.idf[tid] / total)
        return out
