"""`memkit watch`: keep the embedding sidecar and index.txt in step while a person edits topics.

A watchdog observer reports file-system events; the handler only filters them, notes the topic
files they name and raises a flag. A worker thread waits until the events stop (``debounce_s``,
at most :data:`MAX_DELAY_S` after the first one, so a ``git checkout`` of a thousand files still
refreshes within about a second), then re-indexes the files the events named and folds them into
index.txt (once no more events wait: the next edit's refresh goes first), without listing
topics/ (a vault of 20,000 topics takes ~0.5 s to list). The first
refresh, a refresh after topics/ itself came or went, after an inotify queue overflow, after a
failed refresh or after more than :data:`MAX_EVENT_FILES` files, and the periodic re-check
(:data:`RESCAN_INTERVAL_S`) do what ``memkit index`` does instead: a stat of every topic file,
re-reading only changed ones, and index.txt checked against every file.

The watcher holds no lock a reader needs: the sidecar is a SQLite database whose refreshes are
transactions, so a search in another process reads the last committed state meanwhile.
"""
from __future__ import annotations

import inspect
import logging
import math
import os
import signal
import threading
import time
from types import TracebackType
from typing import Any, Callable

from ..base.fsutil import hold_lock
from ..errors import MemkitError
from ..vault import Index, IndexReport, Vault, is_topic_filename

log = logging.getLogger("memkit")

MAX_DELAY_S = 1.0  #: a burst of events refreshes at most this long after its first event
MAX_EVENT_FILES = 1_000  #: a burst naming more topic files than this refreshes with a listing of topics/
RESCAN_INTERVAL_S = 60.0  #: a stat check without events: inotify drops events when its queue overflows
POLL_INTERVAL_S = 1.0  #: how often the polling observer (network drives) lists topics/
RETRY_S = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)  #: waits before retrying a failed refresh
STOP_POLL_S = 0.2  #: how often :func:`run_watch` looks at its stop event
STOP_TIMEOUT_S = 30.0  #: how long :func:`run_watch` lets a refresh in progress finish on exit

# Event types that can change a topic file. "opened" and "closed_no_write" are left out: the
# refresh itself reads every changed file, and must not wake the watcher again.
_CHANGE_TYPES = frozenset({"created", "modified", "deleted", "moved", "closed", "attrib"})
_TOPIC_EVENTS = ("FileCreatedEvent", "FileModifiedEvent", "FileDeletedEvent", "FileMovedEvent",
                 "FileClosedEvent", "FileAttribEvent", "DirCreatedEvent", "DirDeletedEvent", "DirMovedEvent")
_ROOT_EVENTS = ("DirCreatedEvent", "DirDeletedEvent", "DirMovedEvent")


def is_topic_path(topics_dir: str, path: str | bytes) -> bool:
    """Whether an event path can name a topic file: ``NAME.md`` inside ``topics_dir``, at any
    depth, in no hidden folder (``.obsidian/``, ``.git/``, ``.memkit/``). The store's
    ``include``/``exclude`` globs decide the rest when the index looks at the file.

    Editors' swap, backup and temp files (``.x.md.swp``, ``.x.md.tmp``, ``4913``, ``x.md~``,
    ``#x.md#``, ``.#x.md``) and memkit's own ``.x.md.XXXX.tmp`` files are not.

    :param topics_dir: the vault's topics/ folder, as the observer was given it.
    :param path: an event's ``src_path`` or ``dest_path`` (empty for none).
    """
    rel = _under(topics_dir, path)
    return rel is not None and is_topic_filename(rel.rpartition("/")[2])


def _under(topics_dir: str, path: str | bytes) -> str | None:
    """``path`` relative to ``topics_dir`` ('/'-separated), when it is under it in no hidden folder."""
    if not path:
        return None
    path = os.fsdecode(path)
    if not path.startswith(topics_dir + os.sep):
        return None
    rel = path[len(topics_dir) + 1:].replace(os.sep, "/")
    parts = rel.split("/")
    if any(not p or p.startswith(".") for p in parts[:-1]):
        return None
    return rel


