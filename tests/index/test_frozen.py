"""The frozen view (memkit.index.frozen): a new process maps what the index kept instead of
rebuilding it, and searches as a process that rebuilt it (the same hits; the fast path reads a
frozen index's rows in 16-bit fixed point, so scores agree within 1e-4); the files changed since are
added from SQLite; a frozen view that is missing, damaged or of another matrix is ignored."""
from __future__ import annotations

import json

import numpy as np
import pytest
from test_index_views import QUERIES, Wide, change_files, live_rows, results, topic_text
from util import FakeEmbedder, vault_with, write

import memkit.index.frozen as frozen_mod
import memkit.index.sidecar as sidecar_mod
import memkit.search.rank as rank_mod
from memkit import Vault
from memkit.index.columns import CodedColumn, TextColumn
from memkit.search import int8_scan

KWARGS = ({"threshold": None}, {"threshold": 0.3}, {"mode": "lexical"}, {"mode": "vector", "threshold": None},
          {"threshold": None, "topic": "t03"}, {"threshold": None, "kind": "idea"}, {"threshold": None, "tag": "gear"})


@pytest.fixture(params=[False, True], ids=["exact", "fast"])
def small_freeze(request, monkeypatch):
    """Freeze from 10 entries; ``fast``: the fast path (and its prefix scan) on the tiny vault."""
    monkeypatch.setattr(frozen_mod, "FROZEN_MIN_ROWS", 10)
    monkeypatch.setattr(frozen_mod, "REFREEZE_MIN_ROWS", 30)
    if request.param:
        monkeypatch.setattr(rank_mod, "FAST_MIN_N", 10)
        monkeypatch.setattr(rank_mod, "CANDIDATE_SHARE", 1.0)
        monkeypatch.setattr(rank_mod, "LOW_CANDIDATES", 10_000)
    return request.param


@pytest.fixture
def wide_vault(tmp_path):
    rng = np.random.default_rng(3)
    topics = {f"t{i:02d}": topic_text(rng, int(rng.integers(3, 12)), who=i % 5 == 0) for i in range(30)}
    topics["t04"] += "- [idea] a new bike rack for the garden #gear (until 2030-01-01)\n- Ana: the tent #gear\n"
    return vault_with(tmp_path, topics, embedder=Wide())


def unfrozen(root):
    """A process that reads the view from SQLite (the frozen view hidden from it)."""
    v = Vault(root, embedder=Wide())
    v.searcher.index.db.meta = lambda key, _meta=v.searcher.index.db.meta: None if key == "frozen" else _meta(key)
    return v


def alike(got, want):
    """The same hits in the same order, their numbers within 1e-4 (fixed point, see the docstring)."""
    assert [[h[:2] for h in hits] for hits in got] == [[h[:2] for h in hits] for hits in want]
    for hits, others in zip(got, want):
        for h, o in zip(hits, others):
            assert np.allclose(h[2:], o[2:], atol=1e-4, rtol=0), (h, o)
    return True


def frozen_folders(v):
    return sorted(p.name for p in (v.store.state_dir / "index").glob("*.frozen.*"))


def test_a_new_process_maps_the_frozen_view_and_searches_alike(wide_vault, small_freeze):
    v = wide_vault
    v.index()
    assert len(frozen_folders(v)) == 1
    fresh = Vault(v.root, embedder=Wide())
    view, ranker = fresh.searcher.ranker()
    assert view.frozen is not None and view.frozen.rows == len(view)
    assert isinstance(view.texts, TextColumn) and isinstance(view.kinds, CodedColumn)
    assert not view.term_ids.flags.writeable  # mapped, not rebuilt
    assert (ranker.prefix is not None) == small_freeze and ranker.prefix_tail is None
    assert (ranker.rows_frozen is not None) == small_freeze  # each row in fixed point
    if small_freeze:
        rows, vectors = ranker.rows_frozen, ranker.vectors
        assert rows.dtype == np.int16 and not rows.flags.writeable and rows.shape == vectors.shape
        assert np.abs(rows / rank_mod.ROW_SCALE - vectors).max() <= 0.51 / rank_mod.ROW_SCALE
        p8, factors = ranker.prefix8  # the int8 prefix of the scan
        assert p8.dtype == np.int8 and p8.shape == (rank_mod.PREFIX_DIMS, len(view))
        step = 1 / factors[:, None]  # each value within half a step (none clipped in this vault)
        assert np.all(np.abs(p8 * step - vectors[:, :rank_mod.PREFIX_DIMS].T) <= 0.51 * step)
    rebuilt = unfrozen(v.root)
    rview, rranker = rebuilt.searcher.ranker()
    assert rview.frozen is None and live_rows(view) == live_rows(rview)
    assert sorted(ranker.speaker_names) == sorted(rranker.speaker_names) == ["Caroline", "Melanie"]
    for kw in KWARGS:
        got = results(fresh.searcher, QUERIES + ["bike rack", "Ana tent"], **kw)
        assert alike(got, results(rebuilt.searcher, QUERIES + ["bike rack", "Ana tent"], **kw)), kw
    assert fresh.search("bike rack", k=1, threshold=None)[0].tags == ("gear",)


