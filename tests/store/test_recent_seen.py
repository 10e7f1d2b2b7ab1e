"""index.txt follows hand edits from the very first command, and the same files give the same
index.txt bytes on every clone (a git checkout or pull is not a hand edit)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from memkit import Vault

T0 = 1_790_000_000  # a fixed file time (2026-09-21): tests never depend on today's date

TOPICS = {
    "family": "---\ntitle: Family\nsummary: people\nupdated: 2026-09-01T10:00:00\n---\n- Sister Ana lives in Coimbra\n",
    "cooking": "---\ntitle: Cooking\nsummary: food\nupdated: 2026-09-10T10:00:00\n---\n- Prefers bomba rice\n",
    "travel": "---\ntitle: Travel\nsummary: trips\nupdated: 2026-09-05T10:00:00\n---\n- Window seat on trains\n",
}
INDEX = ("2026-09-10T10:00:00|cooking|food\n2026-09-05T10:00:00|travel|trips\n2026-09-01T10:00:00|family|people\n")


def sample(root: Path) -> Path:
    """A vault as a copy or a clone leaves it: files, index.txt, no .memkit/, every file of one time."""
    (root / "topics").mkdir(parents=True)
    (root / "memkit.yaml").write_text("")
    (root / "index.txt").write_text(INDEX)
    for name, text in TOPICS.items():
        (root / "topics" / f"{name}.md").write_text(text)
    for path in [root / "index.txt", *(root / "topics").iterdir()]:
        os.utime(path, (T0, T0))
    return root


def hand_edit(path: Path, line: str, when: float) -> None:
    with path.open("a") as f:
        f.write(line)
    os.utime(path, (when, when))


def test_a_hand_edit_before_memkit_ever_looked_moves_its_topic_first(tmp_path):
    root = sample(tmp_path / "v")
    hand_edit(root / "topics" / "family.md", "- Ana's birthday is on 3 May\n", T0 + 600)
    recent = Vault(root).recent()
    assert [r.topic for r in recent] == ["family", "cooking", "travel"]


def test_a_fresh_copy_is_not_reordered_nor_rewritten(tmp_path):
    root = sample(tmp_path / "v")
    assert [r.topic for r in Vault(root).recent()] == ["cooking", "travel", "family"]
    assert (root / "index.txt").read_text() == INDEX


def test_a_hand_edit_in_a_vault_made_by_init_reaches_recent(tmp_path):
    vault = Vault.init(tmp_path / "v", profile=False)
    vault.add("Prefers bomba rice", topic="cooking")
    path = vault.topics_dir / "cooking.md"
    st = path.stat()
    shutil.copy(path, tmp_path / "x")
    (vault.topics_dir / "family.md").write_text("- Sister Ana lives in Porto\n")  # by hand, no date
    os.utime(vault.topics_dir / "family.md", (st.st_mtime + 60, st.st_mtime + 60))
    assert Vault(vault.root).recent()[0].topic == "family"


def test_same_bytes_rewritten_by_a_checkout_are_no_edit(tmp_path):
    root = sample(tmp_path / "v")
    Vault(root).recent()
    before = (root / "index.txt").read_bytes()
    path = root / "topics" / "family.md"
    path.write_bytes(path.read_bytes())  # git checkout: same bytes, a new mtime
    os.utime(path, (T0 + 3600, T0 + 3600))
    assert [r.topic for r in Vault(root).recent()] == ["cooking", "travel", "family"]
    assert (root / "index.txt").read_bytes() == before


def test_a_pull_gives_every_clone_the_same_index_txt(tmp_path):
    """A pull brings a topic change and index.txt's line for it: the files' new times (different on
    each clone) are not used, so each clone computes the same bytes."""
    pulled_index = "2026-09-20T08:00:00|travel|trips\n" + INDEX
    outputs = []
    for clone, pull_time in (("a", T0 + 100), ("b", T0 + 90_000)):
        root = sample(tmp_path / clone)
        Vault(root).recent()  # memkit looked before the pull
        hand_edit(root / "topics" / "travel.md", "- Booked Porto in May (2026-09-20)\n", pull_time)
        (root / "index.txt").write_text(pulled_index)  # a union merge: travel twice
        os.utime(root / "index.txt", (pull_time, pull_time))
        assert [r.topic for r in Vault(root).recent()] == ["travel", "cooking", "family"]
        outputs.append((root / "index.txt").read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].decode().count("|travel|") == 1


def test_topics_left_out_by_the_cap_do_not_churn_index_txt(tmp_path):
    from datetime import datetime

    vault = Vault.init(tmp_path / "v", profile=False)
    (vault.root / "memkit.yaml").write_text("index_max_entries: 3\n")
    vault = Vault(vault.root)
    when = datetime(2026, 9, 21, 10, 0, 0)  # a digest writes several topics in the same second
    for name in "abcde":
        vault.add(f"x {name}", topic=name, when=when)
    first = (vault.root / "index.txt").read_bytes()
    for _ in range(3):
        Vault(vault.root).recent()
        assert (vault.root / "index.txt").read_bytes() == first
    assert not [p for p in Vault(vault.root).upkeep.check().problems if p.kind == "recent"]
