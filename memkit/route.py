"""Topic detection: which topic a text (a message, a conclusion) belongs to, from search hits."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .vault import Vault

VOTES = 5  #: hits that vote
MIN_VOTES = 3  #: votes one topic needs


@dataclass(frozen=True)
class TopicGuess:
    """The detected topic, with the evidence: its share of the top hits and its best cosine."""

    topic: str
    votes: int
    cosine: float


def detect_topic(vault: "Vault", text: str, threshold: float | None = None) -> TopicGuess | None:
    """The topic that most of the ``VOTES`` best hits for ``text`` come from, if at least
    ``MIN_VOTES`` do and its best hit passes the similarity threshold; else None.

    Subtopics vote for themselves (``cooking-rice`` is not ``cooking``).

    :param vault: the vault (its index is refreshed if stale).
    :param text: what to place.
    :param threshold: cosine the best hit must reach (default: the vault's search threshold).
    """
    from .search import default_threshold

    if not text.strip():
        return None
    hits = vault.search(text, k=VOTES, threshold=None)
    if not hits:
        return None
    if threshold is None:
        threshold = default_threshold(vault, vault.embedder.dim)
    topic, votes = Counter(h.topic for h in hits).most_common(1)[0]
    best = max(h.cosine for h in hits if h.topic == topic)
    if votes >= min(MIN_VOTES, len(hits)) and len(hits) >= 2 and best >= threshold:
        return TopicGuess(topic, votes, best)
    return None
