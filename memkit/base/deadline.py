"""A deadline on a whole HTTP call made with urllib (the LLM client, the embedding server's).

urllib's ``timeout`` bounds each socket operation, so a server that sends a byte a second keeps a
call going for as long as it likes. :class:`Deadline` bounds the call instead: its opener's
connections are watched, and when the time is up the socket is shut down, so whatever read was
waiting returns at once; :attr:`Deadline.expired` then tells the caller the call was too slow.

    deadline = Deadline(timeout_s)
    try:
        with deadline.opener(handlers).open(request, timeout=deadline.left()) as response:
            body = response.read()
    finally:
        deadline.close()
    if deadline.expired: ...  # too slow, whatever the read said
"""
from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request
from typing import Any

__all__ = ["Deadline"]


class Deadline:
    """The end of one call (``seconds`` from now), and the opener whose connections keep it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer: threading.Timer | None = None

    def left(self) -> float:
        """Seconds until the deadline (a little over 0 when it has passed, so a timeout stays valid)."""
        return max(0.001, self.end - time.monotonic())

    def passed(self) -> bool:
        """Whether the deadline has come (the watch cut the call, or the time is simply up)."""
        return self.expired or time.monotonic() >= self.end

    def opener(self, *handlers: Any) -> urllib.request.OpenerDirector:
        """A urllib opener (with ``handlers``, e.g. a ProxyHandler) whose connections this deadline cuts."""
        return urllib.request.build_opener(*handlers, _HTTPHandler(self), _HTTPSHandler(self))

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline comes (at once if it has)."""
        with self._lock:
            self._sockets.append(sock)
            if self._timer is None:
                self._timer = threading.Timer(max(0.0, self.end - time.monotonic()), self._expire)
                self._timer.daemon = True
                self._timer.start()

    def close(self) -> None:
        """The call is over: stop watching."""
        with self._lock:
            timer, self._timer = self._timer, None
            self._sockets.clear()
        if timer is not None:
            timer.cancel()
            timer.join()  # at once: no thread outlives the call

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                try:  # the plain socket's shutdown, under a TLS one too: any waiting read ends now
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass


def _watched(base: type[http.client.HTTPConnection], deadline: Deadline) -> Any:
    class Watched(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            deadline.watch(self.sock)

    return Watched


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: Any) -> Any:
        return self.do_open(_watched(http.client.HTTPConnection, self.deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def https_open(self, req: Any) -> Any:
        return self.do_open(_watched(http.client.HTTPSConnection, self.deadline), req)  # the default TLS context
