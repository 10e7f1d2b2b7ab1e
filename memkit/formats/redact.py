"""What is never stored: secrets and personal identifiers replaced by ``[redacted]`` before a write.

A vault is plain text synced with git, so an API key pasted into a conversation would be in every
clone for ever. Every text memkit is about to write (an add, a digest's conclusions, a session
message, a captured transcript) goes through :func:`redact` first; the report of the command says
how many it replaced.

The defaults (each can be turned off by name in memkit.yaml's ``redact:``, and patterns added):

- ``api-key``: the key formats of the common providers (``sk-…``, ``sk-ant-…``, ``AKIA…``,
  ``ghp_…``, ``github_pat_…``, ``xoxb-…``, ``AIza…``, ``hf_…``, ``glpat-…``, ``sk_live_…``), JSON Web
  Tokens, ``Bearer`` tokens, PEM private key blocks, an AWS secret access key after "aws" or "secret"
  (40 characters of base64), and the value of an environment variable
  named for a secret (``DB_PASSWORD=…``, ``AWS_SECRET_ACCESS_KEY=…``);
- ``password``: what follows "password is", "password:", "pw is", "security answer:", "the password for the router is",
  "api key:", "Wi-Fi key:" (the word stays, the secret goes: "the wifi password is [redacted]"),
  but not a word that only talks about it ("the password is in the drawer", "is not set", "was
  changed", "is 12 characters long"); "password qwerty789" without a verb when the word holds a
  digit or a sign; PINs and codes next to the words naming them ("PIN 7391", "the alarm code is
  4821", "combination 12-34-56", "CVV 384", "recovery code 8F3K-2M9P", "SSN 078-05-1120": 3 digits at least; a code
  a word before it makes public is kept: a zip, postal, area, error, status, flight, promo or
  tracking code…); the password of a login pair ("my bank login is maya / [redacted]"), of a URL
  (``postgres://admin:[redacted]@db``), and a seed phrase of 12 to 24 words;
- ``card``: 13 to 19 digits starting with 2 to 6, spaces or dashes between groups, that pass the
  Luhn check (so a phone number, an order number or an ISBN is left alone);
- ``iban``: an IBAN whose check digits are right (mod 97), also when a capital word follows it.

tests/formats/redaction_set.json holds the sentences they are measured on (bench/redaction_rates.py).

A pattern of one's own is a regular expression; where it has a group, only the first group is
replaced (the first group that matched), else the whole match. Its time is bounded (issue 41.17):
:func:`slow_pattern` refuses, when memkit.yaml is read, a pattern whose backtracking can take time
exponential or polynomial in the text (a repetition inside a repetition, ``(a+)+``; alternatives
a repetition can take in two ways, ``(a|ab)*``; two repetitions next to each other that can match
the same characters, ``\\d+\\d+`` or ``(.*)@(.*)``), and a long text is searched
:data:`WINDOW` characters at a time (a match is at most :data:`REACH` long), so what is left costs
at most a bounded amount per character.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..base.lazy_re import lazy
from ..errors import InvalidValue

REDACTED = "[redacted]"

_API_KEY = lazy(
    r"(?<![\w-])(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|github_pat_[A-Za-z0-9_]{30,}|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}|hf_[A-Za-z0-9]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})(?![\w-])"
    r"|(?<=\bBearer )[A-Za-z0-9._~+/=-]{20,}"
    # a PEM body never holds "-----": each try stops at the next one (many BEGINs cost no more)
    r"|-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----(?:[^-]|-(?!----)){0,10000}-----END [A-Z ]{0,40}PRIVATE KEY-----")
#: an environment variable holding a secret, as in a .env file or a shell: ``DB_PASSWORD=…``
_ENV_SECRET = lazy(r"\b[A-Z0-9_]{0,40}(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_KEY|ACCESS_KEY)"
                         r"[A-Z0-9_]{0,40}\s?[=:]\s?[\"']?([^\s\"']{4,200})")
#: an AWS secret access key in a sentence: 40 characters of base64 (both cases, a digit) after "aws"
#: or "secret" (the key ID ``AKIA…`` is :data:`_API_KEY`'s)
_AWS_SECRET = lazy(r"(?i:\b(?:aws|secret)\b)[^\n]{0,40}?(?<![A-Za-z0-9/+])"
                   r"((?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*\d)[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")
#: the password in a URL: ``postgres://admin:S3cret@db``
_URL_PASSWORD = lazy(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@]{1,64}:([^\s/@]{1,128})@")
#: words that follow "password is" in a sentence about a password, not in one that gives it away
_NOT_SECRET = ("in|on|at|not|the|a|an|my|your|his|her|our|their|its|this|that|same|still|now|also|set|reset|"
               "changed|expired|wrong|correct|required|needed|saved|stored|written|kept|somewhere|there|here|empty|"
               "blank|missing|too|very|hard|easy|long|short|weak|strong|secure|different|new|old|unknown|forgotten|"
               "and|or|but|for|to|of|with|from|by|must|should|will|can|manager|protected|please")
#: a number followed by one of these is a size or a time, not a secret ("is 12 characters long")
_UNITS = (r"(?:characters?|chars?|letters?|digits?|symbols?|words?|long|days?|weeks?|months?|years?|times?|"
          r"minutes?|hours?|percent|%)")
#: what may stand between the word and its verb: "the PIN for my Visa is", "the code to the gate is"
_OF = r"(?:\s+(?:for|to|of|on|at|in)(?:\s+[\w'’-]{1,30}){1,3}?)?"
#: "is", "was", ":", "="…: what gives the secret away
_VERB = r"(?:\s+(?:is|was|are|were|=|:|-)|\s?[:=])\s*"
#: a secret word: quoted (spaces allowed), or one token that is not an ordinary word about it
_QUOTED = "\"([^\"\n]{1,100})\"|'([^'\n]{1,100})'|“([^”\n]{1,100})”"
_TOKEN = (rf"(?!(?:{_NOT_SECRET})\b[.,;!?)]*(?:\s|$))(?![a-z]+(?:ed|ing|ly)[.,;!?)]*(?:\s|$))"
          rf"([^\s\"'“”]{{2,100}}?)(?=[.,;!?)]*(?:\s|$))(?!\s+{_UNITS}\b)")
#: the words naming a password-like secret (any token after them is one)
_PASSWORD_WORDS = (r"password|passwd|pwd|pw(?=\s+(?:is|was)\b|\s?[:=])|passphrase|pass(?=\s?[:=])|master\s+key|"
                   r"(?:security|secret)\s+(?:answer|question\s+answer)|"
                   r"(?:wi-?fi|network|wpa2?|secret|private|secret\s+access|access|api|app)\s+key|api\s+token")
_PASSWORD = lazy(
    rf"(?i)\b(?:{_PASSWORD_WORDS})\b(?:{_OF}{_VERB}(?:{_QUOTED}|{_TOKEN})"
    # without a verb ("password qwerty789"): a quoted secret, or a token holding a digit or a sign
    rf"|\s+(?:{_QUOTED}|(?=[^\s\"'“”]*[\d!@#$%^&*])([^\s\"'“”]{{4,100}}?)(?=[.,;!?)]*(?:\s|$))))")
#: the words naming a PIN or a code: digits next to them are the secret
_CODE_WORDS = (r"pin(?:\s+(?:code|number|no\.?))?|passcode|pass\s+code|cvv2?|cvc2?|csc|combination|combo|"
               r"ssn|social\s+security(?:\s+(?:number|no\.?))?|"
               r"(?:recovery|backup|verification|one-time|2fa|otp|security|access|unlock|alarm|door|gate|safe|"
               r"lock|entry)\s+codes?|codes?|otp")
#: a code: digits, single signs or spaces between them (9 3 1 7, 12-34-56, 4#2#9), or groups of
#: letters and digits (8F3K-2M9P); :func:`_code` wants 3 digits at least
_CODE_VALUE = (r"(\d(?:[-#* ]?\d){2,15}#?|(?=[A-Za-z]*\d)[A-Za-z0-9]{2,12}(?:-[A-Za-z0-9]{2,12}){0,6})"
               rf"(?![\w.,/:%]?\d|\w|%|\s+{_UNITS}\b)")
_CODE = lazy(rf"(?i)\b(?:{_CODE_WORDS})\b(?:{_OF}{_VERB}|\s?[:,=]?\s+)\s*{_CODE_VALUE}")
#: a word before "code" that makes it no secret (a postal code, an error code, a promo code…)
_PUBLIC_CODE = lazy(
    r"(?i)\b(?:zip|postal|post|postcode|area|country|dialling|dialing|error|status|exit|return|response|http|"
    r"product|promo|promotional|discount|coupon|voucher|referral|gift|tracking|dress|source|bar|qr|morse|colour|"
    r"color|icd|hs|airport|iata|airline|flight|station|course|class|booking|reference|postal|zone|tax|sort|swift|"
    r"bic|ean|upc|sku|language|locale|program|programme|machine|cheat|genetic|version|build|release|model|part|"
    r"item|article|style|sample|line|chapter|section|room|table|seat|bus|route|unit|lot|batch|building\s+regulations)"
    r"[\s-]*$")
#: a login and its password: "my bank login is maya / Tr0ub4dor&3" (only the password goes)
_LOGIN = lazy(
    r"(?i)\b(?:log-?in|sign-?in|credentials?|user(?:name)?\s?/\s?pass(?:word)?)(?:\s+(?:details|info))?"
    rf"{_OF}(?:\s+(?:is|are|was|were)|\s?[:=-])?\s+"
    r"(?:[^\s/:,]{1,64})\s?(?:/|:|,|\s+and\s+|,?\s+pass(?:word)?\s?:?)\s?"
    r"([^\s\"'“”]{3,100}?)(?=[.,;!?)]*(?:\s|$))")
#: a seed or recovery phrase: 12 to 24 words
_PHRASE = lazy(r"(?i)\b(?:seed|recovery|mnemonic|backup|secret)\s+(?:phrase|words)\b(?:\s+(?:is|was|are)|\s?[:=])"
                     r"\s*((?:[a-z]{3,12}[ ,]+){11,23}[a-z]{3,12})\b")
_CARD = lazy(r"(?<![\d-])[2-6](?:[ -]?\d){12,18}(?![\d-])")
_IBAN = lazy(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _code(match: re.Match[str]) -> bool:
    """A PIN or a code: 3 digits at least, and a bare "code" not named public by the word before
    it (a zip code, an error code, a promo code)."""
    if sum(ch.isdigit() for ch in match.group(1)) < 3:
        return False
    if match.group(0)[:4].lower() != "code":
        return True
    return not _PUBLIC_CODE.search(match.string[max(0, match.start() - 40):match.start()])


def _strong(match: re.Match[str]) -> bool:
    """A login's password, not a word: it holds a digit or a sign, or capitals and small letters."""
    word = match.group(1)
    return (len(word) >= 4 and word != REDACTED
            and (any(not ch.isalpha() for ch in word) or (word.lower() != word and word.upper() != word)))


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
    #: a pattern of one's own: searched :data:`WINDOW` characters at a time
    windowed: bool = False


