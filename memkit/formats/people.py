"""people.md: the people memories are about, one hand-editable line each, and ``@Name`` mentions.

A household assistant talks with several people. ``people.md`` (at the vault's root, beside
``index.txt``) lists them, with their relation to the user and a line about them::

    # People

    - Maya (self)
    - Ana (family: sister): lives in Porto, climbs on weekends
    - Tom Reyes (colleague): runs the billing team

A line is ``- Name (relation[: detail])[: about]``; everything but the name may be left out, and
any other line (headings, prose, comments) is the person's own and kept as written. The relation's
first word is what ``--relation`` filters on (self, family, partner, friend, colleague, or any word).

An entry is about a person when its text mentions them: ``@Ana`` or ``@TomReyes`` (the name without
spaces) or ``@Tom`` (the first name, when no one else has it). Case does not matter.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..base.lazy_re import lazy
from .topic import append_line, newline_of

PEOPLE_FILE = "people.md"
PEOPLE_HEADER = "# People\n"
#: what names the user (``--with me``, a digest's ``"people": ["user"]``): people.md's person of relation self
USER_WORDS = frozenset({"me", "user", "self", "myself", "the user"})

_LINE_RE = lazy(r"^\s*[-*+]\s+(?P<name>[^\W\d_][^():\n]*?)\s*(?:\((?P<relation>[^)\n]*)\))?\s*(?::\s*(?P<about>.*?))?\s*$")
_MENTION_RE = lazy(r"(?<![\w@])@(?P<handle>[^\W\d_][\w'-]*(?:\.[^\W\d_][\w'-]*)*)")


@dataclass(frozen=True)
class Person:
    """One line of people.md."""

    name: str
    relation: str = ""  #: the relation's first word, lowercased ("family"); "" when none is given
    detail: str = ""  #: what follows the relation ("sister")
    about: str = ""
    line: int = 0  #: 1-based line in people.md

    def to_dict(self) -> dict[str, str | int]:
        return {"name": self.name, "relation": self.relation, "detail": self.detail, "about": self.about,
                "line": self.line}

    @property
    def handles(self) -> tuple[str, ...]:
        """What ``@…`` names this person: the name without spaces, then the first name."""
        full = handle_of(self.name)
        first = handle_of(self.name.split()[0])
        return (full,) if first == full else (full, first)


def handle_of(text: str) -> str:
    return re.sub(r"\s+", "", text).casefold()


def parse_people(text: str) -> list[Person]:
    """Every person line of a people.md text, in order; other lines are ignored."""
    people = []
    for number, line in enumerate(text.splitlines(), 1):
        found = _LINE_RE.match(line)
        if not found:
            continue
        relation, _, detail = (found.group("relation") or "").partition(":")
        people.append(Person(name=" ".join(found.group("name").split()),
                             relation=(relation.split() or [""])[0].casefold(),
                             detail=detail.strip(), about=(found.group("about") or "").strip(), line=number))
    return people


def render_person(person: Person) -> str:
    """The line of a person, as :func:`parse_people` reads it back."""
    text = f"- {person.name}"
    if person.relation:
        text += f" ({person.relation}" + (f": {person.detail}" if person.detail else "") + ")"
    if person.about:
        text += f": {person.about}"
    return text


def with_person(text: str, person: Person) -> str:
    """people.md's text with ``person`` appended (the file's own bytes and newlines kept)."""
    if not text.strip():
        newline = newline_of(text) if text else "\n"
        return PEOPLE_HEADER.replace("\n", newline) + newline + render_person(person) + newline
    return append_line(text, render_person(person))


def mentions(text: str) -> tuple[str, ...]:
    """The handles an entry's text mentions (``@Ana`` -> ``ana``), in order, each once."""
    seen: dict[str, None] = {}
    for found in _MENTION_RE.finditer(text):
        seen.setdefault(found.group("handle").rstrip(".").casefold(), None)
    return tuple(seen)


def resolve(handles: Iterable[str], people: Sequence[Person]) -> tuple[str, ...]:
    """The names of the people the handles name. A first name two people share names neither; a
    handle that names no one is kept as written (a person not yet in people.md)."""
    full = {handle_of(p.name): p.name for p in people}
    firsts: dict[str, list[str]] = {}
    for person in people:
        first = handle_of(person.name.split()[0])
        firsts.setdefault(first, []).append(person.name)
    names: dict[str, None] = {}
    for handle in handles:
        key = handle_of(handle.lstrip("@"))
        if key in full:
            names.setdefault(full[key], None)
        elif len(firsts.get(key, [])) == 1:
            names.setdefault(firsts[key][0], None)
        elif key not in firsts:
            names.setdefault(handle.lstrip("@"), None)
    return tuple(names)


def find_person(name: str, people: Sequence[Person]) -> Person | None:
    """The person ``name`` (a name or a handle, any case) names, if exactly one."""
    names = resolve([name], people)
    return next((p for p in people if names and p.name == names[0]), None)