def test_files_changed_after_the_freeze_come_from_sqlite(wide_vault, small_freeze):
    v = wide_vault
    v.index()
    rng = np.random.default_rng(5)
    change_files(v, rng)
    v.index()  # fewer rows than a new freeze needs: the old one stays
    assert len(frozen_folders(v)) == 1
    fresh = Vault(v.root, embedder=Wide())
    view, ranker = fresh.searcher.ranker()
    assert view.frozen is not None and view.frozen.rows < len(view) and view.live is not None
    assert (ranker.prefix_tail is not None) == small_freeze
    if small_freeze:  # the frozen rows' fixed-point rest; the rows after them are read from the matrix
        assert ranker.rows_frozen is not None and ranker.rows_frozen.shape[0] == view.frozen.rows
        assert ranker.prefix8 is not None and ranker.prefix8[0].shape[1] == view.frozen.rows
    rebuilt = unfrozen(v.root)
    assert live_rows(view) == live_rows(rebuilt.searcher.index.view())
    for kw in KWARGS:
        assert alike(results(fresh.searcher, QUERIES, **kw), results(rebuilt.searcher, QUERIES, **kw)), kw
    # an add in the process that searched: found at once, as in a rebuilt process
    fresh.add("the quince paste recipe from grandma", topic="t05")
    assert fresh.search("quince paste", k=1, refresh=False)[0].topic == "t05"
    assert alike(results(fresh.searcher, QUERIES), results(unfrozen(v.root).searcher, QUERIES))


def test_many_changes_freeze_again_and_the_old_folder_goes(wide_vault, small_freeze):
    v = wide_vault
    v.index()
    first = frozen_folders(v)
    rng = np.random.default_rng(8)
    for i in range(4):
        write(v.topics_dir / f"t{i:02d}.md", topic_text(rng, 12))
    v.index()
    assert len(frozen_folders(v)) == 1 and frozen_folders(v) != first
    assert alike(results(Vault(v.root, embedder=Wide()).searcher, QUERIES), results(unfrozen(v.root).searcher, QUERIES))


def test_a_compaction_freezes_the_new_matrix(wide_vault, small_freeze, monkeypatch):
    monkeypatch.setattr(sidecar_mod, "COMPACT_MIN_ROWS", 1)
    monkeypatch.setattr(sidecar_mod, "COMPACT_SHARE", 0.01)
    v = wide_vault
    v.index()
    write(v.topics_dir / "t03.md", "- a single new line\n")
    v.index()
    view = Vault(v.root, embedder=Wide()).searcher.index.view()
    assert view.matrix.endswith(".1.npy") and view.frozen is not None and view.frozen.rows == len(view)
    assert ("topics/t03.md", 1, "a single new line") in [r[:3] for r in live_rows(view)]


