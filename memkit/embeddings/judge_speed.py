"""``judge: auto``: the judge runs only on a processor fast enough for it, measured once.

On the cores memkit is developed on a query's pass through the judge costs 2-5 ms; a Cortex-A53
board runs int8 matrix products many times slower, and a search that waits tens of milliseconds
for its second stage is no longer instant. With ``judge: auto`` in memkit.yaml the first search
times one query's pass (the median of ``RUNS``, after one to warm the session) and keeps the
judge only when it is within ``BUDGET_MS``; the answer is kept in ``.memkit/judge/speed.json``
under the processor's name, the judge file's size and the thread count, so later processes on
the same machine decide without loading the judge at all (a vault synced to another machine
measures there again). ``judge: true`` (the default) runs it whatever it costs; ``judge: false``
never does.
"""
from __future__ import annotations

import functools
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable

from ..base.fsutil import atomic_write
from .judge import judge_folder, judge_threads, shared_judge

__all__ = ["BUDGET_MS", "machine_key", "cached_fits", "measure", "record", "judge_too_slow", "judge_known_fast"]

BUDGET_MS = 40.0  #: one query's pass may take this long for ``judge: auto`` to keep the judge
RUNS = 5  #: passes timed (the median counts)
PROBE = "what did I decide about the harbour trip with the kids next summer"  #: a typical question
_FILE = "speed.json"


@functools.cache  # read once a process: a cold search asks for it before choosing to preload
def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip().lower() in ("model name", "cpu model", "hardware", "processor") \
                        and value.strip() and not value.strip().isdigit():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_key(model_file: Path, threads: int) -> str:
    """What a measurement holds for: this processor, this judge file (its size) and thread count."""
    try:
        size = model_file.stat().st_size
    except OSError:
        size = -1
    return f"{platform.machine()}|{_cpu_name()}|{os.cpu_count()}|{size}|{threads}"


def _read(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / _FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_fits(folder: Path, key: str) -> tuple[bool, float] | None:
    """(whether the judge fits the budget, its measured ms) recorded for ``key``, or None."""
    entry = _read(folder).get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("ms"), (int, float)):
        return None
    ms = float(entry["ms"])
    return ms <= BUDGET_MS, ms


def measure(embed: Callable[[list[str]], object], runs: int = RUNS) -> float:
    """Milliseconds of one query's pass: the median of ``runs`` after a first one."""
    embed([PROBE])
    took = []
    for _ in range(runs):
        t0 = time.perf_counter()
        embed([PROBE])
        took.append((time.perf_counter() - t0) * 1e3)
    took.sort()  # the median (not statistics.median: its fractions and decimal cost a cold search ~4 ms)
    mid = len(took) // 2
    return took[mid] if len(took) % 2 else (took[mid - 1] + took[mid]) / 2


def record(folder: Path, key: str, ms: float) -> None:
    """Keep ``ms`` for ``key`` (other machines' entries stay: a vault synced between machines)."""
    data = _read(folder)
    data[key] = {"ms": round(ms, 3), "budget_ms": BUDGET_MS}
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / _FILE, json.dumps(data, indent=1, sort_keys=True) + "\n")


def judge_known_fast(folder: Path) -> bool:
    """Whether ``folder``'s record says the judge fits the budget on this machine (no record:
    False; nothing is measured here): a cold search may then load it beside its other work."""
    model = judge_folder()
    known = None if model is None else cached_fits(folder, machine_key(model / "model.onnx", judge_threads()))
    return known is not None and known[0]


def judge_too_slow(folder: Path) -> str | None:
    """Why ``judge: auto`` leaves the judge off on this machine (None: it runs): its measured
    pass, read from ``folder``'s record or timed now (the shared judge loaded) and recorded."""
    model = judge_folder()
    if model is None:
        return None  # not installed: the searcher says so itself
    key = machine_key(model / "model.onnx", judge_threads())
    known = cached_fits(folder, key)
    if known is None:
        judge = shared_judge().judge()
        if judge is None:
            return None
        ms = measure(judge.embed)
        record(folder, key, ms)
        known = ms <= BUDGET_MS, ms
    fits, ms = known
    if fits:
        return None
    return (f"the judge takes {ms:.0f} ms a query on this processor, over judge: auto's budget of "
            f"{BUDGET_MS:.0f} ms; searching with the static model alone (judge: true runs it anyway)")
