"""What only memkit's long-running front ends (``memkit serve``, ``memkit mcp``, ``memkit watch``)
need of a vault: an index connection of their own, the judge's vectors filled aside (or in the
watcher's thread), index.txt brought up to date for a few topics, the index's state, whether a
writer holds the lock. ``vault.frontend_internals`` is that object, handed the vault's runtime
context (:class:`memkit.runtime.Runtime`); it is memkit's own plumbing, not library API: its names
may change in any release.
"""
from __future__ import annotations

import atexit
import logging
import threading
from typing import Any, Callable, Iterable

from ..base.fsutil import file_lock
from ..errors import MemkitError, VaultLocked
from ..formats.recent import RecentTopic
from ..index import Index
from .runtime import Runtime

log = logging.getLogger("memkit")

__all__ = ["Serving"]

#: the threads filling the judge's vectors aside (servers), stopped before the interpreter exits:
#: a daemon thread killed inside onnxruntime's pass aborts the process ("terminate called …")
_FILLING: list[threading.Thread] = []
_FILLING_LOCK = threading.Lock()
_EXITING = threading.Event()


def _stop_filling() -> None:
    _EXITING.set()
    with _FILLING_LOCK:
        threads = list(_FILLING)
    for thread in threads:
        thread.join(60)  # a batch under emulation or on a slow board takes seconds


class _Stopped(Exception):
    pass


class Serving:
    """A vault's hooks for long-running front ends, ``vault.frontend_internals``: internal, not
    library API (see the module docstring).

    :param runtime: the vault's runtime context: its store, its searcher (built when first
        needed) and its embedder (for an index connection of another thread).
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.store = runtime.store

    def open_index(self) -> Index:
        """A new index of this vault and model, with its own database connection: for a thread
        that refreshes while another searches the vault (the watcher)."""
        return Index(self.store, self.runtime.embedder)

    def fill_judge(self, index: Index | None = None, progress: Any = None,
                   stop: Callable[[], bool] | None = None) -> int:
        """Store the judge's vector of every entry that lacks one (``index``: another connection,
        the watcher's); how many were embedded. ``stop``: once it says so (or the interpreter is
        exiting), the fill ends after the batch it is on (0 is returned): a process that exits
        while onnxruntime runs a pass in a daemon thread aborts ("terminate called …")."""
        if stop is None:
            return self.runtime.searcher.fill_judge(progress, index=index)

        def check(done: int, total: int) -> None:
            if stop() or _EXITING.is_set():
                raise _Stopped
            if progress is not None:
                progress(done, total)

        try:
            return self.runtime.searcher.fill_judge(check, index=index)
        except _Stopped:
            return 0

    def judge_missing(self) -> int | None:
        """How many live entries have no judge vector stored (None: no judge here)."""
        return self.runtime.searcher.judge_missing()

    def fill_judge_aside(self, stop: threading.Event | None = None) -> threading.Thread:
        """Fill the judge's stored vectors in a daemon thread with an index connection of its own
        (a server's start: it serves at once, and a search embeds the candidates it meets without
        a vector meanwhile). ``stop``: set, the thread ends after the batch it is on."""
        def fill() -> None:
            index = self.open_index()
            try:
                self.fill_judge(index, stop=lambda: stop is not None and stop.is_set())
            except Exception as exc:  # a thread of its own: said, never raised into the server
                log.warning("filling the judge's vectors stopped: %s", exc)
            finally:
                index.close()

        thread = threading.Thread(target=fill, name="memkit-judge-fill", daemon=True)
        with _FILLING_LOCK:
            if not _FILLING:
                atexit.register(_stop_filling)
            _FILLING[:] = [t for t in _FILLING if t.is_alive()] + [thread]
        thread.start()
        return thread

    def recent_update(self, names: Iterable[str]) -> list[RecentTopic]:
        """index.txt brought up to date for the topics ``names`` alone, without listing topics/
        (the watcher, after an edit: :meth:`memkit.store.recent_file.RecentFile.update`)."""
        return self.store.index_txt.update(names)

    def index_status(self) -> dict[str, Any]:
        """The index as ``memkit stats`` shows it: model, dim, file, exists and ``stale_files``
        (topic files changed since the last refresh). Loads no model."""
        return self.runtime.searcher.index_state()

    def write_locked(self) -> bool:
        """Whether a writer (a thread of this process or another process) holds the vault's write
        lock right now; never waits. False when the lock cannot be looked at (a read-only vault)."""
        try:
            with file_lock(self.store.lock().path, timeout=0):
                return False
        except VaultLocked:
            return True
        except MemkitError:
            return False
