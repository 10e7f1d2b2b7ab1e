"""The vault's links, read from its topic files: which entry links to which topic
(:mod:`memkit.formats.links` says what a link is).

:func:`link_graph` reads every topic file once, parsing only those that hold a ``[[``, an
``aliases:`` or a ``parent:`` (a split's part); the graph answers backlinks (``memkit show``),
a topic's neighbourhood (``memkit search --linked``) and the broken links (``memkit check``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..base.fsutil import read_regular
from ..errors import MemkitError
from ..formats.links import Link, LinkResolver, aliases_of, find_links
from ..formats.markdown import decode_topic
from ..formats.names import canonical_name
from ..formats.topic import MAX_TOPIC_BYTES, Entry, Topic, parse_topic_text
from .layout import VaultFiles

__all__ = ["LinkGraph", "link_graph"]


@dataclass
class LinkGraph:
    """Every link of the vault: (the entry it is in, the link, the topics it names)."""

    resolver: LinkResolver
    edges: list[tuple[Entry, Link, list[str]]] = field(default_factory=list)

    def backlinks(self, topic: str) -> list[tuple[Entry, Link]]:
        """The entries (of other topics, or of the topic itself) whose links name ``topic``."""
        return [(entry, link) for entry, link, names in self.edges if topic in names]

    def outlinks(self, topic: str) -> list[tuple[Entry, Link, list[str]]]:
        """The links of ``topic``'s entries, with what each names."""
        return [edge for edge in self.edges if edge[0].topic == topic]

    def neighbourhood(self, topic: str) -> set[str]:
        """``topic``, the topics its entries link to and the topics whose entries link to it."""
        out = {topic}
        for entry, _link, names in self.edges:
            if entry.topic == topic:
                out.update(names)
            elif topic in names:
                out.add(entry.topic)
        return out

    def broken(self) -> list[tuple[Entry, Link]]:
        """The links that name no topic (no file, alias or split of that name)."""
        return [(entry, link) for entry, link, names in self.edges if not names]


def link_graph(files: VaultFiles) -> LinkGraph:
    """Read the vault's links (see the module docstring). A file that cannot be read is skipped
    (``memkit check`` names it for its own reasons)."""
    names: list[str] = []
    aliases: dict[str, list[str]] = {}
    split: dict[str, list[str]] = {}
    linking: list[Topic] = []
    for tf in files.topic_files():
        names.append(tf.name)
        try:
            data, _ = read_regular(tf.path, MAX_TOPIC_BYTES)
        except (OSError, MemkitError):
            continue
        if b"[[" not in data and b"aliases" not in data and b"alias:" not in data and b"parent:" not in data:
            continue
        try:
            text, bom = decode_topic(data, files.rel(tf.path))
        except MemkitError:
            continue
        topic = parse_topic_text(text, tf.name, files.rel(tf.path), tf.path, bom)
        if found := aliases_of(topic):
            aliases[tf.name] = found
        parent = topic.meta.get("parent")
        if isinstance(parent, str) and parent.strip():
            split.setdefault(canonical_name(parent.strip()), []).append(tf.name)
        if b"[[" in data:
            linking.append(topic)
    live = set(names)
    resolver = LinkResolver(names, aliases, {p: parts for p, parts in split.items() if p not in live})
    graph = LinkGraph(resolver)
    for topic in linking:
        for entry in topic.entries:
            for link in find_links(entry.text):
                graph.edges.append((entry, link, resolver.resolve(link.target)))
    return graph