#: the built-in rules, by name (memkit.yaml ``redact: {defaults: [...]}`` picks among them); a name
#: may stand for several patterns
DEFAULT_RULES: Mapping[str, tuple[Rule, ...]] = {
    "api-key": (Rule("api-key", _API_KEY), Rule("api-key", _ENV_SECRET), Rule("api-key", _AWS_SECRET)),
    "password": (Rule("password", _PASSWORD), Rule("password", _PHRASE), Rule("password", _CODE, _code),
                 Rule("password", _LOGIN, _strong), Rule("password", _URL_PASSWORD)),
    "card": (Rule("card", _CARD, _card),),
    "iban": (Rule("iban", _IBAN, fit=_iban),),
}
_ALL_RULES = tuple(rule for rules in DEFAULT_RULES.values() for rule in rules)


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
    rules = [rule for n in names for rule in DEFAULT_RULES[n]]
    for i, pattern in enumerate(patterns, 1):
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise InvalidValue(f"redaction pattern {i} ({pattern!r}) is not a regular expression: {exc}") from None
        slow = slow_pattern(pattern)
        if slow:
            raise InvalidValue(f"redaction pattern {i} ({pattern!r}) {slow}")
        rules.append(Rule(f"pattern {i}", compiled, windowed=True))
    return tuple(rules)


