"""YAML for frontmatter and memkit.yaml: safe, bounded, and with line numbers in its errors.

Frontmatter is a handful of ``key: value`` lines. YAML aliases (``*name``) let 400 bytes stand
for gigabytes once written out (the "billion laughs" bomb): PyYAML shares the aliased objects, so
loading is cheap, but anything that then prints or walks the value is not. memkit therefore
counts the values a document holds with every alias written out and refuses more than
``MAX_EXPANDED``, bounds the nesting depth before parsing (libyaml crashes on ~100k nested
brackets) and the input size.
"""
from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Callable

import yaml

__all__ = ["YamlError", "load_yaml", "dump_yaml", "plain_mapping", "MAX_YAML_BYTES"]

MAX_YAML_BYTES = 256 * 1024  #: a frontmatter block or memkit.yaml larger than this is refused
MAX_EXPANDED = 10_000  #: values a document may hold with its aliases written out
MAX_DEPTH = 64  #: deeper nesting is refused before parsing (libyaml's loader crashes on ~100k levels)


class YamlError(ValueError):
    """YAML that memkit will not read: invalid, too large or too deeply nested, or holding too many
    values once its aliases are written out.

    :ivar line: 1-based line of the problem within the text given, when known.
    :ivar problem: what is wrong, in a few words.
    """

    def __init__(self, problem: str, line: int | None = None, context: str | None = None,
                 context_line: int | None = None) -> None:
        super().__init__(f"line {line}: {problem}" if line else problem)
        self.problem = problem
        self.line = line
        self.context = context  #: what the parser was reading ("while parsing a flow sequence"), when known
        self.context_line = context_line  #: the 1-based line (within the text) where that began

    def problem_at(self, to_file: Callable[[int], int] = lambda line: line) -> str:
        """The problem, and where what it is inside began when that is another line (an unclosed
        ``[`` is noticed at the end of the block, not where it opened).

        :param to_file: maps a line of the text given to the line of its file.
        """
        if self.context and self.context_line and self.context_line != self.line:
            return f"{self.problem} ({self.context} started on line {to_file(self.context_line)})"
        return self.problem


_FastLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _expanded(obj: Any, memo: dict[int, int]) -> int:
    """How many values ``obj`` holds once every alias is written out (shared objects counted at
    each use, each computed once)."""
    key = id(obj)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias counts once
    if isinstance(obj, dict):
        size = 1 + sum(_expanded(k, memo) + _expanded(v, memo) for k, v in obj.items())
    elif isinstance(obj, (list, tuple, set)):
        size = 1 + sum(_expanded(v, memo) for v in obj)
    else:
        size = 1
    memo[key] = size
    return size


def load_yaml(text: str) -> Any:
    """Parse ``text`` as YAML (safe types only, no aliases, at most ``MAX_YAML_BYTES``).

    :raises YamlError: naming the line (1-based, within ``text``) and the problem.
    """
    if len(text) > MAX_YAML_BYTES:
        raise YamlError(f"is {len(text) / 1024:.0f} kB, over the {MAX_YAML_BYTES // 1024} kB limit")
    plain = plain_mapping(text)
    if plain is not None:
        return plain
    depth, line = _nesting(text)
    if depth > MAX_DEPTH:
        raise YamlError(f"nested more than {MAX_DEPTH} levels deep", line)
    try:
        data = yaml.load(text, Loader=_FastLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        begun = getattr(exc, "context_mark", None)
        raise YamlError(str(problem), mark.line + 1 if mark is not None else None, getattr(exc, "context", None),
                        begun.line + 1 if begun is not None else None) from None
    except RecursionError:
        raise YamlError("nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - a value a constructor refuses: 2024-13-45 (ValueError),
        # !!bool maybe (KeyError), !!int '' (IndexError), !!timestamp soon (AttributeError)
        raise YamlError(f"a value that cannot be read ({type(exc).__name__}: {exc})", _line_failing(text)) from None
    if "*" in text and _expanded(data, {}) > MAX_EXPANDED:
        raise YamlError(f"its aliases (*name) expand to more than {MAX_EXPANDED:,} values", _first_alias(text))
    return data


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  #: what YAML reads as a line break (NEL aside)

# What YAML 1.1 (PyYAML's safe loader) reads a plain word as: its booleans and nulls
_BOOLS = {**dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
          **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False)}
_NULLS = frozenset(("~", "null", "Null", "NULL"))
#: ``key: value``, nothing else (a key of at most 1,024 characters: YAML's limit of a simple key)
_PLAIN_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,1023}):[ ]+(\S.*?)[ ]*")
_INT = re.compile(r"0|[1-9][0-9]{0,17}")
_DAY = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_STAMP = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})")


