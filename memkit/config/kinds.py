"""The kinds of value a setting takes: each checks and normalises a value read from memkit.yaml,
says what it expects (in error messages and in docs/configuration.md alike) and writes a value
back as YAML (for the commented memkit.yaml that ``memkit init`` writes).

A kind raises :class:`Invalid` for a value it refuses; the validator (:mod:`memkit.config.validate`)
turns that into one message: ``FILE: KEY must be EXPECTED, not VALUE``.
"""
from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any, Mapping

from ..base.lazy_re import lazy
from ..formats.redact import slow_pattern
from ..formats.safeyaml import load_yaml

ENV_NAME = lazy(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_QUIET = lazy(r"^\s*([01]?\d|2[0-3]):([0-5]\d)\s*-\s*([01]?\d|2[0-3]):([0-5]\d)\s*$")
_LIFETIME = lazy(r"^(\d{1,5})\s*([dwmy])$")
_DAYS = {"d": 1, "w": 7, "m": 30, "y": 365}
_KIND = lazy(r"[^\W\d_][\w-]{0,39}")


class Invalid(ValueError):
    """A value a kind refuses; ``expected`` replaces the kind's own phrase when given (a part of a
    mapping that is wrong), ``key`` names that part."""

    def __init__(self, expected: str | None = None, key: str | None = None, value: Any = None,
                 message: str | None = None) -> None:
        super().__init__(expected or message or "invalid")
        self.expected, self.key, self.value, self.message = expected, key, value, message


def describe_value(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return str(value)
    text = str(value)
    if re.fullmatch(r"[A-Za-z0-9_./@+-][A-Za-z0-9_./@+ :-]*", text) and ": " not in text and not text.endswith(":"):
        if load_yaml(f"k: {text}") == {"k": text}:
            return text  # plain where it reads back as the same string (not a number, not true)
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML one


class Kind:
    """One kind of value. ``expected`` completes "must be …"; ``parse`` returns the value to keep."""

    expected = "a value"
    #: shown in docs' type column, when it should differ from ``expected``
    docs_type: str | None = None

    def parse(self, value: Any) -> Any:
        return value

    def shown(self, value: Any) -> str:
        """A refused value, as the error message shows it."""
        return describe_value(value)

    def yaml(self, value: Any) -> str:
        """``value`` as memkit.yaml writes it."""
        return _yaml_scalar(value)

    def yaml_lines(self, name: str, value: Any) -> list[str]:
        """``name: value`` as memkit.yaml writes it, a line or a few."""
        return [f"{name}: {self.yaml(value)}"]


class Whole(Kind):
    """A whole number (true and false are not numbers), from ``least`` to ``most``."""

    def __init__(self, least: int | None = None, most: int | None = None, what: str = "a whole number") -> None:
        self.least, self.most = least, most
        if least is not None and most is not None:
            self.expected = f"{what} from {least} to {most}"
        elif least is not None:
            self.expected = f"{what}, {least} or more"
        else:
            self.expected = what

    def parse(self, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise Invalid
        if (self.least is not None and value < self.least) or (self.most is not None and value > self.most):
            raise Invalid
        return value


class Number(Kind):
    """A number (kept as a float), at least ``least`` or over ``over``, at most ``most``."""

    def __init__(self, least: float | None = None, over: float | None = None, most: float | None = None,
                 unit: str = "") -> None:
        self.least, self.over, self.most = least, over, most
        self.expected = f"a number of {unit}" if unit else "a number"
        self.expected += f", {least:g} or more" if least is not None else ""
        self.expected += f" over {over:g}" if over is not None else ""
        self.expected += f", at most {most:g}" if most is not None else ""

    def parse(self, value: Any) -> float:
        if not _number(value):
            raise Invalid
        if ((self.least is not None and value < self.least) or (self.over is not None and not value > self.over)
                or (self.most is not None and value > self.most)):
            raise Invalid
        return float(value)


class Flag(Kind):
    expected = "true or false"

    def parse(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise Invalid
        return value


class FlagOrAuto(Kind):
    """true, false or the word auto (kept as the string "auto")."""

    expected = "true, false or auto"

    def parse(self, value: Any) -> bool | str:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        raise Invalid


class Text(Kind):
    """A string, stripped. ``required``: a blank one is refused; else a blank one means unset (None)."""

    def __init__(self, required: bool = False) -> None:
        self.required = required
        self.expected = "a non-empty string" if required else "a string"

    def parse(self, value: Any) -> str | None:
        if not isinstance(value, str) or (self.required and not value.strip()):
            raise Invalid
        return value.strip() or None


class Choice(Kind):
    """One of a few words (any case)."""

    def __init__(self, *words: str) -> None:
        self.words = words
        self.expected = ", ".join(words[:-1]) + " or " + words[-1]

    def parse(self, value: Any) -> str:
        word = value.strip().lower() if isinstance(value, str) else None
        if word not in self.words:
            raise Invalid
        return word


class Cosine(Kind):
    """A cosine from -1 to 1, or ``auto`` (the value calibrated for the model)."""

    expected = "a number between -1 and 1 or 'auto'"

    def parse(self, value: Any) -> float | str:
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        if not _number(value) or not -1.0 <= value <= 1.0:
            raise Invalid
        return value


class QuietHours(Kind):
    expected = 'a span of time like "22:00-07:30", or "" for none'

    def parse(self, value: Any) -> str:
        if not isinstance(value, str) or (value.strip() and parse_quiet_hours(value) is None):
            raise Invalid
        return value


def parse_quiet_hours(text: str) -> tuple[int, int] | None:
    """``"22:00-07:30"`` -> (start, end) in minutes after midnight; None when it is not like that."""
    m = _QUIET.match(text)
    if not m:
        return None
    h1, m1, h2, m2 = (int(x) for x in m.groups())
    return h1 * 60 + m1, h2 * 60 + m2


class EnvName(Kind):
    """The NAME of an environment variable holding a secret; a refused string is never shown (a
    common mistake is to paste the secret itself)."""

    def __init__(self, holding: str = "key") -> None:
        self.holding = holding
        self.expected = f"the NAME of an environment variable holding the {holding} (letters, digits and _)"
        self.docs_type = "the NAME of an environment variable (letters, digits and _)"

    def parse(self, value: Any) -> str | None:
        if not isinstance(value, str):
            raise Invalid
        name = value.strip()
        if name and not ENV_NAME.match(name):
            raise Invalid
        return name or None

    def shown(self, value: Any) -> str:
        return f"the {self.holding} itself" if isinstance(value, str) else describe_value(value)


class Url(Kind):
    """An http:// or https:// URL with a host."""

    expected = "an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1"

    def parse(self, value: Any) -> str | None:
        if not isinstance(value, str):
            raise Invalid
        url = value.strip()
        if url and not is_http_url(url):
            raise Invalid
        return url or None

    def shown(self, value: Any) -> str:
        return repr(value) if isinstance(value, str) else describe_value(value)


def is_http_url(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


class Lifetimes(Kind):
    """Kind of entry -> lifetime in days (None: never), merged over ``defaults``."""

    expected = "a mapping of kinds to lifetimes (context: 1d)"
    docs_type = "kind: lifetime (1d, 2w, 6m, 1y or never)"
    lifetime = "like 1d, 2w, 6m, 1y or never"

    def __init__(self, defaults: Mapping[str, int | None]) -> None:
        self.defaults = dict(defaults)

    def parse(self, value: Any) -> dict[str, int | None]:
        if value is None:
            return dict(self.defaults)
        if not isinstance(value, dict):
            raise Invalid
        merged = dict(self.defaults)
        for kind, life in value.items():
            if not isinstance(kind, str) or not _KIND.fullmatch(kind):
                raise Invalid(message=f"{kind!r} is not a kind (one word)")
            merged[kind.lower()] = self.days(life, kind)
        return merged

    def days(self, value: Any, kind: str) -> int | None:
        """``"1d"``, ``"2w"``, ``"6m"``, ``"1y"``, a number of days, or ``never`` -> days (None: never)."""
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        text = "" if isinstance(value, bool) else str(value).strip().lower()
        if not isinstance(value, bool) and text in ("never", "none", "forever", ""):
            return None
        m = _LIFETIME.match(text)
        if not m:
            raise Invalid(self.lifetime, kind, value)
        return int(m.group(1)) * _DAYS[m.group(2)]

    def shown(self, value: Any) -> str:
        return type(value).__name__

    def yaml(self, value: Any) -> str:
        return "{" + ", ".join(f"{kind}: {self.one(days)}" for kind, days in value.items()) + "}"

    def yaml_lines(self, name: str, value: Any) -> list[str]:
        return [f"{name}:"] + [f"  {kind}: {self.one(days)}" for kind, days in value.items()]

    @staticmethod
    def one(days: int | None) -> str:
        return "never" if days is None else f"{days}d"


class Words(Kind):
    """A list of some of a few words (any case); ``[]``: none of them."""

    def __init__(self, *words: str) -> None:
        self.words = words
        self.expected = f"a list of some of {', '.join(words)} ([] for none)"

    def parse(self, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise Invalid
        out = []
        for item in value:
            if not isinstance(item, str):
                raise Invalid
            word = item.strip().lower()
            if word not in self.words:
                raise Invalid(message=f"{item!r} is not one of {', '.join(self.words)}")
            if word not in out:
                out.append(word)
        return out

    def shown(self, value: Any) -> str:
        return type(value).__name__

    def yaml(self, value: Any) -> str:
        return "[" + ", ".join(value) + "]"


class _Strings(Kind):
    """A list of strings, written in memkit.yaml as a flow list."""

    def shown(self, value: Any) -> str:
        return type(value).__name__

    def yaml(self, value: Any) -> str:
        return "[" + ", ".join(json.dumps(p, ensure_ascii=False) for p in value) + "]"


class Regexes(_Strings):
    """A list of regular expressions (Python's ``re``), each checked when memkit.yaml is read."""

    expected = "a list of regular expressions (quoted strings)"

    def parse(self, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise Invalid
        for i, pattern in enumerate(value, 1):
            if not isinstance(pattern, str) or not pattern:
                raise Invalid
            try:
                re.compile(pattern)
            except re.error as exc:
                raise Invalid(message=f"pattern {i} ({pattern!r}) is not a regular expression: {exc}") from None
            slow = slow_pattern(pattern)  # its time must be bounded (docs/privacy.md)
            if slow:
                raise Invalid(message=f"pattern {i} ({pattern!r}) {slow}")
        return list(value)


class GlobList(_Strings):
    """A list of globs over paths under topics/ (:mod:`memkit.formats.globs`)."""

    expected = "a list of globs (quoted strings, like \"work/**\" or \".trash/\")"

    def parse(self, value: Any) -> list[str]:
        if not isinstance(value, list):
            raise Invalid
        out = []
        for i, glob in enumerate(value, 1):
            if not isinstance(glob, str) or not glob.strip():
                raise Invalid
            glob = glob.strip()
            if glob.startswith("/") or "\\" in glob or ".." in glob.split("/"):
                raise Invalid(message=f"glob {i} ({glob!r}) must be a path under topics/ (no leading '/', '\\' or '..')")
            out.append(glob)
        return out


class Folder(Kind):
    """A folder inside the vault, relative to it: ``topics``, or ``.`` for the vault's own folder."""

    expected = "a folder relative to the vault (topics, or . for the vault itself)"

    def parse(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Invalid
        folder = value.strip().strip("/") or "."
        parts = folder.split("/")
        if "\\" in folder or value.strip().startswith("/") or any(p == ".." for p in parts) \
                or (folder != "." and any(p.startswith(".") or not p for p in parts)):
            raise Invalid(message=f"{value!r} must be a folder inside the vault: a relative path, no '..' nor hidden part")
        return folder
