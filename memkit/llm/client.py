"""A small client for the LLM that digests transcripts and names topics.

Two ways to reach a model, both configured under ``llm:`` in memkit.yaml:

- ``base_url`` + ``model`` (+ ``api_key_env``): any OpenAI-compatible chat endpoint (Ollama,
  llama.cpp server, vLLM, LM Studio, OpenAI). Standard library ``urllib`` only, no SDK.
- ``command``: a shell command that reads the conversation as plain text on stdin and prints
  the answer on stdout.

Nothing secret leaves the process: both clients pass every message through the vault's redaction
(:mod:`memkit.formats.redact`: the built-in rules and the user's own patterns) in ``chat()``, the
one place a request is built, and :func:`guard` wraps an LLM a caller hands in the same way.

LLMs do not reliably answer with clean JSON: :mod:`memkit.llm.replies` reads their replies.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Mapping, NoReturn, Protocol, Sequence, runtime_checkable

from ..base.deadline import Deadline
from ..base.http import open_within
from ..config import LLMSettings, check_url
from ..errors import LLMError
from ..formats.redact import Rule, redact

__all__ = [
    "LLM",
    "RedactingLLM",
    "choose",
    "guard",
    "redact_messages",
    "TextChat",
    "LLMSettings",
    "HTTPChatLLM",
    "CommandLLM",
    "make_llm",
]

Messages = Sequence[Mapping[str, str]]

# Status codes worth one more try: rate limiting and a server or proxy having a bad moment.
_TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
_MAX_BODY_BYTES = 64 * 1024 * 1024
_ERROR_SNIPPET = 300


class LLM(Protocol):
    """Anything that can answer a chat: one method, so a test double is a few lines."""

    def chat(self, messages: list[dict[str, str]]) -> str:
        """Send the conversation and return the assistant message content.

        :param messages: OpenAI-style messages, each ``{"role": ..., "content": ...}``.
        """
        ...


@runtime_checkable
class TextChat(Protocol):
    """An :class:`LLM` that can be told to answer in plain text (a summary, an opening line) where
    it would otherwise be asked for JSON (:class:`HTTPChatLLM` in JSON mode): the one optional
    capability memkit uses (:func:`ask_text`); an LLM without it is asked with :meth:`LLM.chat`."""

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        """Like :meth:`LLM.chat`, never asking for a JSON reply."""
        ...


class _Retryable(Exception):
    """A failure worth one more try; the message is what the user sees if it happens twice."""


class _ResponseFormatRejected(Exception):
    """The server does not understand ``response_format``."""


class HTTPChatLLM:
    """An OpenAI-compatible ``/chat/completions`` endpoint, over urllib."""

    #: Pause before the one retry on a transient failure.
    retry_delay_s: float = 0.5

    def __init__(self, settings: LLMSettings, env: Mapping[str, str] | None = None, *,
                 rules: Sequence[Rule] | None = None) -> None:
        """Check the settings and read the API key.

        :param settings: needs ``base_url`` and ``model``.
        :param env: where to look up ``settings.api_key_env``; defaults to ``os.environ``.
        :param rules: the redaction every message goes through before it is sent (the vault's:
            ``config.redact.rules``); None: the built-in rules.
        :raises LLMError: on a missing URL or model, a URL that is not http(s), or an unset key.
        """
        self.rules = tuple(rules) if rules is not None else None
        if not settings.base_url or not settings.model:
            raise LLMError("llm.base_url and llm.model are both needed to reach an LLM server")
        check_url(settings.base_url)
        self.settings = settings
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.json_mode = settings.json_mode
        self._api_key: str | None = None
        if settings.api_key_env:
            environ = os.environ if env is None else env
            key = environ.get(settings.api_key_env, "")
            if not key.strip():
                raise LLMError(
                    f"environment variable {settings.api_key_env} (llm.api_key_env) is not set"
                )
            self._api_key = key.strip()

    def __repr__(self) -> str:
        return f"HTTPChatLLM(url={self.url!r}, model={self.settings.model!r})"

    def chat(self, messages: list[dict[str, str]], *, json_mode: bool | None = None) -> str:
        """Send the conversation and return the assistant message content (``json_mode=False``:
        never asking for JSON, whatever ``llm.json_mode`` says: :func:`ask_text`).

        Retries once on a dropped connection, a truncated body, 429 and 5xx. If the server
        rejects ``response_format``, retries without it and stops sending it from then on.
        ``timeout_s`` bounds the whole call, tries included (:class:`memkit.base.deadline.Deadline`):
        a server that sends its answer a byte at a time is cut when the time is up.

        :param messages: OpenAI-style messages, each ``{"role": ..., "content": ...}``.
        :raises LLMError: the server is unreachable, too slow, refused, or answered nonsense.
        """
        payload: dict[str, Any] = {
            "model": self.settings.model,
            "messages": redact_messages(messages, self.rules),  # never a secret out (docs/privacy.md)
            "temperature": self.settings.temperature,
        }
        if self.json_mode if json_mode is None else json_mode:
            payload["response_format"] = {"type": "json_object"}
        body: bytes | None
        deadline = Deadline(self.settings.timeout_s)
        try:
            body = self._send(payload, deadline)
        except _ResponseFormatRejected:
            body = None
        if body is None:
            self.json_mode = False
            del payload["response_format"]
            body = self._send(payload, deadline)
        return self._content(body)

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        """:meth:`chat` without JSON mode (:class:`TextChat`)."""
        return self.chat(messages, json_mode=False)

    def _send(self, payload: dict[str, Any], deadline: Deadline) -> bytes:
        """POST the payload, with one retry on a transient failure; return the 200 body."""
        data = json.dumps(payload).encode("utf-8")
        for attempt in (1, 2):
            try:
                return self._post_within(data, deadline, with_response_format="response_format" in payload)
            except _Retryable as exc:
                if attempt == 2:
                    raise LLMError(self._redact(str(exc))) from None
                time.sleep(self.retry_delay_s)
        raise AssertionError("unreachable")

    def _post_within(self, data: bytes, deadline: Deadline, *, with_response_format: bool) -> bytes:
        """One try, cut at the deadline: whatever the cut made of the reply, it is 'too slow'."""
        too_slow = f"LLM at {self.url} did not answer within {deadline.seconds:g} s (llm.timeout_s)"
        if deadline.passed():
            raise LLMError(too_slow)
        try:
            body = self._post_once(data, deadline, with_response_format=with_response_format)
        except (LLMError, _Retryable, _ResponseFormatRejected):
            if deadline.expired:
                raise LLMError(too_slow) from None
            raise
        finally:
            deadline.close()
        if deadline.expired:
            raise LLMError(too_slow)
        return body

    def _post_once(self, data: bytes, deadline: Deadline, *, with_response_format: bool) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        too_slow = f"LLM at {self.url} did not answer within {deadline.seconds:g} s (llm.timeout_s)"
        try:
            with open_within(request, deadline) as response:  # a server on this machine: no proxy
                return _read_limited(response)
        except urllib.error.HTTPError as exc:
            self._raise_for_status(exc, with_response_format=with_response_format)
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise LLMError(too_slow) from None
            if isinstance(reason, ConnectionResetError):
                raise _Retryable(f"LLM at {self.url} dropped the connection: {reason}") from None
            raise LLMError(
                f"cannot reach the LLM at {self.url}: {reason}; is the server running?"
            ) from None
        except TimeoutError:
            raise LLMError(too_slow) from None
        except http.client.IncompleteRead as exc:
            raise _Retryable(
                f"LLM at {self.url} closed the connection before the reply was complete "
                f"({len(exc.partial)} bytes received)"
            ) from None
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError) as exc:
            # RemoteDisconnected (closed before the status line) is a ConnectionResetError.
            raise _Retryable(f"LLM at {self.url} dropped the connection: {exc}") from None
        except (http.client.HTTPException, OSError) as exc:
            problem = self._redact(str(exc))
            raise LLMError(f"cannot talk to the LLM at {self.url}: {problem}") from None
        raise AssertionError("unreachable")

    def _raise_for_status(
        self, exc: urllib.error.HTTPError, *, with_response_format: bool
    ) -> NoReturn:
        status = exc.code
        try:
            raw = exc.read(64 * 1024)
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        detail = self._redact(_error_detail(raw))
        said = f": {detail}" if detail else ""
        if (
            with_response_format
            and status in (400, 422)
            and re.search(
                r"response[_ ]format|json_object", raw.decode("utf-8", "replace"), re.IGNORECASE
            )
        ):
            raise _ResponseFormatRejected() from None
        if status in _TRANSIENT_STATUSES:
            raise _Retryable(f"LLM at {self.url} answered HTTP {status} twice{said}") from None
        if status in (401, 403):
            if self.settings.api_key_env:
                hint = f"check the API key in ${self.settings.api_key_env}"
            else:
                hint = "set llm.api_key_env to the name of an environment variable holding the key"
            raise LLMError(
                f"LLM at {self.url} refused the request (HTTP {status}): {hint}{said}"
            ) from None
        if status == 404:
            raise LLMError(
                f"LLM at {self.url} answered HTTP 404: check llm.base_url (expects the /v1 prefix "
                f"for most servers) and llm.model ({self.settings.model!r}){said}"
            ) from None
        raise LLMError(f"LLM at {self.url} answered HTTP {status}{said}") from None

    def _content(self, body: bytes) -> str:
        """Pull ``choices[0].message.content`` out of a 200 body."""
        unexpected = f"unexpected reply from {self.url}"
        try:
            reply = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise LLMError(f"{unexpected}: not JSON: {_snippet(body)!r}") from None
        if isinstance(reply, dict) and "error" in reply and "choices" not in reply:
            problem = self._redact(_error_detail(body))
            raise LLMError(f"LLM at {self.url} returned an error: {problem}")
        try:
            message = reply["choices"][0]["message"]
            content = message["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError(
                f"{unexpected}: no choices[0].message.content in {_snippet(body)!r}"
            ) from None
        if isinstance(content, list):
            # Some servers send content parts: [{"type": "text", "text": "..."}].
            content = "".join(
                part.get("text", "") for part in content if isinstance(part, dict)
            )
        if not isinstance(content, str):
            raise LLMError(f"{unexpected}: the message has no text content: {_snippet(body)!r}")
        return content

    def _redact(self, text: str) -> str:
        """Remove the API key from text a server or library produced."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return text


