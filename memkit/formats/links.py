"""Links between memories: ``[[Topic]]``, ``[[Topic#heading]]``, ``[[Topic|shown text]]``, as
Obsidian writes them.

A link names a topic by its path under topics/ (``[[work/harbor]]``), by its file's name alone
(``[[harbor]]``, Obsidian's shortest form), or by one of its frontmatter ``aliases``; case,
spaces and a ``.md`` suffix do not matter (``[[Harbor Project]]`` is ``harbor-project``). An
embed (``![[...]]``) of a note is a link too; one of a file that is not a note (``![[pier.png]]``)
is not. This module parses, resolves and rewrites links in a text; it reads no file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..base.lazy_re import lazy
from .names import canonical_name
from .topic import Topic

__all__ = ["aliases_of", "Renamed", "Link", "find_links", "link_key", "LinkResolver", "rewrite_links", "has_links"]

_LINK_RE = lazy(r"(!?)\[\[([^\[\]|#\n]+?)\s*(?:#([^\[\]|\n]*?))?\s*(?:\|([^\[\]\n]*))?\]\]")
_OTHER_FILE = lazy(r"\.(?!md$)[A-Za-z0-9]{1,5}$")  # pier.png, scan.pdf: an attachment, no note


@dataclass(frozen=True)
class Link:
    """One ``[[...]]`` in a text."""

    target: str  #: the note as written (``Harbor``, ``work/harbor``)
    heading: str | None  #: after ``#``, when given
    alias: str | None  #: after ``|``, when given
    start: int  #: where it starts in the text (its ``!`` for an embed)
    end: int  #: just after its ``]]``

    @property
    def key(self) -> str:
        return link_key(self.target)


def has_links(text: str) -> bool:
    """Whether ``text`` may hold a link (a cheap test before :func:`find_links`)."""
    return "[[" in text


def find_links(text: str) -> list[Link]:
    """The links of ``text``, in order (attachments' embeds left out)."""
    if "[[" not in text:
        return []
    out = []
    for m in _LINK_RE.finditer(text):
        target = m.group(2).strip()
        if not target or _OTHER_FILE.search(target):
            continue
        heading = m.group(3).strip() if m.group(3) is not None else None
        alias = m.group(4).strip() if m.group(4) is not None else None
        out.append(Link(target, heading or None, alias or None, m.start(), m.end()))
    return out


def link_key(target: str) -> str:
    """The form a link's target is compared in: the canonical topic name (``Work/Harbor Project``
    -> ``work/harbor-project``), or the text casefolded when it makes none."""
    target = target.strip().strip("/")
    target = target[:-3] if target.lower().endswith(".md") else target
    return canonical_name(target) if target else ""


class LinkResolver:
    """Which topic a link names, among the vault's topics.

    :param names: every topic's name.
    :param aliases: topic name -> its frontmatter ``aliases``.
    :param split: a topic that was split -> the topics made of it (a link to it names them all).
    """

    def __init__(self, names: Iterable[str], aliases: Mapping[str, Sequence[str]] | None = None,
                 split: Mapping[str, Sequence[str]] | None = None) -> None:
        self.names = sorted(names)
        self.by_path: dict[str, str] = {}
        self.by_leaf: dict[str, list[str]] = {}
        for name in self.names:
            key = link_key(name)
            self.by_path.setdefault(key, name)
            self.by_leaf.setdefault(key.rpartition("/")[2], []).append(name)
        self.by_alias: dict[str, str] = {}
        for name, given in sorted((aliases or {}).items()):
            for alias in given:
                self.by_alias.setdefault(link_key(str(alias)), name)
        self.split = {link_key(k): list(v) for k, v in (split or {}).items()}
        self._aliases = {name: list(given) for name, given in (aliases or {}).items()}

    def by_alias_lists(self) -> dict[str, list[str]]:
        """Each topic's aliases, as given."""
        return {name: list(given) for name, given in self._aliases.items()}

    def resolve(self, target: str) -> list[str]:
        """The topics ``target`` names: one, the parts of a split topic, or none (a broken link).

        A path is matched first, then a file's name alone (several in different folders: the one
        with the shortest path, as Obsidian picks), then an alias, then a topic that was split."""
        key = link_key(target)
        if not key:
            return []
        if key in self.by_path:
            return [self.by_path[key]]
        if "/" not in key and key in self.by_leaf:
            return [min(self.by_leaf[key], key=lambda n: (n.count("/"), n))]
        if key in self.by_alias:
            return [self.by_alias[key]]
        if key in self.split:
            return list(self.split[key])
        if "/" in key:  # a path whose folders differ (the note was moved): its name alone
            leaf = key.rpartition("/")[2]
            if leaf in self.by_leaf and len(self.by_leaf[leaf]) == 1:
                return list(self.by_leaf[leaf])
        return []

    def links_to(self, link: Link, topic: str) -> bool:
        """Whether ``link`` names ``topic``."""
        return topic in self.resolve(link.target)

    def target_for(self, name: str, shortest: bool) -> str:
        """How a link names topic ``name``: its file's name alone when that is unambiguous and
        ``shortest`` (the link was written so), else its path."""
        leaf = name.rpartition("/")[2]
        if shortest and len(self.by_leaf.get(link_key(leaf), [])) <= 1:
            return leaf
        return name


def rewrite_links(text: str, resolver: LinkResolver, old: str, new: str) -> str:
    """``text`` with every link to topic ``old`` pointing at ``new`` instead (as Obsidian does on a
    rename): written the way it was (a file's name alone, or a path), its ``#heading`` and
    ``|shown text`` kept. ``resolver`` knows the vault after the rename, ``old`` as it was before.
    Text that is no link to ``old`` is left byte for byte."""
    links = find_links(text)
    if not links:
        return text
    before = LinkResolver([n for n in resolver.names if n != new] + [old], resolver.by_alias_lists(), {})
    out = []
    at = 0
    for link in links:
        if before.resolve(link.target) != [old]:
            continue
        target = resolver.target_for(new, shortest="/" not in link.target)
        bang = "!" if text.startswith("!", link.start) else ""
        rebuilt = f"{bang}[[{target}" + (f"#{link.heading}" if link.heading else "") \
            + (f"|{link.alias}" if link.alias else "") + "]]"
        out.append(text[at:link.start])
        out.append(rebuilt)
        at = link.end
    out.append(text[at:])
    return "".join(out)


def aliases_of(topic: Topic) -> list[str]:
    """A topic's frontmatter ``aliases`` (a list, or one string), as Obsidian reads them."""
    raw = topic.meta.get("aliases", topic.meta.get("alias"))
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else [raw]
    return [str(a).strip() for a in items if a is not None and str(a).strip()]


@dataclass(frozen=True)
class Renamed:
    """What a rename did: the topic's old and new names and files, the topics whose links changed."""

    old: str
    new: str
    file: str
    links_in: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"old": self.old, "new": self.new, "file": self.file, "links_rewritten_in": self.links_in}
