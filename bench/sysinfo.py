"""What the benchmark scripts print about the machine they ran on (bench.py, bench_http.py)."""
from __future__ import annotations

import platform


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what ``platform`` knows."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def memory_total() -> str | None:
    """Total memory as ``"23.5 GB"`` (/proc/meminfo), or None."""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GB"
    except OSError:
        pass
    return None


def versions(packages: tuple[str, ...]) -> list[str]:
    """``"name 1.2.3"`` for each installed distribution, ``"name (not installed)"`` otherwise."""
    from importlib.metadata import version

    out = []
    for name in packages:
        try:
            out.append(f"{name} {version(name)}")
        except Exception:
            out.append(f"{name} (not installed)")
    return out