class CommandLLM:
    """A shell command that reads the conversation on stdin and prints the answer on stdout."""

    def __init__(self, settings: LLMSettings, env: Mapping[str, str] | None = None, *,
                 rules: Sequence[Rule] | None = None) -> None:
        """Remember the command.

        :param settings: needs ``command``; ``timeout_s`` bounds each call.
        :param env: environment for the command; defaults to the current one.
        :param rules: the redaction the conversation goes through before the command reads it
            (None: the built-in rules).
        :raises LLMError: if no command is set.
        """
        self.rules = tuple(rules) if rules is not None else None
        if not settings.command:
            raise LLMError("llm.command is not set")
        self.settings = settings
        self.env = dict(env) if env is not None else None

    def __repr__(self) -> str:
        return f"CommandLLM(command={self.settings.command!r})"

    def chat(self, messages: list[dict[str, str]]) -> str:
        """Run the command with the conversation as plain text on stdin.

        The text is one block per message, ``SYSTEM:\\n...\\n\\nUSER:\\n...``.

        :param messages: OpenAI-style messages, each ``{"role": ..., "content": ...}``.
        :returns: the command's stdout, stripped.
        :raises LLMError: the command cannot start, exits non-zero, prints nothing or is too slow.
        """
        command = self.settings.command
        assert command
        prompt = render_messages(redact_messages(messages, self.rules))  # docs/privacy.md
        timeout = self.settings.timeout_s
        returncode, stdout, stderr = run_bounded(command, prompt.encode("utf-8"), timeout, self.env)
        err = stderr.decode("utf-8", errors="replace").strip()
        if returncode != 0:
            tail = err[-500:] if err else "(no output on stderr)"
            raise LLMError(
                f"llm.command {command!r} exited with status {returncode}: {tail}"
            )
        answer = stdout.decode("utf-8", errors="replace").strip()
        if not answer:
            raise LLMError(f"llm.command {command!r} printed nothing on stdout")
        return answer


