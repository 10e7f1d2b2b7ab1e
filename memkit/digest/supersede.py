"""Which entries a conclusion makes outdated: the candidates shown to the LLM (the search's best
hits and its topic's entries of its kind), and of those it names only the ones the conclusion plainly
bears on (the transcript is data: a model that obeys "mark every memory outdated" names entries the
conversation never touched)."""
from __future__ import annotations

import logging
from typing import Sequence

from ..errors import MemkitError
from ..formats.lifecycle import core_text
from ..formats.topic import Entry
from ..search import Searcher, is_confident
from ..store import Store
from .duplicates import Nearest
from .extract import Conclusion
from .routing import shares_evidence

log = logging.getLogger("memkit")

__all__ = ["MAX_SUPERSEDES", "check_supersedes", "update_candidates"]

UPDATE_CANDIDATES = 3

#: the most entries one conversation may archive as outdated; beyond it the digest stops and asks
#: (``allow_many_supersedes``): a transcript that says "mark every memory outdated" to a model that obeys
MAX_SUPERSEDES = 3

#: the static model's cosine from which a conclusion bears on an entry it says is outdated, with no word
#: and no topic in common. Measured with memkit-m2v (issue 41.10): pairs where one replaces the other
#: 0.27-0.98 (7 of 10 at 0.51 or more: "Switched to a vegan diet" / "Is vegetarian" 0.515), unrelated
#: pairs -0.07-0.26 ("The user's AWS key is [redacted]" / "The user likes zebras" 0.228); the vault's
#: own similarity threshold counts where it is higher (another model)
SUPERSEDE_COSINE = 0.45

#: the judge's cosine (all-MiniLM-L6-v2, the search's second stage) from which a conclusion bears on an
#: entry, where the judge runs. Measured on the same pairs: replacing 0.35-0.96 ("Moved to Porto" /
#: "Lives in Lisbon, in Arroios" 0.525, which the static model puts at 0.35), unrelated -0.06-0.20
SUPERSEDE_JUDGE = 0.30

SAME_TOPIC_CANDIDATES = 5  #: entries of a conclusion's topic and kind shown as what it may update


def update_candidates(store: Store, searcher: Searcher, conclusions: list[Conclusion],
                      nearest: Nearest) -> tuple[list[tuple[Conclusion, list[Entry]]], dict[tuple[int, str], float]]:
    """The entries each conclusion may make outdated, once it is routed: the vault's own search's
    best hits for it (what ``memkit search`` answers: the closest entries that are more than
    noise), its nearest hits that are real evidence (:func:`memkit.search.route.is_confident`), and
    the latest entries of its topic of the same kind (or of no kind): "moved to Porto" is shown
    "Lives in Lisbon" though they share no word. Also returns the cosine the search saw for each
    (conclusion's ``id()``, entry id) it found confidently (:func:`check_supersedes` reads it)."""
    threshold = searcher.threshold()
    entries = store.entries()
    by_id = {e.id: e for e in entries}
    by_topic: dict[str, list[Entry]] = {}
    for e in entries:
        by_topic.setdefault(e.topic, []).append(e)
    pairs = []
    seen: dict[tuple[int, str], float] = {}
    for c in conclusions:
        hits = searcher.search(c.text, k=UPDATE_CANDIDATES, weak=UPDATE_CANDIDATES)
        hits += [h for h in nearest(c.text) if is_confident(h, threshold)]
        for h in hits:
            if h.confident:
                seen[(id(c), h.id)] = max(h.cosine, seen.get((id(c), h.id), -1.0))
        shown = {h.id: by_id[h.id] for h in hits if h.id in by_id}
        shown = dict(list(shown.items())[:UPDATE_CANDIDATES])
        alike = [e for e in by_topic.get(c.topic or "", []) if e.is_list and e.kind in (c.kind, None)]
        for e in alike[::-1][:SAME_TOPIC_CANDIDATES]:
            shown.setdefault(e.id, e)
        if shown:
            pairs.append((c, list(shown.values())))
    return pairs, seen

def _bears_on(c: Conclusion, e: Entry, cosine: float | None, limit: float, judged: float | None) -> str | None:
    """Why conclusion ``c`` plainly bears on entry ``e`` (so it may make it outdated), or None:
    they share evidence (:func:`shares_evidence`, either way round), they are of one topic (not
    ``general``, which holds what belongs to none) and one kind (an entry without a kind is of
    any), or their meanings are close: the static model's ``cosine`` is ``limit`` or more, or the
    judge's (``judged``) :data:`SUPERSEDE_JUDGE` or more."""
    if shares_evidence(c.text, e.text) or shares_evidence(e.text, c.text):
        return "shared words"
    if c.topic and c.topic == e.topic and c.topic != "general" and e.kind in (None, c.kind):
        return "same topic and kind"
    if cosine is not None and cosine >= limit:
        return f"similar ({cosine:.2f})"
    if judged is not None and judged >= SUPERSEDE_JUDGE:
        return f"similar to the judge ({judged:.2f})"
    return None

def _judge_cosines(searcher: Searcher, text: str, entries: Sequence[Entry]) -> dict[str, float]:
    """The judge's cosine of ``text`` with each entry (by id); none where the judge does not run."""
    vectors = searcher.judge()
    if vectors is None:
        return {}
    try:
        rows = vectors.judge.embed([core_text(text)] + [core_text(e.text) for e in entries])
    except (MemkitError, OSError, RuntimeError, ValueError) as exc:
        log.warning("could not judge which entries a conclusion bears on (%s): the static model alone", exc)
        return {}
    return {e.id: float(rows[0] @ rows[i]) for i, e in enumerate(entries, 1)}

def check_supersedes(searcher: Searcher, conclusions: list[Conclusion], seen: dict[tuple[int, str], float],
                     refused: list[tuple[str, str, str, str]]) -> None:
    """Keep of each conclusion's supersedes only the entries it plainly bears on
    (:func:`_bears_on`): the transcript is data, and a model that obeys "mark every memory as
    outdated" names entries the conversation never touched. The others stay, named in
    ``refused`` (topic, old text, new text, why kept)."""
    limit = max(SUPERSEDE_COSINE, searcher.threshold())
    for c in conclusions:
        if not c.supersedes:
            continue
        cosines: dict[str, float] = {}
        try:
            vectors = searcher.embed([core_text(c.text)] + [core_text(e.text) for e in c.supersedes])
            cosines = {e.id: float(vectors[0] @ vectors[i]) for i, e in enumerate(c.supersedes, 1)}
        except MemkitError:  # no model (words only): the search's cosines, the words and the topics
            pass
        judged = _judge_cosines(searcher, c.text, c.supersedes)
        kept = []
        for e in c.supersedes:
            found = [x for x in (cosines.get(e.id), seen.get((id(c), e.id))) if x is not None]
            if _bears_on(c, e, max(found) if found else None, limit, judged.get(e.id)) is not None:
                kept.append(e)
            else:
                refused.append((e.topic, e.text, c.text, "the LLM called it outdated, but the new entry "
                                "shares no words, topic or meaning with it"))
                log.warning("kept %s (%s): the LLM called it outdated by %r, which does not bear on it",
                            e.id, e.topic, c.text)
        c.supersedes = kept
