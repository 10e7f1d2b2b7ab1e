"""The view and ranker follow changed files without a reload, the refresh of named files, the
large-vault layouts (the memory-mapped matrix, postings without folded context), and the
embedding thread of a large refresh: each gives what a fresh build gives."""
from __future__ import annotations

import numpy as np
import pytest
from util import FakeEmbedder, vault_with, write

import memkit.index.queue as embedqueue_mod
import memkit.index.sidecar as sidecar_mod
import memkit.search.lexical as lexical_mod
import memkit.search.rank as rank_mod
from memkit import Vault
from memkit.search.lexical import BM25Index, encode_terms
from memkit.search.rank import Ranker

WORDS = ("apple pear plum kiwi fig lime router node-3 lake camping painting bread broth rice paella saffron "
         "garden tomato basil harbor ferry ticket passport vet biscuit").split()


def topic_text(rng: np.random.Generator, n: int, who: bool = False) -> str:
    lines = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS, size=int(rng.integers(2, 9))))
        speaker = ("Caroline: " if i % 2 else "Melanie: ") if who else ""
        lines.append(f"- {speaker}{words} item{int(rng.integers(1000))}\n")
    return "".join(lines)


@pytest.fixture
def vault(tmp_path):
    rng = np.random.default_rng(3)
    topics = {f"t{i:02d}": topic_text(rng, int(rng.integers(3, 12)), who=i % 5 == 0) for i in range(30)}
    v = vault_with(tmp_path, topics)
    v.index()
    return v


def live_rows(view):
    rows = range(len(view)) if view.live is None else np.flatnonzero(view.live)
    return sorted((view.files[view.file_ids[i]], int(view.lines[i]), view.texts[i], view.ids[i], view.kinds[i],
                   view.tags[i], view.own_date(i), str(view.dates[i]), tuple(np.round(view.vectors[i], 5)))
                  for i in rows)


def results(searcher, queries, **kw):
    out = []
    for q in queries:
        out.append([(h.file, h.line, round(h.score, 5), round(h.cosine, 5), round(h.lexical, 5))
                    for h in searcher.search(q, k=8, refresh=False, **kw)])
    return out


QUERIES = ["apple pear", "router node-3", "what did Caroline say about the lake", "saffron paella rice",
           "zzz unknown", "item7 ferry"]


def change_files(v, rng):
    write(v.topics_dir / "t03.md", topic_text(rng, 9))  # edited
    write(v.topics_dir / "new-topic.md", topic_text(rng, 4, who=True))  # new
    (v.topics_dir / "t07.md").unlink()  # gone


@pytest.mark.parametrize("fast", [False, True])
def test_view_and_ranker_follow_changes_like_a_fresh_build(vault, monkeypatch, fast):
    if fast:  # the fast path over the tiny vault, every entry a candidate
        monkeypatch.setattr(rank_mod, "FAST_MIN_N", 10)
        monkeypatch.setattr(rank_mod, "CANDIDATE_SHARE", 1.0)
        monkeypatch.setattr(rank_mod, "LOW_CANDIDATES", 10_000)
    v = vault
    view0, ranker0 = v.searcher.ranker()
    lineage = view0.lineage
    rng = np.random.default_rng(5)
    for step in range(2):  # twice: a view extended from an extended view
        change_files(v, rng) if step == 0 else write(v.topics_dir / "t03.md", topic_text(rng, 6))
        v.index()
        view, ranker = v.searcher.ranker()
        assert view.lineage == lineage and view.live is not None and not view.live.all()
        fresh = Vault(v.root, embedder=FakeEmbedder())
        fview, franker = fresh.searcher.ranker()
        # a fresh process reads the same matrix: the same rows, dead ones included (until compacted)
        assert fview.live is not None and len(fview) == len(view) and fview.lineage != view.lineage
        assert live_rows(view) == live_rows(fview)
        for kw in ({"threshold": None}, {"threshold": 0.3}, {"mode": "lexical"}, {"mode": "vector", "threshold": None},
                   {"threshold": None, "topic": "t03"}):
            got = results(v.searcher, QUERIES, **kw)
            assert sum(map(len, got)) > 10 and got == results(fresh.searcher, QUERIES, **kw), kw
        assert sorted(ranker.speaker_names) == sorted(franker.speaker_names)


