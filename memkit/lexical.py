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
from itertools import chain
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
# next run ("node-3", "2026.10", "v1.2/rc", "caroline's").
_TOKEN_RE = re.compile(r"\w+(?:[-./'’]\w+)*")
_JOIN_RE = re.compile(r"[-./_]")
_APOS_SUFFIXES = frozenset({"s", "t", "m", "re", "ve", "ll", "d"})
_VOWELS = frozenset("aeiouy")
_EDGE_PUNCT = "\"'’‘“”.,;:!?()[]{}<>*`~"


def _has_vowel(w: str) -> bool:
    return any(c in _VOWELS for c in w)


def _measure(w: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``w``."""
    m = 0
    prev_vowel = False
    for i, c in enumerate(w):
        v = c in "aeiou" or (c == "y" and i > 0 and not prev_vowel)
        if prev_vowel and not v:
            m += 1
        prev_vowel = v
    return m


def _cvc(w: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w/x/y ("hop", "lov", "mak")."""
    if len(w) < 3:
        return False
    a, b, c = w[-3], w[-2], w[-1]
    return a not in _VOWELS and b in _VOWELS and c not in _VOWELS and c not in "wxy"


def stem(word: str) -> str:
    """A light English suffix stemmer: Porter's steps 1a-1c (plurals, -ed, -ing, -y).

    It merges inflections ("paints", "painted", "painting" -> "paint"; "making", "makes" ->
    "make"; "stories", "story" -> "stori") and leaves short words, words with digits and
    non-ASCII words alone.
    """
    n = len(word)
    if n <= 3 or not word.isascii() or not word.isalpha():
        return word
    w = word
    if w.endswith("s"):
        if w.endswith("sses"):
            w = w[:-2]
        elif w.endswith("ies"):
            w = w[:-2] if n == 4 else w[:-3] + "i"
        elif not w.endswith(("ss", "us", "is")):
            w = w[:-1]
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    else:
        base = None
        if w.endswith("ed") and _has_vowel(w[:-2]):
            base = w[:-2]
        elif w.endswith("ing") and len(w) > 5 and _has_vowel(w[:-3]):
            base = w[:-3]
        if base is not None:
            if base.endswith(("at", "bl", "iz")):
                w = base + "e"
            elif len(base) > 1 and base[-1] == base[-2] and base[-1] not in "aeioulsz":
                w = base[:-1]
            elif _measure(base) == 1 and _cvc(base):
                w = base + "e"
            else:
                w = base
    if w.endswith("y") and len(w) > 2 and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    return w


def _word_term(part: str) -> str | None:
    """Term of one simple word (no joiners), or None for a stop word."""
    if "'" in part:
        head, _, tail = part.partition("'")
        part = head if tail in _APOS_SUFFIXES else part.replace("'", "")
    if not part or part in STOP_WORDS:
        return None
    return stem(part)


def _token_terms(tok: str) -> list[str]:
    """Terms of one regex token (lower-cased)."""
    tok = tok.replace("’", "'")
    if _JOIN_RE.search(tok) is None:
        t = _word_term(tok)
        return [] if t is None else [t]
    # Compound token: keep it whole (rare, so findable: "node-3", "2026.10") and also its parts,
    # so that "node 3" still finds "node-3".
    parts = [t for t in (_word_term(p) for p in _JOIN_RE.split(tok) if p) if t]
    return list(dict.fromkeys([tok.replace("'", ""), *parts]))


_CACHE: dict[str, tuple[str, ...]] = {}


def _chunk_terms(chunk: str) -> tuple[str, ...]:
    """Terms of one whitespace-separated, lower-cased chunk ("mel,", "(node-3)"); cached."""
    got = _CACHE.get(chunk)
    if got is None:
        word = chunk.strip(_EDGE_PUNCT)
        if word.isalnum():
            t = _word_term(word)
            got = () if t is None else (t,)
        else:
            out: list[str] = []
            for tok in _TOKEN_RE.findall(chunk):
                out.extend(_token_terms(tok))
            got = tuple(out)
        if len(_CACHE) >= 1_000_000:
            _CACHE.clear()
        _CACHE[chunk] = got
    return got


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed terms of ``text``, stop words removed.

    >>> tokenize("Caroline's hAP ax3 was painting node-3 in 2026.10")
    ['caroline', 'hap', 'ax3', 'paint', 'node-3', 'node', '3', '2026.10', '2026', '10']
    """
    out: list[str] = []
    for chunk in text.lower().split():
        out.extend(_chunk_terms(chunk))
    return out


_SEP = "\x00"


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
        idf_own: bool = True,
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
        t_own, d_own = self._tokenize_corpus(docs)
        v = len(self.vocab)
        self.n_terms = v

        dl_own = np.bincount(d_own, minlength=n).astype(np.float32)
        key = np.sort(t_own * n + d_own)
        if key.size:
            start = np.empty(key.shape[0], dtype=bool)
            start[0] = True
            np.not_equal(key[1:], key[:-1], out=start[1:])
            idx = np.flatnonzero(start)
            tf = np.diff(np.append(idx, key.shape[0])).astype(np.float32)
            key = key[idx]
        else:
            tf = np.zeros(0, dtype=np.float32)
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
        # document frequency counts entries whose own text has the term (a context copy does
        # not make a word more common)
        df = np.bincount(terms[own_flag], minlength=v).astype(np.float64) if idf_own else counts.astype(np.float64)
        self.idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
        self.idf_unknown = float(math.log1p((n + 0.5) / 0.5)) if n else 0.0
        avgdl = float(dl.mean()) if n else 1.0
        self.avgdl = avgdl if avgdl > 0 else 1.0
        norm = (self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)).astype(np.float32)
        self.weights = (self.idf[terms] * tf * (self.k1 + 1.0) / (tf + norm[docs_arr])).astype(np.float32)
        self.own = own_flag
        self.doc_len = dl_own

    # -- building -------------------------------------------------------------------------------
    def _tokenize_corpus(self, docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(term id, doc id) of every term occurrence.

        Python-level work is one analysis per *distinct* whitespace chunk (cached across
        indexes); everything per occurrence runs in C (str.split, dict lookups) or numpy.
        """
        n = len(docs)
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        text = " \x00 ".join(docs)
        if text.count(_SEP) != n - 1:  # a document holds the separator itself
            text = " \x00 ".join(d.replace(_SEP, " ") for d in docs)
        chunks = text.lower().split()
        uniq = list(dict.fromkeys(chunks))
        chunk_id = dict(zip(uniq, range(len(uniq))))
        occ = np.fromiter(map(chunk_id.__getitem__, chunks), dtype=np.int64, count=len(chunks))
        cache_get = _CACHE.get
        terms_of = [cache_get(c) or _chunk_terms(c) for c in uniq]
        lens = np.fromiter(map(len, terms_of), dtype=np.int64, count=len(terms_of))
        flat = list(chain.from_iterable(terms_of))
        vocab = dict(zip(dict.fromkeys(flat), range(len(flat))))  # ids are re-numbered below
        self.vocab = {t: i for i, t in enumerate(vocab)}
        flat_ids = np.fromiter(map(self.vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        sep = chunk_id.get(_SEP, -1)
        doc = np.cumsum(occ == sep)
        occ_len = lens[occ]
        if bool((occ_len == 1).all()) if occ_len.size else True:
            starts = np.zeros(lens.shape[0], dtype=np.int64)
            np.cumsum(lens[:-1], out=starts[1:])
            return flat_ids[starts[occ]], doc
        starts = np.zeros(lens.shape[0], dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])
        total = int(occ_len.sum())
        occ_start = np.zeros(occ.shape[0], dtype=np.int64)
        np.cumsum(occ_len[:-1], out=occ_start[1:])
        rep_start = np.repeat(starts[occ] - occ_start, occ_len)
        t = flat_ids[rep_start + np.arange(total, dtype=np.int64)]
        d = np.repeat(doc, occ_len)
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
