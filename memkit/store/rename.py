"""Renaming a topic (``memkit rename OLD NEW``): its file moves (to a new folder, too), and every
``[[link]]`` to it in the vault is rewritten to the new name, as Obsidian does on a rename.

The file is moved with one rename (its bytes untouched); each file whose links change is
rewritten through :meth:`memkit.store.store.Store.write_topic` (checked and atomic: only the link
text changes, every other byte stays), all under the vault's write lock.
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from ..base.fsutil import describe_os_error
from ..errors import MemkitError
from ..formats.links import LinkResolver, Renamed, rewrite_links
from ..formats.names import check_topic_name
from .links import link_graph

__all__ = ["rename_topic"]


def rename_topic(store: Any, old: str, new: str, now: datetime | None = None) -> Renamed:
    """Rename topic ``old`` to ``new`` (see the module docstring). ``store``: the vault's
    :class:`memkit.store.store.Store` (typed loosely: that module calls this one).

    :raises TopicNotFound: no topic ``old``; :raises MemkitError: ``new`` exists already, or a
        file cannot be moved or written.
    """
    now = now or datetime.now().replace(microsecond=0)
    with store.lock():
        topic = store.topic(old)
        target = store.topic_path(check_topic_name(new))
        if target.exists() or target.is_symlink():
            raise MemkitError(f"{store.rel(target)} exists already; nothing was renamed")
        graph = link_graph(store)
        linking = sorted({e.topic for e, _link in graph.backlinks(topic.name)})
        store.write_target(target)  # refuses a folder linked from outside the vault
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(topic.path, target)
        except OSError as exc:
            raise describe_os_error(exc, f"{store.rel(topic.path)} -> {store.rel(target)}") from exc
        name = store.name_of(target)
        aliases = {n: a for n, a in graph.resolver.by_alias_lists().items() if n != topic.name}
        after = LinkResolver([n for n in graph.resolver.names if n != topic.name] + [name], aliases)
        changed = []
        for other in (name if t == topic.name else t for t in linking):
            current = store.read_for_write(other)
            if current is None:
                continue
            text = rewrite_links(current.raw, after, topic.name, name)
            if text != current.raw:
                store.write_topic(other, text, current=current, now=now, touch_recent=False)
                changed.append(other)
        store.index_txt.touch(name, topic.summary, now)
    return Renamed(topic.name, name, store.rel(target), changed)
