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
