"""`memkit serve`'s connections (:mod:`memkit.frontends.http.api`): how long a peer may take and how many may
be open, so no slow or idle client holds the server.

uvicorn's own HTTP/1.1 protocol (h11) with three bounds, the same on every address (loopback too):

- ``header_timeout_s``: a connection must send its request's whole header within this long of
  opening (or of its first byte after a previous answer); one that sends nothing or half a header
  is closed. An idle kept-alive connection is closed after the same time.
- ``body_timeout_s``: once the header is in, the whole body must arrive within this long; a slower
  sender is closed (its request ends as 408, which nobody reads). Each connection's body is its
  own: a slow sender holds no one else (the large bodies share a budget of memory instead,
  :meth:`memkit.frontends.http.routes.Api.body_room`, which refuses at once rather than wait).
- ``max_connections``: a connection over this many open ones gets a 503 and is closed at once.

uvicorn and h11 are imported only when a server is built (:func:`bounded_protocol`).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("memkit")

__all__ = ["Bounds", "bounded_protocol"]


@dataclass(frozen=True)
class Bounds:
    """How long a peer may take, and how many may be connected (see the module docstring)."""

    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    max_connections: int = 64


def _busy_answer(limit: int) -> bytes:
    body = (json.dumps({"error": f"the server has {limit} connections open (its limit): try again shortly",
                        "status": 503}) + "\n").encode()
    return (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def bounded_protocol(bounds: Bounds) -> type:
    """uvicorn's h11 protocol class with ``bounds`` (given as ``uvicorn.Config(http=...)``)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11Protocol(H11Protocol):
        """One connection: a timer runs while the peer owes the server a header or a body."""

        def connection_made(self, transport: Any) -> None:
            self.cut_timer: Any = None
            self.owes: Any = None  # the h11 state the timer runs for (IDLE: a header; SEND_BODY: a body)
            super().connection_made(transport)
            if len(self.connections) > bounds.max_connections:
                log.warning("serve: %d connections open (max_connections): one refused", len(self.connections))
                transport.write(_busy_answer(bounds.max_connections))
                transport.close()
                return
            self.watch(h11.IDLE)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            state = self.conn.their_state
            self.watch(state if state in (h11.IDLE, h11.SEND_BODY) else None)

        def on_response_complete(self) -> None:
            super().on_response_complete()  # an idle kept-alive connection: uvicorn's keep-alive timeout
            self.watch(None)

        def connection_lost(self, exc: Exception | None) -> None:
            self.watch(None)
            super().connection_lost(exc)

        def watch(self, state: Any) -> None:
            """Run the timer of ``state`` (a header or a body still owed; None: nothing owed). A
            timer already running for the same state goes on: the bound is on the whole header
            or body, not on each piece of it."""
            if state is self.owes:
                return
            if self.cut_timer is not None:
                self.cut_timer.cancel()
                self.cut_timer = None
            self.owes = state
            if state is None or self.transport is None or self.transport.is_closing():
                return
            if state is h11.IDLE and self.cycle is not None and not self.cycle.response_complete:
                self.owes = None  # a request is being answered (its next one may be pipelined)
                return
            seconds = bounds.header_timeout_s if state is h11.IDLE else bounds.body_timeout_s
            self.cut_timer = self.loop.call_later(seconds, self.cut, "header" if state is h11.IDLE else "body",
                                                  seconds)

        def cut(self, what: str, seconds: float) -> None:
            self.cut_timer = None
            if self.transport is not None and not self.transport.is_closing():
                log.info("serve: a connection was closed: its request %s did not arrive within %g s", what, seconds)
                self.transport.close()

    return BoundedH11Protocol
