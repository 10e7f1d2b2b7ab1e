"""Where a hook's memory block comes from: a warm ``memkit serve`` on the vault's Unix socket, one
started on demand, or this process (cold).

A hook runs once per prompt, as a new process. Loading memkit's models and opening the index in it
costs most of a second (issue 44); a warm server answers the same request in milliseconds. So:

1. **warm**: ``POST /context`` to ``memkit serve --socket VAULT/.memkit/serve.sock``
   (:func:`socket_path`), when a server listens there (one a person started, or one started by an
   earlier prompt). A server still loading its model answers once it is ready, within ``wait_s``.
2. **started on demand**: nothing listens: :func:`start_server` starts ``memkit serve`` on that
   socket, detached (its own session, its output in ``.memkit/serve.log``, its pid in
   ``.memkit/serve.pid``), so the *next* prompt is warm; this one is answered cold. A marker
   (``.memkit/serve.starting``, O_EXCL, stale after :data:`START_GRACE_S`) keeps two prompts that
   arrive together from starting two servers. It stops after :data:`IDLE_EXIT_MINUTES` with no
   request (``memkit serve --idle-exit``), its socket removed: the next prompt starts it again.
3. **cold**: :func:`ask_cold` builds the block in this process through :class:`memkit.Vault`, the
   same call the server makes, so the answer is the same.

Only the standard library is imported here; the facade (:mod:`memkit.vault`, numpy and the models
with it) only on the cold path, so a warm answer costs a Python start and one request.
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["NoServer", "ServerFailed", "socket_path", "ask_warm", "ask_cold", "serve_command", "start_server",
           "SOCKET_NAME", "START_GRACE_S", "MAX_SOCKET_PATH", "IDLE_EXIT_MINUTES"]

SOCKET_NAME = "serve.sock"  #: in the vault's .memkit/: where the hook looks for a warm server
PID_NAME = "serve.pid"
LOG_NAME = "serve.log"
STARTING_NAME = "serve.starting"
IDLE_EXIT_MINUTES = 30  #: a server the hook started stops after this long with no request (its model's memory back)
START_GRACE_S = 60.0  #: a start marker older than this is stale (the server it announced never came up)
MAX_SOCKET_PATH = 100  #: sun_path holds 108 bytes on Linux, 104 on macOS: a longer path has no warm server


class NoServer(Exception):
    """Nothing listens on the socket (no file, or a file no server answers on)."""


class ServerFailed(Exception):
    """A server listens but gave no usable answer (an error status, a timeout, bad JSON)."""


def socket_path(root: Path) -> Path | None:
    """The socket the hook's server listens on, ``VAULT/.memkit/serve.sock``; None when that path
    is too long for a Unix socket (the hook then answers cold every time, and says so)."""
    path = Path(root) / ".memkit" / SOCKET_NAME
    return path if len(os.fsencode(str(path))) <= MAX_SOCKET_PATH else None


class _UnixConnection(http.client.HTTPConnection):
    """http.client over a Unix socket (the Host header says ``localhost``)."""

    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.unix_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def ask_warm(sock: Path, route: str, body: dict[str, Any], *, timeout: float = 5.0,
             token: str | None = None) -> dict[str, Any]:
    """``POST route`` with the JSON ``body`` to the server on ``sock``; its JSON answer.

    :raises NoServer: nothing listens there. :raises ServerFailed: no usable answer within ``timeout``.
    """
    conn = _UnixConnection(sock, timeout)
    try:
        try:
            conn.connect()
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            raise NoServer(f"no server on {sock} ({exc.strerror or exc})") from None
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn.request("POST", route, body=json.dumps(body).encode("utf-8"), headers=headers)
            response = conn.getresponse()
            data = response.read()
        except (TimeoutError, socket.timeout):
            raise ServerFailed(f"the server on {sock} gave no answer within {timeout:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise ServerFailed(f"the server on {sock} failed: {exc}") from None
    finally:
        conn.close()
    try:
        answer = json.loads(data)
    except ValueError:
        raise ServerFailed(f"the server on {sock} answered {response.status} with no JSON") from None
    if response.status != 200 or not isinstance(answer, dict):
        error = answer.get("error") if isinstance(answer, dict) else None
        raise ServerFailed(f"the server on {sock} answered {response.status}: {error or data[:200]!r}")
    return answer


def ask_cold(root: Path, body: dict[str, Any]) -> dict[str, Any]:
    """The answer :func:`ask_warm` would get from ``POST /context``, built in this process.

    :raises MemkitError: what the library raises (no vault, unwritable session state…).
    """
    from ...vault import Vault  # the cold path alone loads the library (numpy, the models)

    return Vault(root).context(body["message"], session=body.get("session"), budget_tokens=body["budget_tokens"],
                               reset=bool(body.get("reset"))).to_dict()


def serve_command(root: Path, sock: Path, python: str | None = None) -> list[str]:
    """The command that serves ``root`` on ``sock`` (what :func:`start_server` runs); it stops
    after :data:`IDLE_EXIT_MINUTES` with no prompt (the next one starts it again)."""
    return [python or sys.executable, "-m", "memkit", "--vault", str(root), "serve", "--socket", str(sock),
            "--idle-exit", f"{IDLE_EXIT_MINUTES:g}"]


def start_server(root: Path, sock: Path, *, now: float | None = None) -> int | None:
    """Start ``memkit serve`` on ``sock``, detached from this process (it outlives the hook), unless
    another start is under way (:data:`START_GRACE_S`). Its output goes to ``.memkit/serve.log``.

    :returns: the server's pid (also written to ``.memkit/serve.pid``), or None when another
        prompt is starting one. :raises OSError: the process could not be started.
    """
    state = Path(root) / ".memkit"
    state.mkdir(exist_ok=True)
    marker = state / STARTING_NAME
    now = time.time() if now is None else now
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            if now - marker.stat().st_mtime < START_GRACE_S:
                return None
        except FileNotFoundError:
            pass
        marker.unlink(missing_ok=True)  # stale: the server it announced never came up
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    with open(state / LOG_NAME, "ab") as log:
        proc = subprocess.Popen(serve_command(root, sock), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd=str(root), start_new_session=True, close_fds=True)
    (state / PID_NAME).write_text(f"{proc.pid}\n", encoding="ascii")
    return proc.pid


def server_ready(root: Path) -> None:
    """A warm answer came: the start marker, if any, has done its work."""
    (Path(root) / ".memkit" / STARTING_NAME).unlink(missing_ok=True)
