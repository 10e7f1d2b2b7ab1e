"""Which entries a query may return: its filters as one mask over an index view's rows (a topic
and its subtopics, a kind, a tag, a day, the topics linked to one, the private topics left out,
who and what an entry is about, its importance), and the entries that expired (never shown). The
rows' importances and expiry days are kept along the view's lineage: an extended view reads only
its new rows."""
from __future__ import annotations

from datetime import date, timedelta
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ..formats.lifecycle import importance, last_day
from ..formats.names import in_topic
from ..formats.people import Person
from ..index import NO_DAY, IndexView, column_mask, tag_mask
from .about import about_mask
from .query import Query
from .topk import distinct

__all__ = ["RowFacts", "in_scope", "query_mask"]


class RowFacts:
    """What a searcher keeps of each row of its views: the importance, the day it expires."""

    def __init__(self) -> None:
        #: (view lineage, rows checked, last valid day per row, the day it was computed for)
        self._expired: tuple[int, int, np.ndarray, int] | None = None
        self._expired_rows: tuple[IndexView, int, np.ndarray] | None = None  #: the last answer, for that view and day
        self._importance: tuple[int, np.ndarray] | None = None  # (view lineage, importance per row)

    def importances(self, view: IndexView) -> np.ndarray:
        """Each row's ``(importance X)`` as float32 (read from its text; cached along the view's
        lineage, so an extended view reads its new rows only)."""
        cached = self._importance
        start = cached[1].shape[0] if cached is not None and cached[0] == view.lineage and \
            cached[1].shape[0] <= len(view) else 0
        old = cached[1][:start] if cached is not None and start else np.zeros(0, dtype=np.float32)
        fresh = np.array([importance(t) for t in view.texts[start:]], dtype=np.float32)
        values = np.concatenate([old, fresh]) if start else fresh
        self._importance = (view.lineage, values)
        return values

    def expired_rows(self, view: IndexView, lifetimes: Mapping[str, Any], today: date | None = None) -> np.ndarray:
        """The rows of ``view`` whose entry has expired by ``today`` (past its ``(until DATE)`` or
        its kind's lifetime, ``lifetimes``: memkit.yaml ``expire:``): search and context never show them. Cached
        along the view's lineage, so an extended view only checks its new rows."""
        today = today or date.today()
        day = (today - date(1970, 1, 1)).days
        known = self._expired_rows
        if known is not None and known[0] is view and known[1] == day:
            return known[2]
        cached = self._expired
        start = 0
        last: np.ndarray = np.zeros(0, dtype=np.int64)
        if cached is not None and cached[0] == view.lineage and cached[1] <= len(view) and cached[3] == day:
            start, last = cached[1], cached[2]
        n = len(view)
        if start < n:
            fresh = np.full(n - start, np.iinfo(np.int64).max, dtype=np.int64)
            kinds, own, epoch = view.kinds, view.own_days, date(1970, 1, 1)
            for j in _may_expire(view, start, lifetimes).tolist():  # most entries cannot expire
                text = view.texts[j]
                written = epoch + timedelta(days=int(own[j])) if own[j] != NO_DAY else None
                end, _ = last_day(kinds[j], written, text, lifetimes)
                if end is not None:
                    fresh[j - start] = (end - epoch).days
            last = np.concatenate([last[:start], fresh])
        self._expired = (view.lineage, n, last, day)
        rows = np.flatnonzero(last < day)
        rows = rows[[view.is_live(int(i)) for i in rows]] if len(rows) else rows
        self._expired_rows = (view, day, rows)
        return rows


def in_scope(name: str, topic: str, subtopics: bool) -> bool:
    """Whether topic ``name`` is ``topic`` (or, with ``subtopics``, one of its subtopics)."""
    return in_topic(name, topic) if subtopics else name == topic


def query_mask(view: IndexView, q: Query, people: Sequence[Person],
               importances: Callable[[IndexView], np.ndarray]) -> np.ndarray | None:
    """The rows of ``view`` that ``q``'s filters let through (None: every row); ``people``:
    people.md's, for a query about someone; ``importances``: each row's importance."""
    mask: np.ndarray | None = None

    def both(m: np.ndarray) -> None:
        nonlocal mask
        mask = m if mask is None else mask & m

    if q.topic:  # checked by the caller
        ok = np.array([in_scope(t, q.topic, q.subtopics) for t in view.topics], dtype=bool)
        both(ok[view.file_ids] if len(ok) else np.zeros(len(view), bool))
    if q.kind is not None:
        both(column_mask(view.kinds, lambda k: k == q.kind))
    if q.tag is not None:
        both(tag_mask(view.tags, q.tag))
    if q.since:
        both(view.dates >= np.datetime64(q.since, "D"))
    if q.within is not None:  # a topic and the topics it links to or is linked from (search --linked)
        inside = np.array([t in q.within for t in view.topics], dtype=bool)
        both(inside[view.file_ids] if len(inside) else np.zeros(len(view), bool))
    if q.hidden:  # private topics (Searcher.search's private=False)
        shown = np.array([t not in q.hidden for t in view.topics], dtype=bool)
        both(shown[view.file_ids] if len(shown) else np.zeros(len(view), bool))
    about = about_mask(view.texts, view.file_ids, view.topics, people, person=q.person, relation=q.relation,
                       where=q.where)
    if about is not None:
        both(about)
    if q.min_importance is not None:
        both(importances(view) >= np.float32(q.min_importance) - np.float32(1e-6))
    return mask


def _may_expire(view: IndexView, start: int, lifetimes: Mapping[str, Any]) -> np.ndarray:
    """The rows ``start…`` of ``view`` that may expire: of a kind with a lifetime, or holding
    ``(until``; for a frozen view's rows, read off what it kept rather than text by text."""
    n = len(view)
    found = [np.flatnonzero(column_mask(view.kinds, lambda k: (k or "") in lifetimes, start)) + start]
    frozen = view.frozen
    lo = start
    if frozen is not None and start < frozen.rows:
        until = frozen.until_rows
        found.append(until[until >= start])
        lo = frozen.rows
    found.append(np.array([j for j, text in enumerate(view.texts[lo:n], start=lo) if "(until" in text], dtype=np.int64))
    return distinct(np.concatenate(found).astype(np.int64))
