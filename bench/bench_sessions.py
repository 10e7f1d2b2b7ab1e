"""Conversation sessions (issue 17.7): listing 1,000 sessions and loading the last 4,096 tokens of a
10,000-message session, each warm (target: well under 50 ms), plus appends, 8 concurrent writers
and the search across past conversations (the sessions' own index). Prints its figures and the machine.

    .venv/bin/python bench/bench_sessions.py [--sessions 1000] [--messages 10000] [--repeat 20]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memkit import Vault  # noqa: E402
from memkit.base.fsutil import atomic_write  # noqa: E402
from memkit.formats.session import SessionMessage, format_time, render_header, render_message  # noqa: E402

WORDS = ("lisbon trip flight hotel march booked train bread sourdough starter recipe oven running half "
         "marathon plan knee doctor appointment garden tomatoes kayak weekend budget rent invoice client "
         "meeting project deadline python bug release camera lens birthday gift sister dinner").split()
T0 = datetime(2026, 1, 1, 8, 0, tzinfo=timezone.utc)


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def write_session(folder: Path, sid: str, count: int, rng: random.Random, start: datetime) -> None:
    parts = [render_header(sid, format_time(start), title=sentence(rng, 4), system="You are a helpful assistant.")]
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        parts.append(render_message(SessionMessage(role, sentence(rng, rng.randint(8, 40)),
                                                   format_time(start + timedelta(seconds=30 * i)))))
    atomic_write(folder / f"{start.date().isoformat()}-{sid}.md", "".join(parts))


def timed(fn, repeat: int) -> tuple[float, float, object]:
    """(median ms, max ms, last result) of ``repeat`` calls."""
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), max(times), result


def _writer(args: tuple[str, int, int]) -> None:
    root, writer, count = args
    v = Vault(root)
    for i in range(count):
        v.conversations.append("busy", "user", f"writer {writer} message {i}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--per-session", type=int, default=20, help="messages in each of the listed sessions")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    os.environ.setdefault("MEMKIT_MODEL", "memkit-m2v")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
          f"Python {platform.python_version()}")
    rng = random.Random(17)
    with tempfile.TemporaryDirectory(prefix="memkit-bench-sessions-") as tmp:
        vault = Vault.init(Path(tmp) / "v")
        folder = vault.root / "sessions"
        folder.mkdir()
        t = time.perf_counter()
        for n in range(args.sessions):
            write_session(folder, f"s{n:05d}", args.per_session, rng, T0 + timedelta(hours=n))
        write_session(folder, "long", args.messages, rng, T0)
        size = (folder / f"{T0.date().isoformat()}-long.md").stat().st_size
        print(f"setup: {args.sessions} sessions of {args.per_session} messages + one of {args.messages:,} "
              f"messages ({size / 1e6:.1f} MB) in {time.perf_counter() - t:.1f} s")

        # ---- listing
        cold = Vault(vault.root)
        t = time.perf_counter()
        infos = cold.conversations.list()
        print(f"list {len(infos):,} sessions, cold (every file read, cache written): "
              f"{(time.perf_counter() - t) * 1000:.1f} ms")
        med, worst, _ = timed(cold.conversations.list, args.repeat)
        print(f"list {len(infos):,} sessions, warm (same Vault): median {med:.1f} ms, max {worst:.1f} ms")
        med, worst, _ = timed(lambda: Vault(vault.root).conversations.list(), args.repeat)
        print(f"list {len(infos):,} sessions, new Vault reading .memkit/session-list.json: "
              f"median {med:.1f} ms, max {worst:.1f} ms")

        # ---- loading the last 4,096 tokens
        med, worst, window = timed(lambda: vault.conversations.window("long", 4096), args.repeat)
        print(f"load the last 4,096 tokens of {args.messages:,} messages (simple): median {med:.1f} ms, "
              f"max {worst:.1f} ms ({len(window)} messages, ~{window.tokens} tokens)")  # type: ignore[attr-defined]
        med, worst, window = timed(lambda: vault.conversations.window("long", 4096, strategy="hybrid", llm=None),
                                   args.repeat)
        print(f"load the last 4,096 tokens, hybrid without an LLM: median {med:.1f} ms, max {worst:.1f} ms")

        # ---- appends
        vault.conversations.new(session_id="busy")
        med, worst, _ = timed(lambda: vault.conversations.append("busy", "user", "a new message " * 10), args.repeat)
        print(f"append one message (O_APPEND + fsync): median {med:.2f} ms, max {worst:.2f} ms")
        writers, each = 8, 100
        t = time.perf_counter()
        with multiprocessing.get_context("fork").Pool(writers) as pool:
            pool.map(_writer, [(str(vault.root), w, each) for w in range(writers)])
        took = time.perf_counter() - t
        got = len(vault.conversations.show("busy").messages) - args.repeat
        print(f"{writers} writers x {each} appends to one session: {got}/{writers * each} messages kept, "
              f"{took:.2f} s ({writers * each / took:.0f} appends/s)")

        # ---- search across past conversations: the sessions' own index (memkit.index.sources.SessionSource)
        rows = args.sessions * args.per_session + args.messages
        t = time.perf_counter()
        hits = vault.conversations.search("when is the half marathon", k=5)
        print(f"search {rows:,} messages, first (builds the sessions' index: parse, embed, write): "
              f"{(time.perf_counter() - t):.2f} s, {len(hits)} hits")
        med, worst, _ = timed(lambda: vault.conversations.search("sourdough starter recipe", k=5), args.repeat)
        print(f"search {rows:,} messages, warm (each search stats every session file): median {med:.1f} ms, "
              f"max {worst:.1f} ms")
        fresh = Vault(vault.root)  # a new process's Vault: the index is read from .memkit/index/
        t = time.perf_counter()
        fresh.conversations.search("sourdough starter recipe", k=5)
        print(f"search {rows:,} messages, a new Vault (index read from disk, model loaded): "
              f"{(time.perf_counter() - t) * 1000:.0f} ms")
        vault.conversations.append("busy", "user", "the half marathon is on May 4th", now=None)
        t = time.perf_counter()
        vault.conversations.search("half marathon date", k=5)
        print(f"search after one appended message (that file read again, one message embedded): "
              f"{(time.perf_counter() - t) * 1000:.1f} ms")

if __name__ == "__main__":
    main()
