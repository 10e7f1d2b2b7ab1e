"""Words of a text: the one tokeniser, stop-word list and stemmer of memkit.

- :func:`terms` gives the search terms of a text (lower-cased, stop words dropped, lightly
  stemmed, compounds like ``node-3`` kept whole and in parts). BM25, the lexical coverage rule,
  topic detection and duplicate checks all use it.
- :func:`words` gives the plain words of a text (letters only, three or more, no stop words,
  not stemmed): what topic names and summaries can be made of.
"""
from __future__ import annotations

from itertools import chain
from typing import cast

from ..base.lazy_re import lazy

__all__ = ["STOP_WORDS", "terms", "words", "stem"]

# English function words that carry no topic, contraction leftovers and chat fillers. Negations
# ("don't", "isn't") are dropped whole by the tokeniser, like "not".
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
_TOKEN_RE = lazy(r"\w+(?:[-./'’]\w+)*")
_JOIN_RE = lazy(r"[-./_]")
_WORD_RE = lazy(r"[^\W\d_]+")
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
    # A compound token stays whole (rare, so findable: "node-3", "2026.10") and gives its parts,
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
        if len(_CACHE) >= 200_000:
            _CACHE.clear()
        _CACHE[chunk] = got
    return got


def terms(text: str) -> list[str]:
    """Lower-cased, stemmed search terms of ``text``, stop words removed, in order.

    >>> terms("Caroline's hAP ax3 was painting node-3 in 2026.10")
    ['caroline', 'hap', 'ax3', 'paint', 'node-3', 'node', '3', '2026.10', '2026', '10']
    """
    chunks = text.lower().split()
    cached = list(map(_CACHE.get, chunks))
    if None in cached:  # a chunk not seen yet (or since the cache was cleared)
        return list(chain.from_iterable(_chunk_terms(c) if got is None else got for c, got in zip(chunks, cached)))
    return list(chain.from_iterable(cast("list[tuple[str, ...]]", cached)))


def words(text: str) -> list[str]:
    """Plain words of ``text`` (letters only, at least three, lower-cased, no stop words), in order.

    >>> words("Bakes sourdough on Sundays, 2x")
    ['bakes', 'sourdough', 'sundays']
    """
    return [w for w in _WORD_RE.findall(text.casefold()) if len(w) >= 3 and w.isalpha() and w not in STOP_WORDS]