def render_messages(messages: Messages) -> str:
    """Render chat messages as plain text for a command: ``ROLE:\\ncontent`` blocks.

    :param messages: OpenAI-style messages, each ``{"role": ..., "content": ...}``.
    """
    blocks = [f"{str(m.get('role', 'user')).upper()}:\n{m.get('content', '')}" for m in messages]
    return "\n\n".join(blocks) + "\n"


def make_llm(settings: LLMSettings | None, env: Mapping[str, str] | None = None, *,
             rules: Sequence[Rule] | None = None) -> LLM | None:
    """Build the client the settings describe.

    :param settings: from :meth:`LLMSettings.from_config`; ``None`` means no LLM.
    :param env: environment for the API key (HTTP) or the command; defaults to ``os.environ``.
    :param rules: the redaction of every request (the vault's ``config.redact.rules``; None: built-in).
    :returns: a :class:`CommandLLM`, an :class:`HTTPChatLLM`, or ``None``.
    :raises LLMError: if the settings cannot work.
    """
    if settings is None:
        return None
    settings.check()
    if settings.command:
        return CommandLLM(settings, env=env, rules=rules)
    return HTTPChatLLM(settings, env=env, rules=rules)


def redact_messages(messages: Messages, rules: Sequence[Rule] | None) -> list[dict[str, str]]:
    """A copy of ``messages`` with the secrets ``rules`` find (None: the built-in rules) replaced by
    ``[redacted]`` in every text but the role: what a request may carry out of the process."""
    return [{k: redact(v, rules).text if isinstance(v, str) and k != "role" else v for k, v in m.items()}
            for m in messages]


