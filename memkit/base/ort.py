"""onnxruntime with its telemetry off: the one way memkit imports it (issue 41.16).

onnxruntime 1.29 and later collect telemetry on Linux and macOS too: importing it creates
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` (a device id and an SQLite database of events)
and may send events to Microsoft, unless ``ORT_DISABLE_TELEMETRY`` is set (or ``CI``, which is why
tests/test_telemetry.py removes it). memkit never writes outside the vault and never talks to the
network on its own, so :func:`load_onnxruntime` sets the variable before the first import, then
also calls ``disable_telemetry_events()`` (the switch of older versions). Every InferenceSession
memkit makes (the judge, :mod:`memkit.embeddings.judge`; the int8 scan, :mod:`memkit.search.int8_scan`)
comes from the module it returns; ``from memkit.base.ort import onnxruntime as ort`` is the same
as one import line.

Every pass through such a session runs inside :data:`passes` (``with passes: session.run(...)``):
a process that exits while onnxruntime runs a pass in another thread (the watcher's, a server's
digest or index job, a fill, a search's prefetch) aborts at the interpreter's exit ("terminate
called without an active exception", rc 134: seen under emulation, where passes are slow). At the
exit no new pass starts (:class:`ExitingError`) and the exit waits for those running.
"""
from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from ..errors import ModelError

__all__ = ["TELEMETRY_VARIABLE", "load_onnxruntime", "passes", "ExitingError"]  # and onnxruntime, by __getattr__

TELEMETRY_VARIABLE = "ORT_DISABLE_TELEMETRY"  #: onnxruntime reads it when the library is loaded


def load_onnxruntime() -> Any:
    """The ``onnxruntime`` module, its telemetry off before anything of it ran.

    :raises ImportError: onnxruntime is not installed or cannot be loaded (as ``import`` would).
    """
    os.environ[TELEMETRY_VARIABLE] = "1"  # before the library loads: it writes its files then
    import onnxruntime as ort  # type: ignore[import-untyped]

    switch = getattr(ort, "disable_telemetry_events", None)
    if switch is not None:
        try:
            switch()
        except Exception:  # noqa: BLE001 - a build without telemetry may refuse; nothing to turn off
            pass
    return ort


class ExitingError(ModelError):
    """The process is exiting: onnxruntime takes no new pass (:data:`passes`); a search that
    meets it answers with the static stage, as for any model that cannot run."""


class Passes:
    """The onnxruntime passes running in this process (a context manager around each). The
    first pass registers :meth:`close` to run at the interpreter's exit (importing memkit has
    no side effect)."""

    WAIT_S = 60.0  #: how long the exit waits for the passes running (one pass under emulation: seconds)

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.running = 0
        self.closing = False
        self._registered = False

    def __enter__(self) -> None:
        with self._cond:
            if self.closing:
                raise ExitingError("memkit is exiting: no new pass through onnxruntime")
            if not self._registered:
                atexit.register(self.close)
                self._registered = True
            self.running += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self.running -= 1
            self._cond.notify_all()

    def close(self, timeout: float | None = None) -> bool:
        """Refuse new passes and wait for those running; whether none is left."""
        with self._cond:
            self.closing = True
            return self._cond.wait_for(lambda: self.running == 0, self.WAIT_S if timeout is None else timeout)

    def forked(self) -> None:
        """A forked child: its parent's passes are not in it."""
        self._cond = threading.Condition()
        self.running = 0


#: the process's onnxruntime passes (see the module docstring)
passes = Passes()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=passes.forked)


def __getattr__(name: str) -> Any:
    """``onnxruntime``: :func:`load_onnxruntime` (so ``from memkit.base.ort import onnxruntime``)."""
    if name == "onnxruntime":
        return load_onnxruntime()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
