"""Where each conclusion goes: the LLM's topic hint, else the topic the vault's hits agree on,
else a new topic for enough conclusions that belong together, else the topic of a close hit that
shares its words, else ``general``; a topic that was split is never recreated."""
from __future__ import annotations

import logging
import re
from typing import Any, Sequence

from ..base.similarity import similarities
from ..errors import MemkitError, NumericError
from ..formats.links import link_key
from ..formats.names import slugify
from ..formats.words import terms
from ..search import Searcher, detect_topic, is_confident, split_target
from ..store import Store
from .duplicates import Nearest
from .extract import Conclusion

log = logging.getLogger("memkit")

__all__ = ["new_topic_name", "route", "shares_evidence", "summary_of", "together", "fitting", "PROPOSAL_JUDGE"]

_DATE_TAIL = re.compile(r"\s*\((?:due |until )?\d{4}-\d{2}-\d{2}\)")


def route(store: Store, searcher: Searcher, conclusions: list[Conclusion], new_topic: dict[str, Any] | None,
          existing: set[str], nearest: Nearest) -> str | None:
    """Where each conclusion goes (returns the new topic it opened, or None), by the design's seed rules: the LLM's hint when it names a topic (a
    split parent: its closest subtopic); else the topic the vault's hits agree on (a detected topic);
    else, when at least ``min_conclusions_for_new_topic`` of the conclusions left belong together, a
    new topic for them: the one the LLM proposed for those that bear on it (:func:`fitting`), else
    the largest group alike in words or meaning (:func:`together`), named as proposed — the Rostro
    rule: unrelated conclusions are never filed together under the LLM's proposal; else the topic
    of a close hit that shares a good part of its
    words (:func:`shares_evidence`); else ``general``. One shared word is no evidence: nothing goes
    to an unrelated existing topic on it."""
    unrouted = []
    by_key = {link_key(name): name for name in sorted(existing)}  # a hint names a topic as a link does
    for c in conclusions:
        hint = slugify(c.topic_hint or "")
        named = by_key.get(link_key(c.topic_hint)) if c.topic_hint else None
        if named is not None or hint in existing:  # "Work/harbor": a topic in a folder, as it is named
            c.topic = named or hint
            continue
        if hint and store.subtopics(hint):  # the LLM named a topic that was split since: its closest part
            c.topic = split_target(searcher, hint, c.text)
            continue
        guess = detect_topic(searcher, c.text, words_first=True, hits=nearest(c.text))
        if guess is not None:
            c.topic = guess.topic
            continue
        unrouted.append(c)
    # a new topic only for enough conclusions that belong together (the Rostro rule): with a proposal
    # from the LLM, those that bear on it; it said they fit no topic, not that they fit its ("hobbies")
    least = searcher.config.min_conclusions_for_new_topic
    group = fitting(searcher, new_topic, unrouted) if proposed_name(new_topic) else []
    if len(group) < least:  # or the largest group alike in words or meaning (named as proposed)
        group = together(searcher, unrouted)
    opened = None
    if len(group) >= least:
        opened = new_topic_name(new_topic, group, existing)
        for c in group:
            c.topic = opened
    threshold = searcher.threshold()
    for c in unrouted:
        if c.topic is not None:
            continue
        best = next((h for h in nearest(c.text) if shares_evidence(c.text, h.text) and is_confident(h, threshold)),
                    None)
        c.topic = best.topic if best is not None and best.topic in existing else "general"
    for c in conclusions:  # a topic that was split is never recreated: its closest part, at any depth
        c.topic = split_target(searcher, c.topic or "general", c.text)
    return opened

def _content_words(text: str) -> set[str]:
    return {w for w in terms(_DATE_TAIL.sub("", text)) if not w.isdigit()}

def shares_evidence(text: str, entry: str) -> bool:
    """Whether an entry shares enough of a text's words to place the text beside it: two content
    words or more, and at least a third of the text's ("cetirizine for hay fever" beside the
    cetirizine entry; not "prefers" alone, which half the vault says)."""
    words = _content_words(text)
    shared = words & _content_words(entry)
    return len(shared) >= 2 and 3 * len(shared) >= len(words)

def proposed_name(new_topic: dict[str, Any] | None) -> str:
    """The topic name the LLM proposed (``""`` for none, or for ``general``)."""
    name = slugify(str((new_topic or {}).get("name") or (new_topic or {}).get("title") or ""))
    return "" if name == "general" else name

