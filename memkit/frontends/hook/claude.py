"""Claude Code's hook: its JSON on stdin, the memory block on stdout as ``additionalContext``.

Claude Code runs a command hook with one JSON object on stdin (``session_id``, ``transcript_path``,
``cwd``, ``permission_mode``, ``hook_event_name``; ``prompt`` for ``UserPromptSubmit``, ``source``
— ``startup``, ``resume``, ``clear`` or ``compact`` — for ``SessionStart``) and reads, from a hook
that exits 0, a JSON object on stdout::

    {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "..."}}

whose ``additionalContext`` joins what the model sees before the prompt (docs/hooks.md).

What memkit answers: the memory block (``memkit context``) for the prompt, in the context session
``claude-code:<session_id>``, so memories accumulate and a detected topic sticks over the session
(the ``claude-code:`` prefix keeps it a context session only: no conversation file is started in
``sessions/``, as Claude Code keeps its own transcript). ``SessionStart`` gives the block without a
message (the profile, what is due, the recent topics, the instructions); after ``clear`` or
``compact`` the session's memories are forgotten first, so they are given again.

Never a failed prompt: :func:`answer_claude_code` never raises. Any problem (bad input, no vault, a
broken server, a library error) is an answer with no context and a one-line note for stderr; the
command exits 0 (exit 2 would block the prompt).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ...base.lazy_re import lazy
from ...base.limits import MAX_MESSAGE_CHARS
from .warm import NoServer, ServerFailed, ask_cold, ask_warm, server_ready, socket_path, start_server

__all__ = ["HookAnswer", "HookRequest", "answer_claude_code", "parse_hook_input", "find_root", "EVENTS",
           "SESSION_PREFIX", "MAX_CONTEXT_CHARS", "DEFAULT_BUDGET"]

EVENTS = ("UserPromptSubmit", "SessionStart")  #: the events memkit answers
SESSION_PREFIX = "claude-code:"  #: a Claude Code session's context session is named so
MAX_CONTEXT_CHARS = 9_500  #: Claude Code shows a longer additionalContext only as a preview (10,000)
DEFAULT_BUDGET = 1500  #: tokens of memory block per prompt
RESET_SOURCES = ("clear", "compact")  #: a SessionStart after these gives the session's memories again
_SAFE_ID = lazy(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class HookRequest:
    """What a hook's input asks memkit for."""

    event: str  #: ``UserPromptSubmit`` or ``SessionStart``
    message: str  #: the prompt ("" at a session's start)
    session: str | None  #: the context session (``claude-code:<session_id>``), None without an id
    reset: bool  #: forget the session's accumulated memories first
    cwd: str | None  #: Claude Code's working folder (where a vault is looked for when none is named)


@dataclass
class HookAnswer:
    """What the hook command prints: ``stdout`` (JSON, or "" for no context) and notes for stderr."""

    stdout: str
    notes: list[str] = field(default_factory=list)  #: problems: always said on stderr
    info: list[str] = field(default_factory=list)  #: how it went: said with --verbose
    how: str = "none"  #: ``warm``, ``cold`` or ``none`` (no context given)
    ms: float = 0.0  #: how long the answer took