class RedactingLLM:
    """An LLM a caller handed in (``llm=``), its requests redacted by the vault's rules first."""

    def __init__(self, llm: LLM, rules: Sequence[Rule]) -> None:
        self.llm = llm
        self.rules = tuple(rules) if rules is not None else None

    def __repr__(self) -> str:
        return f"RedactingLLM({self.llm!r})"

    def chat(self, messages: list[dict[str, str]]) -> str:
        return self.llm.chat(redact_messages(messages, self.rules))

    def chat_text(self, messages: list[dict[str, str]]) -> str:
        hidden = redact_messages(messages, self.rules)
        return self.llm.chat_text(hidden) if isinstance(self.llm, TextChat) else self.llm.chat(hidden)


def choose(choice: Any, settings: LLMSettings | None, rules: Sequence[Rule]) -> LLM | None:
    """The LLM a flow uses (``choice``: :data:`memkit.llm.LLMChoice`): ``"auto"`` the one ``settings``
    describe, else the one handed in (None: none), its requests redacted by ``rules`` either way."""
    return make_llm(settings, rules=rules) if isinstance(choice, str) else guard(choice, rules)


def guard(llm: LLM | None, rules: Sequence[Rule]) -> LLM | None:
    """``llm`` with every request redacted by ``rules`` (a vault's): memkit's own clients built with
    those rules as they are, any other LLM wrapped in a :class:`RedactingLLM`."""
    if llm is None or (isinstance(llm, (HTTPChatLLM, CommandLLM, RedactingLLM)) and llm.rules == tuple(rules)):
        return llm
    return RedactingLLM(llm, rules)


# ---------------------------------------------------------------------------- helpers




