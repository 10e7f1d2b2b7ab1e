"""Related memories (``memkit related ID|TOPIC``): what is most like a memory or a topic, found
without a query, as Obsidian's Smart Connections shows beside a note.

The memory's own text (a topic's: its title, summary and entries) is the query, and it goes
through the same two stages as a search: the first stage (words and the static model's vectors)
finds the candidates, the judge re-scores them, and the threshold marks each hit confident or
weak. The item itself is left out: the entry (and its copies) for an id, the whole topic for a
topic.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..base.lazy_re import lazy
from ..base.limits import MAX_QUERY_CHARS
from ..errors import AmbiguousEntry, EntryNotFound, TopicNameError, TopicNotFound
from ..formats.names import check_topic_name
from ..formats.topic import Entry, Topic
from .hits import Hit
from .searcher import Searcher

__all__ = ["Related", "related_to", "find_item"]

_ID_RE = lazy(r"[0-9a-f]{4,40}")


@dataclass(frozen=True)
class Related:
    """What :func:`related` was asked about, and the hits."""

    entry: Entry | None  #: the memory the hits are like (None: a topic)
    topic: str  #: that memory's topic, or the topic
    hits: list[Hit]

    def to_dict(self) -> dict[str, object]:
        return {"of": {"id": self.entry.id, "text": self.entry.text, "topic": self.topic} if self.entry else
                {"topic": self.topic}, "hits": [h.to_dict() for h in self.hits]}


def find_item(searcher: Searcher, ref: str) -> Entry | Topic:
    """The entry whose id starts with ``ref`` (4 hex digits or more), else the topic named ``ref``.

    :raises TopicNotFound: neither (the message says both were looked for); :raises AmbiguousEntry:
    several entries' ids start with ``ref``."""
    ref = ref.strip()
    store = searcher.store
    if _ID_RE.fullmatch(ref.lower()):
        try:
            return store.find(ref)
        except AmbiguousEntry:  # several share the prefix: say which
            raise
        except EntryNotFound:
            pass
    try:
        check_topic_name(ref)
        return store.topic(ref)
    except (TopicNotFound, TopicNameError) as exc:
        raise TopicNotFound(f"no entry id or topic {ref!r} in this vault (see `memkit topics`, `memkit show TOPIC`)") \
            from exc


def _topic_text(topic: Topic) -> str:
    parts = [topic.title, topic.summary] + [e.body for e in topic.entries]
    return " ".join(p for p in parts if p)[:MAX_QUERY_CHARS]


def related_to(searcher: Searcher, ref: str, *, k: int | None = None, private: bool = True) -> Related:
    """The memories most like entry ``ref`` (an id) or topic ``ref`` (see the module docstring).

    :param k: how many at most (default ``max_memories_per_search``).
    :param private: False leaves out the topics with ``private: true`` (the servers' answers).
    :raises TopicNotFound: no such entry or topic; :raises AmbiguousEntry: an id several entries share.
    """
    item = find_item(searcher, ref)
    want = searcher.config.max_memories_per_search if k is None else k
    if isinstance(item, Entry):
        q = searcher.query(item.body or item.text, k=want + 4)
        hidden: frozenset[str] = frozenset()
        name = item.topic
    else:
        q = searcher.query(_topic_text(item) or item.name, k=want)
        hidden = frozenset({item.name})
        name = item.name
    if not private:
        hidden |= frozenset(searcher.store.private_topics())
    hits = searcher.find(replace(q, hidden=hidden))
    if isinstance(item, Entry):
        hits = [h for h in hits if h.id != item.id]
    return Related(item if isinstance(item, Entry) else None, name, hits[:want])