WINDOW = 512  #: a pattern of one's own searches a longer text this many characters at a time
REACH = 256  #: the windows overlap by this much: a match up to this long is never cut


def _matches(rule: Rule, text: str) -> Iterator[re.Match[str]]:
    """The rule's matches in ``text``, left to right, none overlapping; a pattern of one's own
    searches a long text window by window (bounded time per character, see the module docstring)."""
    if not rule.windowed or len(text) <= WINDOW:
        yield from rule.pattern.finditer(text)
        return
    taken = 0  # where the last match yielded ends: a window's overlap is not matched twice
    for start in range(0, len(text), WINDOW - REACH):
        for match in rule.pattern.finditer(text, start, min(len(text), start + WINDOW)):
            if match.start() >= taken and match.end() > match.start():
                taken = match.end()
                yield match
        if start + WINDOW >= len(text):
            return


# ---- patterns whose time is not bounded -------------------------------------------------------

def _sre() -> Any:
    """Python's regular expression parser (``re._parser``; ``sre_parse`` before 3.11)."""
    try:
        return importlib.import_module("re._parser")
    except ImportError:  # pragma: no cover - Python 3.10
        return importlib.import_module("sre_parse")


#: the characters two character sets are compared on (any overlap among them counts)
_PROBE = [chr(c) for c in range(32, 127)] + list("\t\n\r\u00a0\u00e9\u00df\u0416\u0663\u4e2d")
Chars = Callable[[str], bool]


