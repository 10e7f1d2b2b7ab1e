"""Exact words: the entries that hold a query's rare identifying word come first.

The judge (:mod:`memkit.embeddings.judge`) knows meanings, not identifiers: ``item7x3``,
``node-3``, ``DS224+``, ``ADR-0042``, ``v1.31.4``, a person's name or a year mean nothing to it,
and in a large vault it ranked the one entry holding ``item7x3`` below entries that merely look
alike. People look things up by exactly such words, so an entry that holds one is never lost:

- an *identifying* query term is one with a digit in it (``node-3``, ``item7x3``, ``v1.31.4``;
  a bare number only from three digits: ``2019``, not ``10`` or ``30``) or an ``@`` (an e-mail), or
  a name: a word the query writes as the entries holding it do, capitalised inside a sentence
  (``Garcima``; not a month, a weekday or a holiday);
- it is *rare* when at most ``RARE_MAX`` live entries hold it (a term held more widely is skipped
  before its postings are read);
- a plain rare word counts too where the judge cannot have read it: the judge reads an entry's
  first 128 tokens, so in an entry of thousands of characters a word past its first
  ``JUDGE_SEES_CHARS`` is invisible to it, and BM25's length norm damps it too (issue 41: a long
  entry was not found by its own unique word);
- the entries holding the most of the query's rare identifying terms (at most ``RARE_MAX`` of
  them) are put first, in the order the search gave them (the searcher decides whether they are
  confident: :meth:`memkit.search.Searcher.find`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..formats.words import terms as text_terms

__all__ = ["RARE_MAX", "JUDGE_SEES_CHARS", "ExactWords", "exact_words", "identifying"]

RARE_MAX = 3  #: a term held by more live entries than this is not rare: no entry is put first for it
#: how far into an entry a word is surely read by the judge (its 128 tokens are ~500 characters
#: of English): a rare word first written later than this is one it never saw
JUDGE_SEES_CHARS = 400
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday christmas easter halloween ramadan "
    "diwali hanukkah thanksgiving".split())
_EDGE = "\"'’‘“”.,;:!?()[]{}<>*`~"


def identifying(term: str) -> bool:
    """Whether a search term identifies something by its form: a digit in it (a bare number from
    three digits on) or an ``@`` (``node-3``, ``item7x3``, ``2019``, ``v1.31.4``; not ``3``, ``30``)."""
    if "@" in term and len(term) > 2:
        return True
    if not any(c.isdigit() for c in term):
        return False
    return len(term) >= 3 if term.isdigit() else len(term) > 1


@dataclass(frozen=True)
class ExactWords:
    """What a query's rare identifying words pick out: ``rows`` (the entries to put first, each
    holding ``held`` of the ``terms``) — empty when the query has none. ``alone``: the query is
    hardly more than those words (at least half of its search terms)."""

    terms: tuple[str, ...]
    rows: np.ndarray
    held: int = 0
    alone: bool = False


NONE = ExactWords((), np.zeros(0, np.int64))


def _named(word: str, texts: Sequence[str]) -> bool:
    """Whether every text holding ``word`` writes it capitalised after the text's first word, and
    never in lower case."""
    cap = word[:1].upper() + word[1:].lower()
    inside = re.compile(r"(?<=\S)\s+[\"'(@]?" + re.escape(cap) + r"(?!\w)")
    lower = re.compile(r"(?<!\w)" + re.escape(word.lower()) + r"(?!\w)")
    return all(inside.search(t) is not None and lower.search(t) is None for t in texts)


def _unseen(word: str, texts: Sequence[str]) -> bool:
    """Whether some text holding ``word`` writes it first past :data:`JUDGE_SEES_CHARS` (or, in
    another form than the query's, is longer than that): the judge never read it there."""
    pattern = re.compile(r"(?<!\w)" + re.escape(word) + r"(?!\w)", re.IGNORECASE)
    for t in texts:
        if len(t) <= JUDGE_SEES_CHARS:
            continue
        m = pattern.search(t)
        if m is None or m.start() > JUDGE_SEES_CHARS:
            return True
    return False


def _raw_words(query: str) -> dict[str, str]:
    """The query's plain words by their search term (``Kelly`` under ``kelli``)."""
    out: dict[str, str] = {}
    for chunk in query.split():
        word = chunk.strip(_EDGE).replace("’", "'").split("'")[0]  # "Kelly's" is Kelly
        if word.isalpha():
            got = text_terms(word)
            if len(got) == 1:
                out.setdefault(got[0], word)
    return out


def exact_words(query: str, qterms: Sequence[str], ids: Sequence[int], df: Callable[[int], int],
                holders: Callable[[int], np.ndarray], text: Callable[[int], str],
                allowed: Callable[[np.ndarray], np.ndarray] | None = None) -> ExactWords:
    """The entries holding the query's rare identifying terms (see the module docstring).

    :param query: the query as typed; :param qterms: its search terms
        (:func:`memkit.formats.words.terms`), :param ids: their ids in the view (-1: no entry holds it);
    :param df: how many live entries hold a term id; :param holders: the live rows holding it;
    :param text: an entry's text; :param allowed: keeps the rows a search may show (its filters, expiry).
    """
    found: dict[str, np.ndarray] = {}
    raw: dict[str, str] | None = None
    for term, tid in dict(zip(qterms, ids)).items():
        if tid < 0 or not 0 < df(tid) <= RARE_MAX:
            continue
        ident = identifying(term)
        if not ident:
            if not term.isalpha() or len(term) < 3 or term in _CALENDAR:
                continue
            raw = _raw_words(query) if raw is None else raw
            if term not in raw or raw[term].lower() in _CALENDAR:
                continue
        rows = holders(tid)
        if allowed is not None and rows.size:
            rows = allowed(rows)
        if not 0 < rows.size <= RARE_MAX:
            continue
        if ident:
            found[term] = rows
            continue
        assert raw is not None
        held = [text(int(r)) for r in rows]
        if _named(raw[term], held) or _unseen(raw[term], held):
            found[term] = rows
    if not found:
        return NONE
    # a compound's parts ("node-3" gives "node" and "3") count once, with the compound
    for term in list(found):
        for part in re.split(r"[-./_]", term):
            if part != term and part in found:
                del found[part]
    rows, counts = np.unique(np.concatenate(list(found.values())), return_counts=True)
    most = int(counts.max())
    top = rows[counts == most]
    if top.size > RARE_MAX:
        return NONE
    parts = {p for t in found for p in re.split(r"[-./_]", t) if p != t}
    words = set(qterms) - parts  # the query's words, a compound counted once
    return ExactWords(tuple(found), top, most, alone=2 * len(found) >= len(words))
