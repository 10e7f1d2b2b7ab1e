"""A search's result: :class:`Hit`, one entry found (where it is, its scores, whether it is
confident), and the hits of an index view's rows."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..index import IndexView

__all__ = ["Hit", "hit_at", "hits_at"]


@dataclass(frozen=True)
class Hit:
    """One search result."""

    id: str
    text: str
    topic: str
    kind: str | None
    tags: tuple[str, ...]
    date: str | None
    file: str
    line: int
    score: float  #: the ranking score (hybrid: 0..1, only for ordering)
    cosine: float  #: cosine similarity of the entry to the query
    lexical: float = 0.0  #: BM25 score of the entry for the query (0: no query word in it)
    confident: bool = True  #: False: below the threshold, shown because nothing passed it (a weak match)
    judge: float | None = None  #: the judge's cosine (the second stage, :mod:`memkit.embeddings.judge`); None: not judged
    #: how likely the hit answers the query, 0..1, calibrated on memkit's sets (:func:`memkit.search.judge_rank.relevance`);
    #: None: not judged. Unlike ``score`` it is not relative to the best hit
    relevance: float | None = None

    @classmethod
    def from_dict(cls, data: Any) -> "Hit | None":
        """The hit :meth:`to_dict` described, or None when ``data`` is not such a dict."""
        try:
            return cls(str(data["id"]), str(data["text"]), str(data["topic"]),
                       None if data.get("kind") is None else str(data["kind"]),
                       tuple(str(t) for t in data.get("tags", ())),
                       None if data.get("date") is None else str(data["date"]), str(data["file"]),
                       int(data["line"]), float(data["score"]), float(data["cosine"]),
                       float(data.get("lexical", 0.0)), bool(data.get("confident", True)),
                       None if data.get("judge") is None else float(data["judge"]),
                       None if data.get("relevance") is None else float(data["relevance"]))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        data["score"] = round(self.score, 4)
        data["cosine"] = round(self.cosine, 4)
        data["lexical"] = round(self.lexical, 4)
        if self.judge is None:
            del data["judge"]  # not judged: as before the second stage
        else:
            data["judge"] = round(self.judge, 4)
        if self.relevance is None:
            del data["relevance"]
        else:
            data["relevance"] = round(self.relevance, 4)
        return data


def hits_at(view: IndexView, ranked: list[tuple[int, float, float, float]]) -> list[Hit]:
    """The :class:`Hit` of each (entry, score, cosine, lexical) of ``view`` (columns read at once)."""
    if not ranked:
        return []
    rows = np.array([r[0] for r in ranked], dtype=np.int64)
    fids = view.file_ids[rows].tolist()
    ids = view.ids[rows].tolist()
    lines = view.lines[rows].tolist()
    dates = view.own_dates_at(rows)
    return [Hit(entry_id.decode("ascii"), view.texts[i], view.topics[fid], view.kinds[i], view.tags[i], day,
                view.files[fid], line, float(score), float(cos), float(lex))
            for (i, score, cos, lex), fid, entry_id, line, day in zip(ranked, fids, ids, lines, dates)]


def hit_at(view: IndexView, i: int, score: float, cosine: float, lexical: float) -> Hit:
    """The :class:`Hit` of entry ``i`` of ``view``."""
    fid = int(view.file_ids[i])
    return Hit(view.ids[i].decode("ascii"), view.texts[i], view.topics[fid], view.kinds[i], view.tags[i], view.own_date(i),
               view.files[fid], int(view.lines[i]), float(score), cosine, lexical)
