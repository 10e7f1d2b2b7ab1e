"""A conclusion that says nothing new: an exact or near duplicate of an entry of the whole vault
(compared without kind, tags, dates and markers), or what archive.md says was forgotten, edited
away or done. A near duplicate that adds a date, a number, a name or a changed state
(:func:`adds_to`) is not one: it supersedes the entry it repeats."""
from __future__ import annotations

import logging
import re
from typing import Iterable, Sequence

from ..formats.archive import ArchivedEntry
from ..formats.lifecycle import core_text, plain_text
from ..formats.words import terms
from ..search import Hit, Searcher
from ..store import Store
from .extract import Conclusion

log = logging.getLogger("memkit")

__all__ = ["NEAREST", "Nearest", "adds_to", "drop_duplicates", "near_duplicate_by_words"]

NEAR_DUPLICATE_COSINE = 0.92  #: duplicate_similarity for a model not calibrated (Searcher.duplicate_similarity)

NEAR_DUPLICATE_JACCARD = 0.8

NEAR_DUPLICATE_CONTAINMENT = 1.0  #: share of the new text's words already in an entry (all: it says nothing new)
NEAREST = 5  #: hits of a conclusion looked at (duplicates, updates, routing): searched once each


class Nearest:
    """Each conclusion's nearest entries (hybrid, words first, no threshold), searched once for the
    duplicate check, the update candidates and the routing (nothing is written in between)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self._hits: dict[str, list[Hit]] = {}

    def __call__(self, text: str) -> list[Hit]:
        if text not in self._hits:
            self._hits[text] = self.searcher.find(self.searcher.query(text, k=NEAREST, threshold=None, words_first=True))
        return self._hits[text]

def drop_duplicates(store: Store, searcher: Searcher, conclusions: list[Conclusion], skipped: list[tuple[str, str]],
                    nearest: Nearest) -> list[Conclusion]:
    """The conclusions that say something new: not what an entry says already, nor what was
    forgotten, edited away or done (archive.md), each compared by its core (text without markers,
    kind, tags and dates: :func:`memkit.formats.lifecycle.core_text`). A near duplicate that adds a
    date, a number, a name or a changed state (:func:`adds_to`) is kept, and supersedes the entry
    it repeats. What is dropped is told in ``skipped`` (text, reason)."""
    entries = store.entries()
    existing = {core_text(e.text): e for e in entries}
    by_id = {e.id: e for e in entries}
    gone = _gone(store.archived())
    gone_words = [(set(terms(key)), a) for key, a in gone.items()]
    seen: dict[str, Conclusion] = {}
    fresh = []
    for c in conclusions:
        key = core_text(c.text)
        if key in existing:
            skipped.append((c.text, f"already in {existing[key].topic}"))
            continue
        if key in seen:
            skipped.append((c.text, "repeated in this transcript"))
            continue
        left = gone.get(key) or _said_alike(c.text, gone_words)
        if left is not None:
            skipped.append((c.text, f"{_why_gone(left)} on {left.day} (archive.md): not added again"))
            continue
        near = _near_duplicate(nearest(c.text), c.text, searcher.duplicate_similarity())
        if near is not None:
            added = adds_to(c.text, near.text)
            old = by_id.get(near.id)
            if added is None or old is None:
                skipped.append((c.text, f"near duplicate of {near.id} in {near.topic}: {near.text}"))
                continue
            # the newer, more specific fact wins (the Lo-Bug rule): it supersedes the entry it repeats
            log.info("%r adds %s to %s: it supersedes it", c.text, added, near.id)
            c.supersedes.append(old)
        seen[key] = c
        fresh.append(c)
    return fresh


#: words that say a state changed: "planning a trip" -> "booked the trip", "likes jazz" -> "likes jazz, not rock"
STATE_WORDS = frozenset("""
    accepted approved arrived bought booked broke broken canceled cancelled changed closed completed confirmed
    declined decided delivered divorced done dropped ended engaged failed finished fired fixed graduated hired
    instead joined left longer married moved never no not nowadays opened paid passed postponed quit rejected
    rescheduled retired scheduled signed sold started stopped switched anymore finally
