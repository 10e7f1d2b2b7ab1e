"""A damaged index heals (issue 41, item 14): an index file whose inner pages a disk or a copy broke
used to break every search and `index --full` for good, while `memkit check` passed."""
from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memkit import Vault
from memkit.frontends.cli.group import main
from memkit.index.index import damaged

SAMPLE = Path(__file__).resolve().parents[2] / "vault"


def _damage(path: Path) -> None:
    """Overwrite part of every third page after the first two (the header and schema stay)."""
    size = path.stat().st_size
    with open(path, "r+b") as f:
        for at in range(2 * 4096, size, 3 * 4096):
            f.seek(at + 100)
            f.write(b"\xde\xad\xbe\xef" * 200)


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".memkit"))
    Vault(root).index(judge=False)
    (index,) = [p for p in (root / ".memkit" / "index").glob("*.sqlite3") if "sessions" not in p.name]
    con = sqlite3.connect(index)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # every page in the file itself
    con.close()
    _damage(index)
    return root


def test_damage_is_told_from_a_lock_or_a_full_disk():
    assert damaged(sqlite3.DatabaseError("database disk image is malformed"))
    assert damaged(sqlite3.OperationalError("Could not decode to UTF-8 column 'body'"))
    assert not damaged(sqlite3.OperationalError("database is locked"))
    assert not damaged(sqlite3.OperationalError("database or disk is full"))
    assert not damaged(ValueError("x"))


def test_a_search_on_a_damaged_index_rebuilds_it_from_the_files(broken: Path):
    result = CliRunner().invoke(main, ["--vault", str(broken), "search", "MikroTik hAP ax3", "-k", "1", "--fast"])
    assert result.exit_code == 0, result.output
    assert "Router is a MikroTik hAP ax3" in result.output
    assert "rebuilding it" in result.output  # said, once
    again = CliRunner().invoke(main, ["--vault", str(broken), "search", "MikroTik hAP ax3", "-k", "1", "--fast"])
    assert again.exit_code == 0 and "rebuilding" not in again.output


def test_check_reports_a_damaged_index_and_fix_makes_it_anew(broken: Path):
    result = CliRunner().invoke(main, ["--vault", str(broken), "check"])
    assert "is damaged" in result.output, result.output
    fixed = CliRunner().invoke(main, ["--vault", str(broken), "check", "--fix"])
    assert "made anew from the topic files" in fixed.output, fixed.output
    assert CliRunner().invoke(main, ["--vault", str(broken), "check"]).exit_code == 0
    assert os.path.getsize(next((broken / ".memkit" / "index").glob("*.sqlite3"))) > 0
