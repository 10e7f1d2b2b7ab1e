"""Never write outside the vault, third-party telemetry included (issue 41.16): onnxruntime 1.29+
creates ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` (a device id, an events database) when
it loads, unless ``ORT_DISABLE_TELEMETRY`` (or ``CI``) is set; memkit/base/ort.py sets it.

The subprocesses run with HOME a temp folder and without CI and the ORT_ variables, as a person's
shell would. The strace test reads every system call that can create or change a file; it skips
only where strace is missing outside CI (.ci/run installs it).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the calls that create, change or remove a file or a folder
CALLS = "open,openat,openat2,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,unlink,unlinkat,rmdir,truncate"
WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND")


def person_env(home: Path) -> dict[str, str]:
    """The environment of a person's shell: HOME a temp folder; no CI, no ORT_ switch, no XDG cache."""
    env = {k: v for k, v in os.environ.items()
           if k != "CI" and not k.startswith(("ORT_", "XDG_", "MEMKIT_")) and k != "PYTHONPATH"}
    env.update(HOME=str(home), HF_HUB_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def memkit(root: Path, env: dict[str, str], *args: str, strace: list[str] | None = None) -> str:
    command = [*(strace or []), sys.executable, "-m", "memkit", "--vault", str(root), *args]
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


def written(trace: str, cwd: Path) -> list[str]:
    """The paths the traced calls created, opened for writing, renamed, linked or removed."""
    out = []
    for line in trace.splitlines():
        call = re.match(r"(?:\d+\s+)?(\w+)\((.*)\)\s+=\s+(-?\d+)(<[^>]*>)?", line)
        if call is None or call.group(3).startswith("-"):
            continue  # failed (ENOENT…): nothing was written
        name, args, resolved = call.group(1), call.group(2), call.group(4)
        if name in ("open", "openat", "openat2", "creat"):
            if name != "creat" and not WRITE_FLAGS.search(args):
                continue
            out.append(resolved[1:-1] if resolved else args)
            continue
        for dirfd, path in re.findall(r'(?:(?:AT_FDCWD|\d+)<([^>]*)>,\s*)?"([^"]*)"', args):
            out.append(path if path.startswith("/") else str(Path(dirfd or cwd) / path))
    return out


def outside(paths: list[str], root: Path) -> list[str]:
    """What is neither in the vault nor a device (/dev/null, a terminal)."""
    vault = str(root.resolve())
    return sorted({p for p in paths if not (p == vault or p.startswith(vault + "/") or p.startswith("/dev/"))})


@pytest.fixture
def vault(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir()
    env = person_env(home)
    root = tmp_path / "v"
    subprocess.run([sys.executable, "-m", "memkit", "init", str(root)], env=env, check=True, capture_output=True,
                   timeout=120)
    memkit(root, env, "add", "Prefers bomba rice for paella", "--topic", "cooking")
    memkit(root, env, "add", "Allergic to tree nuts", "--topic", "health")
    return root, env


def test_a_search_writes_nothing_outside_the_vault(vault, tmp_path):
    root, env = vault
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI"):
            pytest.fail("strace is missing: .ci/run installs it (apt-get install strace)")
        pytest.skip("strace is not installed (.ci/run installs it; apt-get install strace)")
    log = tmp_path / "trace.txt"
    out = memkit(root, env, "search", "what rice for paella", strace=[strace, "-f", "-qq", "-y", "-e",
                                                                     f"trace={CALLS}", "-o", str(log)])
    assert "bomba rice" in out
    paths = written(log.read_text(), root)
    assert any(".memkit" in p for p in paths), "the trace reads the vault's own writes (the index)"
    assert outside(paths, root) == []
    assert list((tmp_path / "home").iterdir()) == []


def test_the_judge_and_the_int8_scan_leave_home_alone(tmp_path):
    """Without strace: every InferenceSession memkit makes (the judge, the int8 scan) comes from
    memkit.base.ort, and HOME stays empty."""
    home = tmp_path / "home"
    home.mkdir()
    code = ("from memkit.embeddings.judge import Judge, judge_folder\n"
            "from memkit.search.int8_scan import Int8Scan\n"
            "import os, sys\n"
            "Int8Scan(64)\n"
            "judge = Judge(judge_folder())\n"
            "judge.embed(['bomba rice'])\n"
            "assert os.environ['ORT_DISABLE_TELEMETRY'] == '1'\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=person_env(home), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert [str(p.relative_to(home)) for p in home.rglob("*")] == []
