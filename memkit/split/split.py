"""Split a topic that grew too large into subtopics (``cooking`` -> ``cooking-rice``, ``cooking-bread``,
``cooking-general``).

How a split is made:

1. **Cluster.** The topic's entries are embedded (vectors already in this process's index are
   reused, keyed by content hash). The similarity of two entries is the mean of their embedding
   cosine and the cosine of their TF-IDF vectors over shared words: static embeddings of short lines
   are noisy, and entries that share a rare word ("kimchi") usually belong together. The entries are
   grouped by spherical k-means on those features (seeded k-means++ start, a few restarts; a topic
   of thousands of entries is fitted on a sample) for every k in ``2..min(6, n // min_part)``; the k
   with the best cosine silhouette wins, entries in clusters smaller than ``min_part`` scoring 0.
   Clusters smaller than ``min_part``, and entries with no known words (zero vectors), go to a
   ``<parent>-general`` part (``general-other`` when the parent is ``general``). Same input, same
   result.
2. **Name.** With an LLM, one request shows a few representative entries of each cluster and asks
   for a name, title and summary per cluster; names are made safe with :func:`~memkit.formats.names.slugify`
   and prefixed ``<parent>-``. Without an LLM, or when it fails, each cluster is named after its
   most distinctive word: frequent in the cluster, rare in the others (stop words, numbers, words
   that make poor names — "daily", "cold", "habit" — and the parent's own name and its inflections
   are skipped), and by the next one too when the first is in fewer than a third of the
   cluster's entries (``cooking-cold-brew``, not ``cooking-cold``); a cluster that no word of its own can
   name joins the catch-all part. Names never collide with each other or with an existing topic
   (``-2``, ``-3``… is appended).
3. **Write.** Each part is a new file: frontmatter (title, summary, created — the parent's —,
   updated, ``parent:``, then the parent's other frontmatter keys, copied line for line, or
   written anew when YAML anchors make that impossible), a
   ``# Title`` heading, then the parent's entry lines, byte for byte, in their original order and
   newline style. Under the vault lock the parent is re-read (a split planned against an older
   text is refused), all parts are written atomically, then the parent is removed, then index.txt
   is updated: a crash leaves duplicates, never a lost line. Every rendered part is parsed again
   before anything is written, and the split is refused unless its entries are exactly the
   parent's.

What happens to lines that are not entries: the parent's first ``#`` heading (when it comes before
every entry) is the topic's title and is replaced by each part's own heading; blank lines are
layout. Every other line a person wrote — sub-headings, HTML comments, rules, empty fences —
travels with the entry that follows it (so ``## Rice`` lands in the part holding the first entry
under it, directly above that entry), and lines after the last entry stay after it. Nothing is
dropped or duplicated. A fenced code block is an entry and moves with its fence lines.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

import numpy as np

from ..errors import LLMError, MemkitError, TopicNameError
from ..formats.fields import FACTS_TOPIC
from ..formats.names import check_topic_name
from ..formats.topic import Topic
from ..llm import LLM
from ..search import Searcher
from ..store import Store
from .cluster import cluster, features, lexical
from .naming import (
    GENERAL,
    ask_names,
    distinctive_words,
    join,
    llm_suffix,
    name_word,
    name_words,
    one_line,
    tokens,
    unique,
)
from .parts import SplitPart, SplitPlan, recent_items, render

__all__ = [
    "SplitPart",
    "SplitPlan",
    "NothingToSplit",
    "SplitConflict",
    "plan_split",
    "apply_split",
    "split_topic",
    "needs_split",
    "maybe_split",
]

log = logging.getLogger("memkit")

MAX_PARTS = 6  #: at most this many clustered parts (plus ``-general``)
MIN_PART = 5  #: the smallest cluster that becomes a part of its own


class NothingToSplit(MemkitError):
    """The topic is too small, or its entries do not fall into distinct subtopics."""


class SplitConflict(MemkitError):
    """The topic changed between planning a split and applying it, or a part's name got taken."""



