"""Exact words: the entries that hold a query's rare identifying word come first.

The judge (:mod:`memkit.embeddings.judge`) knows meanings, not identifiers: ``item7x3``,
``node-3``, ``DS224+``, ``ADR-0042``, ``v1.31.4``, a person's name or a date mean nothing to it,
and in a large vault it ranked the one entry holding ``item7x3`` below entries that merely look
alike. People look things up by exactly such words, so an entry that holds one is never lost:

- an *identifying* query term is one written with a digit or a joiner (``node-3``, ``2019``,
  ``v1.31.4``, ``maya@example.org``; a lone digit is not one), or a name: a word the entries
  holding it write with a capital letter inside a sentence (``Garcima``, however the query
  wrote it);
- it is *rare* when at most ``RARE_MAX`` live entries hold it;
- the entries holding the most of the query's rare identifying terms (at most ``RARE_MAX`` of
  them) are put first, in the order the search gave them, and are confident: the vault holds
  the very word asked for.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = ["RARE_MAX", "ExactWords", "exact_words", "identifying"]

RARE_MAX = 3  #: a term held by more live entries than this is not rare: no entry is put first for it
_JOINED = re.compile(r"[\d\-./_@+#]")


def identifying(term: str) -> bool:
    """Whether a search term identifies something by its form: a digit or a joiner in it, and
    more than one character (``node-3``, ``item7x3``, ``2019``, ``v1.31.4``; not ``3``)."""
    return len(term) > 1 and _JOINED.search(term) is not None


@dataclass(frozen=True)
class ExactWords:
    """What a query's rare identifying words pick out: ``rows`` (the entries to put first, each
    holding ``held[i]`` of the ``terms``) — empty when the query has none."""

    terms: tuple[str, ...]
    rows: np.ndarray
    held: np.ndarray


NONE = ExactWords((), np.zeros(0, np.int64), np.zeros(0, np.int64))


def _named(term: str, texts: Sequence[str]) -> bool:
    """Whether every text holding ``term`` writes it capitalised after the text's first word."""
    pattern = re.compile(r"(?<=\S)\s+[\"'(]?" + re.escape(term[:1].upper() + term[1:]) + r"(?!\w)")
    pattern_lower = re.compile(r"(?<!\w)" + re.escape(term) + r"(?!\w)")
    return all(pattern.search(t) is not None and pattern_lower.search(t) is None for t in texts)


def exact_words(qterms: Sequence[str], ids: Sequence[int], holders: Callable[[int], np.ndarray],
                text: Callable[[int], str], allowed: Callable[[np.ndarray], np.ndarray] | None = None) -> ExactWords:
    """The entries holding the query's rare identifying terms (see the module docstring).

    :param qterms: the query's search terms (:func:`memkit.formats.words.terms`), :param ids:
        their ids in the view (-1: no entry holds it);
    :param holders: the live rows holding a term id; :param text: an entry's text;
    :param allowed: keeps the rows a search may show (its filters, expiry).
    """
    found: dict[str, np.ndarray] = {}
    for term, tid in dict(zip(qterms, ids)).items():
        if tid < 0:
            continue
        rows = holders(tid)
        if allowed is not None and rows.size:
            rows = allowed(rows)
        if not 0 < rows.size <= RARE_MAX:
            continue
        if identifying(term) or (term.isalpha() and len(term) > 2 and _named(term, [text(int(r)) for r in rows])):
            found[term] = rows
    if not found:
        return NONE
    # a compound's parts ("node-3" gives "node" and "3") count once, with the compound
    for term in list(found):
        for part in re.split(r"[-./_]", term):
            if part != term and part in found:
                del found[part]
    rows, counts = np.unique(np.concatenate(list(found.values())), return_counts=True)
    most = counts.max()
    top = rows[counts == most]
    if top.size > RARE_MAX:
        return NONE
    return ExactWords(tuple(found), top, np.full(top.size, most, dtype=np.int64))