def test_a_compacted_matrix_reloads_the_view_whole(vault, monkeypatch):
    monkeypatch.setattr(sidecar_mod, "COMPACT_MIN_ROWS", 1)
    monkeypatch.setattr(sidecar_mod, "COMPACT_SHARE", 0.01)
    view0 = vault.searcher.index.view()
    assert view0.matrix.endswith(".0.npy") and view0.live is None
    before = live_rows(view0)
    write(vault.topics_dir / "t03.md", "- a single new line\n")
    vault.index()
    view = vault.searcher.index.view()
    assert view.matrix.endswith(".1.npy") and view.lineage != view0.lineage and view.live is None
    assert len(view) == sum(n for _, n in view.slot_rows)  # live rows only
    folder = vault.store.state_dir / "index"
    assert sorted(p.name for p in folder.glob("*.npy")) == [view.matrix]  # the old one deleted
    assert live_rows(view0) == before  # a view over the old matrix still reads it (its pages are mapped)
    assert ("topics/t03.md", 1, "a single new line") in [r[:3] for r in live_rows(view)]


def test_refresh_of_named_files_only(vault):
    v = vault
    write(v.topics_dir / "t01.md", "- quince paste on toast\n")
    write(v.topics_dir / "t02.md", "- hidden change elsewhere\n")
    index = v.searcher.index
    report = index.refresh(paths=[v.store.topic_path("t01")])
    assert report.changed_files == 1 and report.new == 1
    assert [tf.name for tf in index.stale()[0]] == ["t02"]  # the other file waits for a full check
    assert v.search("quince paste", k=1, refresh=False)[0].topic == "t01"
    assert index.refresh(paths=["topics/t01.md"]).changed_files == 0  # unchanged: nothing read
    (v.topics_dir / "t01.md").unlink()
    assert index.refresh(paths=["topics/t01.md"]).removed == 1
    assert "topics/t01.md" not in index.indexed_paths()


def test_refresh_files_without_a_loaded_model_leaves_vectors_for_the_next_search(vault):
    class Lazy(FakeEmbedder):
        loaded = False

    lazy = Lazy()
    v = Vault(vault.root, embedder=lazy)
    v.search("apple", threshold=None)
    calls = len(lazy.calls)
    write(v.topics_dir / "t01.md", "- quince paste on toast\n")
    v.searcher.refresh_files([v.store.topic_path("t01")])
    assert len(lazy.calls) == calls  # nothing embedded
    hits = v.search("quince paste", k=1)  # re-checks every file, embeds what is pending
    assert hits[0].topic == "t01" and hits[0].cosine > 0.5


class Wide(FakeEmbedder):
    name = "fake-wide"
    dim = 160


@pytest.mark.parametrize("fast", [False, True])
def test_wide_vectors_from_the_memory_mapped_matrix(vault, monkeypatch, fast):
    if fast:
        monkeypatch.setattr(rank_mod, "FAST_MIN_N", 10)
        monkeypatch.setattr(rank_mod, "CANDIDATE_SHARE", 1.0)
        monkeypatch.setattr(rank_mod, "LOW_CANDIDATES", 10_000)
    v = Vault(vault.root, embedder=Wide())
    v.index()
    view, ranker = v.searcher.ranker()
    assert not view.vectors.flags.writeable and view.rest.shape[1] == 96  # read-only pages of the .npy
    assert (ranker.prefix is not None) == fast
    copied = Ranker(view.texts, np.array(view.vectors), view.file_ids, terms=(view.term_ids, view.term_offsets,
                                                                             view.vocab), live=view.live)
    q = v.embedder.embed(["apple pear router"])[0]
    assert [i for i, *_ in ranker.search("apple pear router", q, k=8)] == \
        [i for i, *_ in copied.search("apple pear router", q, k=8)]


