"""A search's query, checked once: :class:`Query` carries the text, k, mode, threshold and filters
of one search, each refused or normalised when the query is made, before anything is read."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Iterable, Literal, Mapping, Union

from ..base.limits import MAX_QUERY_CHARS, SEARCH_MODES, WEAK_HITS
from ..errors import InvalidValue
from ..formats.names import check_topic_name
from .about import check_where

__all__ = ["MODES", "Mode", "Query", "Threshold", "since_day"]

MODES = SEARCH_MODES  #: declared once, in memkit.base.limits (the front ends' choices too)
Mode = Literal["hybrid", "vector", "lexical"]  #: the same, as a type (tests/test_facade.py checks they agree)
#: a cosine, ``None`` for no threshold, or ``"auto"``: memkit.yaml's value or the model's calibrated one
Threshold = Union[float, None, Literal["auto"]]


def since_day(since: str | date) -> str:
    """``since`` as ``YYYY-MM-DD``. :raises InvalidValue: it is not a date."""
    day = since.isoformat() if isinstance(since, date) else str(since).strip()
    try:
        return date.fromisoformat(day).isoformat()
    except ValueError:
        raise InvalidValue(f"since must be a date like 2026-03-01, got {since!r}") from None


@dataclass(frozen=True)
class Query:
    """One search, as :meth:`make` checked it (see :meth:`memkit.search.Searcher.search` for what
    each field does). Made once; the searcher and the ranker only read it."""

    text: str  #: whitespace collapsed, at most ``MAX_QUERY_CHARS``, never empty
    k: int  #: at least 1
    mode: Mode = "hybrid"
    threshold: Threshold = "auto"
    topic: str | None = None  #: a valid topic name (or, without ``subtopics``, compared as given)
    subtopics: bool = True
    kind: str | None = None  #: lowercase
    tag: str | None = None  #: lowercase, no ``#``
    since: str | None = None  #: ``YYYY-MM-DD``
    min_importance: float | None = None  #: 0..1
    weak: int = WEAK_HITS
    words_first: bool = False
    judge: bool | None = None
    hidden: frozenset[str] = frozenset()  #: topics whose entries are left out (private ones: docs/privacy.md)
    person: str | None = None  #: a name or handle of people.md (``--with``), whitespace collapsed
    relation: str | None = None  #: lowercase
    where: tuple[tuple[str, str], ...] = ()  #: (key, value folded) pairs, all must match
    within: frozenset[str] | None = None  #: only these topics' entries (``--linked``: a topic and its links)

    @classmethod
    def make(cls, text: str, *, k: int, mode: Mode = "hybrid", threshold: Threshold = "auto",
             topic: str | None = None, subtopics: bool = True, kind: str | None = None, tag: str | None = None,
             since: str | date | None = None, min_importance: float | None = None, weak: int = WEAK_HITS,
             words_first: bool = False, judge: bool | None = None, person: str | None = None,
             relation: str | None = None, where: Mapping[str, str] | Iterable[str] | None = None) -> "Query":
        """The query, checked. :raises InvalidValue: an empty text, a bad mode, k, date,
        importance or threshold; :raises TopicNameError: a bad topic name."""
        if min_importance is not None and not 0 <= min_importance <= 1:
            raise InvalidValue(f"min_importance must be between 0 and 1, got {min_importance}")
        if mode not in MODES:
            raise InvalidValue(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
        text = " ".join(str(text).split())[:MAX_QUERY_CHARS]
        if not text:
            raise InvalidValue("the query is empty: say what to look for")
        day = since_day(since) if since else None  # a bad date is refused before anything is read
        if k < 1:
            raise InvalidValue(f"k must be at least 1, got {k}")
        if threshold is not None and threshold != "auto" and not isinstance(threshold, (int, float)):
            raise InvalidValue(f"threshold must be a number, None or 'auto', got {threshold!r}")
        return cls(text, k, mode, threshold, (check_topic_name(topic) if subtopics else topic) if topic else None,
                   subtopics, kind.strip().lower() if kind else None,  # "  ": "" (matches no entry)
                   tag.strip().lstrip("#").lower() if tag else None, day, min_importance, weak, words_first, judge,
                   person=" ".join(person.split()) or None if person else None,
                   relation=relation.strip().lower() or None if relation else None, where=check_where(where))
