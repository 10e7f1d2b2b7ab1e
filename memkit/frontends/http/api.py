"""`memkit serve`: the vault as a small local HTTP API, JSON in and out, described by OpenAPI.

Routes (``GET /openapi.json`` describes each; the table of operations, :mod:`memkit.frontends.operations`,
declares them, :mod:`memkit.frontends.http.spec` makes their schemas and
:mod:`memkit.frontends.http.routes` runs each): ``GET /search``, ``POST /add``, ``POST /edit``,
``POST /forget``, ``GET /topics``, ``GET /topics/{topic}``, ``GET /recent``, ``POST /context``,
``GET /pending``, ``POST /pending/done``, ``GET /proactive``, ``GET /stats``, ``GET /busy``,
``GET /index`` and ``POST /index``, ``GET /health`` (for a supervisor: ok, the vault, the index's state); the conversation sessions' ``GET /sessions``, ``POST /sessions``,
``GET /sessions/search``, ``GET /sessions/{session}``, ``POST /sessions/{session}/window`` and
``POST /sessions/{session}/messages``; ``POST /upkeep``; with ``mcp=True`` also MCP over
streamable HTTP at ``/mcp`` (:mod:`memkit.frontends.mcp.server`'s tools). Built on Starlette and uvicorn, which the ``mcp`` extra
installs; they are imported only when a server is built, so memkit works without them.

How requests share the vault: the HTTP side is asynchronous and serves requests concurrently;
every call on the served :class:`Vault` runs in a worker thread, one at a time (the Vault's
searcher and its caches are not meant for several threads at once; a search is a millisecond or
two). Writes also take the vault's write lock, as any writer does, so the CLI, ``memkit watch`` or
another server writing to the same vault lose nothing. Long jobs (an index refresh asked for with
``POST /index``, the watcher with ``--watch``) and what may wait for the LLM (``GET /proactive``,
``POST /upkeep``…: see :mod:`memkit.frontends.http.routes`) run on Vaults of their own, so searches go on
meanwhile; ``GET /busy`` says whether one is running or whether any writer holds the write lock.

Safety: the server binds 127.0.0.1 by default and then accepts only requests whose Host header
names a loopback address (a web page cannot reach it by DNS rebinding). Binding any other address
needs a token, and then every request needs ``Authorization: Bearer TOKEN`` (compared in constant
time). A request a web page of another site makes (its ``Origin`` or ``Sec-Fetch-Site`` says so)
gets 403 on every route; every method but GET needs ``Content-Type: application/json``, which a
page cannot send to another site without a preflight (refused); no GET writes a file. Slow and
idle connections are cut, and their number capped (:mod:`memkit.frontends.http.conn`). A bad request gets a
JSON 4xx naming the problem; topic names and session ids are checked (a path segment with an
encoded '/' is refused), so none leaves topics/ or sessions/.

A front end above the watcher and the MCP server, which it runs: of the library it imports only
the facade (:mod:`memkit.vault`) and :mod:`memkit.errors` (``.importlinter``).
"""
from __future__ import annotations

import contextlib
import errno
import hmac
import json
import logging
import os
import signal
import socket
import stat
import threading
import time
import traceback
import urllib.parse
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping, Sequence

from ...base.http import is_loopback
from ...errors import (
    ConfigError,
    EntryNotFound,
    InvalidValue,
    LLMError,
    MemkitError,
    ModelError,
    SessionConflict,
    SessionNotFound,
    TopicNameError,
    TopicNotFound,
    TopicNotWritable,
    TopicParseError,
    VaultLocked,
)
from ...vault import Vault
from ..mcp import Memory, build_server, require_sdk
from .conn import Bounds, bounded_protocol
from .idle import IdleTimer, count_requests
from .routes import Api
from .spec import MAX_BODY_BYTES, OPERATIONS, HttpRoute, RequestError, check, openapi, query_args

log = logging.getLogger("memkit")