def plan_split(searcher: Searcher, topic: str, *, llm: LLM | None = None, min_part: int = MIN_PART,
               max_parts: int | None = None) -> SplitPlan:
    """Decide how ``topic`` would be split; writes nothing.

    :param searcher: the vault's search (its index has the entries' vectors).
    :param topic: the topic's name.
    :param llm: names the parts when given; without one (or when it fails) the entries' own words do.
    :param min_part: smallest cluster kept as its own part; smaller ones join ``<topic>-general``.
    :param max_parts: most clustered parts (default 6).
    :raises NothingToSplit: the topic has fewer than ``2 * min_part`` entries, or they do not separate.
    :raises TopicNotFound: no such topic.
    """
    if min_part < 1:
        raise MemkitError(f"min_part must be at least 1, not {min_part}")
    if max_parts is not None and max_parts < 2:
        raise MemkitError(f"max_parts must be at least 2, not {max_parts}")
    store = searcher.store
    parent = store.topic(topic)
    entries = parent.entries
    n = len(entries)
    if n < 2 * min_part:
        raise NothingToSplit(f"topic {parent.name} has only {n} entr{'y' if n == 1 else 'ies'}; nothing to split")
    vectors = features(_vectors(searcher, parent), lexical([tokens(e.body) for e in parent.entries]))
    labels, k = cluster(vectors, min_part, max_parts or MAX_PARTS)
    groups = [[i for i in range(n) if labels[i] == c] for c in range(k)]
    general = [i for i in range(n) if labels[i] < 0]
    if len([g for g in groups if g]) + (1 if general else 0) < 2:
        raise NothingToSplit(
            f"topic {parent.name}: its {n} entries do not fall into distinct subtopics; nothing to split"
        )
    taken = {tf.name for tf in store.topic_files()}
    spoken = _unsecret(store, parent)
    words = spoken(distinctive_words(parent, groups, general))
    named_by = "words"
    proposals: list[dict[str, str]] | None = None
    if llm is not None and groups:
        try:
            proposals = [{key: store.config.redact.apply(value).text for key, value in proposal.items()}
                         for proposal in ask_names(llm, parent, groups, vectors)]  # never stored: docs/privacy.md
            named_by = "llm"
        except LLMError as exc:
            log.warning("naming the parts of %s: %s; naming them from their own words instead", parent.name, exc)
    if proposals is None:  # named by their words: a part that no word of its own names joins the catch-all
        nameless = {c for c, members in enumerate(groups) if members and not any(name_word(w) for w in words[c])}
        if nameless and len(groups) > len(nameless):
            general = sorted(general + [i for c in nameless for i in groups[c]])
            groups = [g for c, g in enumerate(groups) if c not in nameless]
            words = spoken(distinctive_words(parent, groups, general))
    parts: list[SplitPart] = []
    used: set[str] = set()
    for c, members in enumerate(groups):
        cluster_words = words[c]
        proposal = proposals[c] if proposals else None
        suffix = llm_suffix(proposal, parent.name) if proposal else ""
        label = suffix.replace("-", " ")
        if not suffix or suffix == GENERAL:
            chosen = name_words(parent, members, cluster_words, used)
            label, suffix = " ".join(chosen), "-".join(name_word(w) for w in chosen)
        base = join(parent.name, suffix or f"part-{c + 1}")
        name = unique(base, used | taken)
        used.add(name)
        label = label or f"part {c + 1}"
        title = one_line(proposal.get("title", "")) if proposal else ""
        summary = one_line(proposal.get("summary", ""), 200) if proposal else ""
        parts.append(SplitPart(
            name,
            title or f"{parent.title}: {label}",
            summary or ", ".join(cluster_words[:4]) or f"part of {parent.name}",
            [entries[i] for i in members],
        ))
    if general:
        catch_all = "other" if parent.name.split("-")[-1] == GENERAL else GENERAL  # not general-general
        name = unique(join(parent.name, catch_all), used | taken)
        used.add(name)
        gwords = words[-1]
        summary = f"other entries from {parent.name}" + (f": {', '.join(gwords[:3])}" if gwords else "")
        parts.append(SplitPart(name, f"{parent.title}: general", summary, [entries[i] for i in general]))
    plan = SplitPlan(parent.name, parts, parent.raw, parent.bom, named_by, file_of=store.topic_rel)
    render(plan, datetime.now().replace(microsecond=0))  # refuse now, not at apply time, if it cannot work
    return plan


def _unsecret(store: Store, parent: Topic) -> Callable[[list[list[str]]], list[list[str]]]:
    """What keeps a part's words (its name, title, summary: written to its file and index.txt) to
    those its entries still say once redacted: none is a piece of a secret a person typed in."""
    said: set[str] = set()
    for e in parent.entries:
        said |= tokens(store.config.redact.apply(e.body).text)
    said.discard("redacted")
    return lambda ranked: [[w for w in words if w in said] for words in ranked]


