"""The embedding sidecar: incremental updates, hash-keyed reuse, corrupt and foreign sidecars."""
from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

from memkit import Vault
from memkit.fsutil import file_lock

from util import FakeEmbedder, vault_with, write


@pytest.fixture
def fake():
    return FakeEmbedder()


def make_vault(tmp_path, fake, topics: dict[str, str]) -> Vault:
    return vault_with(tmp_path, topics, fake)


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
    assert model == {"model": "fake-bow", "dim": 32, "version": 2}


# ---- O(files) refreshes, the query-ready snapshot, the cheap freshness check --------------------

def _index_dir(v):
    return next(p for p in (v.state_dir / "index").iterdir() if p.is_dir())


def _snap_dir(v):
    pointer = json.loads((_index_dir(v) / "snapshot.json").read_text())
    return _index_dir(v) / pointer["dir"]


def _no_record_reads(monkeypatch):
    from memkit.index import Index

    def refuse(self, path):
        raise AssertionError(f"record {path} read although the snapshot is current")

    monkeypatch.setattr(Index, "_read_record", refuse)


def test_snapshot_serves_a_new_process_without_records_or_ranker_build(tmp_path, fake, monkeypatch):
    v = make_vault(tmp_path, fake, {"a": "- apple pie #food\n- [idea] apple tart (2024-05-01)\n",
                                    "b": "- banana bread\n", "empty": "# nothing here\n"})
    v.index()
    v.index()  # nothing to index: the snapshot gets the ranker's state too
    assert (_snap_dir(v) / "ranker" / "sizes.json").is_file()
    expected = [h.to_dict() for h in Vault(v.root, embedder=FakeEmbedder()).search("apple", threshold=None)]
    _no_record_reads(monkeypatch)
    from memkit import rank

    def no_build(self, *a, **k):
        raise AssertionError("ranker rebuilt although its state is saved")

    monkeypatch.setattr(rank.Ranker, "__init__", no_build)
    v2 = Vault(v.root, embedder=FakeEmbedder())
    hits = v2.search("apple", threshold=None)
    assert [h.to_dict() for h in hits] == expected
    assert {h.text: (h.kind, h.tags, h.date) for h in hits}["[idea] apple tart (2024-05-01)"] == \
        ("idea", (), "2024-05-01")
    assert {h.text: h.tags for h in hits}["apple pie #food"] == ("food",)
    view = v2.index_obj().view()
    assert not view.vectors.flags.writeable  # memory-mapped, not copied
    assert v2.search("tart", kind="idea", since="2024-01-01", threshold=None)[0].line == 2


def test_small_vault_snapshot_follows_add_and_index(tmp_path, fake, monkeypatch):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n"})
    v.index()
    v.add("Keeps a spare Zigbee dongle", topic="lab")
    v.index()  # small vault: every writing refresh rewrites the snapshot
    assert len([p for p in _index_dir(v).iterdir() if p.name.startswith(("snap-", ".snap-"))]) == 1
    _no_record_reads(monkeypatch)
    hits = Vault(v.root, embedder=FakeEmbedder()).search("Zigbee dongle", k=1, threshold=None)
    assert hits[0].topic == "lab" and hits[0].text.startswith("Keeps a spare Zigbee dongle")