""".split())

_FIELD_MARKER_RE = re.compile(r"\((?:people|[a-z][a-z0-9-]{0,39}):[^()]*\)")  #: ``(people: …)``, ``(city: Porto)``

_TOKEN_RE = re.compile(r"[^\W_][\w'.:/-]*[^\W_]|[^\W_]")


def _tokens(text: str) -> list[str]:
    """The words of a memory's text without its markers, kind, tags and date (case kept)."""
    return _TOKEN_RE.findall(_FIELD_MARKER_RE.sub(" ", plain_text(text)))

def adds_to(text: str, entry: str) -> str | None:
    """What ``text``, a near duplicate of ``entry``, adds to it that makes it a newer fact rather
    than the same one reworded, or None: a number or date ("May 20 to 27"), a name (a capitalised
    word not first in the sentence: "moved to Porto"), or a word saying a state changed
    (:data:`STATE_WORDS`: "booked", "not", "stopped"). "Has a tree nut allergy" adds nothing to
    "Allergic to tree nuts"."""
    new, old = _tokens(text), _tokens(entry)
    had = {w.casefold() for w in old}
    had |= {w.rstrip("s") for w in had}
    fresh = [(i, w) for i, w in enumerate(new) if w.casefold() not in had and w.casefold().rstrip("s") not in had]
    numbers = [w for _, w in fresh if any(ch.isdigit() for ch in w)]
    if numbers:
        return "the number" + ("s " if len(numbers) > 1 else " ") + ", ".join(numbers)
    names = [w for i, w in fresh if i > 0 and w[:1].isupper() and w.casefold() not in STATE_WORDS]
    if names:
        return "the name" + ("s " if len(names) > 1 else " ") + ", ".join(names)
    states = [w for _, w in fresh if w.casefold() in STATE_WORDS]
    if states:
        return "a changed state (" + ", ".join(states) + ")"
    return None

def _gone(archived: Sequence[ArchivedEntry]) -> dict[str, ArchivedEntry]:
    """What left the topics on purpose (forgotten, edited, done, superseded, compacted: not what
    merely expired), by core text; the latest leaving of each."""
    return {core_text(a.text): a for a in archived if not a.reason.startswith("expired")}

def _why_gone(a: ArchivedEntry) -> str:
    if a.reason.startswith("edited"):
        return "edited away"
    return a.reason.split(":")[0].split(" by ")[0].split(" into ")[0]

def _said_alike(text: str, archived: Iterable[tuple[set[str], ArchivedEntry]]) -> ArchivedEntry | None:
    """An archived entry (given with its words) whose words nearly all coincide with the text's (a
    Jaccard of NEAR_DUPLICATE_JACCARD): the forgotten memory worded a little otherwise."""
    words = set(terms(core_text(text)))
    if len(words) < 3:
        return None
    for other, a in archived:
        if len(words & other) / max(1, len(words | other)) >= NEAR_DUPLICATE_JACCARD:
            return a
    return None

def near_duplicate_by_words(entry: str, text: str) -> bool:
    """Whether ``text`` says what ``entry`` says by their words alone: they mostly coincide (a
    Jaccard of NEAR_DUPLICATE_JACCARD), or the new text's words are all in the entry already
    (containment of NEAR_DUPLICATE_CONTAINMENT with a Jaccard of at least half that). A new text
    that adds words to an entry is not a duplicate (it may be an update)."""
    words = set(terms(core_text(text)))
    other = set(terms(core_text(entry)))
    common = len(words & other)
    jaccard = common / max(1, len(words | other))
    contained = common / max(1, len(words))  # the new text's words already there: nothing new
    return jaccard >= NEAR_DUPLICATE_JACCARD or \
        (contained >= NEAR_DUPLICATE_CONTAINMENT and jaccard >= NEAR_DUPLICATE_CONTAINMENT / 2 and common >= 3)

def _near_duplicate(found: list[Hit], text: str, cosine: float = NEAR_DUPLICATE_COSINE) -> Hit | None:
    """An existing entry that says the same (the hybrid search's best hits, judged on the words and
    the meaning): the static model's ``cosine`` (memkit.yaml's ``duplicate_similarity``, calibrated
    per model), or :func:`near_duplicate_by_words`."""
    for h in found[:3]:
        if h.cosine >= cosine or near_duplicate_by_words(h.text, text):
            return h
    return None
