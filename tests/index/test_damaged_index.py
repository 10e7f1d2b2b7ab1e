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


def _damage_rows(root: Path, how: str) -> None:
    """Damage what the index holds of each topic file, the file's pages themselves whole (SQLite's
    quick check passes): bytes a disk flipped inside a row's term ids, or a row map cut short."""
    (index,) = [p for p in (root / ".memkit" / "index").glob("*.sqlite3") if "sessions" not in p.name]
    con = sqlite3.connect(index)
    for fid, terms, counts in con.execute("SELECT file_id, terms, counts FROM file_data").fetchall():
        if how == "terms":  # every term id turned negative (a flipped high bit)
            terms = bytes(b | 0x80 if i % 4 == 3 else b for i, b in enumerate(terms))
        else:
            counts = counts[:-4]
        con.execute("UPDATE file_data SET terms = ?, counts = ? WHERE file_id = ?", (terms, counts, fid))
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


@pytest.mark.parametrize("how", ["terms", "counts"])
def test_rows_damaged_inside_whole_pages_are_found_and_remade(tmp_path: Path, how: str):
    """The pages whole, the rows not: every search failed with "unexpected error: ValueError:
    'list' argument must have no negative elements" while `memkit check` said "no problems found"."""
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".memkit"))
    Vault(root).index(judge=False)
    _damage_rows(root, how)
    checked = CliRunner().invoke(main, ["--vault", str(root), "check"])
    assert "is damaged" in checked.output, checked.output  # fixable: as a damaged page is
    result = CliRunner().invoke(main, ["--vault", str(root), "search", "MikroTik hAP ax3", "-k", "1", "--fast"])
    assert result.exit_code == 0, result.output
    assert "Router is a MikroTik hAP ax3" in result.output and "rebuilding it" in result.output
    assert CliRunner().invoke(main, ["--vault", str(root), "check"]).exit_code == 0


def test_a_folder_where_the_matrix_should_be_is_replaced_for_good(tmp_path: Path):
    """The first search rebuilt the index, yet could not remove the folder: every later search
    failed with "memkit: error: Is a directory (….npy)" and `memkit check` said "no problems found"."""
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".memkit"))
    Vault(root).index(judge=False)
    (matrix,) = (root / ".memkit" / "index").glob("*.npy")
    matrix.unlink()
    matrix.mkdir()
    (matrix / "stray").write_text("x")
    assert "is damaged" in CliRunner().invoke(main, ["--vault", str(root), "check"]).output
    for _ in range(3):
        result = CliRunner().invoke(main, ["--vault", str(root), "search", "MikroTik hAP ax3", "-k", "1", "--fast"])
        assert result.exit_code == 0, result.output
        assert "Router is a MikroTik hAP ax3" in result.output
    assert not any(p.is_dir() for p in (root / ".memkit" / "index").glob("*.npy"))
    assert CliRunner().invoke(main, ["--vault", str(root), "check"]).exit_code == 0


def test_check_finds_bits_flipped_in_the_vectors_and_fix_makes_them_anew(tmp_path: Path):
    """Exponent bits flipped in the .npy matrix (the pages of SQLite whole): `memkit check` said
    "no problems found" while the vectors held inf and values of 1e30."""
    root = tmp_path / "vault"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".memkit"))
    Vault(root).index(judge=False)
    (matrix,) = (root / ".memkit" / "index").glob("*.npy")
    data = bytearray(matrix.read_bytes())
    for at in range(131, len(data), 997):  # a float32's high byte holds its sign and exponent
        data[at - (at % 4) + 3] ^= 0x40
    matrix.write_bytes(bytes(data))
    checked = CliRunner().invoke(main, ["--vault", str(root), "check"])
    assert "is damaged" in checked.output and "bits flipped" in checked.output, checked.output
    fixed = CliRunner().invoke(main, ["--vault", str(root), "check", "--fix"])
    assert "made anew from the topic files" in fixed.output, fixed.output
    assert CliRunner().invoke(main, ["--vault", str(root), "check"]).output.startswith("no problems found")