__all__ = ["HTTPServer", "Api", "RequestError", "build_app", "needs_token", "openapi", "require_server_libs",
           "start_server", "DEFAULT_HOST", "DEFAULT_PORT", "TOKEN_ENV", "MAX_BODY_BYTES"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_ENV = "MEMKIT_TOKEN"  #: the environment variable `memkit serve` reads the token from
INSTALL_HINT = "pip install 'mcp>=2'"


def require_json(request: Any) -> None:
    """Every request that may change something (any method but GET and HEAD) says
    ``Content-Type: application/json``, an empty body too: a web page cannot send that type to
    another site without the browser asking first (a preflight, which this server refuses), while
    the types a form can send (text/plain, application/x-www-form-urlencoded, multipart/form-data)
    or none at all are refused. :raises RequestError: 415."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise RequestError(415, f"{request.method} needs Content-Type: application/json (an empty body too), "
                                f"got {ctype or 'no Content-Type'}")


async def read_json(request: Any, required: bool, limit: int = MAX_BODY_BYTES) -> Any:
    """The request's JSON body (None when there is none and none is required), read at most
    ``limit`` bytes. :raises RequestError: 413, 415 or 400; 408 when the client went away
    before its body was complete (the server cut a slow sender: :mod:`memkit.frontends.http.conn`)."""
    from starlette.requests import ClientDisconnect

    require_json(request)
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > limit:
        raise RequestError(413, f"the body is {int(length):,} bytes; the limit is {limit:,}")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise RequestError(413, f"the body is larger than the limit of {limit:,} bytes")
    except ClientDisconnect:
        raise RequestError(408, "the connection closed before the body was complete") from None
    if not body.strip():
        if required:
            raise RequestError(400, "the request needs a JSON object body")
        return None
    try:
        if len(body) <= MAX_BODY_BYTES:
            return json.loads(bytes(body))
        import anyio.to_thread  # a body of megabytes takes a second to parse: not in the event loop

        return await anyio.to_thread.run_sync(json.loads, bytes(body))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    except RecursionError:
        raise RequestError(400, "the body is not valid here: JSON nested too deeply") from None


def error_status(exc: BaseException) -> int:
    """The HTTP status of a library error."""
    if isinstance(exc, RequestError):
        return exc.status
    if isinstance(exc, (TopicNameError, InvalidValue)):
        return 400
    if isinstance(exc, (TopicNotFound, EntryNotFound, SessionNotFound)):
        return 404
    if isinstance(exc, (TopicNotWritable, TopicParseError, SessionConflict)):
        return 409  # a file a person has to fix first, a session id taken, an archived session
    if isinstance(exc, (VaultLocked, ModelError)) or (isinstance(exc, LLMError) and not isinstance(exc, ConfigError)):
        return 503  # try again later (Retry-After for the lock)
    return 500  # ConfigError, a file that cannot be written, anything else


# ---- the ASGI app --------------------------------------------------------------------------------------

def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Any:
    from starlette.responses import Response

    # a lone surrogate (from a request's JSON, echoed in an error) must not break the answer
    body = (json.dumps(data, ensure_ascii=False, default=str) + "\n").encode("utf-8", errors="backslashreplace")
    return Response(body, status_code=status, headers=dict(headers or {}), media_type="application/json")


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Any:
    return _json({"error": message, "status": status}, status, headers)


#: the local web page (issue 44.5): plain HTML, JS and CSS shipped in the package, no build step;
#: its files hold no vault data, so they are served without the token (the page asks for it)
PAGE_DIR = Path(__file__).parent / "page"
PAGE_PATHS = ("/", "/page/{name}")
PAGE_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
              ".css": "text/css; charset=utf-8"}
PAGE_FILES = {p.name: (PAGE_TYPES[p.suffix], p.read_bytes()) for p in sorted(PAGE_DIR.iterdir())
              if p.suffix in PAGE_TYPES} if PAGE_DIR.is_dir() else {}
#: the page runs only its own script and loads only from this server; no other site may frame it
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
                "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}


def _is_page(path: str) -> bool:
    return path == "/" or (path.startswith("/page/") and path.count("/") == 2)


def needs_token(host: str) -> bool:
    """Whether binding ``host`` needs a token: every address but a loopback one does."""
    return not is_loopback(host)


def _host_name(header: str) -> str:
    """The host of a Host header (``[::1]:8765`` -> ``::1``, ``localhost:8765`` -> ``localhost``)."""
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def origin_allowed(origin: str, port: int | None) -> bool:
    """Whether a request's ``Origin`` header is this server's own origin: ``http://`` a loopback
    name (127.0.0.1, localhost, [::1]) and this server's ``port`` (any port over a Unix socket,
    ``port`` None). Every other origin is another site, ``null`` (a sandboxed page, a file) too."""
    parts = urllib.parse.urlsplit(origin.strip())
    if parts.scheme.lower() != "http" or not parts.hostname or not is_loopback(parts.hostname):
        return False
    try:
        given = parts.port or 80
    except ValueError:
        return False
    return port is None or given == port


def cross_site(headers: Mapping[str, bytes], port: int | None) -> str | None:
    """Why a request comes from a page of another site (None: it does not). A browser sends
    ``Origin`` with every request a page makes by script or form, except a plain GET, and with
    every request ``Sec-Fetch-Site`` (a GET of an ``<img>`` included): either naming another site
    is refused, so no web page the person visits can change the vault or make it call the LLM."""
    origin = headers.get("origin")
    if origin is not None and not origin_allowed(origin.decode("latin-1"), port):
        return f"Origin {origin.decode('latin-1')!r}"
    site = headers.get("sec-fetch-site", b"").strip().lower()
    if site in (b"cross-site", b"same-site"):
        return f"Sec-Fetch-Site {site.decode('latin-1')!r}"
    return None


class Guard:
    """ASGI middleware: no request from a page of another site (:func:`cross_site`: 403); the
    bearer token (constant-time compare) when one is set; without one, only requests whose Host
    names a loopback address (DNS rebinding) or come over a Unix socket."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token.encode("utf-8") if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        problem: tuple[int, str, dict[str, str]] | None = None
        server = scope.get("server")
        foreign = cross_site(headers, server[1] if server else None)
        if foreign is not None:
            problem = (403, f"{foreign} is another site: this server answers no request a web page of "
                            "another site makes (call it from a program, not a browser page)", {})
        elif self.token is not None and not (_is_page(scope.get("path", "")) and scope.get("method") in ("GET", "HEAD")):
            given = headers.get("authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                problem = (401, "missing or wrong token: send 'Authorization: Bearer TOKEN'",
                           {"WWW-Authenticate": "Bearer"})
        elif scope.get("server") is not None:  # TCP (a Unix socket has no server address)
            host = _host_name(headers.get("host", b"").decode("latin-1"))
            if not is_loopback(host):
                problem = (400, f"Host {host or '(none)'!r} is not a loopback name; this server answers "
                                "requests for 127.0.0.1 or localhost only", {})
        if problem is not None:
            await _error(problem[0], problem[1], problem[2])(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _endpoint(api: Api, op: HttpRoute) -> Callable[[Any], Awaitable[Any]]:
    async def endpoint(request: Any) -> Any:
        try:
            args = check(op.params, dict(request.path_params), "path parameter") if op.params is not None else {}
            if op.query is not None:
                args.update(query_args(op.query, request.query_params))
            elif request.query_params:
                raise RequestError(400, f"unknown query parameter {next(iter(request.query_params.keys()))!r} "
                                        f"({op.method} {op.path} takes none)")
            if op.method != "GET":
                require_json(request)
            if op.body is not None:
                length = request.headers.get("content-length", "").strip()
                size = min(int(length), op.max_body) if length.isdigit() else op.max_body  # chunked: at most the limit
                # a body of megabytes holds room in a shared budget while it arrives; no request waits
                # for another's (a slow sender is cut by the server's body timeout, http_conn)
                with api.body_room(size) if size > MAX_BODY_BYTES else contextlib.nullcontext():
                    data = await read_json(request, op.body_required, op.max_body)
                    args.update(check(op.body, {} if data is None else data))
            result = await api.call(op, args)
        except Exception as exc:
            status = error_status(exc)
            if status >= 500 and not isinstance(exc, MemkitError):
                trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
                log.error("%s %s failed:\n%s", op.method, op.path, trace)
                message = f"unexpected error: {type(exc).__name__}: {exc} (the traceback is in the server's log)"
            else:
                message = str(exc)
            headers = exc.headers if isinstance(exc, RequestError) else {}
            if isinstance(exc, VaultLocked):
                headers = {"Retry-After": "1"}
            return _error(status, message, headers)
        return _json(result, op.ok)

    return endpoint


class McpEndpoint:
    """MCP over streamable HTTP (the ASGI app at ``/mcp``): ``memkit mcp``'s tools and resources
    (:mod:`memkit.frontends.mcp.server`) on a Vault of their own, so its worker thread and ours never share one.
    The Host and token checks are :class:`Guard`'s, as for every route."""

    def __init__(self, api: Api) -> None:
        require_sdk()
        from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
        from mcp.server.transport_security import TransportSecuritySettings

        server = build_server(Memory.open(api.other_vault()))
        self.manager = StreamableHTTPSessionManager(
            app=server, security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        self.served = api.vault

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.manager.asgi_app(scope, receive, send)
        finally:
            if scope.get("method") == "POST":  # a tool may have written: the next search re-checks the files
                self.served.changed()


def _encoded_slash(request: Any) -> Any:
    """400: no route takes a '/' inside a segment (a session id like ..%2F..%2Fetc is a bad one)."""
    return _error(400, f"the path {request.scope['raw_path'].decode('latin-1')!r} has an encoded '/' (%2F) "
                       "in a segment: no route takes one (a session id never has one)")


def build_app(api: Api, *, token: str | None = None, mcp: bool = False,
              operations: Sequence[HttpRoute] = OPERATIONS) -> Any:
    """The Starlette application serving ``api`` (wrapped in :class:`Guard`); ``mcp``: also MCP
    over streamable HTTP at ``/mcp``; ``operations``: its routes (:func:`memkit.frontends.http.spec.http_routes`
    of the table of operations)."""
    import anyio.to_thread
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    spec = openapi(token=token is not None, mcp=mcp, routes=operations)
    endpoint = McpEndpoint(api) if mcp else None

    async def openapi_json(request: Any) -> Any:
        return _json(spec)

    async def health(request: Any) -> Any:
        state = await api.call("health", {})
        return _json(state, 200 if state["ok"] else 503)

    async def page(request: Any) -> Any:
        from starlette.responses import Response

        name = request.path_params.get("name", "index.html")
        if name not in PAGE_FILES:
            return _error(404, f"no page file {name!r}")
        return Response(PAGE_FILES[name][1], media_type=PAGE_FILES[name][0], headers=PAGE_HEADERS)

    routes = [Route("/openapi.json", openapi_json, methods=["GET"]), Route("/health", health, methods=["GET"]),
              Route("/", page, methods=["GET"]), Route("/page/{name}", page, methods=["GET"])]
    by_path: dict[str, list[HttpRoute]] = {}
    for op in operations:
        by_path.setdefault(op.path, []).append(op)
    for path, ops in by_path.items():
        handlers = {op.method: _endpoint(api, op) for op in ops}

        async def dispatch(request: Any, handlers: dict[str, Any] = handlers) -> Any:
            if b"%2f" in request.scope.get("raw_path", b"").lower():  # /sessions/a%2Fmessages: not a route
                return _encoded_slash(request)
            return await (handlers.get(request.method) or handlers["GET"])(request)  # HEAD: as GET

        # a topic's name may hold folders (work/harbor): its segment takes the rest of the path
        routes.append(Route(path.replace("{topic}", "{topic:path}"), dispatch, methods=list(handlers)))
    if endpoint is not None:
        routes.append(Route("/mcp", endpoint))
        routes.append(Route("/mcp/", endpoint))  # no redirect from /mcp/ (redirect_slashes is off)

    async def http_error(request: Any, exc: Any) -> Any:
        if exc.status_code in (404, 405) and b"%2f" in request.scope.get("raw_path", b"").lower():
            return _encoded_slash(request)
        message = {404: f"no route {request.url.path}: see GET /openapi.json",
                   405: f"{request.method} is not allowed on {request.url.path}"
                        + (f" (allowed: {', '.join(sorted(exc.headers['Allow'].split(', ')))})"
                           if "Allow" in (exc.headers or {}) else "")
                   }.get(exc.status_code, str(exc.detail))
        return _error(exc.status_code, message, getattr(exc, "headers", None))

    @asynccontextmanager
    async def lifespan(app: Any) -> Any:
        try:
            if endpoint is not None:
                async with endpoint.manager.run():
                    yield
            else:
                yield
        finally:
            await anyio.to_thread.run_sync(api.stop)

    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error}, lifespan=lifespan)
    app.router.redirect_slashes = False  # /sessions/ is no route (a JSON 404), not a redirect with an empty body
    return Guard(app, token)


