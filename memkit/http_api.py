"""`memkit serve`: the vault as a small local HTTP API, JSON in and out, described by OpenAPI.

Routes (``GET /openapi.json`` describes each, :mod:`memkit.http_spec` holds their schemas):
``GET /search``, ``POST /add``, ``POST /context``, ``GET /pending``, ``POST /pending/done``,
``GET /proactive``, ``GET /stats``, ``GET /busy``, ``GET /index`` and ``POST /index``; with
``mcp=True`` also MCP over
streamable HTTP at ``/mcp`` (:mod:`memkit.mcp_server`'s tools). Built on Starlette and uvicorn,
which the ``mcp`` extra installs; they are imported only when a server is built, so memkit works
without them.

How requests share the vault: the HTTP side is asynchronous and serves requests concurrently;
every call on the served :class:`Vault` runs in a worker thread, one at a time (the Vault's
searcher and its caches are not meant for several threads at once; a search is a millisecond or
two). Writes also take the vault's write lock, as any writer does, so the CLI, ``memkit watch`` or
another server writing to the same vault lose nothing. Long jobs (an index refresh asked for with
``POST /index``, the watcher with ``--watch``) and ``GET /proactive`` (which may wait for the LLM)
run on Vaults of their own, so searches go on meanwhile; ``GET /busy`` says whether one is running or whether any writer holds the write lock.

Safety: the server binds 127.0.0.1 by default and then accepts only requests whose Host header
names a loopback address (a web page cannot reach it by DNS rebinding). Binding any other address
needs a token, and then every request needs ``Authorization: Bearer TOKEN`` (compared in constant
time). A bad request gets a JSON 4xx naming the problem; topic names are checked by the library,
so none leaves topics/.

A front end above the watcher and the MCP server, which it runs: of the library it imports only
the facade (:mod:`memkit.vault`) and :mod:`memkit.errors` (``.importlinter``).
"""
from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import socket
import stat
import signal
import threading
import time
import traceback
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Awaitable, Callable, Mapping

from .errors import (EntryNotFound, InvalidValue, MemkitError, ModelError, TopicNameError, TopicNotFound,
                     TopicNotWritable, TopicParseError, VaultLocked)
from .http_spec import OPERATIONS, Operation, RequestError, check, openapi, query_args
from .mcp_server import Memory, build_server, require_sdk
from .vault import Vault, parse_day
from .watch import Watcher

log = logging.getLogger("memkit")