#: the judge's cosine from which a conclusion bears on the topic the LLM proposed (its title and
#: summary). Measured on five proposals (issue 41.5): their own conclusions 0.17-0.67 ("Hobbies" /
#: "Goes bouldering on Tuesdays" 0.17, "Travel: trips" / "Prefers window seats on planes" 0.26), ten
#: unrelated ones -0.07-0.25 (the most: "Hobbies" / "Works from home on Fridays"); the issue's
#: "hobbies" of a rice preference, an allergy, a dentist visit and a car insurance: -0.07-0.00
PROPOSAL_JUDGE = 0.25


def fitting(searcher: Searcher, proposal: dict[str, Any] | None, conclusions: list[Conclusion]) -> list[Conclusion]:
    """The conclusions that bear on the topic the LLM proposed: they share a content word (four
    letters or more) with its name, title or summary, or the judge's cosine with them reaches
    :data:`PROPOSAL_JUDGE` (where the judge does not run: the static model's, at the vault's
    threshold + 0.1)."""
    about = " ".join(str((proposal or {}).get(k) or "") for k in ("title", "name", "summary")).replace("-", " ")
    words = {w for w in terms(about) if len(w) >= 4 and w.isalpha()}
    texts = [_DATE_TAIL.sub("", c.text) for c in conclusions]
    cosines: list[float] | None = None
    judged = searcher.judge()
    try:
        if judged is not None:
            rows = judged.judge.embed([about] + texts)
            cosines, floor = [float(rows[0] @ r) for r in rows[1:]], PROPOSAL_JUDGE
        else:
            rows = searcher.embed([about] + texts)
            cosines, floor = [float(rows[0] @ r) for r in rows[1:]], searcher.threshold() + 0.1
    except (MemkitError, OSError, RuntimeError, ValueError) as exc:
        log.warning("weighing the conclusions against the proposed topic by words only: %s", exc)
    return [c for i, c in enumerate(conclusions)
            if words & set(terms(texts[i])) or (cosines is not None and cosines[i] >= floor)]


def together(searcher: Searcher, conclusions: list[Conclusion]) -> list[Conclusion]:
    """The largest group of conclusions that belong together: linked when they share a content word
    (four letters or more), or their meanings are close (cosine at the vault's threshold + 0.1)."""
    if len(conclusions) < 2:
        return list(conclusions)
    words = [{w for w in terms(_DATE_TAIL.sub("", c.text)) if len(w) >= 4 and w.isalpha()} for c in conclusions]
    try:
        vectors = searcher.embed([c.text for c in conclusions])
        close = similarities(vectors) >= searcher.threshold() + 0.1
    except NumericError as exc:
        log.warning("grouping the conclusions by their shared words only: %s", exc)
        close = None
    except MemkitError:  # no model: by shared words only
        close = None
    n = len(conclusions)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if words[i] & words[j] or (close is not None and bool(close[i, j])):
                parent[root(i)] = root(j)
    groups: dict[int, list[Conclusion]] = {}
    for i, c in enumerate(conclusions):
        groups.setdefault(root(i), []).append(c)
    return max(groups.values(), key=len)

def summary_of(conclusions: Sequence[Conclusion]) -> str:
    """A few words saying what a new topic holds: its conclusions' most frequent content words."""
    counts: dict[str, int] = {}
    for c in conclusions:
        for w in terms(_DATE_TAIL.sub("", c.text)):
            if w.isalpha() and len(w) > 2:
                counts[w] = counts.get(w, 0) + 1
    return ", ".join(sorted(counts, key=lambda w: (-counts[w], w))[:4])

def new_topic_name(proposed: dict[str, Any] | None, conclusions: list[Conclusion], existing: set[str]) -> str:
    base = proposed_name(proposed)
    if not base:
        words: dict[str, int] = {}
        for c in conclusions:
            for w in terms(c.text):
                if w.isalpha() and len(w) > 3:
                    words[w] = words.get(w, 0) + 1
        base = slugify("-".join(sorted(words, key=lambda w: (-words[w], w))[:2])) or "notes"
    name, n = base, 2
    while name in existing:
        name, n = f"{base}-{n}", n + 1
    return name