@pytest.mark.parametrize("damage", ["delete", "meta", "short", "foreign"])
def test_a_missing_or_damaged_frozen_view_is_ignored(wide_vault, small_freeze, damage):
    v = wide_vault
    v.index()
    expected = results(unfrozen(v.root).searcher, QUERIES)
    folder = v.store.state_dir / "index" / frozen_folders(v)[0]
    if damage == "delete":
        import shutil

        shutil.rmtree(folder)
    elif damage == "meta":
        (folder / "meta.json").write_text("{not json")
    elif damage == "short":
        (folder / "file_ids.bin").write_bytes(b"\0\0")
    else:
        meta = json.loads((folder / "meta.json").read_text())
        meta["matrix"] = "another.7.npy"
        (folder / "meta.json").write_text(json.dumps(meta))
    fresh = Vault(v.root, embedder=Wide())
    assert fresh.searcher.index.view().frozen is None
    assert results(fresh.searcher, QUERIES) == expected


def test_small_vaults_and_read_only_ones_are_never_frozen(tmp_path):
    v = vault_with(tmp_path, {"a": "- apple pie\n- pear tart\n"}, embedder=FakeEmbedder())
    v.index()
    assert frozen_folders(v) == []
    assert v.searcher.index.freeze() is None


def test_a_rebuilt_index_drops_its_frozen_views(wide_vault, small_freeze):
    v = wide_vault
    v.index()
    assert frozen_folders(v)
    v.searcher.index.db.discard_if_current()
    assert frozen_folders(v) == []


def test_columns_behave_as_sequences():
    texts = ["héllo", "", "wörld ✓"]
    blob = np.frombuffer("".join(texts).encode(), dtype=np.uint8)
    ends = np.cumsum([len(t.encode()) for t in texts])
    col = TextColumn(blob, np.concatenate([[0], ends])) + ["tail one"]
    assert list(col) == [*texts, "tail one"] and len(col) == 4
    assert col[2] == "wörld ✓" and col[-1] == "tail one" and col[1:3] == ["", "wörld ✓"] and col[3:] == ["tail one"]
    with pytest.raises(IndexError):
        col[4]
    kinds = CodedColumn.encode(["idea", None, "fact", "idea"]) + [None, "event"]
    assert list(kinds) == ["idea", None, "fact", "idea", None, "event"] and kinds[5] == "event"
    assert kinds.mask(lambda k: k == "idea").tolist() == [True, False, False, True, False, False]


def test_tag_column_reads_and_masks_tags():
    from memkit.index.columns import TagColumn, tag_mask

    col = TagColumn(np.array([0, 1, 1], dtype=np.int32), np.array([0, 2, 2, 3]), ["gear", "camp"]) + [("camp",), ()]
    assert list(col) == [("gear", "camp"), (), ("camp",), ("camp",), ()] and col[0] == ("gear", "camp")
    assert col[1:3] == [(), ("camp",)] and len(col) == 5
    assert tag_mask(col, "camp").tolist() == [True, False, True, True, False]
    assert tag_mask(col, "nope").tolist() == [False] * 5
    assert tag_mask([("a",), ()], "a").tolist() == [True, False]


def test_the_int8_scan_and_the_float32_scan_find_the_same(wide_vault, monkeypatch):
    """Candidates chosen by the int8 scan (150 of the vault's entries) or by the float32 one (the
    judge off: its pool of candidates is more than the fast path gives on so small a vault)."""
    monkeypatch.setattr(frozen_mod, "FROZEN_MIN_ROWS", 10)
    monkeypatch.setattr(rank_mod, "FAST_MIN_N", 10)
    monkeypatch.setenv("MEMKIT_SCAN", "int8")  # whichever is the faster on this processor
    v = wide_vault
    v.index()
    fresh = Vault(v.root, embedder=Wide())
    ranker = fresh.searcher.ranker()[1]
    assert ranker.prefix8 is not None and ranker.n > rank_mod.MIN_CANDIDATES
    calls = []
    scan = int8_scan.Int8Scan.scan
    monkeypatch.setattr(int8_scan.Int8Scan, "scan", lambda self, *a: calls.append(1) or scan(self, *a))
    with_int8 = results(fresh.searcher, QUERIES + ["bike rack", "Ana tent"], threshold=None, judge=False)
    assert len(calls) >= 4  # the fast path ran on the int8 scan (the others: notes and conversations weighed apart)
    monkeypatch.setenv("MEMKIT_SCAN", "numpy")
    assert alike(with_int8, results(Vault(v.root, embedder=Wide()).searcher, QUERIES + ["bike rack", "Ana tent"],
                                    threshold=None, judge=False))