def test_hand_edit_after_snapshot_is_searched(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n", "b": "- banana bread\n"})
    v.index()
    write(v.topics_dir / "b.md", "- blueberry muffin\n")
    fake2 = FakeEmbedder()
    v2 = Vault(v.root, embedder=fake2)
    hits = v2.search("blueberry muffin", k=1, threshold=None)
    assert hits[0].text == "blueberry muffin" and total_embedded(fake2) <= 2  # the query and the line


@pytest.mark.parametrize("damage", ["truncate_vectors", "garbage_column", "garbage_pointer", "missing_dir",
                                    "short_column", "bad_ranker"])
def test_corrupt_snapshot_is_ignored_and_rewritten(tmp_path, fake, damage, monkeypatch):
    v = make_vault(tmp_path, fake, {"a": "- apple pie\n- apple tart\n", "b": "- banana bread\n"})
    v.index()
    v.index()
    snap = _snap_dir(v)
    if damage == "truncate_vectors":
        data = (snap / "vectors.npy").read_bytes()
        (snap / "vectors.npy").write_bytes(data[:len(data) - 7])
    elif damage == "garbage_column":
        raw = (snap / "texts.col").read_bytes()
        (snap / "texts.col").write_bytes(b"x" * len(raw))  # same size: the content check catches it
    elif damage == "garbage_pointer":
        (_index_dir(v) / "snapshot.json").write_text("{not json")
    elif damage == "missing_dir":
        import shutil

        shutil.rmtree(snap)
    elif damage == "short_column":
        raw = (snap / "hashes.col").read_bytes()
        (snap / "hashes.col").write_bytes(raw[:raw.rindex(b"\x00")] + b"\x00" * (len(raw) - raw.rindex(b"\x00")))
    else:
        for f in (snap / "ranker").glob("*.npy"):
            f.write_bytes(b"\x93NUMPY" + b"\x00" * (f.stat().st_size - 6))
    v2 = Vault(v.root, embedder=FakeEmbedder())
    assert v2.search("apple tart", k=1, threshold=None)[0].text == "apple tart"
    assert [h.text for h in v2.search("banana", k=1, threshold=None)] == ["banana bread"]
    v3 = Vault(v.root, embedder=FakeEmbedder())
    assert v3.index().new == 0
    v3.index()
    assert Vault(v.root, embedder=FakeEmbedder()).search("apple tart", k=1, threshold=None)[0].text == "apple tart"
    # by now a sound snapshot with a sound ranker state is back: used without any rebuild
    from memkit import rank
    from memkit.index import _load_ranker_state

    assert _load_ranker_state(_snap_dir(v) / "ranker") is not None
    monkeypatch.setattr(rank.Ranker, "__init__", lambda *a, **k: (_ for _ in ()).throw(AssertionError("rebuilt")))
    _no_record_reads(monkeypatch)
    assert Vault(v.root, embedder=FakeEmbedder()).search("apple tart", k=1, threshold=None)[0].text == "apple tart"


def test_big_vault_snapshot_is_caught_up_when_idle(tmp_path, fake, monkeypatch):
    from memkit import index as index_mod

    v = make_vault(tmp_path, fake, {"a": "- apple pie\n", "b": "- banana bread\n"})
    v.index()
    v.index()
    pointer = (_index_dir(v) / "snapshot.json").read_text()
    monkeypatch.setattr(index_mod, "SNAPSHOT_SYNC_MAX", 1)  # as if the vault were big
    monkeypatch.setattr(index_mod, "IDLE_SNAPSHOT_S", 0.0)
    write(v.topics_dir / "c.md", "- cherry jam\n- cherry pie\n- cherry tart\n- cranberry\n- currant\n"
          + "".join(f"- line {i}\n" for i in range(30)))
    v.index()
    v.add("Keeps a spare Zigbee dongle", topic="lab")
    v.index()  # one added entry: the big snapshot is not rewritten…
    assert (_index_dir(v) / "snapshot.json").read_text() != pointer  # (c.md was a large change)
    pointer = (_index_dir(v) / "snapshot.json").read_text()
    v.add("Keeps a spare Thread border router", topic="lab")
    v.index()
    assert (_index_dir(v) / "snapshot.json").read_text() == pointer
    # …a new reader uses it plus the changed record
    hits = Vault(v.root, embedder=FakeEmbedder()).search("Thread border router", k=1, threshold=None)
    assert hits[0].text.startswith("Keeps a spare Thread border router")
    monkeypatch.setattr(index_mod, "IDLE_SNAPSHOT_S", 1e9)
    v.index()  # nothing to index, but this process changed records just now: not yet
    assert (_index_dir(v) / "snapshot.json").read_text() == pointer
    monkeypatch.setattr(index_mod, "IDLE_SNAPSHOT_S", 0.0)
    v.index()  # nothing to index (memkit index, or the watcher when idle): the snapshot catches up
    assert (_index_dir(v) / "snapshot.json").read_text() != pointer
    _no_record_reads(monkeypatch)
    hits = Vault(v.root, embedder=FakeEmbedder()).search("Thread border router", k=1, threshold=None)
    assert hits[0].text.startswith("Keeps a spare Thread border router")


def test_line_in_two_files_removed_from_one_is_not_removed(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- cherry jam\n- apple\n", "b": "- cherry jam\n"})
    v.index()
    write(v.topics_dir / "a.md", "- apple\n")
    report = v.index()
    assert report.removed == 0
    (v.topics_dir / "b.md").unlink()
    report = v.index()
    assert report.removed == 1 and report.entries == 1
    # the vector of a line still held by another file stays known after one file drops it
    write(v.topics_dir / "a.md", "- apple\n- cherry jam\n")
    write(v.topics_dir / "b.md", "- cherry jam\n")
    assert v.index().new == 1
    write(v.topics_dir / "a.md", "- apple\n")
    assert v.index().removed == 0
    before = total_embedded(fake)
    write(v.topics_dir / "c.md", "- cherry jam\n")
    assert v.index().new == 0 and total_embedded(fake) == before
    assert [h.topic for h in v.search("cherry jam", k=2, threshold=None)] == ["b", "c"]


def test_writer_reloads_records_of_another_writer(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple\n"})
    v.index()
    other = Vault(v.root, embedder=FakeEmbedder())
    write(v.topics_dir / "b.md", "- banana\n")
    assert other.index().new == 1  # another process indexed b (the records' generation changes)
    write(v.topics_dir / "c.md", "- cherry\n")
    report = v.index()
    assert report.new == 1 and report.entries == 3  # b's record was read, not re-embedded


def test_gc_removes_only_replaced_vector_files(tmp_path, fake):
    v = make_vault(tmp_path, fake, {"a": "- apple\n", "b": "- banana\n"})
    v.index()
    vec = _index_dir(v) / "vec"
    np.save(vec / "leftover.npy", np.zeros((1, 4), np.float32))  # e.g. left by a crashed writer
    write(v.topics_dir / "a.md", "- apricot\n")
    v.index()
    assert len(list(vec.glob("*.npy"))) == 3  # a's old vectors went; the leftover waits for --full
    v.index(full=True)
    assert len(list(vec.glob("*.npy"))) == 2


def test_touch_recent_keeps_listed_topics_and_drops_vanished(tmp_path, fake):
    from datetime import datetime

    v = make_vault(tmp_path, fake, {})
    for day, name in enumerate(("alpha", "beta", "gamma"), start=1):
        v.add(f"note about {name}", topic=name, when=datetime(2024, 1, day, 12))
    (v.topics_dir / "beta.md").unlink()
    v.add("another alpha note", topic="alpha", when=datetime(2024, 1, 9, 12))
    assert [r.topic for r in v.recent()] == ["alpha", "gamma"]


def test_needs_refresh_sees_renames_at_once_and_in_place_edits_in_turn(tmp_path, fake, monkeypatch):
    from memkit import index as index_mod

    v = make_vault(tmp_path, fake, {f"t{i}": f"- entry {i}\n" for i in range(6)})
    v.index()
    v.search("entry", threshold=None)
    index = v.index_obj()
    index.refresh()
    assert not index.needs_refresh(budget=2)
    write(v.topics_dir / "new.md", "- brand new\n")  # a new file: topics/ changes
    assert index.needs_refresh(budget=2)
    index.refresh()
    path = v.topics_dir / "t5.md"
    st = os.stat(v.topics_dir)
    with open(path, "a", encoding="utf-8") as fh:  # in place: topics/ does not change
        fh.write("- appended in place\n")
    os.utime(v.topics_dir, ns=(st.st_atime_ns, st.st_mtime_ns))
    seen = [index.needs_refresh(budget=2) for _ in range(4)]
    assert True in seen[:4]  # within one round of 7 files / 2 per call
    index.refresh()
    monkeypatch.setattr(index_mod, "FULL_CHECK_S", 0.0)
    assert index.needs_refresh(budget=2)  # a round not finished in time: full check
    index.last_check = 0
    assert v.search("appended in place", k=1, threshold=None)[0].text == "appended in place"


@pytest.mark.parametrize("values,tags,few", [
    (["a", "b\x00c"], False, False), (["a", None, "\x01"], False, False), ([None], False, True),
    ([], False, False), (["", ""], False, False), (["\udcff x", None, "é"], False, False),
    ([None, "idea", "idea", None], False, True), ([["x", "y"], [], ["z\x1fq"]], True, False),
    ([["x", "y"], [], ["z"]], True, False), ([[""]], True, False),
])
def test_snapshot_columns_round_trip(values, tags, few):
    from memkit.index import _decode_column, _encode_column

    assert _decode_column(_encode_column(values, tags), len(values), tags, few) == values
    if not values:
        return  # (an empty column is told from one empty string by the other columns' lengths)
    with pytest.raises(ValueError):
        _decode_column(_encode_column(values, tags), len(values) + 1, tags, few)