def parse_hook_input(text: str) -> HookRequest:
    """The request in Claude Code's hook JSON. :raises ValueError: not a hook input memkit answers."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"the hook input is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("the hook input is not a JSON object")
    event = data.get("hook_event_name")
    if event not in EVENTS:
        raise ValueError(f"hook_event_name {event!r} is not one memkit answers ({', '.join(EVENTS)})")
    prompt = data.get("prompt") if event == "UserPromptSubmit" else ""
    if not isinstance(prompt, str):
        raise ValueError("the UserPromptSubmit input has no prompt text")
    message = " ".join(prompt.split())[:MAX_MESSAGE_CHARS]  # the library keeps (and searches) this much
    sid = data.get("session_id")
    session = None
    if isinstance(sid, str) and sid.strip():
        sid = sid.strip()
        session = SESSION_PREFIX + (sid if _SAFE_ID.fullmatch(sid) else hashlib.sha256(sid.encode()).hexdigest()[:16])
    reset = event == "SessionStart" and data.get("source") in RESET_SOURCES
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    return HookRequest(event, message, session, reset, cwd)


def find_root(explicit: str | None, env: str | None, cwd: str | None) -> Path:
    """The vault: ``explicit`` (``--vault``), then ``env`` (``$MEMKIT_VAULT``), then the nearest
    parent of ``cwd`` with memkit.yaml — the rule of ``memkit --vault``, without loading the library.

    :raises ValueError: no vault there."""
    for given, source in ((explicit, "--vault"), (env, "MEMKIT_VAULT")):
        if given:
            path = Path(given).expanduser()
            if not (path / "memkit.yaml").is_file() and not (path / "topics").is_dir():
                raise ValueError(f"{path} ({source}) is not a memkit vault")
            return path.resolve()
    here = Path(cwd or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "memkit.yaml").is_file():
            return folder
    raise ValueError(f"no vault found in {here} or its parents: install the hook with --vault PATH")


def _output(event: str, text: str) -> str:
    if len(text) > MAX_CONTEXT_CHARS:  # cut at a line, and say so
        cut = text.rfind("\n", 0, MAX_CONTEXT_CHARS - 40)
        text = text[:cut if cut > 0 else MAX_CONTEXT_CHARS - 40] + "\n(the memory block was cut here)\n"
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False) + "\n"


def answer_claude_code(stdin_text: str, *, vault: str | None = None, env_vault: str | None = None,
                       budget: int = DEFAULT_BUDGET, start: bool = True, wait_s: float = 5.0,
                       token: str | None = None,
                       cold: Callable[[Path, dict[str, Any]], dict[str, Any]] = ask_cold) -> HookAnswer:
    """The hook's answer to Claude Code's input ``stdin_text``: warm from the vault's server when
    one listens (:mod:`memkit.frontends.hook.warm`), else one is started (``start``) and this
    prompt is answered cold. Never raises (see the module docstring).

    :param vault: the vault (``--vault``); ``env_vault``: ``$MEMKIT_VAULT``; else the input's cwd's.
    :param budget: tokens of memory block; ``wait_s``: how long a listening server may take;
        ``token``: the server's bearer token, if it needs one.
    """
    began = time.perf_counter()
    answer = HookAnswer("")
    try:
        request = parse_hook_input(stdin_text)
        root = find_root(vault, env_vault, request.cwd)
        body = {"message": request.message, "session": request.session, "budget_tokens": budget,
                "reset": request.reset}
        if request.session is None:
            del body["session"]
        result: dict[str, Any] | None = None
        sock = socket_path(root)
        if sock is None:
            answer.info.append(f"the vault's path is too long for a Unix socket ({root}): answered cold")
        else:
            try:
                result = ask_warm(sock, "/context", body, timeout=wait_s, token=token)
                answer.how = "warm"
                server_ready(root)
            except NoServer:
                if start:
                    pid = start_server(root, sock)
                    answer.info.append(f"started memkit serve on {sock} (pid {pid}) for the next prompts"
                                        if pid is not None else "a memkit serve is starting for the next prompts")
            except ServerFailed as exc:
                answer.notes.append(f"{exc}: answered cold")
        if result is None:
            result = cold(root, body)
            answer.how = "cold"
        text = result.get("text")
        if not isinstance(text, str):
            raise ValueError("the memory block has no text")
        answer.stdout = _output(request.event, text)
    except Exception as exc:  # never block or break the prompt: no context, a note on stderr
        answer.stdout, answer.how = "", "none"
        answer.notes.append(f"no memory context: {exc or type(exc).__name__}")
    answer.ms = (time.perf_counter() - began) * 1000
    return answer