def apply_split(store: Store, plan: SplitPlan) -> list[str]:
    """Write the parts, remove the parent, update index.txt; returns the new topic names.

    Under the vault lock: the parent is re-read (a plan made against an older text is refused)
    and :meth:`Store.replace_topic` writes every part before removing the parent.

    :raises SplitConflict: the parent changed since the plan was made, or a part's name is now taken.
    :raises MemkitError: a part would not hold its entries byte for byte, or a file cannot be written.
    """
    if plan.applied:
        raise MemkitError(f"this split of {plan.parent} was already applied")
    for part in plan.parts:
        folder, _, leaf = part.name.rpartition("/")  # in the parent's folder, named as it is on disk
        same_folder = folder == plan.parent.rpartition("/")[0] and check_topic_name(leaf) == leaf
        if (check_topic_name(part.name) != part.name and not same_folder) or part.name == plan.parent:
            raise TopicNameError(f"invalid part name {part.name!r}: use lowercase words joined by '-'")
    if len(set(plan.names)) != len(plan.parts):
        raise MemkitError(f"the parts of {plan.parent} have duplicate names: {', '.join(plan.names)}")
    now = datetime.now().replace(microsecond=0)
    with store.lock():
        current = store.topic(plan.parent)
        if current.raw != plan.raw or current.bom != plan.bom:
            raise SplitConflict(
                f"{store.rel(current.path)} changed since the split was planned; nothing was written, run the split again"
            )
        texts = render(plan, now)
        for name in texts:
            path = store.topic_path(name)
            if path.exists() or path.is_symlink():
                raise SplitConflict(f"{store.rel(path)} exists now; nothing was written, run the split again")
        store.replace_topic(current, texts)
        store.index_txt.write(recent_items(store, plan, now))
    plan.applied = True
    return list(texts)


def split_topic(searcher: Searcher, topic: str, *, llm: LLM | None = None, dry_run: bool = False,
                min_part: int = 5, max_parts: int | None = None) -> SplitPlan:
    """Plan a split and, unless ``dry_run``, apply it. See :func:`plan_split` and :func:`apply_split`.

    :param dry_run: only plan; show the change with :meth:`SplitPlan.diff`.
    """
    plan = plan_split(searcher, topic, llm=llm, min_part=min_part, max_parts=max_parts)
    if not dry_run:
        apply_split(searcher.store, plan)
    return plan


def needs_split(store: Store, topic: str, min_part: int = MIN_PART) -> bool:
    """Whether ``topic`` has more entries than ``topic_split_threshold_lines`` and enough to form
    two parts (checked from the file alone: no model is loaded when it cannot split).

    :raises TopicNotFound: no such topic.
    """
    if topic == FACTS_TOPIC:  # the keyed facts: one line per key, looked up in topics/facts.md alone
        return False
    n = len(store.topic(topic).entries)
    return n > store.config.topic_split_threshold_lines and n >= 2 * min_part


def maybe_split(searcher: Searcher, topic: str, *, llm: LLM | None = None) -> SplitPlan | None:
    """Split ``topic`` if it is over the threshold (used after ``add`` and ``digest``).

    Do not call it while holding the vault lock. A topic whose entries do not separate is left
    alone (None); if another writer changes the topic meanwhile, the split is planned once more.

    :returns: the applied plan, or None when nothing was split.
    """
    if not needs_split(searcher.store, topic):
        return None
    for attempt in (1, 2):
        try:
            return split_topic(searcher, topic, llm=llm)
        except NothingToSplit as exc:
            log.info("%s", exc)
            return None
        except SplitConflict:
            if attempt == 2:
                raise
    return None


# ---- the entries' vectors ---------------------------------------------------------------------------


def _vectors(searcher: Searcher, topic: Topic) -> np.ndarray:
    """Unit rows for the topic's entries: the index's vectors where it has them, else embedded now."""
    known = searcher.vectors_for([e.hash for e in topic.entries])
    missing = [e for e in topic.entries if e.hash not in known]
    if missing:
        rows = np.asarray(searcher.embed([e.body for e in missing]), dtype=np.float32)
        for e, row in zip(missing, rows):
            known[e.hash] = row
    X = np.stack([np.asarray(known[e.hash], dtype=np.float32) for e in topic.entries])
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 1e-12)

