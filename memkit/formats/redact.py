"""What is never stored: secrets and personal identifiers replaced by ``[redacted]`` before a write.

A vault is plain text synced with git, so an API key pasted into a conversation would be in every
clone for ever. Every text memkit is about to write (an add, a digest's conclusions, a session
message, a captured transcript) goes through :func:`redact` first; the report of the command says
how many it replaced.

The defaults (each can be turned off by name in memkit.yaml's ``redact:``, and patterns added):

- ``api-key``: the key formats of the common providers (``sk-…``, ``sk-ant-…``, ``AKIA…``,
  ``ghp_…``, ``xoxb-…``, ``AIza…``, ``hf_…``) and ``Bearer`` tokens;
- ``password``: what follows "password is", "password:", "passcode =", "pin is" (the word stays,
  the secret goes: "the wifi password is [redacted]"), but not a word that only talks about it
  ("the password is in the drawer", "is not set", "was changed");
- ``card``: 13 to 19 digits, spaces or dashes between groups, that pass the Luhn check (so a
  phone number or an order number is left alone);
- ``iban``: an IBAN whose check digits are right (mod 97), also when a capital word follows it.

A pattern of one's own is a regular expression; where it has a group, only the first group is
replaced (the first group that matched), else the whole match.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from ..errors import InvalidValue

REDACTED = "[redacted]"

_API_KEY = re.compile(
    r"(?<![\w-])(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,})(?![\w-])"
    r"|(?<=\bBearer )[A-Za-z0-9._~+/=-]{20,}")
#: words that follow "password is" in a sentence about a password, not in one that gives it away
_NOT_SECRET = ("in|on|at|not|the|a|an|my|your|his|her|our|their|its|this|that|same|still|now|also|set|reset|"
               "changed|expired|wrong|correct|required|needed|saved|stored|written|kept|somewhere|there|here|empty|"
               "blank|missing|too|very|hard|easy|long|short|weak|strong|secure|different|new|old|unknown|forgotten")
_PASSWORD = re.compile(
    r"(?i)\b(?:password|passwd|passcode|passphrase|pin(?: code)?)\b(?:\s+(?:is|was|=|:)|\s*[:=])\s*"
    r"(?:\"([^\"\n]{1,100})\"|'([^'\n]{1,100})'|“([^”\n]{1,100})”"
    rf"|(?!(?:{_NOT_SECRET})\b[.,;!?)]*(?:\s|$))([^\s\"'“”]{{2,}}?)(?=[.,;!?)]*(?:\s|$)))")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> bool:
    digits = re.sub(r"\D", "", match.group(0))
    return 13 <= len(digits) <= 19 and len(set(digits)) > 1 and _luhn(digits)


def _iban_ok(code: str) -> bool:
    if not 15 <= len(code) <= 34:
        return False
    moved = code[4:] + code[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def _iban(match: re.Match[str]) -> tuple[int, int] | None:
    """The span of the IBAN the match starts with: the whole match, or (when an upper-case word
    follows it, "DE89… EUR") the longest part of it up to a space whose check digits are right."""
    text, start = match.group(0), match.start()
    for cut in [len(text)] + [i for i in range(len(text) - 1, 0, -1) if text[i] == " "]:
        if _iban_ok(text[:cut].replace(" ", "")):
            return start, start + cut
    return None


@dataclass(frozen=True)
class Rule:
    """One kind of secret: its name, its pattern and (for the built-in ones) a check of a match."""

    name: str
    pattern: re.Pattern[str]
    check: Callable[[re.Match[str]], bool] | None = None
    #: instead of ``check``: the span of a match to replace (None: none of it)
    fit: Callable[[re.Match[str]], tuple[int, int] | None] | None = None


#: the built-in rules, by name (memkit.yaml ``redact: {defaults: [...]}`` picks among them)
DEFAULT_RULES: Mapping[str, Rule] = {
    "api-key": Rule("api-key", _API_KEY),
    "password": Rule("password", _PASSWORD),
    "card": Rule("card", _CARD, _card),
    "iban": Rule("iban", _IBAN, fit=_iban),
}


@dataclass(frozen=True)
class Redacted:
    """A text after :func:`redact`, and how many secrets left it."""

    text: str
    count: int = 0


def compile_rules(patterns: Iterable[str], defaults: Sequence[str] | None = None) -> tuple[Rule, ...]:
    """The rules of a vault: the built-in ones named in ``defaults`` (all when None) and a rule for
    each regular expression in ``patterns``. A bad pattern raises :class:`InvalidValue` naming it."""
    names = list(DEFAULT_RULES) if defaults is None else list(defaults)
    unknown = [n for n in names if n not in DEFAULT_RULES]
    if unknown:
        raise InvalidValue(f"unknown built-in redaction {unknown[0]!r}: choose from {', '.join(DEFAULT_RULES)}")
    rules = [DEFAULT_RULES[n] for n in names]
    for i, pattern in enumerate(patterns, 1):
        try:
            rules.append(Rule(f"pattern {i}", re.compile(pattern)))
        except re.error as exc:
            raise InvalidValue(f"redaction pattern {i} ({pattern!r}) is not a regular expression: {exc}") from None
    return tuple(rules)


def redact(text: str, rules: Sequence[Rule] | None = None) -> Redacted:
    """``text`` with every secret the rules find replaced by ``[redacted]`` (the built-in rules when
    ``rules`` is None). A text with nothing to hide comes back as the same string."""
    count = 0
    for rule in DEFAULT_RULES.values() if rules is None else rules:
        pieces: list[str] = []
        last = 0
        for match in rule.pattern.finditer(text):
            if rule.check is not None and not rule.check(match):
                continue
            group = next((i for i in range(1, (match.re.groups or 0) + 1) if match.group(i) is not None), 0)
            span = match.span(group) if rule.fit is None else rule.fit(match)
            if span is None:
                continue
            start, end = span
            if start == end or text[start:end] == REDACTED:
                continue
            pieces.append(text[last:start])
            pieces.append(REDACTED)
            last = end
            count += 1
        if pieces:
            text = "".join(pieces) + text[last:]
    return Redacted(text, count)
