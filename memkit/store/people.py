"""people.md on disk: read the people memories are about, and add one (the format:
:mod:`memkit.formats.people`). The file is a person's own: a new person is one appended line, the
rest kept byte for byte; a missing file is an empty list."""
from __future__ import annotations

from ..base.fsutil import atomic_write
from ..errors import InvalidValue
from ..formats.people import PEOPLE_FILE, Person, handle_of, parse_people, with_person
from ..formats.plain import check_plain
from .store import Store


def read_people_text(store: Store) -> str:
    """people.md's text ("" when there is none, or when it is a link leading out of the vault)."""
    path = store.root / PEOPLE_FILE
    try:
        if path.is_symlink() and not path.resolve().is_relative_to(store.root.resolve()):
            store.warn_once(f"{PEOPLE_FILE} is a link out of the vault: not read")
            return ""
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""


def load_people(store: Store) -> list[Person]:
    """Every person of people.md, in order (none when there is no file)."""
    return parse_people(read_people_text(store))


def add_person(store: Store, name: str, *, relation: str | None = None, detail: str | None = None,
               about: str | None = None) -> Person:
    """Append a person to people.md (created with a ``# People`` heading when missing); returns it
    as read back. :raises InvalidValue: a bad name or relation, or a person of that name already there."""
    def one_line(value: str | None, what: str) -> str:
        check_plain(value or "", f"a person's {what}")  # no NUL, ESC or BEL in people.md
        value = " ".join((value or "").split())
        if any(c in value for c in "()\n"):
            raise InvalidValue(f"a person's {what} cannot hold parentheses: {value!r}")
        return value

    name = one_line(name, "name")
    relation = one_line(relation, "relation").casefold()
    if not name or not name[0].isalpha() or ":" in name:
        raise InvalidValue(f"invalid name {name!r}: a person's name starts with a letter and has no ':'")
    if relation and (len(relation.split()) != 1 or ":" in relation):
        raise InvalidValue(f"invalid relation {relation!r}: one word, e.g. family, friend, colleague, self")
    hide = store.config.redact.apply  # a secret in a person's line is never stored (docs/privacy.md)
    person = Person(name, relation, hide(one_line(detail, "detail")).text if relation else "",
                    hide(one_line(about, "about")).text)
    with store.lock():
        text = read_people_text(store)
        if any(handle_of(p.name) == handle_of(name) for p in parse_people(text)):
            raise InvalidValue(f"{name!r} is in {PEOPLE_FILE} already: edit its line there")
        new = with_person(text, person)
        if (store.root / PEOPLE_FILE).is_symlink():
            raise InvalidValue(f"{PEOPLE_FILE} is a link: edit the file it points to by hand")
        atomic_write(store.root / PEOPLE_FILE, new.encode("utf-8"))
    return parse_people(new)[-1]


__all__ = ["add_person", "load_people", "read_people_text"]
