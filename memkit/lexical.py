"""Tokeniser and in-memory BM25 index (pure numpy, no scipy).

The index is rebuilt from the entries' texts every time the search index is loaded, so it is
built for speed: one regular-expression pass over the whole corpus, a per-index cache from raw
token to term ids, and postings stored column-wise (CSC layout: for each term a slice of
``docs``/``weights``).  A query is a loop over its few terms, each a single numpy scatter-add.

Context indexing: with ``context=c`` every entry is indexed together with the ``c`` entries
before it in the same file, the neighbours' term counts weighted by ``context_weight`` (a turn of
a conversation, or a line of a topic file, is often only understandable with the line before it:
"Where did you go?" / "To the lake."). Nothing is stored: it is recomputed at load.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Sequence

import numpy as np

__all__ = ["tokenize", "stem", "STOP_WORDS", "BM25Index"]

# English stop words (function words that carry no topic), plus the stems left by contractions
# ("don't" -> "don") and by the tokeniser dropping an apostrophe suffix.
STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves also too yet ever
    let us get got gets getting may might must shall much many s t d ll m re ve o y
    don didn doesn isn wasn weren aren hasn haven hadn won wouldn shouldn couldn mustn ain
    oh hey hi yeah yes ok okay wow really
    """.split()
)

# A word: letters/digits (unicode-aware), optionally joined by - . / _ or an apostrophe to the
# next run ("node-3", "2026.10", "v1.2/rc", "caroline's").  \x00 separates documents in a batch.
_TOKEN_RE = re.compile(r"\w+(?:[-./'’]\w+)*|\x00")
_JOIN_RE = re.compile(r"[-./_]")
_APOS_SUFFIXES = frozenset({"s", "t", "m", "re", "ve", "ll", "d"})
_VOWELS = frozenset("aeiouy")


def _has_vowel(w: str) -> bool:
    return any(c in _VOWELS for c in w)


def stem(word: str) -> str:
    """A light English suffix stemmer (plurals, -ed, -ing, -ies, final -e).

    Deliberately conservative: it merges inflections ("paints", "painted", "painting" ->
    "paint"; "stories"/"story" -> "stori"/"story" -> "stori") and leaves short words, words with
    digits and non-ASCII words alone.
    """
    n = len(word)
    if n <= 3 or not word.isascii() or not word.isalpha():
        return word
    w = word
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies") and n > 4:
        w = w[:-3] + "i"
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    if w.endswith("eed"):
        if len(w) > 4:
            w = w[:-1]
    elif w.endswith("ed") and len(w) > 4 and _has_vowel(w[:-2]):
        w = _undouble(w[:-2])
    elif w.endswith("ing") and len(w) > 5 and _has_vowel(w[:-3]):
        w = _undouble(w[:-3])
    if w.endswith("y") and len(w) > 3 and w[-2] not in _VOWELS:
        w = w[:-1] + "i"
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def _undouble(w: str) -> str:
    if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1] not in _VOWELS:
        return w[:-1]
    return w


def _word_terms(part: str) -> str | None:
    """Term for one simple word (no joiners): None when it is a stop word."""
    if "'" in part:
        head, _, tail = part.partition("'")
        part = head if tail in _APOS_SUFFIXES else head + tail
    if not part or part in STOP_WORDS:
        return None
    return stem(part)


_ANALYZE_CACHE: dict[str, tuple[str, ...]] = {}


