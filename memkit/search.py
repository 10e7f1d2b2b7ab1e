"""Search: embed the query, fuse lexical and vector scores over the index, filter, top k."""
from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from .errors import MemkitError

if TYPE_CHECKING:
    import numpy as np

    from .vault import Vault

log = logging.getLogger("memkit")

MAX_QUERY_CHARS = 2000  # a longer query is cut: static embeddings average tokens anyway
REFRESH_INTERVAL_S = 1.0  # an in-process index re-checks the files at most this often
MODES = ("hybrid", "vector", "lexical")


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

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tags"] = list(self.tags)
        data["score"] = round(self.score, 4)
        data["cosine"] = round(self.cosine, 4)
        data["lexical"] = round(self.lexical, 4)
        return data


def default_threshold(vault: "Vault", dim: int) -> float:
    """memkit.yaml's threshold, or for ``auto`` (the default) the value calibrated for this model size."""
    value = vault.config.embedding_similarity_threshold
    if not isinstance(value, str):
        return float(value)
    from .rank import RECOMMENDED_THRESHOLD

    return RECOMMENDED_THRESHOLD.get(dim, 0.3)


def search(vault: "Vault", query: str, k: int | None = None, *, threshold: float | None = -2.0,
           topic: str | None = None, kind: str | None = None, tag: str | None = None,
           since: str | date | None = None, mode: str = "hybrid", refresh: bool = True) -> list[Hit]:
    """Search the vault's memories.

    :param vault: the vault.
    :param query: what to look for (natural language, names, part numbers…).
    :param k: how many results at most (default ``max_memories_per_search``).
    :param threshold: minimum cosine (entries with a strong exact-word match pass anyway); the
        default is memkit.yaml's value or the model's calibrated one; ``None`` disables it.
    :param topic: only this topic (and its subtopics ``topic-*``).
    :param kind: only entries of this ``[kind]``.
    :param tag: only entries with this ``#tag``.
    :param since: only entries dated on or after this day (undated entries use their topic's date).
    :param mode: ``hybrid`` (default), ``vector`` or ``lexical``.
    :param refresh: index changed files first (a cheap check at most once a second: files created,
        renamed or deleted are seen at once, an in-place edit within a few seconds).
    """
    if mode not in MODES:
        raise MemkitError(f"unknown search mode {mode!r}: use one of {', '.join(MODES)}")
    query = " ".join(str(query).split())
    if not query:
        raise MemkitError("the query is empty: say what to look for")
    query = query[:MAX_QUERY_CHARS]
    k = vault.config.max_memories_per_search if k is None else k
    if k < 1:
        raise MemkitError(f"k must be at least 1, got {k}")
    index = vault.index_obj()
    if refresh and (not index.records or time.monotonic() - index.last_check >= REFRESH_INTERVAL_S):
        # cheap signals first (generation, topics/ mtime, a slice of the files' stats); a full
        # stat check at least every few seconds (see Index.needs_refresh)
        if not index.records or index.needs_refresh():
            index.refresh()
    view = index.view()
    if len(view) == 0:
        return []
    if threshold == -2.0:
        threshold = default_threshold(vault, index.embedder.dim)
    mask = _mask(view, topic, kind, tag, since)
    if mask is not None and not mask.any():
        return []
    qvec = index.embedder.embed([query])[0] if mode != "lexical" else None
    ranked = view.ranker.search(query, qvec, k=k, mode=mode, threshold=threshold, mask=mask)
    if not ranked:
        return []
    rows = [i for i, _ in ranked]
    lexical = view.ranker.lex.scores(query)[rows]
    cosines = view.vectors[rows] @ qvec if qvec is not None else [0.0] * len(rows)
    hits = []
    for (i, score), cosine, lex in zip(ranked, cosines, lexical):
        fid = int(view.file_ids[i])
        hits.append(Hit(view.hashes[i][:8], view.texts[i], view.topics[fid], view.kinds[i], tuple(view.tags[i]),
                        view.own_dates[i], view.files[fid], int(view.lines[i]), float(score), float(cosine),
                        float(lex)))
    return hits


def _mask(view: Any, topic: str | None, kind: str | None, tag: str | None, since: str | date | None) -> "np.ndarray | None":
    import numpy as np

    mask: "np.ndarray | None" = None

    def both(m: "np.ndarray") -> None:
        nonlocal mask
        mask = m if mask is None else mask & m

    if topic:
        from .names import check_topic_name

        name = check_topic_name(topic)
        ok = np.array([t == name or t.startswith(name + "-") for t in view.topics], dtype=bool)
        both(ok[view.file_ids] if len(ok) else np.zeros(len(view), bool))
    if kind:
        want = kind.strip().lower()
        both(np.array([k == want for k in view.kinds], dtype=bool))
    if tag:
        want = tag.strip().lstrip("#").lower()
        both(np.array([want in t for t in view.tags], dtype=bool))
    if since:
        day = since.isoformat() if isinstance(since, date) else str(since).strip()
        try:
            day = date.fromisoformat(day).isoformat()
        except ValueError:
            raise MemkitError(f"--since {since!r} is not a date: use YYYY-MM-DD") from None
        both(view.dates >= day)
    return mask