def plain_mapping(text: str) -> dict[str, Any] | None:
    """What YAML reads ``text`` as, when it is only ``key: value`` lines of the plainest kind
    (most frontmatter: a title, a summary, a day or a time): words starting with a letter, a
    whole number, a boolean, a null, ``YYYY-MM-DD`` (a date) or ``YYYY-MM-DDTHH:MM:SS`` (a time);
    None for anything else (quotes, lists, comments, other numbers and times…), which the YAML
    parser reads. The same values as the parser, ~10x faster (tests/formats/test_safeyaml_plain.py
    compares both on generated blocks). Its text never reaches the parser, so the nesting bound
    that guards libyaml does not apply to it (``title: [[[`` is a plain word here, as YAML reads it)."""
    out: dict[str, Any] = {}
    for line in text.split("\n"):
        if line.endswith("\r"):  # a CRLF line's end (another \r is a line break YAML reads: not plain)
            line = line[:-1]
        if not line:
            continue
        m = _PLAIN_LINE.fullmatch(line)
        if m is None:
            return None
        key, value = m.groups()
        if key in _BOOLS or key in _NULLS or not value.isprintable():
            return None
        first = value[0]
        if value in _BOOLS:
            out[key] = _BOOLS[value]
        elif value in _NULLS:
            out[key] = None
        elif first.isalpha():  # a word: the booleans and nulls are the only other readings
            if " #" in value or ": " in value or value.endswith(":"):
                return None
            out[key] = value
        elif _INT.fullmatch(value):
            out[key] = int(value)
        else:
            got = _DAY.fullmatch(value) or _STAMP.fullmatch(value)
            if got is None:
                return None
            n = [int(part) for part in got.groups()]
            try:
                out[key] = date(n[0], n[1], n[2]) if len(n) == 3 else datetime(n[0], n[1], n[2], n[3], n[4], n[5])
            except ValueError:  # no such day: the parser says so
                return None
    return out or None


LINES_LOOKED_AT = 1000  #: lines of a failing block read alone for the one to name (a bound on the cost)


def _line_failing(text: str) -> int | None:
    """The first line (1-based, of the first ``LINES_LOOKED_AT``) that fails alone the way the
    whole text failed (a value a constructor refuses, not a YAML error), or None."""
    for n, line in enumerate(_LINE_BREAK.split(text)[:LINES_LOOKED_AT], 1):
        try:
            yaml.load(line, Loader=_FastLoader)  # noqa: S506 - a safe loader
        except (yaml.YAMLError, RecursionError):  # not YAML alone (a line of a block): not the one
            continue
        except Exception:  # noqa: BLE001 - the constructor refused it
            return n
    return None


def _first_alias(text: str) -> int | None:
    for n, line in enumerate(_LINE_BREAK.split(text), 1):
        if "*" in line:
            return n
    return None


def _nesting(text: str) -> tuple[int, int]:
    """An upper bound of the nesting depth of ``text`` (flow brackets, and block indentation, both
    counted generously) and the line where it is reached."""
    deepest, where, depth = 0, 1, 0
    for n, line in enumerate(_LINE_BREAK.split(text), 1):
        level = (len(line) - len(line.lstrip(" "))) // 2
        for ch in line:
            if ch in "[{":
                depth += 1
                level = max(level, depth)
            elif ch in "]}":
                depth = max(0, depth - 1)
        if level > deepest:
            deepest, where = level, n
    return deepest, where


def dump_yaml(data: dict[str, Any]) -> str:
    """``data`` as block-style YAML, keys in their order (for frontmatter memkit writes anew)."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    if any(ch in text for ch in "\x85\u2028\u2029"):  # written raw, YAML would read them as line breaks
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=False, default_flow_style=False)
    return text
