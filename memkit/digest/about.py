"""Who a digested conclusion is about, and the keyed fact it states (issue 30): the LLM's
``people`` and ``key``/``value`` (:func:`memkit.digest.extract.extract_conclusions`) become the
entry's ``(people: Maya, Ana)`` and ``(city: Porto)`` markers, and the key's live value in
topics/facts.md (:func:`memkit.store.set_fact`: the old value archived, never lost).

Names are resolved through people.md: ``user`` (or ``me``) is the person of relation ``self`` when
people.md has one, a first name or a handle its person's full name, anyone else as the LLM wrote
them. A conclusion about the user and Ana carries both names, so ``search --with Ana`` and the
user's own ``--with me`` both find it."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Sequence

from ..formats.fields import field_marker, people_marker, provenance, provenance_marker
from ..formats.people import USER_WORDS, Person, handle_of, render_person, resolve
from ..store import Store, get_fact, load_people, set_fact
from .extract import Conclusion

__all__ = ["mark_about", "people_lines", "set_facts"]


def people_lines(store: Store) -> tuple[list[Person], list[str]]:
    """people.md's people, and their lines as the LLM is shown them."""
    people = load_people(store)
    return people, [render_person(p)[2:] for p in people]


def _names(said: Sequence[str], people: Sequence[Person]) -> tuple[str, ...]:
    me = next((p.name for p in people if p.relation == "self"), "user")
    users = {handle_of(w) for w in USER_WORDS}
    out: dict[str, None] = {}
    for name in said:
        if handle_of(name) in users:
            out.setdefault(me, None)
        else:
            for resolved in resolve([name], people) or (name,):
                out.setdefault(resolved, None)
    return tuple(out)


def _is_user(name: str, people: Sequence[Person]) -> bool:
    return handle_of(name) in {handle_of(w) for w in USER_WORDS} | {handle_of(p.name) for p in people
                                                                  if p.relation == "self"}


def mark_about(conclusions: Sequence[Conclusion], people: Sequence[Person]) -> None:
    """Add each conclusion's ``(people: …)`` and ``(key: value)`` markers (before its own)."""
    for c in conclusions:
        names = _names(c.people, people)
        c.people = names
        extra = []
        # about the user alone: no marker (an entry naming no one is the user's; `--with me` finds it)
        if names and "(people:" not in c.text and not all(_is_user(n, people) for n in names):
            extra.append(people_marker(names))
        if c.fact is not None and f"({c.fact[0]}:" not in c.text:
            extra.append(field_marker(*c.fact))
        if extra:
            c.markers = " ".join([*extra, c.markers]).strip()


def set_facts(store: Store, conclusions: Sequence[Conclusion], now: datetime, dry_run: bool) -> list[dict[str, Any]]:
    """Set the keyed fact of each conclusion that states one (the last one wins for a key); a dry
    run only says what would change."""
    wanted = {c.fact[0]: c.fact[1] for c in conclusions if c.fact is not None}
    sources = {c.fact[0]: _source_marker(c.markers) for c in conclusions if c.fact is not None}
    out = []
    for key, value in wanted.items():
        if dry_run:
            value = store.config.redact.apply(value).text  # as set_fact would write it
            old = get_fact(store, key)
            out.append({"key": key, "value": value, "old": old.value if old else None,
                        "changed": old is None or old.value != value, "id": None})
        else:
            out.append(set_fact(store, key, value, today=now.date(), source=sources.get(key)).to_dict())
    return out


def _source_marker(markers: str) -> str | None:
    """The ``(from …)`` marker among a conclusion's markers (the conversation it came from)."""
    found = provenance(markers)
    return provenance_marker(*found) if found else None
