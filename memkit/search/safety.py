"""Memories that keep a person safe: allergies, intolerances, medications, conditions.

A memory block that leaves out "Shellfish allergy: prawns … make my throat swell" when the person
asks for a Thai dish to order is worse than one line too many: the judge rates such a note low
against the message (a question about dinner is not *like* a note about an allergy), so the
block looks for these notes on their own (:meth:`memkit.search.Searcher.safety_hits`) and keeps
those that bear on the message at all.

A safety note is an entry whose own text holds one of ``SAFETY_WORDS`` (as search terms: stemmed,
so "allergies" and "allergy" are one). They are found through the word index's postings, a few
lookups whatever the vault's size, not by reading every entry.

Whether a safety note *bears* on a message is not the judge's cosine: it rates a haircut and a
thyroid pill 0.20 and a Thai dish and the shellfish allergy 0.18 alike. ``SAFETY_DOMAINS`` says it
in words instead (:func:`bears_on`): a note about a food allergen bears on a message about a meal,
a dish, a restaurant; a painkiller note on a message about pain; an antibiotic allergy on one about
an infection or a prescription; an inhaler or a knee on exertion, heat, cold or smoke; a daily
medicine or an EpiPen on packing and travel. The same on every CPU, and measured on bench/everyday.json
and its held-out twin (``make eval``: the safety messages, and the health notes a block shows where
they do not bear).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from ..formats.words import terms
from .topk import distinct

__all__ = ["SAFETY_WORDS", "SAFETY_TERMS", "SAFETY_DOMAINS", "is_safety_note", "bears_on", "safety_rows"]

#: words that make an entry a safety note
SAFETY_WORDS = (
    "allergy allergic anaphylaxis anaphylactic epipen intolerant intolerance coeliac celiac lactose gluten "
    "diabetes diabetic insulin asthma asthmatic inhaler salbutamol epilepsy epileptic seizure pregnant "
    "pregnancy medication penicillin amoxicillin ibuprofen paracetamol aspirin warfarin anticoagulant "
    "pacemaker hypertension levothyroxine thyroid migraine meniscus sumatriptan antihistamine"
).split()
SAFETY_TERMS: frozenset[str] = frozenset(t for w in SAFETY_WORDS for t in terms(w))

_EXERTION = ("run running jog jogging race 5k 10k marathon triathlon hike hiking trek climb climbing bouldering "
             "gym workout exercise hiit crossfit jump jumping squat football tennis squash badminton "
             "cycle cycling bike ride swim swimming ski skiing dance dancing sport match pavement concrete stairs")
#: what a safety note is about (words of its own text) -> the messages it bears on (words of theirs)
SAFETY_DOMAINS: dict[str, tuple[str, str]] = {
    "food": ("peanut peanuts nut nuts cashew walnut almond pistachio hazelnut pecan shellfish prawn prawns shrimp "
             "mussel mussels crab lobster oyster clam scallop seafood fish dairy lactose milk cream cheese butter "
             "gluten wheat coeliac celiac egg eggs soy soya sesame mustard celery lupin sulphite",
             "food eat eating meal dinner lunch breakfast brunch supper snack dish dishes menu restaurant takeaway "
             "takeout delivery cook cooking bake baking recipe cafe café bistro tapas sushi thai chinese indian "
             "italian mexican japanese curry pizza burger pasta paella risotto carbonara noodles stew soup "
             "sandwich salad dessert cake cheesecake buttercream chocolate milkshake smoothie latte icecream "
             "picnic barbecue bbq buffet seafood fish grocery groceries pesto satay praline marzipan baklava nougat "
             "granola muesli scampi chowder bouillabaisse"),
    "pain": ("ibuprofen paracetamol acetaminophen aspirin codeine naproxen nsaid painkiller painkillers",
             "pain painful painkiller ache aching achy hurt hurts sore headache toothache backache fever "
             "temperature pulled muscle twisted sprain sprained strain swollen swelling injury injured bruise "
             "cramp cramps pharmacy chemist"),
    "infection": ("penicillin amoxicillin antibiotic antibiotics cephalosporin",
                  "antibiotic antibiotics infection infected prescribe prescribed prescription doctor gp dentist "
                  "extraction surgery operation tonsillitis throat chest ear pharmacy amoxicillin penicillin"),
    "breath": ("asthma asthmatic inhaler salbutamol copd",
               _EXERTION + " smoke smoky smog bonfire stubble pollen dust dusty mould mold damp heat humid "
                           "heatwave frost frosty freezing altitude"),
    "joints": ("meniscus knee knees ankle hip hips sciatica ligament acl arthritis",
               _EXERTION),
    "head": ("migraine migraines",
             "headache head night nights shift shifts sleep screen bright alcohol wine"),
    "carry": ("epipen inhaler insulin levothyroxine warfarin medication medicine metformin salbutamol",
              "pack packing washbag suitcase luggage trip travel travelling holiday abroad flight fly flying "
              "camping kit first-aid"),
    "health": ("",  # the message asks about health itself: every safety note bears on it
               "allergy allergies allergic react reaction reactions intolerance intolerant sensitive health "
               "healthy medical condition conditions symptom symptoms doctor gp nurse hospital medication "
               "medications medicine medicines prescription diagnosis"),
    "blood": ("warfarin anticoagulant insulin diabetes diabetic pregnant pregnancy epilepsy epileptic pacemaker",
              "blood donate donation donor surgery operation tattoo piercing fasting alcohol"),
}
_DOMAIN_TERMS: tuple[tuple[frozenset[str], frozenset[str]], ...] = tuple(
    (frozenset(t for w in own.split() for t in terms(w)), frozenset(t for w in message.split() for t in terms(w)))
    for own, message in SAFETY_DOMAINS.values())


def is_safety_note(text: str) -> bool:
    """Whether an entry's text is a safety note (see the module docstring)."""
    return not SAFETY_TERMS.isdisjoint(terms(text))


@lru_cache(maxsize=64)
def _asked(message: str) -> tuple[frozenset[str], ...]:
    """The note words of the domains ``message`` touches (a message is asked about many notes)."""
    said = set(terms(message))
    return tuple(note or SAFETY_TERMS for note, asked in _DOMAIN_TERMS if not asked.isdisjoint(said))


def bears_on(text: str, message: str) -> bool:
    """Whether the safety note ``text`` bears on ``message`` by :data:`SAFETY_DOMAINS`: its own words
    and the message's meet in one domain ("Shellfish allergy" and "a Thai dish to order"; a message
    about health itself, "is there anything I react badly to?", and every safety note)."""
    domains = _asked(message)
    if not domains:  # most messages touch none: no note's words are read
        return False
    own = set(terms(text))
    return any(not note.isdisjoint(own) for note in domains)


def safety_rows(term_ids: Callable[[Sequence[str]], list[int]], holders: Callable[[int], np.ndarray]) -> np.ndarray:
    """The live rows whose own text holds a safety term (ascending), from the view's term ids
    (-1: no entry holds it) and the word index's postings."""
    found = [holders(tid) for tid in term_ids(sorted(SAFETY_TERMS)) if tid >= 0]
    return distinct(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