# ---- running it -----------------------------------------------------------------------------------------

def require_server_libs() -> None:
    """Raise a one-line :class:`MemkitError` naming the install command when Starlette or uvicorn
    (installed by the ``mcp`` extra) cannot be imported."""
    try:
        import starlette.applications  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MemkitError(f"memkit serve needs Starlette and uvicorn, which the MCP extra installs "
                          f"({exc}): {INSTALL_HINT}") from None


def _listen(host: str, port: int, unix: str | None) -> socket.socket:
    """A listening socket on ``host:port`` (0: a free port), or on the Unix socket ``unix``."""
    try:
        if unix is not None:
            path = Path(unix).expanduser()
            try:
                if stat.S_ISSOCK(path.lstat().st_mode):
                    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        probe.connect(str(path))
                    except OSError:
                        path.unlink()  # left by a server that did not stop cleanly
                    else:
                        raise OSError(98, "another server is listening there")
                    finally:
                        probe.close()
            except FileNotFoundError:
                pass
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            old = os.umask(0o177)  # the socket is the owner's alone: it needs no token
            try:
                sock.bind(str(path))
            finally:
                os.umask(old)
        else:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
            sock = socket.socket(family, socket.SOCK_STREAM)
            if os.name == "posix":
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # accepted connections inherit it: uvicorn writes headers and body apart, and given a
            # socket of ours (not host/port) its connections would otherwise wait for the
            # client's delayed ACK (~40 ms a request)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.bind((host, port))
        sock.listen(128)
        sock.set_inheritable(True)
        return sock
    except OSError as exc:
        where = unix if unix is not None else f"{host}:{port}"
        hint = ("; another server (a `memkit serve` already running?) holds that port: stop it, or pick another "
                "(--port N, 0: any free one)") if unix is None and exc.errno == errno.EADDRINUSE else ""
        raise MemkitError(f"cannot listen on {where}: {exc.strerror or exc}{hint}") from None


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


