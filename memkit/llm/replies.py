"""An LLM's replies read as JSON or as text: LLMs do not reliably answer with clean JSON, so
:func:`parse_json_reply` digs the JSON out of fences, prose and a model's thinking (a bounded,
lenient reader: Python literals, trailing commas, single quotes; nothing is evaluated), and
:func:`ask_json` sends one repair request before giving up."""
from __future__ import annotations

import ast
import json
import re
from typing import Any, Callable

from ..errors import LLMError
from .client import LLM, TextChat

__all__ = ["MAX_JSON_DEPTH", "MAX_REPLY_CHARS", "ask_json", "ask_text", "parse_json_reply"]

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(
    r"```[ \t]*(?:json5?|javascript|js|python|py)?[ \t]*\r?\n?(.*?)```", re.DOTALL | re.IGNORECASE
)
_MAX_CANDIDATES = 200
MAX_REPLY_CHARS = 200_000  #: a longer reply is refused before parsing (a real one is a few kB)
MAX_JSON_DEPTH = 32  #: deeper bracket nesting is refused before parsing (conclusions are 3 deep)


def _depth(text: str) -> int:
    """The deepest bracket nesting of ``text`` (brackets inside strings counted too: an upper bound)."""
    deepest = depth = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    return deepest
        elif ch in "]})":
            depth = max(0, depth - 1)
    return deepest


def parse_json_reply(text: str) -> Any:
    """Dig a JSON value out of an LLM reply.

    Tolerates ```` ```json ```` fences, prose before and after, ``<think>`` blocks,
    single-quoted Python-style literals and trailing commas.

    :param text: the assistant message content.
    :returns: the parsed value (usually a dict or list).
    :raises LLMError: ``could not parse JSON from the LLM reply: <first 200 chars>``.
    """
    if not isinstance(text, str):
        raise LLMError(
            f"could not parse JSON from the LLM reply: not text but {type(text).__name__}"
        )
    if len(text) > MAX_REPLY_CHARS:
        raise LLMError(f"could not parse JSON from the LLM reply: it is {len(text):,} characters long, over the "
                       f"{MAX_REPLY_CHARS:,} memkit reads")
    depth = _depth(text)
    if depth > MAX_JSON_DEPTH:
        raise LLMError(f"could not parse JSON from the LLM reply: brackets nested {depth} deep "
                       f"(at most {MAX_JSON_DEPTH})")
    cleaned = _THINK.sub("", text).strip()
    candidates = [cleaned]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(cleaned)]
    for candidate in candidates:
        found, value = _loads_lenient(candidate)
        if found:
            return value
    for candidate in candidates:
        found, value = _first_balanced(candidate)
        if found:
            return value
    raise LLMError(f"could not parse JSON from the LLM reply: {text.strip()[:200]!r}")


def ask_json(
    llm: LLM,
    messages: list[dict[str, str]],
    *,
    validate: Callable[[Any], Any] | None = None,
) -> Any:
    """Ask for JSON, parse and validate it; on a bad reply send one repair request.

    :param llm: the client.
    :param messages: the conversation asking for JSON.
    :param validate: checks the parsed value and returns the cleaned value; it raises
        ``ValueError`` (or ``LLMError``, ``TypeError``, ``KeyError``) on a wrong shape.
    :returns: the (validated) value.
    :raises LLMError: if the repaired reply is still unusable, or the LLM cannot be reached.
    """
    reply = llm.chat(messages)
    try:
        return _parse_and_validate(reply, validate)
    except (LLMError, ValueError, TypeError, KeyError) as exc:
        problem = _reason(exc)
    repair = [
        *messages,
        {"role": "assistant", "content": reply},
        {
            "role": "user",
            "content": (
                f"Your reply was not valid JSON of the requested shape: {problem}. "
                "Reply again with only the JSON."
            ),
        },
    ]
    second = llm.chat(repair)
    try:
        return _parse_and_validate(second, validate)
    except (LLMError, ValueError, TypeError, KeyError) as exc:
        raise LLMError(
            "the LLM did not reply with JSON of the requested shape, even after a repair "
            f"request: {_reason(exc)}"
        ) from exc


def ask_text(llm: LLM, messages: list[dict[str, str]]) -> str:
    """Ask for plain text (a summary, an opening line), stripped: never in JSON mode, and a JSON reply
    (a server in JSON mode answers ``{"summary": …}`` whatever the prompt says) is never taken for
    it. :raises LLMError: unreachable, an empty reply, a JSON one."""
    reply = (llm.chat_text(messages) if isinstance(llm, TextChat) else llm.chat(messages)).strip()
    if not reply or (reply[:1] in "{[" and reply[-1:] in "}]" and _loads_lenient(reply)[0]):
        raise LLMError(f"the LLM answered {'JSON where text was asked for: ' + repr(reply[:80]) if reply else 'nothing'}")
    return reply


def _parse_and_validate(reply: str, validate: Callable[[Any], Any] | None) -> Any:
    value = parse_json_reply(reply)
    return validate(value) if validate is not None else value


def _reason(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text or type(exc).__name__


def _loads_lenient(text: str) -> tuple[bool, Any]:
    """Parse strict JSON, then JSON without trailing commas, then a Python literal."""
    if not text:
        return False, None
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        pass
    if text[0] not in "{[":
        return False, None
    try:
        return True, json.loads(_normalise(text, python=False))
    except (ValueError, RecursionError):
        pass
    try:
        value = ast.literal_eval(_normalise(text, python=True))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None
    if not isinstance(value, (dict, list)):
        return False, None
    return True, _plain(value)


def _plain(value: Any) -> Any:
    """Turn tuples and sets from a Python literal into lists, like JSON would have them."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(v) for v in value]
    return value


_PY_WORDS = {"true": "True", "false": "False", "null": "None"}


def _normalise(text: str, *, python: bool) -> str:
    """Drop trailing commas outside strings; for ``python``, map true/false/null to Python."""
    out: list[str] = []
    i, n = 0, len(text)
    quote = ""
    while i < n:
        ch = text[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = ""
            i += 1
            continue
        if ch in "\"'":
            quote = ch
        elif ch == ",":
            j = i + 1
            while j < n and text[j].isspace():
                j += 1
            if j < n and text[j] in "}]":
                i += 1
                continue
        elif python and ch.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_PY_WORDS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _first_balanced(text: str) -> tuple[bool, Any]:
    """Try each balanced ``{...}`` or ``[...]`` span in order; return the first that parses."""
    tried = 0
    for start, ch in enumerate(text):
        if ch not in "{[":
            continue
        tried += 1
        if tried > _MAX_CANDIDATES:
            break
        end = _match_close(text, start)
        if end is None:
            continue
        found, value = _loads_lenient(text[start : end + 1])
        if found:
            return True, value
    return False, None


def _match_close(text: str, start: int) -> int | None:
    """Index of the bracket closing the one at ``start``, skipping quoted strings."""
    stack: list[str] = []
    closing = {"{": "}", "[": "]"}
    quote = ""
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            # An apostrophe in prose ("it's") is not a string start; only quote after a delimiter.
            prev = text[i - 1] if i > start else ""
            if ch == '"' or prev in "{[,: \t\r\n":
                quote = ch
        elif ch in closing:
            stack.append(closing[ch])
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return i
        i += 1
    return None
