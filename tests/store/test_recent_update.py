"""index.txt brought up to date for a few named topics (what the watcher saw change), without
listing topics/: the same lines :meth:`RecentFile.read` gives for those files, the others as they were."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from memkit import Vault
from memkit.store.seen import SEEN_FILE, load_seen

T0 = 1_790_000_000  # a fixed file time (2026-09-21): tests never depend on today's date


def topic(title: str, updated: str, line: str = "an entry") -> str:
    return f"---\ntitle: {title}\nsummary: about {title.lower()}\nupdated: {updated}\n---\n- {line}\n"


def make(tmp_path: Path, n: int = 5, cap: int | None = None) -> Vault:
    vault = Vault.init(tmp_path / "v", profile=False)
    if cap is not None:
        (vault.root / "memkit.yaml").write_text(f"index_max_entries: {cap}\n")
        vault = Vault(vault.root)
    for i in range(n):
        path = vault.topics_dir / f"t{i}.md"
        path.write_text(topic(f"T{i}", f"2026-09-0{i + 1}T10:00:00"))
        os.utime(path, (T0 + i, T0 + i))
    vault.recent()  # memkit looked: the record of every file
    return vault


def order(vault: Vault) -> list[str]:
    return [line.split("|")[1] for line in (vault.root / "index.txt").read_text().splitlines() if line]


@pytest.fixture
def no_listing(monkeypatch):
    """Fail on any listing of topics/ once armed."""
    def arm(vault: Vault) -> None:
        def refuse(*a, **k):
            raise AssertionError("topics/ was listed")
        monkeypatch.setattr(vault.store, "topic_files", refuse)
        monkeypatch.setattr(vault.store, "scan_topic_files", refuse)
    return arm


def hand_edit(path: Path, line: str, when: float) -> None:
    with path.open("a") as fh:
        fh.write(f"- {line}\n")
    os.utime(path, (when, when))


def test_a_hand_edit_moves_its_topic_first_without_a_listing(tmp_path, no_listing):
    vault = make(tmp_path)
    assert order(vault) == ["t4", "t3", "t2", "t1", "t0"]
    hand_edit(vault.topics_dir / "t1.md", "by hand", T0 + 3600)
    no_listing(vault)
    recent = vault.store.index_txt.update(["t1"])
    assert [r.topic for r in recent] == order(vault) == ["t1", "t4", "t3", "t2", "t0"]
    seen = load_seen(vault.store.state_dir / SEEN_FILE)
    assert seen is not None and seen.files["t1"][0] == (vault.topics_dir / "t1.md").stat().st_mtime_ns


def test_the_same_lines_as_a_full_read(tmp_path):
    """update() of the changed names and read() give the same index.txt and the same record."""
    outputs = []
    for how in ("update", "read"):
        vault = make(tmp_path / how)
        hand_edit(vault.topics_dir / "t0.md", "by hand", T0 + 3600)
        new = vault.topics_dir / "new.md"
        new.write_text("- made by hand, no frontmatter\n")
        os.utime(new, (T0 + 7200, T0 + 7200))
        if how == "update":
            vault.store.index_txt.update(["t0", "new"])
        else:
            vault.store.index_txt.read()
        seen = load_seen(vault.store.state_dir / SEEN_FILE)
        assert seen is not None
        outputs.append(((vault.root / "index.txt").read_text(), {k: v[1] for k, v in seen.files.items()}))
    assert outputs[0] == outputs[1]
    assert order(vault) == ["new", "t0", "t4", "t3", "t2", "t1"]


def test_unnamed_files_are_not_looked_at(tmp_path, no_listing):
    vault = make(tmp_path)
    hand_edit(vault.topics_dir / "t0.md", "by hand, not named", T0 + 3600)
    before = load_seen(vault.store.state_dir / SEEN_FILE)
    no_listing(vault)
    vault.store.index_txt.update(["t2"])  # unchanged
    assert order(vault) == ["t4", "t3", "t2", "t1", "t0"]
    after = load_seen(vault.store.state_dir / SEEN_FILE)
    assert before is not None and after is not None and after.files == before.files
    vault.store.index_txt.update(["t0"])
    assert order(vault)[0] == "t0"


def test_a_gone_topic_leaves_without_a_listing_when_nothing_takes_its_place(tmp_path, no_listing):
    vault = make(tmp_path)
    (vault.topics_dir / "t3.md").unlink()
    no_listing(vault)
    vault.store.index_txt.update(["t3"])
    assert order(vault) == ["t4", "t2", "t1", "t0"]
    seen = load_seen(vault.store.state_dir / SEEN_FILE)
    assert seen is not None and "t3" not in seen.files


def test_a_gone_topic_at_the_cap_lets_the_newest_other_in(tmp_path):
    vault = make(tmp_path, n=5, cap=3)
    assert order(vault) == ["t4", "t3", "t2"]
    (vault.topics_dir / "t3.md").unlink()
    vault.store.index_txt.update(["t3"])  # a listing: t1 takes the place
    assert order(vault) == ["t4", "t2", "t1"]


def test_a_pull_is_folded_in_as_read_does(tmp_path):
    """index.txt changed along with a file (a git pull): file times are not used, as in read()."""
    vault = make(tmp_path)
    index = vault.root / "index.txt"
    index.write_text("2026-09-20T08:00:00|t0|about t0\n" + index.read_text())
    hand_edit(vault.topics_dir / "t0.md", "pulled (2026-09-20)", T0 + 90_000)
    recent = vault.store.index_txt.update(["t0"])
    assert [r.topic for r in recent][:2] == ["t0", "t4"]
    assert str(recent[0].updated) == "2026-09-20 08:00:00"  # index.txt's time, not the file's


def test_an_unchanged_record_is_not_rewritten(tmp_path):
    vault = make(tmp_path)
    path = vault.store.state_dir / SEEN_FILE
    os.utime(path, (T0, T0))
    vault.store.index_txt.update(["t2"])
    vault.store.index_txt.read()
    assert path.stat().st_mtime == T0
