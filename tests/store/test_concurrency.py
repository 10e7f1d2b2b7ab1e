"""Real processes: concurrent writers lose no line; a killed writer leaves old or new, never half."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
from util import fork, reap

from memkit import Vault

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="writers are forked processes")


def _cli_adds(vault: str, tag: int, n: int) -> None:
    from memkit.frontends.cli.group import main

    for i in range(n):
        try:
            main(["--vault", vault, "add", f"note {tag}-{i}", "--topic", "shared"], standalone_mode=False)
        except SystemExit:
            pass


@needs_fork
def test_eight_processes_adding_at_once(tmp_path):
    v = Vault.init(tmp_path / "v", profile=False)
    (v.root / "memkit.yaml").write_text("topic_split_threshold_lines: 100000\n")  # this test is about the lock
    v = Vault(v.root)
    v.add("seed line", topic="shared")
    pids = [fork(_cli_adds, str(v.root), p, 20) for p in range(8)]  # each its own process and lock file handle
    assert [reap(pid) for pid in pids] == [0] * 8
    texts = [e.text for e in v.topic("shared").entries]
    assert len(texts) == 161
    expected = {f"note {p}-{i}" for p in range(8) for i in range(20)}
    assert {t.rsplit(" (", 1)[0] for t in texts[1:]} == expected
    assert [r.topic for r in v.recent()] == ["shared"]


def _rewrite_forever(path: Path, ready: int) -> None:
    from memkit.base.fsutil import atomic_write

    a = b"A" * 3_000_000
    b = b"B" * 2_000_000 + b"\n"
    os.write(ready, b"r")
    i = 0
    while True:
        atomic_write(path, a if i % 2 else b)
        i += 1


@needs_fork
def test_killed_writer_leaves_old_or_new(tmp_path):
    target = tmp_path / "topic.md"
    target.write_bytes(b"original\n")
    valid = {b"original\n", b"A" * 3_000_000, b"B" * 2_000_000 + b"\n"}
    for delay in (0.0, 0.003, 0.011, 0.029, 0.05, 0.07, 0.13, 0.2):
        r, w = os.pipe()
        pid = fork(_rewrite_forever, target, w)
        try:
            os.close(w)
            assert os.read(r, 1) == b"r"
            time.sleep(delay)
        finally:  # the writer loops forever: never leave it running, whatever fails above
            os.kill(pid, signal.SIGKILL)
            reap(pid)
            os.close(r)
        assert target.read_bytes() in valid
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "topic.md"]
    # a kill between mkstemp and rename may leave a hidden temp file, never a damaged topic
    assert all(name.startswith(".topic.md.") and name.endswith(".tmp") for name in leftovers)


def _adds(root: Path, tag: str) -> None:
    from memkit.config.settings import Config

    v = Vault(root, config=Config(topic_split_threshold_lines=100000))
    for i in range(40):
        v.add(f"added by {tag} number {i}", topic="cooking", split=False)


def _forgets(root: Path) -> None:
    v = Vault(root)
    for i in range(15):
        v.forget(match=f"seed line {i:02d}x", topic="cooking")


@needs_fork
def test_hand_appends_are_never_lost_while_memkit_adds_and_forgets(tmp_path: Path) -> None:
    """Processes: 3 memkit writers (adds, and forgets that rewrite the file) and a shell appending
    with ``>>`` to the same topic file at the same time; every line is there at the end."""
    vault = Vault.init(tmp_path / "v", profile=False)
    seeded = [f"seed line {i:02d}x" for i in range(15)]
    for text in seeded:
        vault.add(text, topic="cooking")
    path = vault.topics_dir / "cooking.md"
    # the shell appends until the memkit writers are done (a few ms apart, like an editor saving)
    hand = (f"i=0; while [ ! -e '{tmp_path}/stop' ] || [ $i -lt 150 ]; do i=$((i+1)); "
            f"echo \"- hand line $i\" >> '{path}'; sleep 0.002; done; echo $i > '{tmp_path}/count'")
    shell = subprocess.Popen(["bash", "-c", hand])
    try:
        pids = [fork(_adds, vault.root, f"w{n}") for n in range(2)] + [fork(_forgets, vault.root)]
        codes = [reap(pid) for pid in pids]
    finally:
        (tmp_path / "stop").touch()  # the shell stops even when a writer failed
        if shell.wait(timeout=60) != 0:
            shell.kill()
    assert codes == [0, 0, 0]
    hand_lines = int((tmp_path / "count").read_text())
    lines = path.read_text().splitlines()
    for n in range(2):
        for i in range(40):
            assert lines.count(f"- added by w{n} number {i} ({datetime.now().date().isoformat()})") == 1
    lost = [i for i in range(1, hand_lines + 1) if lines.count(f"- hand line {i}") != 1]
    assert not lost, f"{len(lost)} of {hand_lines} hand-appended lines lost: {lost[:10]}"
    archive = (vault.root / "archive.md").read_text()
    for text in seeded:
        assert not any(text == line.split(" (")[0][2:] for line in lines)
        assert archive.count(f"): - {text} (") == 1