def _category(name: str) -> Chars:
    test: Chars
    if "DIGIT" in name:
        test = str.isdigit
    elif "SPACE" in name:
        test = str.isspace
    elif "WORD" in name:
        test = lambda ch: ch.isalnum() or ch == "_"  # noqa: E731
    else:  # LINEBREAK
        test = lambda ch: ch == "\n"  # noqa: E731
    return (lambda ch: not test(ch)) if "NOT" in name else test


def _chars(sre: Any, op: Any, av: Any) -> Chars | None:
    """What one character of ``op`` may be, or None when it is not a single character."""
    if op == sre.LITERAL:
        return lambda ch: ord(ch) == av
    if op == sre.NOT_LITERAL:
        return lambda ch: ord(ch) != av
    if op == sre.ANY:
        return lambda ch: True
    if op == sre.IN:
        negate = any(o == sre.NEGATE for o, _ in av)
        parts: list[Chars] = []
        for o, a in av:
            if o == sre.LITERAL:
                parts.append(_between(a, a))
            elif o == sre.RANGE:
                parts.append(_between(a[0], a[1]))
            elif o == sre.CATEGORY:
                parts.append(_category(str(a)))
            elif o != sre.NEGATE:
                parts.append(lambda ch: True)
        return lambda ch: any(p(ch) for p in parts) != negate
    return None


def _between(low: int, high: int) -> Chars:
    return lambda ch: low <= ord(ch) <= high


def _overlap(a: Chars, b: Chars) -> bool:
    return any(a(ch) and b(ch) for ch in _PROBE)


def _body_chars(sre: Any, body: Any) -> Chars:
    """Every character a repetition's body may match (the union of its characters, groups and
    alternatives included; anything, where it holds what this cannot tell)."""
    parts: list[Chars] = []
    for op, av in body:
        found = _chars(sre, op, av)
        if found is not None:
            parts.append(found)
        elif op == sre.SUBPATTERN:
            parts.append(_body_chars(sre, av[-1]))
        elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
            parts.append(_body_chars(sre, av[2]))
        elif op == sre.BRANCH:
            parts += [_body_chars(sre, branch) for branch in av[1]]
        elif op not in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            return lambda ch: True
    return lambda ch: any(p(ch) for p in parts)


