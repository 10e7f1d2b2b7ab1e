"""Tokeniser and in-memory BM25 index (pure numpy, no scipy).

The index is rebuilt from the entries' texts when the search index is loaded (unless restored
from a saved state), so it is built for speed: the corpus is split into whitespace-separated
chunks and deduplicated in numpy (``_chunk_occurrences``), only distinct chunks are analysed in
Python (tokenised, stemmed, stop words dropped; cached across indexes), and postings are stored
column-wise (CSC: for each term a slice of ``docs`` / ``weights``, BM25 weights precomputed).
A query is a loop over its few terms, each one numpy scatter-add.

The build works on chunks of ``_BUILD_CHUNK`` documents (int32 document ids; every temporary
array is the size of one chunk), then places each chunk's postings in the final CSC arrays, so
its peak memory is about twice the finished index (100k entries: ~100 MB above the baseline,
against ~400 MB for a whole-corpus build). ``state()`` / ``from_state()`` save and restore the
built arrays (see ``memkit.rank.Ranker.state``).

Context indexing: with ``context=c`` every entry is indexed together with the ``c`` entries
before it in the same file, their term counts (and lengths) weighted by ``context_weight``: a
turn of a conversation, or a line of a topic file, is often only understandable with the line
before it ("Where did you go?" / "To the lake."). It is part of the built (or restored) index.
"""
from __future__ import annotations

import json
import math
import re
from itertools import chain
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["tokenize", "stem", "STOP_WORDS", "BM25Index"]

# English stop words: function words that carry no topic, contraction leftovers, chat fillers.
# Negations ("don't", "isn't") are dropped whole by the tokeniser, like "not".
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
    if n <= 3 or word[-1] not in "sdgy" or not word.isascii() or not word.isalpha():
        return word  # no rule applies (most words leave here)
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
        if tail == "t" and head.endswith("n"):
            return None  # don't, isn't, won't: a negation, a stop word like "not"
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
_MASK = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_K1 = np.uint64(0x9E3779B97F4A7C15)
_K2 = np.uint64(0xC2B2AE3D27D4EB4F)


