"""Topic detection: which topic a text (a message, a conclusion) belongs to, from search hits."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..formats.words import terms
from .hits import Hit
from .searcher import Searcher

GENERAL = "general"  #: the topic of what belongs to no topic yet, and the catch-all part of a split
VOTES = 5  #: hits that vote
MIN_VOTES = 3  #: votes one topic needs
WORDS_MARGIN = 0.1  #: a hit sharing a word with the text votes from threshold - WORDS_MARGIN
MEANING_MARGIN = 0.2  #: a hit sharing no word votes from threshold + MEANING_MARGIN


def is_confident(hit: Hit, threshold: float) -> bool:
    """Whether a hit is real evidence: it shares a word with the query and comes within
    ``WORDS_MARGIN`` of the threshold, or shares none but beats it by ``MEANING_MARGIN``."""
    return hit.cosine >= (threshold - WORDS_MARGIN if hit.lexical > 0 else threshold + MEANING_MARGIN)


@dataclass(frozen=True)
class TopicGuess:
    """The detected topic, with the evidence: its share of the top hits and its best cosine."""

    topic: str
    votes: int
    cosine: float


def detect_topic(searcher: Searcher, text: str, threshold: float | None = None, *,
                 words_first: bool = False, hits: list[Hit] | None = None) -> TopicGuess | None:
    """The topic that at least ``MIN_VOTES`` of the ``VOTES`` best hits for ``text`` come from,
    counting hits that share a word with the text and come within ``WORDS_MARGIN`` of the
    similarity threshold, or share none but beat it by ``MEANING_MARGIN`` (static models give small talk like "hi"
    cosines of 0.5 with anything, so meaning alone must be strong); else None.

    Subtopics vote for themselves (``cooking-rice`` is not ``cooking``).

    :param searcher: searches the vault (its index is refreshed if stale).
    :param text: what to place.
    :param threshold: cosine the best hit must reach (default: the vault's search threshold).
    :param words_first: ``text`` is a memory (a digest's conclusion), not a person's message.
    :param hits: its hits already found (the best ``VOTES`` or more, no threshold), to search once.
    """
    if not terms(text):  # nothing but stop words and punctuation: no topic to detect
        return None
    if hits is None:
        hits = searcher.find(searcher.query(text, k=VOTES, threshold=None, words_first=words_first))
    hits = hits[:VOTES]
    if not hits:
        return None
    if threshold is None:
        threshold = searcher.threshold()
    voters = [h for h in hits if is_confident(h, threshold)]
    if not voters:
        return None
    topic, votes = Counter(h.topic for h in voters).most_common(1)[0]
    if votes >= min(MIN_VOTES, len(hits)) and len(hits) >= 2:
        return TopicGuess(topic, votes, max(h.cosine for h in voters if h.topic == topic))
    return None


def closest_subtopic(searcher: Searcher, parent: str, subtopics: list[str], text: str) -> str:
    """Where a text addressed to a split ``parent`` goes: the subtopic holding the entry that
    shares the most of its words (a lexical search: no model is loaded; an entry of a part split in
    turn counts for that part), else the split's catch-all part (``PARENT-general``, or
    ``PARENT-other`` when the parent's own name ends in ``general``), else ``PARENT-general``.

    :param subtopics: the topics a split made of ``parent`` (non-empty).
    """
    if terms(text):
        hits = searcher.find(searcher.query(text, k=1, threshold=None, topic=parent, mode="lexical"))
        for child in sorted(subtopics, key=len, reverse=True) if hits else ():
            if hits[0].topic == child or hits[0].topic.startswith(child + "-"):
                return child
    catch_all = [f"{parent}-{GENERAL}", f"{parent}-other"]
    if parent.split("-")[-1] == GENERAL:  # a split of general names its catch-all general-other
        catch_all.reverse()
    return next((name for name in catch_all if name in subtopics), catch_all[0])


def split_target(searcher: Searcher, topic: str, text: str) -> str:
    """The topic a text addressed to ``topic`` is written to: ``topic`` itself when its file exists
    or it was never split; else its closest part (:func:`closest_subtopic`), and so on down while
    that part was split in turn (``general`` -> ``general-health`` -> ``general-health-sleep``). A
    split topic is never recreated beside its parts."""
    store = searcher.store
    seen: set[str] = set()
    while topic not in seen:
        seen.add(topic)
        path = store.topic_path(topic)
        if path.exists() or path.is_symlink():
            return topic
        children = store.subtopics(topic)
        if not children:
            return topic
        topic = closest_subtopic(searcher, topic, children, text)
    return topic
