"""memkit's HTTP requests (the LLM client, the embedding server's client) and what a loopback
address is (those clients and the HTTP API's checks).

One rule for every request: an address on this machine — ``localhost`` (and ``*.localhost``), any
of 127.0.0.0/8, ``::1`` — never goes through a proxy from the environment (``http_proxy``…), which
could not reach it; and the whole call, not each read, is bounded by its :class:`Deadline`.

    deadline = Deadline(timeout_s)
    try:
        with open_within(request, deadline) as response:
            body = response.read()
    finally:
        deadline.close()
"""
from __future__ import annotations

import ipaddress
import urllib.parse
import urllib.request
from typing import Any

from .deadline import Deadline

__all__ = ["is_loopback", "handlers_for", "open_within"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, ``[::1]`` with or without brackets) is this
    machine: ``localhost`` or a ``*.localhost`` name (RFC 6761), any 127.0.0.0/8 address, ``::1``."""
    host = host.strip().lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def handlers_for(url: str) -> list[Any]:
    """The urllib handlers a request to ``url`` needs: no proxy for a loopback host."""
    host = urllib.parse.urlsplit(url).hostname or ""
    return [urllib.request.ProxyHandler({})] if is_loopback(host) else []


def open_within(request: urllib.request.Request, deadline: Deadline) -> Any:
    """Open ``request`` (urllib's response, a context manager) with the connection cut when
    ``deadline`` comes, through the environment's proxy unless its host is a loopback one.
    Raises what urllib raises."""
    return deadline.opener(*handlers_for(request.full_url)).open(request, timeout=deadline.left())
