"""The one validator of memkit.yaml: a table row per setting (:class:`Setting`, declared on the
settings' dataclasses in :mod:`memkit.config.table`), and :func:`build`, which checks a loaded
mapping against those rows, section by section, and makes the dataclass.

Every message it gives names the file, the key (dotted inside a section: ``serve.port``), what
was expected and what was found: ``memkit.yaml: serve.port must be a port number from 0 to 65535,
not 70000 (int)``. A key left empty (``model:``) means the default.
"""
from __future__ import annotations

import copy
import difflib
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from typing import Any, Callable, Iterator, Mapping, NoReturn

from ..errors import ConfigError
from .kinds import Invalid, Kind

ROW = "memkit.setting"  #: the dataclass field metadata key holding a field's :class:`Setting`


@dataclass(frozen=True)
class Setting:
    """One row of the table: a key of memkit.yaml.

    :ivar name: the key; dotted inside a section (``llm.model``).
    :ivar default: its value when memkit.yaml does not set it (None: unset).
    :ivar kind: what it takes (:mod:`memkit.config.kinds`): checks a value, says what it expects.
    :ivar help: what it does, a sentence or a few (the YAML's comment, the docs' description).
    :ivar example: for a setting unset by default, a value to show (commented out in the YAML).
    """

    name: str
    default: Any
    kind: Kind
    help: str
    example: Any = None

    @property
    def section(self) -> Section | None:
        return self.kind if isinstance(self.kind, Section) else None


def setting(default: Any, kind: Kind, help: str, *, example: Any = None) -> Any:
    """A dataclass field that is a row of the table (its name is the field's)."""
    row = Setting("", default, kind, help, example)
    if isinstance(default, (dict, list)) or is_dataclass(default):
        return field(default_factory=lambda: copy.deepcopy(default), metadata={ROW: row})
    return field(default=default, metadata={ROW: row})


class Section(Kind):
    """A mapping of settings of its own, declared as the dataclass ``cls`` (``llm:``, ``serve:``…).

    :param optional: an empty or absent section is None (nothing configured); else the defaults.
    :param error: the error its problems raise.
    """

    def __init__(self, cls: type, optional: bool, error: type[ConfigError] = ConfigError) -> None:
        self.cls, self.optional, self.error = cls, optional, error
        self.expected = f"a mapping ({', '.join(row.name for row in rows(cls))})"

    def shown(self, value: Any) -> str:
        return type(value).__name__

    def yaml(self, value: Any) -> str:
        return "{}"


def rows(cls: type) -> list[Setting]:
    """The table rows of dataclass ``cls``, in declaration order, named by their fields."""
    out = []
    for f in fields(cls):
        row = f.metadata.get(ROW)
        if row is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with setting()")
        out.append(Setting(f.name, _default(f), row.kind, row.help, row.example))
    return out


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    return f.default_factory()  # type: ignore[operator]


def flat(cls: type, prefix: str = "") -> Iterator[Setting]:
    """Every row of ``cls`` and, after a section's own row, its rows (dotted names)."""
    for row in rows(cls):
        named = Setting(prefix + row.name, row.default, row.kind, row.help, row.example)
        yield named
        if row.section:
            yield from flat(row.section.cls, named.name + ".")


Locate = Callable[[str], "int | None"]  #: a dotted key -> its line in the file, when known


def at(source: str, key: str, locate: Locate | None) -> str:
    """The start of a message about ``key``: ``FILE line N: ``, ``FILE: `` or nothing."""
    line = locate(key) if locate and source else None
    return f"{source} line {line}: " if line else f"{source}: " if source else ""


def build(cls: type, data: Any, source: str = "", path: str = "", error: type[ConfigError] = ConfigError,
          locate: Locate | None = None) -> Any:
    """Check the mapping ``data`` against the rows of ``cls`` and return ``cls`` with its values.

    :param source: the file, for messages (empty: none named).
    :param path: the section's dotted key (empty: the top level).
    :param locate: finds a key's line in the file, for messages.
    :raises ConfigError: (``error``) naming the file, the line and key, what was expected and what was found.
    """
    def fail(key: str, message: str) -> NoReturn:  # the file and the key's line start the message
        raise error(f"{at(source, key, locate)}{message}") from None

    known = {row.name: row for row in rows(cls)}
    for key in data:
        if key not in known:
            allowed = sorted(known)
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            did_you_mean = f"did you mean {hint[0]!r}? " if hint else ""
            fail(f"{path}.{key}" if path else str(key), f"{path + ': ' if path else ''}unknown key {key!r} "
                 f"({did_you_mean}allowed: {', '.join(allowed)})")
    values: dict[str, Any] = {}
    for key, given in data.items():
        row, name = known[key], f"{path}.{key}" if path else key
        if row.section:
            values[key] = section(row.section, given, source, name, locate)
            continue
        if given is None:
            continue  # `key:` with nothing: the default
        try:
            value = row.kind.parse(given)
        except Invalid as bad:
            if bad.message:
                fail(name, f"{name}: {bad.message}")
            if bad.key is not None:
                fail(f"{name}.{bad.key}", f"{name}.{bad.key} must be {bad.expected}, not {bad.value!r}")
            fail(name, f"{name} must be {row.kind.expected}, not {row.kind.shown(given)}")
        if value is not None:
            values[key] = value
    made = cls(**values)
    check = getattr(made, "check", None)
    if check is not None:  # what no single key says: a pair that does not go together, a key missing
        try:
            check()
        except ConfigError as exc:
            raise type(exc)(f"{at(source, path, locate)}{exc}") from None
    return made


def section(kind: Section, given: Any, source: str, name: str, locate: Locate | None = None) -> Any:
    """The value of section ``name``: None (an optional one, empty), its defaults, or :func:`build`'s."""
    if given is None or (kind.optional and given == {}):
        return None if kind.optional else kind.cls()
    if not isinstance(given, Mapping):
        raise kind.error(f"{at(source, name, locate)}{name} must be {kind.expected}, not {kind.shown(given)}")
    return build(kind.cls, given, source, name, kind.error, locate)