class HTTPServer:
    """uvicorn serving an :class:`Api` on a socket bound at once (so ``port=0`` picks a free port
    and :attr:`url` says which).

    :param vault: the vault to serve.
    :param host: the address to bind; any but a loopback one needs ``token``.
    :param port: the port (0: any free one).
    :param token: the bearer token requests must carry (None: none).
    :param unix: a Unix socket path to listen on instead of ``host:port`` (mode 0600; no token needed).
    :param watch: also run the watcher; :param polling: it polls.
    :param mcp: also serve MCP over streamable HTTP at ``/mcp`` (needs the MCP SDK).
    :param operations: the routes (default: the table of operations' and the server's own, :func:`memkit.frontends.http.spec.http_routes`).
    :param header_timeout_s, body_timeout_s, max_connections: how long a client may take to send a
        request's header and its body, and how many connections may be open
        (:mod:`memkit.frontends.http.conn`; default: memkit.yaml's ``serve:``).
    :param idle_exit_s: stop once no request came for this many seconds (None: never;
        :mod:`memkit.frontends.http.idle`); :param clock: its clock (a test's).
    :raises MemkitError: a non-loopback address without a token (an empty one is none), a token
        of whitespace only, a port in use.
    """

    def __init__(self, vault: Vault, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
                 unix: str | None = None, watch: bool = False, polling: bool = False, mcp: bool = False,
                 header_timeout_s: float | None = None, body_timeout_s: float | None = None,
                 max_connections: int | None = None, idle_exit_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic, operations: Sequence[HttpRoute] = OPERATIONS) -> None:
        require_server_libs()
        import uvicorn

        if token:
            if not token.strip():  # it would be required, and no client could ever send it
                raise MemkitError("the token is only whitespace: no client could send it; give a real one "
                                  "(e.g. $(openssl rand -hex 16)), or none on a loopback address")
            token = token.strip()  # a client's header value loses its surrounding blanks too
        if unix is None and needs_token(host) and not token:
            raise MemkitError(f"binding {host} (not a loopback address) needs a token: --token or ${TOKEN_ENV}; "
                              "clients then send 'Authorization: Bearer TOKEN'")
        settings = vault.config.serve
        self.bounds = Bounds(
            header_timeout_s=settings.header_timeout_s if header_timeout_s is None else header_timeout_s,
            body_timeout_s=settings.body_timeout_s if body_timeout_s is None else body_timeout_s,
            max_connections=settings.max_connections if max_connections is None else max_connections)
        self.unix = Path(unix).expanduser() if unix is not None else None
        self.api = Api(vault, watch=watch, polling=polling)
        self.app = build_app(self.api, token=token or None, mcp=mcp, operations=operations)
        self.idle = IdleTimer(idle_exit_s, clock) if idle_exit_s else None
        if self.idle is not None:
            self.app = count_requests(self.app, self.idle)
        self.socket = _listen(host, port, unix)
        if unix is not None:
            self.url = "http://localhost"
            self.where = str(Path(unix).expanduser())
        else:
            bound = self.socket.getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            self.url = self.where = f"http://{shown}:{bound[1]}"
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=5, http=bounded_protocol(self.bounds),
                                timeout_keep_alive=self.bounds.header_timeout_s)  # type: ignore[arg-type]
        self.server = _server(config, self.idle)
        self._thread: threading.Thread | None = None
        self._prepared = False

    @property
    def idled(self) -> bool:
        """Whether it stopped because no request came for ``idle_exit_s``."""
        return bool(getattr(self.server, "idled", False))

    def prepare(self) -> None:
        """Load the model, bring the index up to date and start the watcher (``watch``), before
        the first request: what :meth:`run` does first unless it was done.

        :raises MemkitError: the watcher cannot start.
        """
        if self._prepared:
            return
        self._prepared = True
        self.api.warm_up()
        if self.api.watch:
            self.api.start_watch()

    def run(self) -> None:
        """Serve until Ctrl-C or SIGTERM (in the main thread) or :meth:`stop`.

        :raises MemkitError: see :meth:`prepare`.
        """
        previous: Any = None
        main = threading.current_thread() is threading.main_thread()
        if main:  # uvicorn re-raises the signal it stopped on: SIGTERM then ends here as SIGINT does
            previous = signal.signal(signal.SIGTERM, _interrupt)
        try:
            self.prepare()
            self.server.run(sockets=[self.socket])
        except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it stopped on
            pass
        finally:
            if main:
                signal.signal(signal.SIGTERM, previous)
            self.api.stop()
            self.close()

    def start(self, timeout: float = 120.0) -> "HTTPServer":
        """Serve in a background thread; returns once requests are answered (the model loaded).

        :raises MemkitError: the server did not start within ``timeout`` seconds, or the reason
            it could not.
        """
        failed: list[BaseException] = []

        def serve() -> None:
            try:
                self.run()
            except BaseException as exc:  # given to the caller below
                failed.append(exc)

        self._thread = threading.Thread(target=serve, name="memkit-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                if failed and isinstance(failed[0], MemkitError):
                    raise failed[0]
                raise MemkitError(f"the HTTP server on {self.where} did not start"
                                  + (f": {failed[0]!r}" if failed else ""))
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """Stop serving and wait for the server thread (and the watcher, an index job) to end."""
        self.server.should_exit = True
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        self.close()

    def close(self) -> None:
        """Close the listening socket (and remove a Unix socket's file)."""
        try:
            self.socket.close()
            if self.unix is not None:
                self.unix.unlink(missing_ok=True)
        except OSError:
            pass

    def __enter__(self) -> "HTTPServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _server(config: Any, idle: IdleTimer | None) -> Any:
    """uvicorn's server; with ``idle``, one that stops on the first tick after ``idle`` expired."""
    import uvicorn

    if idle is None:
        return uvicorn.Server(config)
    timer: IdleTimer = idle

    class IdleServer(uvicorn.Server):
        idled = False

        async def on_tick(self, counter: int) -> bool:
            if not self.should_exit and timer.expired():
                log.debug("no request for %g s: stopping", timer.idle_s)
                self.idled = self.should_exit = True
            return bool(await super().on_tick(counter))

    return IdleServer(config)


def start_server(vault: Vault, **options: Any) -> HTTPServer:
    """Serve ``vault`` in a background thread (options as for :class:`HTTPServer`); ``.url`` says
    where, ``.stop()`` ends it."""
    return HTTPServer(vault, **options).start()
