"""Adding a memory: the kind checked, the entry written by the store (:meth:`memkit.store.Store.add`:
under the write lock, one append), the index told, and the topic kept within
``topic_split_threshold_lines``: which part of a split topic an entry goes to, the split an add
triggers, and where the entry is afterwards.

The facade (:meth:`memkit.vault.Vault.add`) calls :func:`add_entry` with the vault's runtime
context; its searcher is asked for only when a split topic or a split needs it (a plain add loads
no model).
"""
from __future__ import annotations

import logging
import re
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from ..errors import InvalidValue, MemkitError
from ..formats.lifecycle import KNOWN_KINDS
from ..formats.topic import Entry
from ..runtime import Runtime
from ..search import Searcher, split_target
from ..store import Store

if TYPE_CHECKING:
    from ..llm import LLM
    from ..split import SplitPlan

log = logging.getLogger("memkit")

__all__ = ["add_entry", "entry_after_split", "route"]


def route(rt: Runtime, topic: str, text: str) -> Path:
    """The file a text addressed to ``topic`` is written to: the topic's own, unless the topic was
    split (its file gone, its parts there): then its part whose entries share most of the text's
    words, else ``TOPIC-general`` (:func:`memkit.search.split_target`). A split topic is never
    recreated beside its parts."""
    store = rt.store
    path = store.topic_path(topic)  # resolved once for the whole add
    if not path.exists() and not path.is_symlink() and store.subtopics(path.stem):
        target = split_target(rt.searcher, path.stem, text)
        if target != path.stem:
            log.info("topic %s was split: added to %s", path.stem, target)
            path = store.topic_path(target)
    return path


def entry_after_split(store: Store, plan: SplitPlan, entry: Entry) -> Entry | None:
    """``entry`` where ``plan`` moved it (the part that holds it), or None."""
    for part in plan.names:
        moved = next((e for e in store.topic(part).entries if e.hash == entry.hash), None)
        if moved is not None:
            return moved
    return None


def split_quietly(searcher: Searcher, topic: str, llm: LLM | None = None) -> SplitPlan | None:
    """Split ``topic`` if it grew past the threshold, its parts named by ``llm`` when one is
    configured (else, or when it fails, from their own words); a failure is a warning, never a
    failure of the write that triggered it."""
    from ..split import maybe_split  # the clustering: only when a topic grows past the threshold
    try:
        return maybe_split(searcher, topic, llm=llm)
    except MemkitError as exc:
        log.warning("could not split %s: %s", topic, exc)
        return None


def check_kind(kind: str, expire: Mapping[str, object]) -> str:
    """``kind`` when memkit knows it (:data:`memkit.formats.lifecycle.KNOWN_KINDS`, or a kind
    memkit.yaml's ``expire:`` names). :raises InvalidValue: an unknown kind, naming the known ones."""
    known = sorted({*KNOWN_KINDS, *expire})
    if not re.fullmatch(r"[^\W\d_][\w-]{0,39}", kind.strip()):  # one word first (as the store says), then known
        raise InvalidValue(f"invalid kind {kind.strip()!r}: use one word of letters, digits, '-' or '_'")
    if kind.strip().lower() not in known:
        raise InvalidValue(f"unknown kind {kind!r}: the known kinds are {', '.join(known)} (a kind of your own: "
                           f"name it under expire: in memkit.yaml, e.g. expire: {{{kind.strip().lower()}: never}})")
    return kind.strip().lower()


def add_entry(rt: Runtime, text: str, *, topic: str | None, kind: str | None, tags: Sequence[str],
              when: datetime | None, split: bool, allow_duplicate: bool) -> Entry:
    """Write ``text`` (its dates already in it) to ``topic`` (``general``: None) or the part of it
    that takes it (:func:`route`), then split the topic when it grew past
    ``topic_split_threshold_lines`` (unless not ``split``); the entry as written, or as its part
    holds it after the split (its parts named by memkit.yaml's LLM when there is one). The
    runtime's ``wrote(topic, path, parsed)`` is told of the write before any split (the topic as
    written, when the store knows it, goes to the index: the file is not read again). The topic's
    entry of the same text is returned unwritten (``.duplicate``) unless ``allow_duplicate``."""
    store = rt.store
    if kind is not None:
        check_kind(kind, store.config.expire)
    path = route(rt, topic or "general", text)
    entry, count, written = store.add(text, kind=kind, tags=tags, when=when, path=path,
                                      allow_duplicate=allow_duplicate)
    if count < 0:  # the topic holds it already: nothing written
        return entry
    rt.wrote(entry.topic, path, written)
    if split and count > store.config.topic_split_threshold_lines:
        plan = split_quietly(rt.searcher, entry.topic, rt.llm())  # the LLM made only when a split is due
        if plan is not None:  # the entry now lives in one of the subtopics: return where
            log.info("topic %s had %d entries (over topic_split_threshold_lines): split into %s",
                     entry.topic, count, ", ".join(plan.names))
            moved = entry_after_split(store, plan, entry)
            if moved is not None:
                return replace(moved, redacted=entry.redacted)
    return entry