class _Handler:
    """The watchdog event handler: filter, then raise the watcher's flag. Never does I/O."""

    def __init__(self, watcher: "Watcher") -> None:
        self._watcher = watcher

    def dispatch(self, event: Any) -> None:
        self._watcher.on_event(event)


class Watcher:
    """Keeps a vault's embedding sidecar and index.txt current while its topic files change.

    >>> with Watcher(Vault("vault")) as watcher:   # doctest: +SKIP
    ...     watcher.wait_idle(5)

    :param vault: the vault to watch.
    :param debounce_s: refresh once no event came for this long (at most :data:`MAX_DELAY_S`
        after the first event of a burst).
    :param polling: poll topics/ every second instead of using inotify/FSEvents/ReadDirectoryChanges
        (for network drives and file systems that send no events).
    :param on_update: called with the :class:`memkit.index.index.IndexReport` of each refresh (a quiet
        periodic re-check is reported only when it found a change).
    :param on_error: called with a one-line message for each problem: a malformed topic file, a
        failed refresh (retried later), an exception from ``inbox_handler``. The same messages go
        to the ``memkit`` logger (malformed files as warnings from the index, the rest as errors).
    :param inbox_handler: called from the worker thread every ``inbox_interval_s`` (first right
        after the initial refresh), e.g. to digest idle transcripts in inbox/.
    :param inbox_interval_s: seconds between ``inbox_handler`` calls.

    Callbacks run on the worker thread; while one runs no refresh happens.
    """

    def __init__(self, vault: Vault, *, debounce_s: float = 0.3, polling: bool = False,
                 on_update: Callable[[IndexReport], None] | None = None,
                 on_error: Callable[[str], None] | None = None,
                 inbox_handler: Callable[[], None] | None = None, inbox_interval_s: float = 30.0) -> None:
        if not debounce_s >= 0 or math.isinf(debounce_s):
            raise ValueError(f"debounce_s must be a number of seconds >= 0, got {debounce_s!r}")
        if not inbox_interval_s > 0:
            raise ValueError(f"inbox_interval_s must be > 0, got {inbox_interval_s!r}")
        self.vault = vault
        self.debounce_s = float(debounce_s)
        self.polling = polling
        self.on_update = on_update
        self.on_error = on_error
        self.inbox_handler = inbox_handler
        self.inbox_interval_s = float(inbox_interval_s)
        self._topics = str(vault.topics_dir)
        self._topics_rel = vault.topics_dir.relative_to(vault.root).as_posix()  # for messages
        self._cond = threading.Condition()
        # The whole queue: a flag and two times. A thousand events cost no more than one.
        self._pending = False
        self._first_event = 0.0
        self._last_event = 0.0
        self._rewatch = False  # topics/ itself was deleted, moved or (re)created
        # the topic files (names) the events since the last refresh named; _list_all: a listing of
        # topics/ is due instead (the first refresh, topics/ replaced, an overflow, too many files)
        self._named: set[str] = set()
        self._list_all = True
        self._busy = False
        self._stopping = False
        self._retry_at: float | None = None
        self._failures = 0
        self._recent_dirty = True  # index.txt is rebuilt after the first refresh, then after changes
        self._recent_names: set[str] = set()  # topics refreshed whose index.txt lines wait for the burst's end
        self._stuck: set[str] = set()  # files the last refresh could not bring up to date
        self._mark: hold_lock | None = None  # the index's watch mark (memkit.base.fsutil.hold_lock), held while it is current
        self._heard = False  # an event-driven refresh worked: events arrive (the mark is earned by it)
        self._deaf = False  # a periodic re-check found a change no event announced: never the mark again
        self._index: Index | None = None
        self._overflow_hook = _OverflowHook(self._overflowed)
        self._observer: Any = None
        self._topics_watch: Any = None
        self._worker: threading.Thread | None = None
        self.refreshes = 0  #: refreshes attempted (the initial one included)
        self.events = 0  #: file-system events that concerned a topic file
        self.ignored = 0  #: events about anything else (swap files, temp files, other folders)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<Watcher {self.vault.root} {state}, {self.refreshes} refreshes>"

    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.is_alive() and not self._stopping

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Start watching: the observer on topics/ (and on the vault folder, to notice topics/
        itself being replaced), then the worker thread, whose first job is a catch-up refresh.

        :raises MemkitError: if the model cannot be loaded or the folder cannot be watched.
        """
        if self._worker is not None:
            raise MemkitError("this watcher was already started; create a new Watcher")
        self.vault.store.ensure_topics_dir()
        # Our own Index (its own database connection), not the Vault's: the caller may search the
        # same Vault from another thread meanwhile.
        self._index = self.vault.frontend_internals.open_index()
        with self._cond:
            self._pending = True  # the catch-up refresh, due at once
            self._first_event = self._last_event = -math.inf
        _OverflowHook.LOGGER.addHandler(self._overflow_hook)
        try:
            self._observer = self._make_observer()
            self._topics_watch = self._schedule_topics()
            self._observer.schedule(_Handler(self), str(self.vault.root), recursive=False,
                                    **_schedule_kwargs(_ROOT_EVENTS))
            self._observer.start()
        except OSError as exc:
            self._stop_observer(5.0)
            raise MemkitError(
                f"cannot watch {self._topics_rel}/: {exc.strerror or exc}"
                " (too many watches? raise fs.inotify.max_user_watches, or use polling)"
            ) from exc
        except BaseException:
            self._stop_observer(5.0)
            raise
        self._worker = threading.Thread(target=self._run, name="memkit-watch", daemon=True)
        self._worker.start()
        log.debug("watching %s (%s)", self._topics, "polling" if self.polling else "native events")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the observer and the worker and join their threads.

        A refresh in progress is finished first (its writes are atomic anyway); pending events
        not yet refreshed are left to the next start's catch-up refresh.

        :param timeout: seconds to wait in all; a worker still busy after that (a very long
            refresh or inbox handler) is left to finish on its own daemon thread, with a warning.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            self._stopping = True
            self._give_back_mark()  # from now on nobody hears the files' events
            self._cond.notify_all()
        self._stop_observer(timeout)
        worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                log.warning("watcher: a refresh is still running after %.0f s; it will finish on its own", timeout)

    def _stop_observer(self, timeout: float) -> None:
        _OverflowHook.LOGGER.removeHandler(self._overflow_hook)
        observer, self._observer = self._observer, None
        if observer is None:
            return
        try:
            observer.stop()  # also stops the inotify reader thread, started or not
            if observer.is_alive():
                observer.join(timeout)
        except Exception as exc:  # a broken observer must not prevent stopping the worker
            log.debug("stopping the observer: %s", exc)

    def __enter__(self) -> "Watcher":
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ---- test hook -------------------------------------------------------------------------
    def wait_idle(self, timeout: float) -> bool:
        """Wait until no event is pending, no refresh is running, and the sidecar matches the
        topic files (a stat check, so a change whose event is still on its way is waited for too).

        :param timeout: seconds to wait at most.
        :returns: True when idle, False on timeout or if the watcher is not running.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if not self.running:
                    return False
                if not self._pending and not self._busy and self.refreshes and self._up_to_date():
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.02))

    def _up_to_date(self) -> bool:
        # Called with the condition held and the worker idle, so the Index is not being changed.
        assert self._index is not None
        try:
            with _QUIET:
                return self._stale_paths() <= self._stuck
        except Exception:
            return False

    def _stale_paths(self, among: list[str] | None = None) -> set[str]:
        """The topic files (vault-relative paths) the sidecar is behind on: of them all (a
        listing), or of the files ``among`` (a stat each)."""
        assert self._index is not None
        if among is not None:
            return self._index.stale_of(among)
        changed, gone = self._index.stale()
        return {tf.path.relative_to(self.vault.root).as_posix() for tf in changed} | set(gone)

    # ---- events (observer thread) ------------------------------------------------------------
    def on_event(self, event: Any) -> None:
        """Take one watchdog event (called on the observer's thread): note it if it can change a
        topic file; the worker thread does the rest."""
        if event.event_type not in _CHANGE_TYPES:
            return
        paths = (event.src_path, getattr(event, "dest_path", "") or "")
        rewatch = False
        named: list[str] = []
        folder = False
        if event.is_directory:
            # topics/ itself coming or going: watch it again; a folder in it created, moved or
            # removed (a folder renamed in an editor): a listing tells which topics it held
            rewatch = event.event_type in ("created", "deleted", "moved") and any(
                p and os.fsdecode(p) == self._topics for p in paths)
            folder = event.event_type in ("created", "deleted", "moved") and any(
                (rel := _under(self._topics, p)) is not None and not rel.rpartition("/")[2].startswith(".")
                for p in paths)
            relevant = rewatch or folder
        else:
            named = [self._name_of(os.fsdecode(p)) for p in paths if is_topic_path(self._topics, p)]
            relevant = bool(named)
        with self._cond:
            if not relevant:
                self.ignored += 1
                return
            self.events += 1
            self._note(named, list_all=rewatch or folder)
            self._rewatch = self._rewatch or rewatch

    def _note(self, names: list[str], list_all: bool) -> None:
        """A change (condition held): these topic files, or possibly any (``list_all``)."""
        now = time.monotonic()
        self._give_back_mark()  # behind this change until it is refreshed
        if not self._pending:
            self._pending = True
            self._first_event = now
        self._last_event = now
        if list_all:
            self._list_all = True
        if self._list_all:
            self._named.clear()
        else:
            self._named.update(names)
            if len(self._named) > MAX_EVENT_FILES:  # a big checkout: one listing is cheaper
                self._list_all = True
                self._named.clear()
        self._cond.notify_all()

    def _overflowed(self) -> None:
        """The observer lost events (inotify's queue overflowed): any topic file may have changed."""
        with self._cond:
            self._note([], list_all=True)

    # ---- the worker ------------------------------------------------------------------------
    def _run(self) -> None:
        next_rescan = time.monotonic() + RESCAN_INTERVAL_S
        next_inbox = time.monotonic()
        while True:
            with self._cond:
                action = self._next_action(next_rescan, next_inbox)
                if action is None:
                    return
                rewatch = False
                named: set[str] | None = None
                if action != "inbox":
                    rewatch, self._rewatch = self._rewatch, False
                    if not (self._list_all or rewatch or action == "rescan"):
                        named = self._named
                    self._named, self._list_all = set(), False
                    self._pending = False
                    self._retry_at = None
                self._busy = True
            try:
                if action == "inbox":
                    self._call_inbox()
                    next_inbox = time.monotonic() + self.inbox_interval_s
                else:
                    if rewatch:
                        self._rewatch_topics()
                    self._refresh(quiet=action == "rescan", named=named)
                    next_rescan = time.monotonic() + RESCAN_INTERVAL_S
            except Exception:  # a bug of ours must not end the watcher silently
                log.exception("watcher: unexpected error")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _next_action(self, next_rescan: float, next_inbox: float) -> str | None:
        """Wait (condition held) for the next job: 'refresh', 'inbox', 'rescan'; None to stop."""
        while not self._stopping:
            now = time.monotonic()
            wake = [next_rescan]
            if self._pending:
                due = min(self._last_event + self.debounce_s, self._first_event + MAX_DELAY_S)
                if now >= due:
                    return "refresh"
                wake.append(due)
            if self._retry_at is not None:
                if now >= self._retry_at:
                    return "refresh"
                wake.append(self._retry_at)
            if self.inbox_handler is not None and self.refreshes:
                if now >= next_inbox:
                    return "inbox"
                wake.append(next_inbox)
            if now >= next_rescan:
                return "rescan"
            self._cond.wait(max(0.0, min(wake) - now))
        return None

    def _refresh(self, quiet: bool, named: set[str] | None = None) -> None:
        """Bring the sidecar and index.txt up to date: with the topic files ``named`` (their
        names; those the last refresh left behind are added), or with a listing of topics/ (None)."""
        index = self._index
        assert index is not None
        report = None
        paths: list[str] | None = None
        if named is not None:
            names = named | {self._name_of(p) for p in self._stuck}
            paths = [os.path.join(self._topics, f"{name}.md") for name in sorted(names)]
            if len(paths) > MAX_EVENT_FILES or any(os.path.islink(self.vault.root / p) for p in paths):
                paths = None  # a symlink may be another topic's file: the listing tells
        try:
            if paths is not None:
                # the files the events named: a stat of each, no listing of topics/
                report = index.refresh(paths=paths)
            else:
                with _QUIET:  # topic_files() warns about outside symlinks at every call
                    changed, gone = index.stale()
                changed_paths = [tf.path.relative_to(self.vault.root).as_posix() for tf in changed]
                # the files just listed, not a second listing (20k topics: ~0.5 s each); the first
                # refresh checks every file (a new model, a damaged index)
                report = index.refresh(paths=changed_paths + gone) if self.refreshes else index.refresh()
            if report.rebuilt_model:
                index.prune_other_models()
            if not report.busy and (report.new or report.reused or report.rebuilt_model or not self.refreshes):
                report.fill_judge(lambda: self._fill_judge(index))  # the second stage's vectors
            # a topic came, went or changed: index.txt follows (a hand edit counts as an update);
            # while more events wait, their refresh goes first and index.txt follows once after
            if paths is not None:
                self._recent_names.update(os.path.basename(p)[:-3] for p in paths)
                with self._cond:
                    later = self._pending
                if not later:
                    with _QUIET:
                        self.vault.frontend_internals.recent_update(self._recent_names)
                    self._recent_names.clear()
            elif changed_paths or gone or self._recent_dirty or self._recent_names:
                with _QUIET:
                    self.vault.recent()
                self._recent_dirty = False
                self._recent_names.clear()
        except Exception as exc:
            self._failed(exc)
            index.close()  # reopened by the next refresh: what is really on disk
        else:
            self._failures = 0
            if paths is not None:
                self._heard = True
            elif quiet and report is not None and (report.changed_files or report.removed) and not self._deaf:
                # the once-a-minute re-check found what no event announced: events do not arrive
                # (a network drive, a mount that sends none): searches check the files themselves
                self._deaf = True
                log.warning("watcher: a change in %s/ came without a file event; searches will check the files "
                            "themselves (use --polling on a file system that sends no events)", self._topics_rel)
        finally:
            try:
                with _QUIET:
                    # of the files named, those still behind; else of them all (a listing)
                    stuck = self._stale_paths(paths)
            except Exception:
                stuck = set()
            with self._cond:
                self._stuck = stuck
                self.refreshes += 1
            self._mark_current(report is not None and not report.busy and not stuck and not self._failures)
        if report is None:
            return
        if not quiet or report.changed_files or report.removed:
            self._callback(self.on_update, report)
        for problem in report.errors:
            self._report(problem)  # the index has logged it already

    def _mark_current(self, current: bool) -> None:
        """Hold the index's watch mark while every topic file is indexed (searches in any process
        then list no files: :meth:`memkit.search.Searcher.watched`); give it back while one is
        behind (a change not refreshed yet, a failed or busy refresh, a file left for later), for
        a search to check the files itself meanwhile. Only a watcher that hears events holds it:
        native events (not polling, which sees a change only a second later), an observer alive,
        one event-driven refresh done, and no change seen since that came without an event."""
        with self._cond:
            index = self._index
            observer = self._observer
            hearing = (self._heard and not self._deaf and not self.polling and not self._stopping
                       and observer is not None and observer.is_alive() and self._topics_watch is not None)
            if current and hearing and not self._pending and index is not None and self._mark is None:
                mark = hold_lock(index.watch_mark)
                self._mark = mark if mark.held else None  # another watcher holds it: it keeps the index current
            elif not (current and hearing):
                self._give_back_mark()

    def _give_back_mark(self) -> None:
        """(condition held) The index is behind: a search checks the files itself until it is not."""
        mark, self._mark = self._mark, None
        if mark is not None:
            mark.release()

    def _fill_judge(self, index: Index) -> int:
        """The judge's vectors of the entries that lack one, ending after the batch it is on once
        the watcher is stopping (on a slow CPU the first fill outlasts any wait, and a process
        exiting inside onnxruntime's pass aborts). What it did not fill, the next start or a search does."""
        return self.vault.frontend_internals.fill_judge(index, stop=lambda: self._stopping)

    def _failed(self, exc: Exception) -> None:
        delay = RETRY_S[min(self._failures, len(RETRY_S) - 1)]
        self._failures += 1
        what = str(exc) if isinstance(exc, MemkitError) else f"{type(exc).__name__}: {exc}"
        message = f"updating the index failed: {what}; retrying in {delay:.0f} s"
        log.error("%s", message)
        log.debug("traceback", exc_info=exc)
        with self._cond:
            self._retry_at = time.monotonic() + delay
            self._list_all = True  # the retry looks at every file
        self._report(message)

    def _call_inbox(self) -> None:
        assert self.inbox_handler is not None
        try:
            self.inbox_handler()
        except Exception as exc:
            what = str(exc) if isinstance(exc, MemkitError) else f"{type(exc).__name__}: {exc}"
            message = f"processing inbox/ failed: {what}"
            log.error("%s", message)
            log.debug("traceback", exc_info=exc)
            self._report(message)

    def _report(self, message: str) -> None:
        self._callback(self.on_error, message)

    @staticmethod
    def _callback(func: Callable[[Any], None] | None, arg: Any) -> None:
        if func is None:
            return
        try:
            func(arg)
        except Exception:
            log.exception("watcher: callback %r failed", func)

    # ---- observer setup ----------------------------------------------------------------------
    def _make_observer(self) -> Any:
        if self.polling:
            from watchdog.observers.polling import PollingObserver

            return PollingObserver(timeout=POLL_INTERVAL_S)
        from watchdog.observers import Observer

        return Observer()

    def _name_of(self, path: str) -> str:
        """The topic name of a topic file's path (absolute, or relative to the vault)."""
        full = path if os.path.isabs(path) else os.path.join(str(self.vault.root), path)
        rel = _under(self._topics, full) or os.path.basename(full)
        return rel[:-3] if rel.endswith(".md") else rel

    def _schedule_topics(self) -> Any:
        return self._observer.schedule(_Handler(self), self._topics, recursive=True,
                                       **_schedule_kwargs(_TOPIC_EVENTS))

    def _rewatch_topics(self) -> None:
        """topics/ was deleted, moved or created: watch the folder that is there now."""
        observer = self._observer
        if observer is None:
            return
        if self._topics_watch is not None:
            try:
                observer.unschedule(self._topics_watch)
            except (KeyError, RuntimeError, OSError):
                pass
            self._topics_watch = None
        if not self.vault.topics_dir.is_dir():
            return  # the watch on the vault folder reports its return
        try:
            self._topics_watch = self._schedule_topics()
        except OSError as exc:
            message = f"cannot watch {self._topics_rel}/ again: {exc.strerror or exc}"
            log.error("%s", message)
            self._report(message)


