"""memkit.base.fsutil: atomic writes, appends and checked replaces on real files."""
from __future__ import annotations

from pathlib import Path

import pytest
from util import write

from memkit.base.fsutil import FileChanged, replace_checked, stamp_of


def test_replace_checked_keeps_an_append_made_meanwhile(tmp_path: Path) -> None:
    path = write(tmp_path / "t.md", "- a\n- b\n")
    base, stamp = path.read_bytes(), stamp_of(path.stat())
    with open(path, "ab") as fh:  # an editor appends after memkit read the file
        fh.write(b"- typed by hand\n")
    replace_checked(path, b"- a\n", base, stamp)  # memkit removes "- b"
    assert path.read_bytes() == b"- a\n- typed by hand\n"


def test_replace_checked_refuses_other_changes(tmp_path: Path) -> None:
    path = write(tmp_path / "t.md", "- a\n- b\n")
    base, stamp = path.read_bytes(), stamp_of(path.stat())
    path.write_bytes(b"- a edited\n- b\n")  # rewritten in place by an editor
    with pytest.raises(FileChanged, match="changed by someone else"):
        replace_checked(path, b"- a\n", base, stamp)
    assert path.read_bytes() == b"- a edited\n- b\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.md"]  # no temp file left


def test_replace_checked_refuses_a_file_created_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "new.md"
    write(path, "- someone was first\n")
    with pytest.raises(FileChanged):
        replace_checked(path, b"- mine\n", b"", None)
    assert path.read_text() == "- someone was first\n"


def test_hold_lock_is_seen_by_lock_held_here_and_in_another_process(tmp_path: Path) -> None:
    import subprocess
    import sys

    from memkit.base.fsutil import hold_lock, lock_held

    mark = tmp_path / "state" / "x.watch"
    assert not lock_held(mark)  # no file: nobody there
    probe = [sys.executable, "-c", "import sys; from pathlib import Path; from memkit.base.fsutil import lock_held; "
             f"sys.exit(0 if lock_held(Path({str(mark)!r})) else 1)"]
    held = hold_lock(mark)
    try:
        assert held.held and mark.exists()
        assert lock_held(mark)
        assert subprocess.run(probe).returncode == 0
        second = hold_lock(mark)  # a second watcher: the mark is taken, it runs without
        assert not second.held
    finally:
        held.release()
    assert not lock_held(mark)
    assert subprocess.run(probe).returncode == 1
    again = hold_lock(mark)
    assert again.held
    again.release()


def test_a_killed_holder_leaves_no_lock(tmp_path: Path) -> None:
    import subprocess
    import sys

    from memkit.base.fsutil import lock_held

    mark = tmp_path / "x.watch"
    code = ("import sys, time; from pathlib import Path; from memkit.base.fsutil import hold_lock; "
            f"h = hold_lock(Path({str(mark)!r})); print(h.held, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "True"
        assert lock_held(mark)
    finally:
        proc.kill()
        proc.wait()
    assert not lock_held(mark)