def _read_limited(response: Any) -> bytes:
    """Read a body of bounded size; a body shorter than its Content-Length is incomplete."""
    body = bytes(response.read(_MAX_BODY_BYTES + 1))
    if len(body) > _MAX_BODY_BYTES:
        raise LLMError(f"the LLM reply is larger than {_MAX_BODY_BYTES // (1024 * 1024)} MB")
    declared = response.headers.get("Content-Length", "")
    # read(amt) returns what arrived before the server closed, without raising IncompleteRead.
    if declared.strip().isdigit() and len(body) < int(declared):
        raise http.client.IncompleteRead(body, int(declared) - len(body))
    return body


def _snippet(body: bytes | str) -> str:
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    return text[:_ERROR_SNIPPET] + ("..." if len(text) > _ERROR_SNIPPET else "")


def _error_detail(body: bytes) -> str:
    """The server's own words: ``error.message`` of an OpenAI-style body, else the text."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _snippet(body)
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data.get("message")))
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _snippet(error["message"])
        if isinstance(error, str):
            return _snippet(error)
    return _snippet(body)


MAX_COMMAND_OUTPUT = 4 * 1024 * 1024  #: bytes of a command's stdout (and stderr) kept
PIPE_GRACE_S = 1.0  #: after the command exits, how long its pipes may stay open (a background child)


def run_bounded(command: str, data: bytes, timeout: float, env: Mapping[str, str] | None = None
                ) -> tuple[int, bytes, bytes]:
    """Run a shell command with ``data`` on stdin; ``timeout`` bounds the whole call.

    The command runs in its own process group, killed whole at the deadline. A process it left in
    the background (even in a session of its own, ``setsid cmd &``) may keep the pipes open after
    the command exited: memkit stops reading PIPE_GRACE_S later and uses what was printed.

    :returns: (exit status, stdout, stderr), each at most ``MAX_COMMAND_OUTPUT`` bytes.
    :raises LLMError: the command cannot start or did not finish within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    try:
        process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=dict(env) if env is not None else None,
                                   start_new_session=os.name == "posix")
    except OSError as exc:
        raise LLMError(f"cannot run llm.command {command!r}: {exc}") from None
    outputs: tuple[list[bytes], list[bytes]] = ([], [])

    def pump(stream: Any, sink: list[bytes]) -> None:
        size = 0
        try:
            while True:
                chunk = stream.read1(65536)
                if not chunk:
                    return
                if size < MAX_COMMAND_OUTPUT:
                    sink.append(chunk[: MAX_COMMAND_OUTPUT - size])
                    size += len(chunk)
        except (OSError, ValueError):
            return

    def feed() -> None:
        try:
            process.stdin.write(data)  # type: ignore[union-attr]
            process.stdin.close()  # type: ignore[union-attr]
        except (OSError, ValueError):
            pass

    threads = [threading.Thread(target=pump, args=(process.stdout, outputs[0]), daemon=True),
               threading.Thread(target=pump, args=(process.stderr, outputs[1]), daemon=True),
               threading.Thread(target=feed, daemon=True)]
    for thread in threads:
        thread.start()
    try:
        returncode = process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill_tree(process)
        process.wait()
        _join(threads, 0.2)  # pipes the killed group held close now; one a grandchild holds is left
        raise LLMError(f"llm.command {command!r} did not answer within {timeout:g} s (llm.timeout_s)") from None
    except BaseException:
        _kill_tree(process)
        raise
    _join(threads, min(PIPE_GRACE_S, max(0.0, deadline - time.monotonic())))
    _kill_tree(process)  # whatever it left in its own process group
    return returncode, b"".join(outputs[0]), b"".join(outputs[1])


def _join(threads: list[threading.Thread], seconds: float) -> None:
    """Wait up to ``seconds`` in all for the pipe threads (a background grandchild may hold a pipe)."""
    end = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """Kill the command and anything it started (its process group on POSIX)."""
    try:
        if os.name == "posix":
            os.killpg(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except (ProcessLookupError, PermissionError):
        pass
