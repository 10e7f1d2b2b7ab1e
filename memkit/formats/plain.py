"""Plain text only: no control characters in a file a person reads (issue 41.12).

A NUL, an ESC or a BEL written into people.md or a session file is invisible in an editor, rings
or recolours a terminal that ``cat``\\s the file, and can make a parser stop. Every path by which
memkit writes a value a caller gave (a person's line, a session's title, system prompt, user, tags,
metadata, a message and its tool or speaker name) checks it here:

- :func:`check_plain` refuses a value holding one, naming the field, the character and where;
- :func:`escape_controls` shows each as its Unicode control picture (ESC as ``␛``, BEL as ``␇``),
  for text memkit copies from a file it imports, so one stray byte does not fail the import;
- :func:`control_lines` finds them in a file's text, for ``memkit check`` (file and line).

Tab, line feed and carriage return are text; every other C0 character, DEL and the C1 characters
(U+0080 to U+009F) are control characters here.
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import InvalidValue

__all__ = ["CONTROL", "check_plain", "check_plain_data", "control_lines", "describe", "escape_controls"]

#: the control characters memkit never writes (tab, line feed and carriage return are text)
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_NAMES = {0: "NUL", 7: "BEL", 8: "BS", 0x0B: "VT", 0x0C: "FF", 0x1B: "ESC", 0x7F: "DEL", 0x85: "NEL"}


def describe(ch: str) -> str:
    """``U+001B (ESC)``: a control character as a message names it."""
    name = _NAMES.get(ord(ch))
    return f"U+{ord(ch):04X}" + (f" ({name})" if name else "")


def check_plain(value: str, what: str, *, newlines: bool = True) -> str:
    """``value`` when it holds no control character (and, unless ``newlines``, no line break).

    :param what: the field, as the error names it ("a person's name", "the session's title").
    :raises InvalidValue: naming the field, the character and its position.
    """
    found = CONTROL.search(value)
    if found is not None:
        raise InvalidValue(f"{what} holds the control character {describe(found.group(0))} at position "
                           f"{found.start() + 1}: memkit writes plain text only")
    if not newlines and ("\n" in value or "\r" in value):
        raise InvalidValue(f"{what} holds a line break: it must be one line")
    return value


def check_plain_data(value: Any, what: str) -> Any:
    """:func:`check_plain` on every text in ``value`` (a mapping's keys and values, a list's items),
    for metadata written as YAML."""
    if isinstance(value, str):
        check_plain(value, what)
    elif isinstance(value, dict):
        for key, item in value.items():
            check_plain_data(key, f"{what} (a key)")
            check_plain_data(item, f"{what} ({key!s:.40})")
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_plain_data(item, what)
    return value


def escape_controls(text: str) -> str:
    """``text`` with each control character shown as its Unicode control picture (U+2400 + code
    for C0, ``␡`` for DEL) or, for a C1 character, as U+FFFD: visible, and never a control."""
    if CONTROL.search(text) is None:
        return text
    return CONTROL.sub(lambda m: chr(0x2400 + ord(m.group(0))) if ord(m.group(0)) < 0x20 else
                       "\u2421" if m.group(0) == "\x7f" else "\ufffd", text)


def control_lines(text: str) -> list[tuple[int, str]]:
    """(line, the first control character's description) for each line of ``text`` holding one."""
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        found = CONTROL.search(line)
        if found is not None:
            out.append((number, describe(found.group(0))))
    return out
