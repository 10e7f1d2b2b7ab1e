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
        doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        # own postings: (term, doc) -> count
        key, tf = np.unique(term_ids.astype(np.int64) * n + doc, return_counts=True) if n else (
            np.zeros(0, np.int64), np.zeros(0, np.int64))
        df = np.bincount(key // max(n, 1), minlength=v)
        keys, weights, owns = [key], [tf.astype(np.float32)], [np.ones(key.shape[0], dtype=bool)]
        dl = lengths.astype(np.float32)
        w = np.float32(context_weight)
        for c in range(1, context + 1):
            if n <= c:
                break
            same = np.zeros(n, dtype=bool)
            same[c:] = files[c:] == files[:-c]  # document d + c holds document d as context
            d = key % n
            ok = (d + c < n) & same[np.minimum(d + c, n - 1)]
            keys.append(key[ok] + c)
            weights.append(tf[ok].astype(np.float32) * w)
            owns.append(np.zeros(int(ok.sum()), dtype=bool))
            dl[c:] += np.where(same[c:], w * lengths[:-c].astype(np.float32), np.float32(0))
        allk = np.concatenate(keys)
        order = np.argsort(allk, kind="stable")  # own postings sort first within a (term, doc)
        allk = allk[order]
        start = np.empty(allk.shape[0], dtype=bool)
        if allk.size:
            start[0] = True
            np.not_equal(allk[1:], allk[:-1], out=start[1:])
        first = np.flatnonzero(start)
        tfs = np.add.reduceat(np.concatenate(weights)[order], first) if first.size else np.zeros(0, np.float32)
        own = np.concatenate(owns)[order][first]
        ukey = allk[first]
        term = ukey // max(n, 1)
        self.docs = (ukey % max(n, 1)).astype(np.int32)
        self.indptr = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=v), out=self.indptr[1:])
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        avgdl = float(dl.mean()) if n else 1.0
        norm = (self.k1 * (1.0 - self.b + self.b * dl / (avgdl if avgdl > 0 else 1.0))).astype(np.float32)
        tfs = tfs.astype(np.float32)
        self.weights = self.idf[term] * tfs * np.float32(self.k1 + 1) / (tfs + norm[self.docs])
        self.own = own

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
