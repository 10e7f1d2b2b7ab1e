"""Memories that keep a person safe: allergies, intolerances, medications, conditions.

A memory block that leaves out "Shellfish allergy: prawns … make my throat swell" when the person
asks for a Thai dish to order is worse than one line too many: the judge rates such a note low
against the message (a question about dinner is not *like* a note about an allergy), so the
block looks for these notes on their own (:meth:`memkit.search.Searcher.safety_hits`) and keeps
those that bear on the message at all.

A safety note is an entry whose own text holds one of ``SAFETY_WORDS`` (as search terms: stemmed,
so "allergies" and "allergy" are one). They are found through the word index's postings, a few
lookups whatever the vault's size, not by reading every entry.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..formats.words import terms
from .topk import distinct

__all__ = ["SAFETY_WORDS", "SAFETY_TERMS", "is_safety_note", "safety_rows"]

#: words that make an entry a safety note
SAFETY_WORDS = (
    "allergy allergic anaphylaxis anaphylactic epipen intolerant intolerance coeliac celiac lactose gluten "
    "diabetes diabetic insulin asthma asthmatic inhaler salbutamol epilepsy epileptic seizure pregnant "
    "pregnancy medication penicillin amoxicillin ibuprofen paracetamol aspirin warfarin anticoagulant "
    "pacemaker hypertension levothyroxine thyroid migraine meniscus sumatriptan antihistamine"
).split()
SAFETY_TERMS: frozenset[str] = frozenset(t for w in SAFETY_WORDS for t in terms(w))


def is_safety_note(text: str) -> bool:
    """Whether an entry's text is a safety note (see the module docstring)."""
    return not SAFETY_TERMS.isdisjoint(terms(text))


def safety_rows(term_ids: Callable[[Sequence[str]], list[int]], holders: Callable[[int], np.ndarray]) -> np.ndarray:
    """The live rows whose own text holds a safety term (ascending), from the view's term ids
    (-1: no entry holds it) and the word index's postings."""
    found = [holders(tid) for tid in term_ids(sorted(SAFETY_TERMS)) if tid >= 0]
    return distinct(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
