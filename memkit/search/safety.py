"""Memories that keep a person safe: allergies, medications, conditions.

A memory block that leaves out "Shellfish allergy: prawns … make my throat swell" when the person
asks for a Thai dish to order is worse than one line too many: the judge rates such a note low
against the message (a question about dinner is not *like* a note about an allergy), so the
block looks for these notes on their own (:meth:`memkit.search.Searcher.safety_hits`) and keeps
those that bear on the message at all.

A safety note is an entry whose text names an allergy, an intolerance, a medication or a condition
(``SAFETY_WORDS``), or whose kind or tag is ``health``, ``allergy`` or ``medical``.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

__all__ = ["SAFETY_WORDS", "is_safety_note", "safety_mask"]

#: word stems that make an entry a safety note
SAFETY_WORDS = (
    "allerg", "anaphyla", "epipen", "intoleran", "coeliac", "celiac", "lactose", "gluten", "diabet",
    "insulin", "asthma", "inhaler", "salbutamol", "epilep", "seizure", "pregnan", "medication",
    "penicillin", "amoxicillin", "ibuprofen", "paracetamol", "aspirin", "warfarin", "blood thinner",
    "pacemaker", "heart condition", "hypertension", "blood pressure", "levothyroxine", "thyroid",
    "migraine", "meniscus", "hives", "throat swell", "can't eat", "cannot eat", "must not eat",
    "react badly", "gives me a rash", "upsets my stomach", "dietary",
)
_WORDS = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in SAFETY_WORDS) + ")", re.IGNORECASE)
_MARKS = re.compile(r"^\s*\[(?:health|allergy|medical)\]|(?<!\w)#(?:health|allergy|allergies|medical)\b", re.IGNORECASE)


def is_safety_note(text: str) -> bool:
    """Whether an entry's text is a safety note (see the module docstring)."""
    return _WORDS.search(text) is not None or _MARKS.search(text) is not None


def safety_mask(texts: Sequence[str]) -> np.ndarray:
    """:func:`is_safety_note` of each text (bool)."""
    return np.fromiter((is_safety_note(t) for t in texts), dtype=bool, count=len(texts))