def test_postings_with_and_without_folded_context_score_alike(monkeypatch):
    rng = np.random.default_rng(2)
    docs = [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 7)))) for _ in range(300)]
    files = np.sort(rng.integers(0, 40, size=300))
    live = rng.random(300) > 0.1
    queries = ["apple", "pear plum router", "node-3 kiwi fig lime", "zzz", "bread " * 3 + "rice"] + WORDS[:12]
    for context in (0, 1, 2, 3):
        kw = dict(file_ids=files, context=context, context_weight=0.4)
        folded = BM25Index(*encode_terms(docs), **kw, live=live)
        monkeypatch.setattr(lexical_mod, "COMBINED_MAX_DOCS", 0)
        plain = BM25Index(*encode_terms(docs), **kw, live=live)
        monkeypatch.setattr(lexical_mod, "COMBINED_MAX_DOCS", 50_000)
        for q in queries:
            qt = folded.query_terms(q)
            assert np.allclose(folded.scores(qt), plain.scores(qt), rtol=1e-5, atol=1e-6), (context, q)
            assert np.allclose(folded.coverage(qt), plain.coverage(qt), atol=1e-6), (context, q)
            assert not folded.scores(qt)[~live].any()


@pytest.mark.parametrize("combined", [True, False])
def test_extended_bm25_equals_a_build_of_the_live_rows(monkeypatch, combined):
    if not combined:
        monkeypatch.setattr(lexical_mod, "COMBINED_MAX_DOCS", 0)
    rng = np.random.default_rng(4)
    old = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 7)))) for _ in range(120)]
    files = np.sort(rng.integers(0, 15, size=120))
    ids, offsets, vocab = encode_terms(old)
    base = BM25Index(ids, offsets, vocab, file_ids=files)
    # file 3 changed: its rows die, its new rows come at the end (as file 99)
    dead = files == 3
    new = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 7)))) for _ in range(7)]
    all_texts = old + new
    ids2, offsets2, vocab = encode_terms(all_texts, vocab)
    files2 = np.concatenate([files, np.full(7, 99)])
    live = np.concatenate([~dead, np.ones(7, dtype=bool)])
    ext = base.extended(ids2, offsets2, files2, live, vocab)
    keep = np.flatnonzero(live)
    fresh = BM25Index(*encode_terms([all_texts[i] for i in keep]), file_ids=files2[keep])
    for q in ["apple", "pear plum router", "node-3 kiwi", "biscuit vet passport", "lake"]:
        got = ext.scores(ext.query_terms(q))
        want = fresh.scores(fresh.query_terms(q))
        assert np.allclose(got[keep], want, rtol=1e-5, atol=1e-6), q
        assert not got[~live].any()
        assert np.allclose(ext.coverage(ext.query_terms(q))[keep], fresh.coverage(fresh.query_terms(q)), atol=1e-6)


def test_a_large_refresh_embeds_in_a_thread_alike(tmp_path, monkeypatch):
    rng = np.random.default_rng(8)
    topics = {f"t{i:02d}": topic_text(rng, 20) for i in range(12)}
    one = vault_with(tmp_path / "a", topics)
    one.index()
    monkeypatch.setattr(embedqueue_mod, "THREAD_MIN_ENTRIES", 1)
    monkeypatch.setattr(embedqueue_mod, "EMBED_BATCH", 16)
    seen = []
    two = vault_with(tmp_path / "b", topics)
    report = two.index(progress=lambda done, total: seen.append((done, total)))
    assert report.new == len({t for t in "".join(topics.values()).splitlines()})
    assert seen and seen[-1][0] == seen[-1][1] == report.new
    assert live_rows(one.searcher.index.view()) == live_rows(two.searcher.index.view())
