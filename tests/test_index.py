"""The embedding sidecar: incremental updates, hash-keyed reuse, corrupt and foreign sidecars."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

from memkit import Vault
from memkit.fsutil import file_lock

from util import FakeEmbedder, write


@pytest.fixture
def fake():
    return FakeEmbedder()


def make_vault(tmp_path, fake, topics: dict[str, str]) -> Vault:
    v = Vault.init(tmp_path / "v")
    for name, text in topics.items():
        write(v.topics_dir / f"{name}.md", text)
    return Vault(v.root, embedder=fake)


def total_embedded(fake) -> int:
    return sum(fake.calls)


def test_full_then_incremental(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n- apple tart\n", "b": "- banana bread\n"})
    report = v.index()
    assert (report.entries, report.new, report.removed) == (3, 3, 0)
    assert report.summary().startswith("indexed 3 entries in ")
    # a fresh process (new Vault) re-embeds nothing
    fake2 = FakeEmbedder()
    v2 = Vault(v.root, embedder=fake2)
    assert v2.index().new == 0 and total_embedded(fake2) == 0
    # editing one line re-embeds that line only
    write(v.topics_dir / "a.md", "- apple pie\n- apple crumble\n")
    report = Vault(v.root, embedder=fake2).index()
    assert (report.new, report.removed, report.changed_files) == (1, 1, 1)
    assert total_embedded(fake2) == 1


def test_moved_line_is_not_reembedded(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n- cherry jam\n", "b": "- banana bread\n"})
    v.index()
    write(v.topics_dir / "a.md", "- apple pie\n")
    write(v.topics_dir / "b.md", "- banana bread\n- cherry jam\n")
    fake2 = FakeEmbedder()
    report = Vault(v.root, embedder=fake2).index()
    assert report.new == 0 and report.removed == 0 and total_embedded(fake2) == 0
    hits = Vault(v.root, embedder=fake2).search("cherry jam", k=1, threshold=None)
    assert (hits[0].topic, hits[0].line) == ("b", 2)


def test_touch_without_change_reads_but_does_not_embed(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple\n"})
    v.index()
    os.utime(v.topics_dir / "a.md", None)
    fake2 = FakeEmbedder()
    assert Vault(v.root, embedder=fake2).index().new == 0


def test_deleted_topic_drops_entries(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple\n", "b": "- banana\n"})
    v.index()
    (v.topics_dir / "b.md").unlink()
    report = v.index()
    assert report.removed == 1 and report.entries == 1
    assert [h.topic for h in v.search("banana", threshold=None)] == ["a"]
    assert len(list((v.state_dir / "index").glob("*/vec/*.npy"))) == 1  # unused vectors collected


@pytest.mark.parametrize("damage", ["truncate_npy", "garbage_json", "delete_npy", "wrong_dim"])
def test_corrupt_sidecar_is_rebuilt(tmp_path, fake, damage):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n- apple tart\n"})
    v.index()
    folder = next((v.state_dir / "index").iterdir())
    npy = next((folder / "vec").glob("*.npy"))
    rec = next((folder / "files").glob("*.json"))
    if damage == "truncate_npy":
        npy.write_bytes(npy.read_bytes()[:100])
    elif damage == "garbage_json":
        rec.write_text("{not json")
    elif damage == "delete_npy":
        npy.unlink()
    else:
        np.save(npy, np.zeros((2, 7), dtype=np.float32))
    fake2 = FakeEmbedder()
    v2 = Vault(v.root, embedder=fake2)
    report = v2.index()
    assert report.new == 2 and report.entries == 2
    assert v2.search("apple tart", k=1, threshold=None)[0].text == "apple tart"


def test_other_model_gets_its_own_sidecar_then_old_is_pruned(tmp_path, fake, caplog):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n"})
    v.index()

    class Other(FakeEmbedder):
        name = "other-model"
        dim = 16

    with caplog.at_level(logging.INFO, logger="memkit"):
        v2 = Vault(v.root, embedder=Other())
        report = v2.index()
    assert report.new == 1 and report.rebuilt_model
    assert "building a new index" in caplog.text
    assert [p.name for p in (v.state_dir / "index").iterdir() if p.is_dir()] == ["other-model-16"]


def test_search_does_not_wait_for_a_locked_index(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n"})
    v.index()
    write(v.topics_dir / "b.md", "- blueberry muffin\n")
    v2 = Vault(v.root, embedder=FakeEmbedder())
    with file_lock(v.state_dir / "index" / "index.lock"):  # a watcher is writing
        hits = v2.search("blueberry muffin", k=1, threshold=None)
    assert hits[0].topic == "b"
    # nothing was written while locked; the next writer catches up
    assert Vault(v.root, embedder=FakeEmbedder()).index().new == 1


def test_malformed_file_is_reported_and_others_indexed(tmp_path, fake, caplog):
    v = make_vault(tmp_path, fake, {"a": "- apple\n", "bad": "---\ntitle: [x\n---\n- hidden\n"})
    write(v.topics_dir / "bin.md", b"\x00\x01\x02\xff")
    with caplog.at_level(logging.WARNING, logger="memkit"):
        report = v.index()
    assert report.entries == 1
    assert sorted(e.split(":")[0] for e in report.errors) == ["topics/bad.md line 3", "topics/bin.md line 1"]
    assert "topics/bad.md line 3: frontmatter is not valid YAML" in caplog.text


def test_record_format_is_documented_json(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- [fact] apple #fruit (2026-01-02)\n"})
    v.index()
    rec = json.loads(next((v.state_dir / "index").glob("*/files/*.json")).read_text())
    assert rec["file"] == "topics/a.md" and rec["kinds"] == ["fact"] and rec["dates"] == ["2026-01-02"]
    model = json.loads(next((v.state_dir / "index").glob("*/model.json")).read_text())
    assert model == {"model": "fake-bow", "dim": 32, "version": 1}