class _OverflowHook(logging.Handler):
    """Tells the watcher when watchdog logs that inotify's queue overflowed (events were lost;
    watchdog sends the handler no event for it): the next refresh lists topics/."""

    LOGGER = logging.getLogger("watchdog.observers.inotify_c")

    def __init__(self, on_overflow: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self._on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if "overflow" in record.getMessage().lower():
                self._on_overflow()
        except Exception:  # never raised into watchdog's thread
            pass


class _Quiet(logging.Filter):
    """Drops the warnings ``Vault.recent(rebuild=True)`` and the topic listing log about malformed
    topics and outside symlinks while this thread is in a ``with _QUIET:`` block: the index has
    already named each of those files once, and a rebuild follows every change, so they would
    repeat at every save. Other threads' records pass untouched."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.WARNING or not getattr(self._local, "active", False)

    def __enter__(self) -> None:
        log.addFilter(self)  # once (addFilter ignores a repeat); inert outside this block's thread
        self._local.active = True

    def __exit__(self, *exc: object) -> None:
        self._local.active = False


_QUIET = _Quiet()


def _schedule_kwargs(names: tuple[str, ...]) -> dict[str, Any]:
    """Options for Observer.schedule that this watchdog version has (>= 4: ``event_filter``,
    >= 5: ``follow_symlink``).

    The filter also narrows the inotify mask, so reading topic files (our own refresh) sends no
    events. Following a symlink matters only for topics/ itself being one: without it inotify
    would watch the link, not the folder.
    """
    from watchdog import events
    from watchdog.observers.api import BaseObserver

    params = inspect.signature(BaseObserver.schedule).parameters
    options: dict[str, Any] = {}
    if "event_filter" in params:
        options["event_filter"] = [getattr(events, n) for n in names if hasattr(events, n)]
    if "follow_symlink" in params:
        options["follow_symlink"] = True
    return options


def run_watch(vault: Vault, *, polling: bool = False, debounce_s: float = 0.3,
              stop_event: threading.Event | None = None,
              on_update: Callable[[IndexReport], None] | None = None,
              on_error: Callable[[str], None] | None = None,
              inbox_handler: Callable[[], None] | None = None, inbox_interval_s: float = 30.0) -> None:
    """Watch ``vault`` until ``stop_event`` is set, Ctrl-C, or SIGTERM (what ``memkit watch`` runs).

    Called from the main thread it handles SIGTERM by setting the stop event (the previous
    handler is restored on return); from another thread signals are left alone.

    :param vault: the vault to watch.
    :param polling: poll instead of using native file-system events (network drives).
    :param debounce_s: see :class:`Watcher`.
    :param stop_event: set it to stop; one is made if not given.
    :param on_update: see :class:`Watcher`.
    :param on_error: see :class:`Watcher`.
    :param inbox_handler: see :class:`Watcher`.
    :param inbox_interval_s: see :class:`Watcher`.
    :raises MemkitError: if watching cannot start (no model, no inotify watches left).
    """
    stop = stop_event if stop_event is not None else threading.Event()
    watcher = Watcher(vault, debounce_s=debounce_s, polling=polling, on_update=on_update,
                      on_error=on_error, inbox_handler=inbox_handler, inbox_interval_s=inbox_interval_s)
    in_main = threading.current_thread() is threading.main_thread()
    previous: Any = None

    def on_sigterm(signum: int, frame: Any) -> None:
        stop.set()

    if in_main:
        previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        watcher.start()
        if in_main:
            # Poll with short sleeps rather than stop.wait(): a signal handler calling stop.set()
            # while this thread is inside stop.wait() could deadlock on the event's own lock.
            while not stop.is_set():
                time.sleep(STOP_POLL_S)
        else:
            stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        try:
            watcher.stop(timeout=STOP_TIMEOUT_S)
        finally:
            if in_main:
                signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


__all__ = ["Watcher", "run_watch", "is_topic_path"]