def _analyze(raw: str) -> tuple[str, ...]:
    """Terms of one raw (lower-cased) token; cached, as a corpus has few distinct tokens."""
    got = _ANALYZE_CACHE.get(raw)
    if got is not None:
        return got
    r = raw.replace("’", "'")
    if _JOIN_RE.search(r) is None:
        t = _word_terms(r)
        out: tuple[str, ...] = () if t is None else (t,)
    else:
        # Compound token: keep it whole (rare, so findable: "node-3", "2026.10") and also its
        # parts, so "node 3" still finds "node-3".
        parts = [p for p in (_word_terms(p) for p in _JOIN_RE.split(r) if p) if p]
        whole = r.replace("'", "")
        out = tuple(dict.fromkeys([whole, *parts]))
    if len(_ANALYZE_CACHE) > 500_000:
        _ANALYZE_CACHE.clear()
    _ANALYZE_CACHE[raw] = out
    return out


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed terms of ``text``, stop words removed.

    >>> tokenize("Caroline's hAP ax3 was painting node-3 in 2026.10")
    ['caroline', 'hap', 'ax3', 'paint', 'node-3', 'node', '3', '2026.10', '2026', '10']
    """
    out: list[str] = []
    for raw in _TOKEN_RE.findall(text.lower()):
        if raw != "\x00":
            out.extend(_analyze(raw))
    return out


class BM25Index:
    """Okapi BM25 over a list of documents, optionally with same-file context.

    ``scores(query)`` returns a float32 array of N BM25 scores (0 where no query term matches).
    ``coverage(query)`` returns, per document, the fraction of the query's IDF mass that the
    document's *own* text matches (1.0 = every informative query word is in the entry) — an
    absolute, corpus-calibrated measure used by the ranker's threshold rule.
    """

    def __init__(
        self,
        docs: Sequence[str],
        *,
        k1: float = 1.2,
        b: float = 0.5,
        file_ids: Iterable[int] | np.ndarray | None = None,
        context: int = 2,
        context_weight: float | Sequence[float] = 0.5,
    ) -> None:
        self.k1 = float(k1)
        self.b = float(b)
        n = len(docs)
        self.n_docs = n
        if file_ids is None:
            files = np.zeros(n, dtype=np.int64)
        else:
            files = np.asarray(file_ids, dtype=np.int64).reshape(-1)
            if files.shape[0] != n:
                raise ValueError(f"file_ids has {files.shape[0]} items for {n} documents")
        context = max(0, int(context))
        if isinstance(context_weight, (int, float)):
            cw = [float(context_weight)] * context
        else:
            cw = [float(x) for x in context_weight][:context]
            context = len(cw)
        self.context = context
        self.context_weights = tuple(cw)

        self.vocab: dict[str, int] = {}
        self._raw: dict[str, int] = {"\x00": -1}
        self._compound: list[np.ndarray] = []
        t_own, d_own = self._tokenize_corpus(docs)
        v = len(self.vocab)
        self.n_terms = v

        dl_own = np.bincount(d_own, minlength=n).astype(np.float32)
        key = t_own * n + d_own if n else t_own
        key, tf = np.unique(key, return_counts=True)
        tf = tf.astype(np.float32)
        own_flag = np.ones(key.shape[0], dtype=bool)
        dl = dl_own.copy()
        if context and n and key.size:
            keys = [key]
            tfs = [tf]
            flags = [own_flag]
            d = key % n
            for c, w in enumerate(cw, start=1):
                if w <= 0:
                    continue
                same = np.zeros(n, dtype=bool)
                same[c:] = files[c:] == files[:-c]   # doc i has a same-file entry c before it
                dl[c:] += np.where(same[c:], w * dl_own[:-c], 0.0).astype(np.float32)
                ok = np.zeros(key.shape[0], dtype=bool)
                dc = d + c
                inb = dc < n
                ok[inb] = same[dc[inb]]
                keys.append(key[ok] + c)
                tfs.append(tf[ok] * np.float32(w))
                flags.append(np.zeros(int(ok.sum()), dtype=bool))
            if len(keys) > 1:
                allk = np.concatenate(keys)
                order = np.argsort(allk, kind="stable")  # a merge of sorted runs: fast
                allk = allk[order]
                alltf = np.concatenate(tfs)[order]
                allfl = np.concatenate(flags)[order]
                start = np.ones(allk.shape[0], dtype=bool)
                start[1:] = allk[1:] != allk[:-1]
                idx = np.flatnonzero(start)
                key = allk[idx]
                tf = np.add.reduceat(alltf, idx)
                own_flag = np.logical_or.reduceat(allfl, idx)
        terms = (key // n).astype(np.int64) if n else key
        docs_arr = (key % n).astype(np.int32) if n else key.astype(np.int32)
        self.docs = docs_arr
        counts = np.bincount(terms, minlength=v)
        self.indptr = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(counts, out=self.indptr[1:])
        df = counts.astype(np.float64)
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        self.idf_unknown = float(math.log1p((n + 0.5) / 0.5)) if n else 0.0
        avgdl = float(dl.mean()) if n else 1.0
        self.avgdl = avgdl if avgdl > 0 else 1.0
        norm = (self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)).astype(np.float32)
        self.weights = (self.idf[terms] * tf * (self.k1 + 1.0) / (tf + norm[docs_arr])).astype(np.float32)
        self.own = own_flag
        self.doc_len = dl_own

    # -- building -------------------------------------------------------------------------------
    def _codes(self, raws: Iterable[str]) -> None:
        """Give every unseen raw token a code: term id >= 0, -2 = nothing, <= -3 = compound."""
        vocab = self.vocab
        for raw in raws:
            if raw in self._raw:
                continue
            terms = _analyze(raw)
            ids = [vocab.setdefault(t, len(vocab)) for t in terms]
            if not ids:
                code = -2
            elif len(ids) == 1:
                code = ids[0]
            else:
                self._compound.append(np.asarray(ids, dtype=np.int64))
                code = -2 - len(self._compound)
            self._raw[raw] = code

    def _tokenize_corpus(self, docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        n = len(docs)
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        text = "\x00".join(d.replace("\x00", " ") for d in docs).lower()
        toks = _TOKEN_RE.findall(text)
        self._codes(set(toks))
        codes = np.fromiter(map(self._raw.__getitem__, toks), dtype=np.int64, count=len(toks))
        doc = np.cumsum(codes == -1)
        keep = codes >= 0
        t = codes[keep]
        d = doc[keep]
        comp = np.flatnonzero(codes <= -3)
        if comp.size:
            parts_t = [self._compound[-3 - int(codes[i])] for i in comp]
            lens = np.fromiter((p.shape[0] for p in parts_t), dtype=np.int64, count=len(parts_t))
            t = np.concatenate([t, *parts_t])
            d = np.concatenate([d, np.repeat(doc[comp], lens)])
        return t, d

    # -- querying -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n_docs

    def query_terms(self, query: str) -> list[tuple[int, int]]:
        """(term id or -1 when unknown, count) for each distinct term of the query."""
        counts: dict[str, int] = {}
        for t in tokenize(query):
            counts[t] = counts.get(t, 0) + 1
        return [(self.vocab.get(t, -1), c) for t, c in counts.items()]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float32, shape (N,))."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for tid, cnt in self.query_terms(query):
            if tid < 0:
                continue
            s, e = self.indptr[tid], self.indptr[tid + 1]
            if cnt == 1:
                out[self.docs[s:e]] += self.weights[s:e]
            else:
                out[self.docs[s:e]] += self.weights[s:e] * np.float32(cnt)
        return out

    def coverage(self, query: str) -> np.ndarray:
        """Fraction (0..1) of the query's IDF mass found in each document's own text."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        qt = self.query_terms(query)
        total = 0.0
        for tid, _cnt in qt:
            total += self.idf_unknown if tid < 0 else float(self.idf[tid])
        if total <= 0:
            return out
        for tid, _cnt in qt:
            if tid < 0:
                continue
            s, e = self.indptr[tid], self.indptr[tid + 1]
            d = self.docs[s:e][self.own[s:e]]
            out[d] += np.float32(self.idf[tid] / total)
        return out