def _chunk_occurrences(docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Split all documents into lower-cased whitespace-separated chunks, deduplicated.

    Returns (chunk id per occurrence, document per occurrence, distinct chunk strings). Chunks
    of up to 16 UTF-8 bytes (nearly all words) are identified without creating a Python string
    per occurrence: their bytes are read as two uint64 (unaligned views of the text buffer),
    hashed, sorted and grouped in numpy, and only the distinct ones are decoded. Longer chunks
    (URLs, long non-Latin words) go through a dict. Splitting on ASCII whitespace only is
    consistent with ``tokenize`` because the chunk analysis splits on any non-word character.
    """
    n = len(docs)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    text = _SEP.join(docs)
    if text.count(_SEP) != n - 1:  # a document holds the separator itself
        text = _SEP.join(d.replace(_SEP, " ") for d in docs)
    raw = text.lower().encode("utf-8", "surrogatepass")
    size = len(raw)
    buf = np.zeros(size + 32, dtype=np.uint8)
    buf[:size] = np.frombuffer(raw, dtype=np.uint8)
    # ASCII spaces and control characters (\x00 is the document separator; the zero padding
    # ends the last chunk). Splitting on control characters too changes no term: the chunk
    # analysis splits on every non-word character anyway.
    ws = buf <= 32
    edges = np.flatnonzero(ws[1:] != ws[:-1]) + 1
    if size and not ws[0]:
        edges = np.concatenate([[0], edges])
    if edges.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    st, en = edges[0::2], edges[1::2]
    # document of each chunk = number of separators before it
    seps = np.flatnonzero(buf[:size] == 0)
    doc = np.cumsum(np.bincount(np.searchsorted(st, seps), minlength=st.shape[0] + 1))[:st.shape[0]]
    ln = en - st
    occ = np.empty(st.shape[0], dtype=np.int64)
    uniq: list[str] = []
    short = np.flatnonzero(ln <= 16)
    if short.size:
        u64 = np.ndarray(shape=(size + 25,), dtype="<u8", buffer=buf, strides=(1,))
        s_st, s_ln = st[short], ln[short]
        a = u64[s_st] & _MASK[np.minimum(s_ln, 8)]
        b = u64[s_st + 8] & _MASK[np.clip(s_ln - 8, 0, 8)]
        gid, first = _group_pairs(a, b)
        occ[short] = gid
        fs = s_st[first].tolist()
        fe = (s_st[first] + s_ln[first]).tolist()
        uniq = [raw[i:j].decode("utf-8", "surrogatepass") for i, j in zip(fs, fe)]
    long_ = np.flatnonzero(ln > 16)
    if long_.size:
        table: dict[str, int] = {}
        base = len(uniq)
        chunks = [raw[i:j].decode("utf-8", "surrogatepass") for i, j in zip(st[long_].tolist(), en[long_].tolist())]
        for c in chunks:
            if c not in table:
                table[c] = base + len(table)
        occ[long_] = np.fromiter(map(table.__getitem__, chunks), dtype=np.int64, count=len(chunks))
        uniq.extend(table)
    return occ, doc, uniq


def _group_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group equal (a, b) uint64 pairs; see ``_group_rows``."""
    return _group_rows([a, b])


def _group_rows(cols: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Group equal rows of uint64 columns: (group id per row, first row of each group).

    Sorting values is much faster in numpy than argsort, so the row index is packed into the
    low bits of a hash of the row and the packed values are sorted. Equality is then checked
    exactly; on a (rare) hash collision another hash is tried, then an exact lexsort.
    """
    m = cols[0].shape[0]
    if m == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    bits = max(1, int(m - 1).bit_length())
    low = np.uint64((1 << bits) - 1)
    idx = np.arange(m, dtype=np.uint64)
    new = np.empty(m, dtype=bool)
    new[0] = True
    for k1, k2 in ((_K1, _K2), (_K2, _K1)):
        h = np.zeros(m, dtype=np.uint64)
        for c in cols:
            h ^= c * k1
            h ^= h >> np.uint64(29)
            h *= k2
        h ^= h >> np.uint64(32)
        packed = np.sort((h & ~low) | idx)
        order = (packed & low).astype(np.int64)
        hs = packed >> np.uint64(bits)
        np.not_equal(hs[1:], hs[:-1], out=new[1:])
        # exact check: within a group, consecutive rows are equal
        ok = True
        for c in cols:
            co = c[order]
            if not (new[1:] | (co[1:] == co[:-1])).all():
                ok = False
                break
        if ok:
            gid = np.empty(m, dtype=np.int64)
            gid[order] = np.cumsum(new) - 1
            return gid, order[new]
    order = np.lexsort(tuple(reversed(cols)))
    new[1:] = False
    for c in cols:
        co = c[order]
        new[1:] |= co[1:] != co[:-1]
    gid = np.empty(m, dtype=np.int64)
    gid[order] = np.cumsum(new) - 1
    return gid, order[new]


STATE_VERSION = 1  # bump when the layout or meaning of a saved state changes


def _fingerprint_text(kind: str, **params: object) -> str:
    return json.dumps({"kind": kind, "version": STATE_VERSION, **params}, sort_keys=True)


def _fingerprint_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def _check_fingerprint(state: Mapping[str, np.ndarray], expected: str, what: str) -> None:
    if "fingerprint" not in state:
        raise ValueError(f"{what} state has no fingerprint")
    got = bytes(np.asarray(state["fingerprint"], dtype=np.uint8)).decode("utf-8", "replace")
    if got != expected:
        raise ValueError(f"{what} state was built with other parameters or another version: {got} != {expected}")


_BUILD_CHUNK = 16384  # documents per build chunk: bounds the build's temporary memory


def as_file_ids(file_ids: "np.ndarray | Sequence[int] | None", n: int, what: str = "entries") -> np.ndarray:
    """``file_ids`` as an int64 array of length ``n`` (all zeros when None); ValueError otherwise."""
    if file_ids is None:
        return np.zeros(n, dtype=np.int64)
    files = np.asarray(file_ids, dtype=np.int64).reshape(-1)
    if files.shape[0] != n:
        raise ValueError(f"file_ids has {files.shape[0]} items for {n} {what}")
    return files


def context_weights(context: int, context_weight: "float | Sequence[float]") -> tuple[int, list[float]]:
    """(number of previous entries indexed with each entry, their weights)."""
    context = max(0, int(context))
    if isinstance(context_weight, (int, float)):
        return context, [float(context_weight)] * context
    cw = [float(x) for x in context_weight][:context]
    return len(cw), cw


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
        files = as_file_ids(file_ids, n, "documents")
        context, cw = context_weights(context, context_weight)
        if context > 3:
            raise ValueError("context is at most 3 previous entries")
        self.context = context
        self.context_weights = tuple(cw)

        self.vocab: dict[str, int] = {}
        dl_own = np.zeros(n, dtype=np.float32)
        df = np.zeros(0, dtype=np.int64)
        active = [(c, float(w)) for c, w in enumerate(cw, start=1) if w > 0]
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        step = max(1, int(_BUILD_CHUNK))
        for a in range(0, n, step):
            b = min(n, a + step)
            got = self._build_chunk(docs, files, a, b, active, dl_own)
            if got is None:
                continue
            terms, d, tf, own = got
            v = len(self.vocab)
            if df.shape[0] < v:
                df = np.concatenate([df, np.zeros(v - df.shape[0], dtype=np.int64)])
            df += np.bincount(terms[own], minlength=v)
            parts.append((np.bincount(terms, minlength=v), d, tf, own))
            del terms, got
        v = len(self.vocab)
        self.n_terms = v
        if df.shape[0] < v:
            df = np.concatenate([df, np.zeros(v - df.shape[0], dtype=np.int64)])
        dl = dl_own.copy()
        for c, w in active:  # context entries count in the length too
            if n > c:
                same = files[c:] == files[:-c]
                dl[c:] += np.where(same, np.float32(w) * dl_own[:-c], np.float32(0))
        # merge the chunks' postings (each sorted by term, then doc) into one CSC layout
        self.indptr = np.zeros(v + 1, dtype=np.int64)
        for cnt, *_ in parts:
            self.indptr[1:cnt.shape[0] + 1] += cnt
        np.cumsum(self.indptr, out=self.indptr)
        total = int(self.indptr[-1])
        if len(parts) == 1:  # one chunk: already in CSC order
            _, docs_arr, tf_all, own_all = parts.pop()
        else:
            docs_arr = np.empty(total, dtype=np.int32)
            tf_all = np.empty(total, dtype=np.float32)
            own_all = np.empty(total, dtype=bool)
        nxt = self.indptr[:-1].copy()  # next free slot of each term
        while parts:
            cnt, d, tf, own = parts.pop(0)
            k = cnt.shape[0]
            first = np.zeros(k, dtype=np.int64)
            np.cumsum(cnt[:-1], out=first[1:])
            pos = np.repeat(nxt[:k] - first, cnt) + np.arange(d.shape[0], dtype=np.int64)
            docs_arr[pos] = d
            tf_all[pos] = tf
            own_all[pos] = own
            nxt[:k] += cnt
            del cnt, d, tf, own, pos
        self.docs = docs_arr
        # document frequency counts entries whose own text has the term (a context copy does
        # not make a word more common)
        self.idf = np.log1p((n - df.astype(np.float64) + 0.5) / (df + 0.5)).astype(np.float32)
        self.idf_unknown = float(math.log1p((n + 0.5) / 0.5)) if n else 0.0
        avgdl = float(dl.mean()) if n else 1.0
        self.avgdl = avgdl if avgdl > 0 else 1.0
        norm = (self.k1 * (1.0 - self.b + self.b * dl / self.avgdl)).astype(np.float32)
        # BM25 weights in place of the term frequencies, a block of terms at a time
        k1p = self.k1 + 1.0
        block = 1 << 20
        t0 = 0
        while t0 < v:
            t1 = int(np.searchsorted(self.indptr, self.indptr[t0] + block, side="right")) - 1
            t1 = min(v, max(t1, t0 + 1))
            s, e = int(self.indptr[t0]), int(self.indptr[t1])
            if e > s:
                terms = np.repeat(np.arange(t0, t1, dtype=np.int32), np.diff(self.indptr[t0:t1 + 1]))
                tf = tf_all[s:e]
                tf_all[s:e] = self.idf[terms] * tf * k1p / (tf + norm[docs_arr[s:e]])
            t0 = t1
        self.weights = tf_all
        self.own = own_all
        self.doc_len = dl_own

    # -- persistence ----------------------------------------------------------------------------
    def state(self) -> dict[str, np.ndarray]:
        """Every array of the built index, to be saved (``np.save``) and restored with
        ``from_state`` without rebuilding. The vocabulary is one uint8 array: the terms' UTF-8
        bytes joined by NUL (a term never holds one), in term-id order."""
        terms = list(self.vocab)  # insertion order is term-id order
        return {
            "fingerprint": _fingerprint_array(self._fingerprint()),
            "scalars": np.array([self.n_docs, self.n_terms, self.idf_unknown, self.avgdl], dtype=np.float64),
            "vocab": np.frombuffer("\x00".join(terms).encode("utf-8", "surrogatepass"), dtype=np.uint8).copy(),
            "indptr": self.indptr,
            "docs": self.docs,
            "weights": self.weights,
            "own": self.own,
            "idf": self.idf,
            "doc_len": self.doc_len,
        }

    def _fingerprint(self) -> str:
        return _fingerprint_text("bm25", k1=self.k1, b=self.b, context=self.context,
                                 context_weights=list(self.context_weights))

    @classmethod
    def from_state(cls, state: Mapping[str, np.ndarray], *, k1: float = 1.2, b: float = 0.5, context: int = 2,
                   context_weight: float | Sequence[float] = 0.5) -> "BM25Index":
        """An index restored from ``state()`` (arrays are used as given: a read-only
        ``np.load(..., mmap_mode="r")`` array stays mapped). The parameters must be those the
        state was built with, else ValueError."""
        self = cls.__new__(cls)
        self.k1, self.b = float(k1), float(b)
        context, cw = context_weights(context, context_weight)
        self.context, self.context_weights = context, tuple(cw)
        _check_fingerprint(state, self._fingerprint(), "BM25 index")
        try:
            sc = np.asarray(state["scalars"], dtype=np.float64)
            n, v = int(sc[0]), int(sc[1])
            self.n_docs, self.n_terms = n, v
            self.idf_unknown, self.avgdl = float(sc[2]), float(sc[3])
            raw = bytes(np.asarray(state["vocab"], dtype=np.uint8))
            terms = raw.decode("utf-8", "surrogatepass").split("\x00") if v else []
            self.indptr = state["indptr"]
            self.docs = state["docs"]
            self.weights = state["weights"]
            self.own = state["own"]
            self.idf = state["idf"]
            self.doc_len = state["doc_len"]
        except (KeyError, IndexError, UnicodeDecodeError) as e:
            raise ValueError(f"incomplete BM25 index state: {e!r}") from None
        p = self.indptr.shape[0] and int(self.indptr[-1])
        if (len(terms) != v or self.indptr.shape != (v + 1,) or self.idf.shape != (v,)
                or self.doc_len.shape != (n,) or not self.docs.shape == self.weights.shape == self.own.shape == (p,)):
            raise ValueError("inconsistent BM25 index state (array shapes do not match)")
        self.vocab = dict(zip(terms, range(v)))
        return self

    # -- building -------------------------------------------------------------------------------
    def _build_chunk(self, docs: Sequence[str], files: np.ndarray, a: int, b: int,
                     active: list[tuple[int, float]], dl_own: np.ndarray):
        """Postings of documents ``a..b-1``: (term, doc, tf, own) sorted by (term, doc), or None.

        The ``context`` documents before ``a`` are tokenised again (their terms only feed the
        context postings of the chunk's first documents), so chunks are independent and every
        array here is the size of one chunk. Posting key = term << shift | local doc (bit
        operations, no integer division)."""
        lo = max(0, a - len(self.context_weights)) if active else a
        off = a - lo
        span = b - lo
        t, d = self._tokenize_corpus(docs[lo:b])
        own_occ = d >= off
        dl_own[a:b] = np.bincount(d[own_occ] - off, minlength=b - a)
        if t.size == 0:
            return None
        shift = max(1, int(span).bit_length())
        dmask = (1 << shift) - 1
        key = np.sort((t << shift) | d)
        del t, d, own_occ
        start = np.empty(key.shape[0], dtype=bool)
        start[0] = True
        np.not_equal(key[1:], key[:-1], out=start[1:])
        idx = np.flatnonzero(start)
        tf_int = np.diff(np.append(idx, key.shape[0]))
        key = key[idx]
        if active:
            # Add each posting (term, doc) as a context posting (term, doc + c) when doc + c is
            # in the same file, at weight w_c, and merge. One sort of packed int64 values
            # key << 8 | source << 6 | min(tf, 63) does the merge (no argsort, no gathers).
            dloc = key & dmask
            tf63 = np.minimum(tf_int, 63)
            packs = [(key << 8) | tf63]
            weights = [1.0]
            fl = files[lo:b]
            for c, w in active:
                ahead = np.zeros(span, dtype=bool)
                if span > c:
                    ahead[:-c] = fl[c:] == fl[:-c]  # entry i + c is in entry i's file
                ok = ahead[dloc]
                packs.append(((key[ok] + c) << 8) | (len(weights) << 6) | tf63[ok])
                weights.append(w)
            del dloc, tf63, tf_int
            packed = np.sort(np.concatenate(packs), kind="stable")
            del packs
            allk = packed >> 8
            src = (packed >> 6) & 3
            alltf = (packed & 63).astype(np.float32) * np.asarray(weights, dtype=np.float32)[src]
            del packed
            start = np.empty(allk.shape[0], dtype=bool)
            start[0] = True
            np.not_equal(allk[1:], allk[:-1], out=start[1:])
            idx = np.flatnonzero(start)
            key = allk[idx]
            tf = np.add.reduceat(alltf, idx)
            own = src[idx] == 0  # sources sort own first within a (term, doc)
            del allk, src, alltf, start
            keep = (key & dmask) >= off  # the documents before the chunk were context only
            if not keep.all():
                key, tf, own = key[keep], tf[keep], own[keep]
        else:
            tf = tf_int.astype(np.float32)
            own = np.ones(key.shape[0], dtype=bool)
        terms = key >> shift
        d = ((key & dmask) + lo).astype(np.int32)
        return terms, d, tf, own

    def _tokenize_corpus(self, docs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(term id, doc id) of every term occurrence.

        Python-level work is one analysis per *distinct* chunk (cached across indexes);
        everything per occurrence runs in numpy (see ``_chunk_occurrences``).
        """
        occ, doc, uniq = _chunk_occurrences(docs)
        cache_get = _CACHE.get
        terms_of = [cache_get(c) or _chunk_terms(c) for c in uniq]
        lens = np.fromiter(map(len, terms_of), dtype=np.int64, count=len(terms_of))
        flat = list(chain.from_iterable(terms_of))
        vocab = self.vocab  # grows chunk by chunk: ids in order of first appearance
        new = [t for t in dict.fromkeys(flat) if t not in vocab]
        vocab.update(zip(new, range(len(vocab), len(vocab) + len(new))))
        flat_ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
        starts = np.zeros(lens.shape[0], dtype=np.int64)
        if lens.shape[0] > 1:
            np.cumsum(lens[:-1], out=starts[1:])
        occ_len = lens[occ]
        # most chunks give one term, stop words none, compounds ("node-3") several
        single = np.where(lens == 1, flat_ids[np.minimum(starts, max(len(flat) - 1, 0))], -1) if len(flat) else np.full(lens.shape[0], -1)
        one = occ_len == 1
        t = single[occ[one]]
        d = doc[one]
        multi = np.flatnonzero(occ_len > 1)
        if multi.size:
            m_occ = occ[multi]
            m_len = occ_len[multi]
            total = int(m_len.sum())
            m_start = np.zeros(multi.shape[0], dtype=np.int64)
            np.cumsum(m_len[:-1], out=m_start[1:])
            rep = np.repeat(starts[m_occ] - m_start, m_len) + np.arange(total, dtype=np.int64)
            t = np.concatenate([t, flat_ids[rep]])
            d = np.concatenate([d, np.repeat(doc[multi], m_len)])
        return t, d

    # -- querying -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n_docs

    def query_terms(self, query: str) -> list[tuple[int, int, str]]:
        """(term id or -1 when unknown, count, term) for each distinct term of the query."""
        counts: dict[str, int] = {}
        for t in tokenize(query):
            counts[t] = counts.get(t, 0) + 1
        return [(self.vocab.get(t, -1), c, t) for t, c in counts.items()]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (float32, shape (N,); 0 = no match)."""
        return self.scores_for(self.query_terms(query))

    def scores_for(self, qterms: list[tuple[int, int, str]]) -> np.ndarray:
        """``scores`` for an already tokenised query (``query_terms``)."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        for tid, cnt, _ in qterms:
            if tid < 0:
                continue
            s, e = self.indptr[tid], self.indptr[tid + 1]
            if cnt == 1:
                out[self.docs[s:e]] += self.weights[s:e]
            else:
                out[self.docs[s:e]] += self.weights[s:e] * np.float32(cnt)
        return out

    def coverage(self, query: str) -> np.ndarray:
        """Share (0..1) of the query's IDF mass found in each document's own text."""
        return self.coverage_for(self.query_terms(query))

    def coverage_for(self, qterms: list[tuple[int, int, str]]) -> np.ndarray:
        """``coverage`` for an already tokenised query, over the query words the vault knows:
        a word no entry holds can be matched by nothing, so it does not dilute the others (in a
        small vault "what rice do I use" must still find the entry about rice when no entry says
        "use"). A query with no known word covers nothing."""
        out = np.zeros(self.n_docs, dtype=np.float32)
        total = sum(float(self.idf[tid]) for tid, _, _ in qterms if tid >= 0)
        if total <= 0:
            return out
        for tid, _, _ in qterms:
            if tid < 0:
                continue
            s, e = self.indptr[tid], self.indptr[tid + 1]
            out[self.docs[s:e][self.own[s:e]]] += np.float32(self.idf[tid] / total)
        return out
