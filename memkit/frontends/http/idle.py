"""A server that ends when nobody asks: ``memkit serve --idle-exit MINUTES``.

The hook (:mod:`memkit.frontends.hook`) starts ``memkit serve`` on the vault's socket for the next
prompts and leaves it running; without an end it would hold its model's memory for as long as
the machine is up, long after the last prompt. :class:`IdleTimer` counts the requests under way
and when the last one ended; the server checks it on each of uvicorn's ticks (ten a second) and
stops once no request was under way for ``idle_s`` seconds. A request that takes longer than
that (a digest) is never cut: the time counts from its end. The clock is injected, so a test
moves it instead of waiting.
"""
from __future__ import annotations

import time
from typing import Any, Callable

__all__ = ["IdleTimer", "count_requests"]


class IdleTimer:
    """When the last request ended, and how many are under way.

    :param idle_s: how long without a request before :meth:`expired` says so.
    :param clock: seconds, monotonic (default :func:`time.monotonic`).
    """

    def __init__(self, idle_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = float(idle_s)
        self.clock = clock
        self.busy = 0
        self.last = clock()

    def begin(self) -> None:
        self.busy += 1
        self.last = self.clock()

    def end(self) -> None:
        self.busy -= 1
        self.last = self.clock()

    def expired(self) -> bool:
        """No request under way, and none ended within ``idle_s`` seconds."""
        return self.busy == 0 and self.clock() - self.last >= self.idle_s


def count_requests(app: Any, timer: IdleTimer) -> Any:
    """The ASGI application ``app`` with each HTTP request counted in ``timer`` (from its start to
    the end of its answer)."""

    async def counted(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        timer.begin()
        try:
            await app(scope, receive, send)
        finally:
            timer.end()

    return counted