__all__ = ["HTTPServer", "Api", "RequestError", "build_app", "needs_token", "openapi", "require_server_libs",
           "start_server", "DEFAULT_HOST", "DEFAULT_PORT", "TOKEN_ENV", "MAX_BODY_BYTES"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
TOKEN_ENV = "MEMKIT_TOKEN"  #: the environment variable `memkit serve` reads the token from
INSTALL_HINT = "pip install 'mcp>=2'"
MAX_BODY_BYTES = 256 * 1024  #: a request body larger than this is refused (413)
JOB_STOP_S = 30.0  #: how long shutdown waits for a running index job
WATCH_STOP_S = 30.0


async def read_json(request: Any, required: bool) -> Any:
    """The request's JSON body (None when there is none and none is required), read at most
    :data:`MAX_BODY_BYTES`. :raises RequestError: 413, 415 or 400."""
    length = request.headers.get("content-length")
    if length is not None and length.strip().isdigit() and int(length) > MAX_BODY_BYTES:
        raise RequestError(413, f"the body is {int(length):,} bytes; the limit is {MAX_BODY_BYTES:,}")
    has_body = (length is not None and length.strip() not in ("", "0")) or "transfer-encoding" in request.headers
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if has_body and ctype != "application/json":
        raise RequestError(415, f"the body must be JSON with Content-Type: application/json, "
                                f"got {ctype or 'no Content-Type'}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise RequestError(413, f"the body is larger than the limit of {MAX_BODY_BYTES:,} bytes")
    if not body.strip():
        if required:
            raise RequestError(400, "the request needs a JSON object body")
        return None
    if ctype != "application/json":
        raise RequestError(415, "the body must be JSON with Content-Type: application/json")
    try:
        return json.loads(bytes(body))
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
    if isinstance(exc, (TopicNotFound, EntryNotFound)):
        return 404
    if isinstance(exc, (TopicNotWritable, TopicParseError)):
        return 409  # a file a person has to fix first
    if isinstance(exc, (VaultLocked, ModelError)):
        return 503  # try again later (Retry-After for the lock)
    return 500  # ConfigError, a file that cannot be written, anything else (no route asks the LLM)


# ---- the API ----------------------------------------------------------------------------------------

def _now() -> str:
    return datetime.now().replace(microsecond=0).isoformat()


@dataclass
class Job:
    """A long job this server runs in the background (``POST /index``)."""

    name: str
    running: bool = False
    started: str | None = None
    finished: str | None = None
    report: dict[str, Any] | None = None
    error: str | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "running": self.running, "started": self.started, "finished": self.finished,
                "report": self.report, "error": self.error}


class Api:
    """What the routes do, on one served :class:`Vault` (see the module docstring for threads).

    :param vault: the served vault.
    :param watch: also run the watcher (index and index.txt follow hand edits), on a Vault of its own.
    :param polling: the watcher polls instead of using OS events.
    """

    def __init__(self, vault: Vault, *, watch: bool = False, polling: bool = False) -> None:
        self.vault = vault
        self.watch = watch
        self.polling = polling
        self._limiter: Any = None  # anyio.CapacityLimiter(1), made in the event loop's thread
        self._aside_limiter: Any = None  # the same, for work that may wait for the LLM (proactive)
        self._aside_vault: Vault | None = None
        self._jobs_lock = threading.Lock()
        self.index_job = Job("index")
        self.digest_running = False  #: the watcher (``watch``) is digesting inbox/ transcripts
        self._watch_stop = threading.Event()
        self._watch_thread: threading.Thread | None = None

    def other_vault(self) -> Vault:
        """A second Vault of the same folder and model (its own index connection and caches), for
        work in another thread; the model object is shared, not loaded twice."""
        return Vault(self.vault.root, config=self.vault.config, embedder=self.vault.embedder)

    async def run(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (a call on the served Vault) in the worker thread, one at a time."""
        import anyio.to_thread

        if self._limiter is None:
            import anyio

            self._limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(fn, limiter=self._limiter)

    async def run_aside(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (a call on the aside Vault, which may wait for the LLM) in a worker thread of
        its own, one at a time, so searches and adds do not wait behind it."""
        import anyio
        import anyio.to_thread

        if self._aside_limiter is None:
            self._aside_limiter = anyio.CapacityLimiter(1)
        return await anyio.to_thread.run_sync(fn, limiter=self._aside_limiter)

    # ---- lifecycle (HTTPServer.prepare before the first request; stop at shutdown) ----
    def warm_up(self) -> None:
        """Load the model and bring the index up to date, so the first search is fast."""
        try:
            self.vault.index()
            self.vault.search("warm up", k=1)
        except MemkitError as exc:
            log.warning("%s", exc)  # each request will say it again

    def start_watch(self) -> None:
        """Run the watcher (memkit.watch's :class:`Watcher`) on a Vault of its own, until :meth:`stop`:
        the index and index.txt follow the files and, when memkit.yaml configures an LLM, idle
        inbox/ transcripts are digested (the ``digest`` job of ``GET /busy``), as ``memkit watch`` does.

        :raises MemkitError: the watcher cannot start, or the ``llm:`` settings cannot work.
        """
        watch_vault = self.other_vault()
        llm = watch_vault.llm() if watch_vault.config.llm else None

        def on_update(report: Any) -> None:
            if report.new or report.removed or report.changed_files:
                log.info("watch: %s", report.summary())
                self.vault.changed()  # the served Vault re-checks the files at its next search

        def digest_inbox() -> None:
            if not watch_vault.waiting_transcripts():
                return
            with self._jobs_lock:
                self.digest_running = True
            try:
                for result in watch_vault.process_inbox(llm=llm):
                    if result.error:
                        log.warning("inbox/%s: %s", result.file, result.error)
                    elif result.report is not None:
                        log.info("inbox/%s: %s (moved to inbox/done/)", result.file,
                                 result.report.summary().split(": ", 1)[-1])
            finally:
                self.vault.changed()
                with self._jobs_lock:
                    self.digest_running = False

        # the inbox is looked at often enough that an idle transcript waits at most ~half its timeout more
        interval = max(1.0, min(30.0, watch_vault.config.session_timeout_minutes * 30))
        watcher = Watcher(watch_vault, polling=self.polling, on_update=on_update,
                          inbox_handler=digest_inbox if llm is not None else None, inbox_interval_s=interval)
        watcher.start()

        def wait() -> None:
            self._watch_stop.wait()
            watcher.stop(WATCH_STOP_S)

        self._watch_thread = threading.Thread(target=wait, name="memkit-serve-watch", daemon=True)
        self._watch_thread.start()

    def stop(self) -> None:
        """Stop the watcher and wait for a running index job (shutdown)."""
        self._watch_stop.set()
        for thread in (self._watch_thread, self.index_job.thread):
            if thread is not None and thread.is_alive():
                thread.join(JOB_STOP_S)

    # ---- the routes' work (each runs in a worker thread) ----
    def search(self, q: str, k: int | None, topic: str | None, kind: str | None, tag: str | None, since: str | None,
               mode: str, min_importance: float | None) -> dict[str, Any]:
        hits = self.vault.search(q, k=k, topic=topic, kind=kind, tag=tag, since=since, min_importance=min_importance,
                                 mode=mode)  # type: ignore[arg-type]  # checked against the schema's enum
        return {"hits": [h.to_dict() for h in hits]}

    def add(self, text: str, topic: str | None, kind: str | None, tags: list[str] | None, due: str | None,
            until: str | None) -> dict[str, Any]:
        for label, value in (("due", due), ("until", until)):
            if value is not None:
                day = parse_day(value, label)
                if label == "until" and day < date.today():
                    raise InvalidValue(f"until {day} is in the past: the memory would expire at once")
                text = f"{' '.join(text.split())} ({label} {day.isoformat()})"
        if due is not None and kind is None:
            kind = "pending"
        return self.vault.add(text, topic=topic, kind=kind, tags=tags or ()).to_dict()

    def context(self, message: str, session: str | None, budget_tokens: int, reset: bool) -> dict[str, Any]:
        if reset and session:
            self.vault.reset_session(session)
        return self.vault.context(message, session=session, budget_tokens=budget_tokens).to_dict()

    def pending(self) -> dict[str, Any]:
        return {"pending": [f.to_dict() for f in self.vault.pending()]}

    def done(self, id: str | None, match: str | None, topic: str | None) -> dict[str, Any]:  # noqa: A002
        if (id is None) == (match is None):
            raise RequestError(400, "give the follow-up's 'id' or a 'match' of its text (one of the two)")
        return {"done": self.vault.done(id, match=match, topic=topic).to_dict()}

    def proactive(self, now: str | None, last_conversation: str | None, draft: bool) -> dict[str, Any]:
        """Runs on a Vault of its own (see :meth:`run_aside`): drafting may wait for the LLM."""
        if self._aside_vault is None:
            self._aside_vault = self.other_vault()
        when = datetime.fromisoformat(now) if now else None
        last = datetime.fromisoformat(last_conversation) if last_conversation else None
        return self._aside_vault.proactive(now=when, last_conversation=last,
                                           llm="auto" if draft else None).to_dict()

    def stats(self) -> dict[str, Any]:
        return self.vault.stats()

    def index_status(self) -> dict[str, Any]:
        try:
            state = self.vault.index_status()
        except MemkitError as exc:
            state = {"model": None, "dim": None, "stale_files": None, "error": str(exc)}
        with self._jobs_lock:
            state["job"] = self.index_job.to_dict()
        return state

    def busy(self) -> dict[str, Any]:
        jobs = []
        with self._jobs_lock:
            if self.index_job.running:
                jobs.append("index")
            if self.digest_running:
                jobs.append("digest")
        locked = self.vault.write_locked()
        return {"busy": bool(jobs) or locked, "jobs": jobs, "write_lock": locked}

    def index_start(self, full: bool) -> dict[str, Any]:
        """Start an index refresh on a Vault of its own. :raises RequestError: 409, one is running."""
        with self._jobs_lock:
            job = self.index_job
            if job.running:
                raise RequestError(409, f"an index job is already running (started {job.started}); "
                                        "GET /index follows it")
            job.running, job.started, job.finished, job.report, job.error = True, _now(), None, None, None
            job.thread = threading.Thread(target=self._index_job, args=(full,), name="memkit-serve-index",
                                          daemon=True)
            job.thread.start()
            return {"job": job.to_dict()}

    def _index_job(self, full: bool) -> None:
        report: dict[str, Any] | None = None
        error: str | None = None
        try:
            report = self.other_vault().index(full=full).to_dict()
        except Exception as exc:  # reported in GET /index; the server goes on
            error = str(exc) if isinstance(exc, MemkitError) else f"unexpected error: {type(exc).__name__}: {exc}"
            log.error("index job failed: %s", error)
        finally:
            self.vault.changed()  # the served Vault re-checks the files at its next search
            with self._jobs_lock:
                job = self.index_job
                job.running, job.finished, job.report, job.error = False, _now(), report, error


# ---- the ASGI app --------------------------------------------------------------------------------------

def _json(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Any:
    from starlette.responses import Response

    # a lone surrogate (from a request's JSON, echoed in an error) must not break the answer
    body = json.dumps(data, ensure_ascii=False, default=str).encode("utf-8", errors="backslashreplace")
    return Response(body, status_code=status, headers=dict(headers or {}), media_type="application/json")


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Any:
    return _json({"error": message, "status": status}, status, headers)


def _is_loopback_name(host: str) -> bool:
    host = host.strip().lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def needs_token(host: str) -> bool:
    """Whether binding ``host`` needs a token: every address but a loopback one does."""
    return not _is_loopback_name(host)


def _host_name(header: str) -> str:
    """The host of a Host header (``[::1]:8765`` -> ``::1``, ``localhost:8765`` -> ``localhost``)."""
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class Guard:
    """ASGI middleware: the bearer token (constant-time compare) when one is set; without one, only
    requests whose Host names a loopback address (DNS rebinding) or come over a Unix socket."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token.encode("utf-8") if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        problem: tuple[int, str, dict[str, str]] | None = None
        if self.token is not None:
            given = headers.get("authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                problem = (401, "missing or wrong token: send 'Authorization: Bearer TOKEN'",
                           {"WWW-Authenticate": "Bearer"})
        elif scope.get("server") is not None:  # TCP (a Unix socket has no server address)
            host = _host_name(headers.get("host", b"").decode("latin-1"))
            if not _is_loopback_name(host):
                problem = (400, f"Host {host or '(none)'!r} is not a loopback name; this server answers "
                                "requests for 127.0.0.1 or localhost only", {})
        if problem is not None:
            await _error(problem[0], problem[1], problem[2])(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _endpoint(api: Api, op: Operation) -> Callable[[Any], Awaitable[Any]]:
    method = getattr(api, op.handler)

    async def endpoint(request: Any) -> Any:
        try:
            if op.query is not None:
                args = query_args(op.query, request.query_params)
            else:
                if request.query_params:
                    raise RequestError(400, f"unknown query parameter {next(iter(request.query_params.keys()))!r} "
                                            f"({op.method} {op.path} takes none)")
                args = {}
            if op.body is not None:
                data = await read_json(request, op.body_required)
                args = check(op.body, {} if data is None else data)
            if op.handler == "busy":  # never waits behind the vault's worker
                import anyio.to_thread

                result = await anyio.to_thread.run_sync(api.busy)
            elif op.handler == "index_start":  # starts a thread of its own; needs no vault worker
                result = api.index_start(**args)
            elif op.handler == "proactive":
                result = await api.run_aside(lambda: method(**args))
            else:
                result = await api.run(lambda: method(**args))
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
    (:mod:`memkit.mcp_server`) on a Vault of their own, so its worker thread and ours never share one.
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


def build_app(api: Api, *, token: str | None = None, mcp: bool = False) -> Any:
    """The Starlette application serving ``api`` (wrapped in :class:`Guard`); ``mcp``: also MCP
    over streamable HTTP at ``/mcp``."""
    import anyio.to_thread
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.routing import Route

    spec = openapi(token=token is not None, mcp=mcp)
    endpoint = McpEndpoint(api) if mcp else None

    async def openapi_json(request: Any) -> Any:
        return _json(spec)

    routes = [Route("/openapi.json", openapi_json, methods=["GET"])]
    by_path: dict[str, list[Operation]] = {}
    for op in OPERATIONS:
        by_path.setdefault(op.path, []).append(op)
    for path, ops in by_path.items():
        handlers = {op.method: _endpoint(api, op) for op in ops}

        async def dispatch(request: Any, handlers: dict[str, Any] = handlers) -> Any:
            return await handlers[request.method](request)

        routes.append(Route(path, dispatch, methods=list(handlers)))
    if endpoint is not None:
        routes.append(Route("/mcp", endpoint))

    async def http_error(request: Any, exc: Any) -> Any:
        message = {404: f"no route {request.url.path}: see GET /openapi.json",
                   405: f"{request.method} is not allowed on {request.url.path}"}.get(exc.status_code, str(exc.detail))
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
        raise MemkitError(f"cannot listen on {where}: {exc.strerror or exc}") from None


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
    :raises MemkitError: a non-loopback address without a token, a port in use.
    """

    def __init__(self, vault: Vault, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, token: str | None = None,
                 unix: str | None = None, watch: bool = False, polling: bool = False, mcp: bool = False) -> None:
        require_server_libs()
        import uvicorn

        if unix is None and needs_token(host) and not token:
            raise MemkitError(f"binding {host} (not a loopback address) needs a token: --token or ${TOKEN_ENV}; "
                              "clients then send 'Authorization: Bearer TOKEN'")
        self.unix = Path(unix).expanduser() if unix is not None else None
        self.api = Api(vault, watch=watch, polling=polling)
        self.app = build_app(self.api, token=token or None, mcp=mcp)
        self.socket = _listen(host, port, unix)
        if unix is not None:
            self.url = "http://localhost"
            self.where = str(Path(unix).expanduser())
        else:
            bound = self.socket.getsockname()
            shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
            self.url = self.where = f"http://{shown}:{bound[1]}"
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=5)
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self._prepared = False

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


def start_server(vault: Vault, **options: Any) -> HTTPServer:
    """Serve ``vault`` in a background thread (options as for :class:`HTTPServer`); ``.url`` says
    where, ``.stop()`` ends it."""
    return HTTPServer(vault, **options).start()
