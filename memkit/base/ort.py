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
"""
from __future__ import annotations

import os
from typing import Any

__all__ = ["TELEMETRY_VARIABLE", "load_onnxruntime"]  # and onnxruntime, by __getattr__

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


def __getattr__(name: str) -> Any:
    """``onnxruntime``: :func:`load_onnxruntime` (so ``from memkit.base.ort import onnxruntime``)."""
    if name == "onnxruntime":
        return load_onnxruntime()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
