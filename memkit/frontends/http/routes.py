"""Where each route of `memkit serve` (:mod:`memkit.frontends.http.api`) runs, on the served vault: the
:class:`Api` object runs an operation's handler from the table (:mod:`memkit.frontends.operations`)
on the Vault it belongs to (:meth:`Api.do`, :meth:`Api.call`), and serves the server's own routes
and jobs (``GET /busy``, ``GET /index``, ``POST /index``, the digest after a saved message).

Threads: every call on the served :class:`Vault` runs in one worker thread, one at a time
(:meth:`Api.run`; the Vault's searcher and caches are not meant for several threads at once).
Work that may wait for the LLM (``GET /proactive``, ``POST /upkeep``, a session loaded with the
summary or hybrid strategy, a message that may start a digest every ``digest_every_messages``)
runs on a second Vault of its own (:meth:`Api.run_aside`), so searches go on meanwhile. An index
refresh (``POST /index``) and the watcher (``--watch``) run in threads of their own.

Sessions: a session id reaches the library only once :mod:`memkit.frontends.http.spec` found it made of
letters, digits, '.', '_' and '-' (no '..'), and the library checks it again: none leaves sessions/.

A front end: of the library it imports only the facade (:mod:`memkit.vault`) and :mod:`memkit.errors`.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, Iterator

from ...errors import MemkitError
from ...vault import LLMChoice, Vault
from ..watch import Watcher
from .spec import MAX_MESSAGE_BODY_BYTES, HttpRoute, RequestError

log = logging.getLogger("memkit")

__all__ = ["Api", "Job", "JOB_STOP_S", "LARGE_BODIES_BYTES", "WATCH_STOP_S"]

JOB_STOP_S = 30.0  #: how long shutdown waits for a running index job
#: the large bodies (over MAX_BODY_BYTES: session messages) received at once hold at most this much
LARGE_BODIES_BYTES = 4 * MAX_MESSAGE_BODY_BYTES
WATCH_STOP_S = 30.0


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
        self._digest_waiting: set[str] = set()  #: sessions whose new messages may be due (:meth:`_digest_later`)
        self._digest_thread: threading.Thread | None = None
        self._digest_vault: Vault | None = None
        self._large_bytes = 0  #: bytes held by large bodies being received (:meth:`body_room`)
        self._watch_stop = threading.Event()
        self._watch_thread: threading.Thread | None = None
        self._judge_thread: threading.Thread | None = None  #: fills the judge's vectors after the start

    def other_vault(self) -> Vault:
        """A second Vault of the same folder and model (its own index connection and caches), for
        work in another thread; the model object is shared, not loaded twice."""
        return Vault(self.vault.root, config=self.vault.config, embedder=self.vault.embedder)

    @contextlib.contextmanager
    def body_room(self, size: int) -> Iterator[None]:
        """Hold ``size`` bytes of :data:`LARGE_BODIES_BYTES` while a body of megabytes (a long
        session message) is read and parsed; called in the event loop's thread. Nobody waits for
        room: when the bodies arriving already hold it, the request is refused at once.

        :raises RequestError: 503 (Retry-After), no room now."""
        if self._large_bytes + size > LARGE_BODIES_BYTES:
            raise RequestError(503, f"other large bodies being received hold the server's room for them "
                                    f"({LARGE_BODIES_BYTES >> 20} MiB); try again shortly", {"Retry-After": "1"})
        self._large_bytes += size
        try:
            yield
        finally:
            self._large_bytes -= size

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
        """Load the model and bring the indexes up to date (the topics' and the conversations'),
        so the first search is fast."""
        try:
            self.vault.index(judge=False)
            self.vault.search("warm up", k=1)
            self.vault.conversations.search("warm up", k=1)
            # the judge's vectors while serving
            self._judge_thread = self.vault.frontend_internals.fill_judge_aside(self._watch_stop)
        except MemkitError as exc:
            log.warning("%s", exc)  # each request will say it again

    def start_watch(self) -> None:
        """Run the watcher (memkit.frontends.watch's :class:`Watcher`) on a Vault of its own, until :meth:`stop`:
        the index and index.txt follow the files and, when memkit.yaml configures an LLM, idle
        inbox/ transcripts are digested (the ``digest`` job of ``GET /busy``), as ``memkit watch`` does.

        :raises MemkitError: the watcher cannot start, or the ``llm:`` settings cannot work.
        """
        watch_vault = self.other_vault()
        llm: LLMChoice = "auto" if watch_vault.config.llm else None

        def on_update(report: Any) -> None:
            if report.new or report.removed or report.changed_files:
                log.info("watch: %s", report.summary())
                self.vault.changed()  # the served Vault re-checks the files at its next search

        def digest_inbox() -> None:
            if not watch_vault.upkeep.waiting_transcripts():
                return
            with self._jobs_lock:
                self.digest_running = True
            try:
                for result in watch_vault.upkeep.process_inbox(llm=llm):
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
        for thread in (self._watch_thread, self.index_job.thread, self._digest_thread, self._judge_thread):
            if thread is not None and thread.is_alive():
                thread.join(JOB_STOP_S)

    # ---- the server's own routes and state (each runs in a worker thread) ----
    def aside_vault(self) -> Vault:
        """The Vault of the work :meth:`run_aside` runs (made on first use)."""
        if self._aside_vault is None:
            self._aside_vault = self.other_vault()
        return self._aside_vault

    def index_status(self) -> dict[str, Any]:
        try:
            state = self.vault.frontend_internals.index_status()
        except MemkitError as exc:
            state = {"model": None, "dim": None, "stale_files": None, "error": str(exc)}
        with self._jobs_lock:
            state["job"] = self.index_job.to_dict()
        return state

    def health(self) -> dict[str, Any]:
        """``GET /health``: ok (the index can be read; 503 otherwise), the vault, the index's state."""
        state = self.index_status()
        return {"ok": not state.get("error"), "vault": str(self.vault.root), "index": state}

    def busy(self) -> dict[str, Any]:
        jobs = []
        with self._jobs_lock:
            if self.index_job.running:
                jobs.append("index")
            if self.digest_running or self._digest_thread is not None:
                jobs.append("digest")
        locked = self.vault.frontend_internals.write_locked()
        return {"busy": bool(jobs) or locked, "jobs": jobs, "write_lock": locked}

    def digest_later(self, session: str, **_: Any) -> None:
        """After ``POST /sessions/{session}/messages`` (saved with digest=False): when
        ``digest_every_messages`` may be due (an LLM configured), the digest runs afterwards in a
        thread of its own (:meth:`_digest_later`): the answer never waits for it."""
        config = self.vault.config
        if config.digest_every_messages > 0 and config.llm is not None:
            self._digest_later(session)

    def _digest_later(self, session: str) -> None:
        """Digest ``session``'s new messages if ``digest_every_messages`` are due, after this answer:
        one thread works through the sessions waiting, on a Vault of its own (``GET /busy`` shows
        it as ``digest``); a thousand quick saves queue a session once, not a thousand threads."""
        with self._jobs_lock:
            self._digest_waiting.add(session)
            if self._digest_thread is None:
                self._digest_thread = threading.Thread(target=self._digest_worker, name="memkit-serve-digest",
                                                       daemon=True)
                self._digest_thread.start()

    def _digest_worker(self) -> None:
        while True:
            with self._jobs_lock:
                if not self._digest_waiting:
                    self._digest_thread = None
                    return
                session = self._digest_waiting.pop()
            try:
                if self._digest_vault is None:
                    self._digest_vault = self.other_vault()
                if self._digest_vault.conversations.digest_new(session, force=False) is not None:
                    self.vault.changed()  # it wrote topics: the next search re-checks the files
            except MemkitError as exc:  # LLMError too: the messages stay new, the next save tries again
                log.warning("session %s: digest of the new messages failed (%s); tried again later", session, exc)
            except Exception:  # a full disk…: logged, and the worker goes on (it must never die holding the job)
                log.exception("session %s: digest of the new messages failed; tried again later", session)

    def asks_llm(self, handler: str, args: dict[str, Any]) -> bool:
        """Whether a route's work may wait for the LLM, so runs aside (see :meth:`call`)."""
        config = self.vault.config
        if handler in ("load_session", "keep_window"):
            return (args.get("strategy") or config.session_strategy) != "simple"
        return handler in ("proactive", "run_upkeep")

    def do(self, route: HttpRoute, args: dict[str, Any]) -> Any:
        """A route's work, in this thread: the operation's handler (:mod:`memkit.frontends.operations`)
        on the Vault it belongs to, and its answer; or the server's own method (``route.route.server``,
        or a route of the server's own state)."""
        op, made = route.operation, route.route
        if op is None or made is None or made.server is not None:
            return getattr(self, route.handler if made is None or made.server is None else made.server)(**args)
        vault = self.aside_vault() if self.asks_llm(route.handler, args) else self.vault
        try:
            result = op.run(vault, "http", args, **made.extra)
        finally:
            if vault is not self.vault:
                self.vault.changed()  # the served Vault re-checks the files at its next search
        if made.after is not None:
            getattr(self, made.after)(**args)
        return op.answer(result)

    async def call(self, route: HttpRoute | str, args: dict[str, Any]) -> Any:
        """Do a route's work (:meth:`do`, or the method named ``route`` with the checked ``args``)
        where it belongs: ``busy`` at once in a thread of its own, never behind the vault's worker;
        ``index_start`` here (it starts a thread of its own); what may wait for the LLM aside; the
        rest in the worker."""
        name = route if isinstance(route, str) else (route.route.server if route.route and route.route.server
                                                      else route.handler)
        if name == "busy":
            import anyio.to_thread

            return await anyio.to_thread.run_sync(self.busy)
        if name == "index_start":
            return self.index_start(**args)
        work = (lambda: getattr(self, name)(**args)) if isinstance(route, str) else (lambda: self.do(route, args))
        if self.asks_llm(name, args):
            return await self.run_aside(work)
        return await self.run(work)

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