def _first(sre: Any, branch: Any) -> int | None:
    """The literal a branch starts with, or None."""
    items = list(branch)
    while items and items[0][0] == sre.SUBPATTERN:
        items = list(items[0][1][-1])
    return items[0][1] if items and items[0][0] == sre.LITERAL else None


def slow_pattern(pattern: str) -> str | None:
    """Why matching ``pattern`` may take time exponential or polynomial in the text (the end of a
    sentence: "has a repetition inside a repetition…"), or None. A static check of its parse: no
    text is tried, so the answer never depends on the machine."""
    sre = _sre()
    try:
        tree = sre.parse(pattern)
    except Exception:  # noqa: BLE001 - re.compile says what is wrong with it
        return None
    return _sequence(sre, list(tree), None)


def _sequence(sre: Any, items: list[Any], outer: str | None) -> str | None:
    """Check a sequence of parsed items; ``outer``: inside a repetition (``"bounded"``, or
    ``"unbounded"`` when it may repeat without end)."""
    repeats = (sre.MAX_REPEAT, sre.MIN_REPEAT)
    advice = "; write it so that each character can be matched one way only (or with a fixed count: {1,20})"
    open_chars: Chars | None = None  # what the last unbounded repetition may still take
    queue = list(items)
    while queue:
        op, av = queue.pop(0)
        if op == sre.SUBPATTERN:  # a group: its items are part of this sequence
            queue[:0] = list(av[-1])
            continue
        if op in repeats:
            low, high, body = av
            unbounded = high == sre.MAXREPEAT
            width = body.getwidth()
            varies = width[0] != width[1] or low != high
            if outer is not None and high > 1 and varies and (unbounded or outer == "unbounded"):
                return "has a repetition inside a repetition (as in (a+)+): it can take exponential time" + advice
            if high > 1:
                inner = "unbounded" if unbounded or outer == "unbounded" else "bounded"
                why = _sequence(sre, list(body), inner)
                if why:
                    return why
            if unbounded and width[1] > 0:
                chars = _body_chars(sre, body)
                if open_chars is not None and _overlap(open_chars, chars):
                    return ("has two repetitions next to each other that can match the same characters (as in "
                            "\\d+\\d+ or (.*)@(.*)): it can take polynomial time" + advice)
                open_chars = chars
            elif low > 0 and open_chars is not None:
                chars = _body_chars(sre, body)
                if not _overlap(open_chars, chars):
                    open_chars = None
            continue
        if op == sre.BRANCH:
            branches = av[1]
            if outer == "unbounded":
                firsts = [_first(sre, b) for b in branches]
                if None in firsts or len(set(firsts)) != len(firsts):
                    return ("has alternatives a repetition can take in more than one way (as in (a|ab)*): it can "
                            "take exponential time" + advice)
            for branch in branches:
                why = _sequence(sre, list(branch), outer)
                if why:
                    return why
            open_chars = None
            continue
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            why = _sequence(sre, list(av[1]), None)
            if why:
                return why
            continue
        if op == getattr(sre, "ATOMIC_GROUP", None) or op == getattr(sre, "POSSESSIVE_REPEAT", None):
            open_chars = None  # no backtracking into it
            continue
        one = _chars(sre, op, av)
        if one is not None and open_chars is not None and not _overlap(open_chars, one):
            open_chars = None  # a character the repetition cannot take: it ends there
    return None


def redact(text: str, rules: Sequence[Rule] | None = None) -> Redacted:
    """``text`` with every secret the rules find replaced by ``[redacted]`` (the built-in rules when
    ``rules`` is None). A text with nothing to hide comes back as the same string."""
    count = 0
    for rule in _ALL_RULES if rules is None else rules:
        pieces: list[str] = []
        last = 0
        for match in _matches(rule, text):
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
