"""Who and what an entry is about: the search filters ``person`` (``--with``), ``relation`` and
``where`` (:class:`memkit.search.Query`), as a mask over an index view's rows.

- An entry is about the people its text names: ``@Ana`` mentions and the ``(people: Ana, Maya)``
  marker the digest writes, each resolved through people.md (:mod:`memkit.formats.people`). An entry
  that names no one is the user's own (``self``): ``--with Maya``, when people.md says
  ``- Maya (self)``, finds it with those naming Maya, and ``--with me`` names the user whatever
  people.md says. A conclusion about the user and Ana is found from either side.
- ``relation``: any person of the entry has that relation in people.md.
- ``where``: every ``key=value`` is a field of the entry (:func:`memkit.formats.fields.fields`:
  a ``(key: value)`` marker, or a line of topics/facts.md), compared without case.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from ..errors import InvalidValue
from ..formats.fields import check_key, fields, people_of
from ..formats.people import PEOPLE_FILE, USER_WORDS, Person, find_person, handle_of, mentions, resolve

__all__ = ["about_mask", "check_where", "entry_people"]

SELF = "self"


def check_where(where: Mapping[str, str] | Iterable[str] | None) -> tuple[tuple[str, str], ...]:
    """``{"city": "Porto"}`` or ``["city=Porto"]`` as ((key, value), …), each key checked, each value
    folded for comparison. :raises InvalidValue: no ``=``, a bad key, an empty value."""
    if not where:
        return ()
    pairs = list(where.items()) if isinstance(where, Mapping) else []
    if not isinstance(where, Mapping):
        for item in where:
            key, sep, value = str(item).partition("=")
            if not sep:
                raise InvalidValue(f"where must be KEY=VALUE (e.g. city=Porto), got {item!r}")
            pairs.append((key, value))
    out = []
    for key, value in pairs:
        folded = _fold(value)
        if not folded:
            raise InvalidValue(f"where {key}=: the value is empty; say what {key!r} must be")
        out.append((check_key(key.strip().lower()), folded))
    return tuple(out)


def _fold(value: str) -> str:
    return " ".join(str(value).split()).casefold()


def entry_people(text: str, people: Sequence[Person]) -> tuple[str, ...]:
    """The names of the people ``text`` is about: its @mentions and its ``(people: …)`` marker,
    resolved through people.md (a name not in it kept as written)."""
    if "@" not in text and "(people:" not in text:
        return ()
    return resolve([*mentions(text), *people_of(text)], people)


def _selves(people: Sequence[Person]) -> set[str]:
    return {handle_of(p.name) for p in people if p.relation == SELF} | {handle_of(w) for w in USER_WORDS}


def about_mask(texts: Sequence[str], file_ids: np.ndarray, file_topics: Sequence[str], people: Sequence[Person], *,
               person: str | None = None, relation: str | None = None,
               where: tuple[tuple[str, str], ...] = ()) -> np.ndarray | None:
    """Which entries (``texts``, each of the file ``file_ids[i]``, whose topic is ``file_topics[…]``)
    pass the filters; None: no filter given.

    :raises InvalidValue: ``person`` names two people of people.md (a shared first name)."""
    if person is None and relation is None and not where:
        return None
    selves = _selves(people)
    wanted: str | None = None
    if person is not None:
        key = handle_of(person.lstrip("@"))
        found = find_person(person, people)
        if found is None and key not in selves and not resolve([person], people):
            same = [p.name for p in people if handle_of(p.name.split()[0]) == key]
            raise InvalidValue(f"{person!r} names {len(same)} people of {PEOPLE_FILE} ({', '.join(same)}): "
                               "give the full name")
        wanted = SELF if key in selves or (found is not None and found.relation == SELF) else \
            handle_of(found.name if found is not None else person.lstrip("@"))
    relations = {handle_of(p.name): p.relation for p in people}
    fids = file_ids.tolist() if where else []
    out = np.zeros(len(texts), dtype=bool)
    for i, text in enumerate(texts):
        if not text:
            continue
        if wanted is not None or relation is not None:
            about = {SELF if h in selves else h for h in map(handle_of, entry_people(text, people))} or {SELF}
            if wanted is not None and wanted not in about:
                continue
            if relation is not None and relation not in {SELF if h == SELF else relations.get(h, "") for h in about}:
                continue
        if where:
            if "(" not in text and ":" not in text:
                continue
            have = {k: _fold(v) for k, v in fields(text, file_topics[fids[i]]).items()}
            if any(have.get(k) != v for k, v in where):
                continue
        out[i] = True
    return out
