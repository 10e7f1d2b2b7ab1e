"""Unit tests of memkit.lexical (tokeniser, BM25) and memkit.rank (fusion). Tiny hand-made vectors."""
from __future__ import annotations

import numpy as np
import pytest

from memkit.lexical import BM25Index, stem, tokenize
from memkit.rank import RankParams, Ranker, speaker_of


# -- tokeniser ----------------------------------------------------------------------------------

def test_tokenize_lowercases_stems_and_drops_stop_words():
    assert tokenize("The cats were Painting the walls") == ["cat", "paint", "wall"]
    assert tokenize("I don't know what I'm doing") == ["know"]


def test_tokenize_keeps_rare_tokens_findable():
    toks = tokenize("Flashed the hAP ax3 on node-3 with RouterOS 2026.10!")
    for t in ("hap", "ax3", "node-3", "node", "3", "routero", "2026.10", "2026", "10"):
        assert t in toks, t


def test_tokenize_punctuation_possessive_and_unicode():
    assert tokenize("Caroline's (new) café, in Zürich; naïve?") == ["caroline", "new", "café", "zürich", "naïve"]
    assert tokenize("") == []
    assert tokenize("!!! ... --") == []


def test_stem_merges_inflections():
    assert stem("painting") == stem("painted") == stem("paints") == "paint"
    assert stem("making") == stem("makes") == "make"
    assert stem("stories") == stem("story")
    assert stem("running") == "run"
    assert stem("ax3") == "ax3" and stem("bus") == "bus"


# -- BM25 ---------------------------------------------------------------------------------------

DOCS = [
    "Prefers bomba rice for paella",
    "Uses homemade chicken broth, never stock cubes",
    "Allergic to tree nuts",
    "The router is a hAP ax3 running RouterOS",
    "Rice cooker broke last week",
]


def test_bm25_scores_shape_zero_and_best():
    ix = BM25Index(DOCS, context=0)
    assert len(ix) == 5
    s = ix.scores("which router: hAP ax3?")
    assert s.dtype == np.float32 and s.shape == (5,)
    assert int(np.argmax(s)) == 3
    assert np.count_nonzero(s) == 1
    assert not ix.scores("unknown words only").any()
    r = ix.scores("rice")
    assert r[0] > 0 and r[4] > 0 and r[1] == 0


def test_bm25_rare_term_outweighs_common_term():
    docs = ["rice rice rice", "rice dish", "rice paella", "rice soup", "saffron"]
    s = BM25Index(docs, context=0).scores("rice saffron")
    assert int(np.argmax(s)) == 4


def test_bm25_context_adds_previous_same_file_entries_only():
    docs = ["Where did you go on holiday?", "To the lake.", "Bought bread.", "Nothing here."]
    files = np.array([0, 0, 1, 1], dtype=np.int32)
    plain = BM25Index(docs, file_ids=files, context=0).scores("holiday")
    ctx = BM25Index(docs, file_ids=files, context=2, context_weight=0.5).scores("holiday")
    assert plain[1] == 0 and 0 < ctx[1] < ctx[0]
    assert ctx[2] == 0 and ctx[3] == 0  # other file: no context leak


def test_bm25_coverage_counts_own_text_only():
    docs = ["bomba rice paella", "bomba rice", "anything else"]
    ix = BM25Index(docs, context=1, context_weight=0.5)
    cov = ix.coverage("bomba rice paella")
    assert cov[0] == pytest.approx(1.0, abs=1e-5)
    assert 0 < cov[1] < 1
    assert cov[2] == 0  # its previous entry matches, but coverage is own text only
    assert not ix.coverage("the of and").any()


def test_bm25_empty_corpus_and_bad_file_ids():
    ix = BM25Index([])
    assert len(ix) == 0 and ix.scores("x").shape == (0,)
    with pytest.raises(ValueError):
        BM25Index(["a", "b"], file_ids=[0])


# -- ranker -------------------------------------------------------------------------------------

def _unit(rows):
    v = np.asarray(rows, dtype=np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


TEXTS = [
    "Caroline: I went to a support group yesterday",
    "Melanie: That sounds great, Caroline",
    "Caroline: The router is a hAP ax3",
    "Melanie: I painted a sunrise last year",
    "Melanie: We went camping in the mountains",
]
FILES = np.array([0, 0, 0, 1, 1], dtype=np.int32)
VECS = _unit([[1, 0, 0, 0], [0.8, 0.6, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0.6, 0, 0.8]])


def test_vector_mode_orders_by_cosine():
    r = Ranker(TEXTS, VECS, FILES, RankParams(vec_context_mix=0.0))
    q = np.array([0, 0, 0, 1], dtype=np.float32)
    res = r.search("anything", q, k=3, mode="vector")
    assert [i for i, _ in res] == [4, 3, 1] or [i for i, _ in res][0] == 4
    assert res[0][1] == pytest.approx(0.8, abs=1e-5)


def test_hybrid_keeps_exact_rare_word_against_vectors():
    r = Ranker(TEXTS, VECS, FILES)
    q = np.array([1, 0, 0, 0], dtype=np.float32)  # the vector points at entry 0
    res = r.search("hAP ax3", q, k=5)
    assert res[0][0] == 2
    assert all(0.0 <= s <= 1.0 for _, s in res)
    assert [s for _, s in res] == sorted((s for _, s in res), reverse=True)


def test_lexical_mode_returns_only_matches():
    r = Ranker(TEXTS, VECS, FILES, RankParams(context=0))
    res = r.search("sunrise", None, k=10, mode="lexical")
    assert [i for i, _ in res] == [3]
    res = Ranker(TEXTS, VECS, FILES).search("sunrise", None, k=10, mode="lexical")
    assert [i for i, _ in res] == [3, 4]  # 4 follows 3 in its file: context match, lower
    assert r.search("zzz", None, mode="lexical") == []
    with pytest.raises(ValueError):
        r.search("sunrise", None, mode="hybrid")
    with pytest.raises(ValueError):
        r.search("sunrise", VECS[0], mode="nope")


def test_mask_restricts_results():
    r = Ranker(TEXTS, VECS, FILES)
    mask = np.array([False, False, False, True, True])
    res = r.search("router hAP", VECS[2], k=10, mask=mask)
    assert {i for i, _ in res} <= {3, 4} and len(res) == 2


def test_threshold_keeps_similar_or_strong_lexical_matches():
    r = Ranker(TEXTS, VECS, FILES, RankParams(vec_context_mix=0.0))
    q = np.array([1, 0, 0, 0], dtype=np.float32)
    res = dict(r.search("hAP ax3", q, k=10, threshold=0.7))
    assert 0 in res      # cosine 1.0
    assert 1 in res      # cosine 0.8
    assert 2 in res      # cosine 0, but holds every query word
    assert 3 not in res and 4 not in res
    assert len(r.search("unrelated", q, k=10, threshold=1.01)) == 0
    assert len(r.search("unrelated", q, k=10, threshold=None)) == 5


def test_context_cosine_is_exact():
    w = 0.5
    r = Ranker(TEXTS, VECS, FILES, RankParams(vec_context_weights=(w,)))
    q = _unit([[0.3, 0.2, 0.5, 0.1]])[0]
    cos, ctx, _ = r.vector_scores(q)
    for i in range(len(TEXTS)):
        v = VECS[i] + (w * VECS[i - 1] if i > 0 and FILES[i - 1] == FILES[i] else 0)
        assert ctx[i] == pytest.approx(float(v @ q / np.linalg.norm(v)), abs=1e-5)
        assert cos[i] == pytest.approx(float(VECS[i] @ q), abs=1e-6)


def test_component_scores_keys_and_speaker_boost():
    params = RankParams(speaker_boost=0.5, smooth_next=0.0, smooth_prev=0.0, file_prior=0.0)
    r = Ranker(TEXTS, VECS, FILES, params)
    q = _unit([[1, 1, 1, 1]])[0]
    comp = r.component_scores("What did Melanie do?", q)
    for key in ("cosine", "ctx_cosine", "vector", "lexical", "fused"):
        assert comp[key].shape == (5,)
    top = [i for i, _ in r.search("What did Melanie do?", q, k=3)]
    assert set(top) == {1, 3, 4}


def test_speaker_detection():
    assert speaker_of("Caroline: hi") == "Caroline"
    assert speaker_of("- [fact] John Smith: likes tea") == "John Smith"
    assert speaker_of("prefers bomba rice: always") is None
    r = Ranker(TEXTS, VECS, FILES)
    assert r.speaker.tolist() == [0, 1, 0, 1, 1]


def test_file_prior_and_smoothing_stay_within_files():
    params = RankParams(file_prior=0.5, smooth_next=0.3, smooth_prev=0.3, speaker_boost=0.0)
    r = Ranker(TEXTS, VECS, FILES, params)
    comp = r.component_scores("hAP ax3 router", np.array([0, 0, 1, 0], dtype=np.float32))
    f = comp["fused"]
    assert f[2] == f.max()
    assert f[:3].min() > f[3:].max()  # the file holding the match ranks first


def test_empty_ranker_and_shape_errors():
    r = Ranker([], np.zeros((0, 4), dtype=np.float32), np.zeros(0, dtype=np.int32))
    assert r.search("x", np.ones(4, dtype=np.float32)) == []
    with pytest.raises(ValueError):
        Ranker(["a"], np.zeros((2, 4), dtype=np.float32), [0])
    r = Ranker(TEXTS, VECS, FILES)
    with pytest.raises(ValueError):
        r.search("x", np.ones(3, dtype=np.float32))
    assert len(r.search("camping", VECS[4], k=50)) == 5


def test_speaker_detection_vectorised_matches_regex():
    from memkit.rank import _speakers

    texts = ["Caroline: hi", "- [fact] John Smith: tea", "note: x", "plain text", "Émile: salut",
             "Time: 10:30", "Caroline:", "Caroline:x", "a\x00b: c", "Note 10:30: hi", "  * Bob : yo",
             "Very Long Name With Many Words Here Indeed: x", ""]
    ids, names = _speakers(texts)
    got = [names[i] if i >= 0 else None for i in ids]
    assert got == [speaker_of(t.replace("\x00", " ")) for t in texts]
    assert got[:2] == ["Caroline", "John Smith"] and got[10] == "Bob"


def test_group_rows_exact_even_on_hash_collisions(monkeypatch):
    import memkit.lexical as lx

    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, size=200).astype(np.uint64)
    b = rng.integers(0, 3, size=200).astype(np.uint64)
    expected = {}
    for x, y in zip(a.tolist(), b.tolist()):
        expected.setdefault((x, y), len(expected))
    for zero_hash in (False, True):
        if zero_hash:  # every row hashes alike: the exact fallback must still group right
            monkeypatch.setattr(lx, "_K1", np.uint64(0))
            monkeypatch.setattr(lx, "_K2", np.uint64(0))
        gid, first = lx._group_rows([a, b])
        assert len(first) == len(expected)
        for i in range(200):
            j = first[gid[i]]
            assert (a[j], b[j]) == (a[i], b[i])
            assert first[gid[i]] <= i


def test_params_validation_and_mention_boost():
    with pytest.raises(ValueError):
        RankParams(lex_weight=1.5)
    with pytest.raises(ValueError):
        RankParams(vec_floor="max")
    texts = ["Ann: we met Bob at the lake", "Ann: nice weather", "Cy: Bob left"]
    vecs = _unit([[1, 0], [1, 0.1], [1, 0.2]])
    gaps = []
    for mention in (0.0, 0.5):
        p = RankParams(speaker_boost=0.0, mention_boost=mention, file_prior=0.0, smooth_next=0.0)
        r = Ranker(texts, vecs, np.zeros(3, dtype=np.int32), p)
        f = r.component_scores("weather with Bob", vecs[1])["fused"]
        gaps.append(f[0] - f[1])
    assert gaps[1] > gaps[0]  # entry 0 mentions Bob, entry 1 does not


def test_context_limit_and_unknown_query_words():
    with pytest.raises(ValueError):
        BM25Index(["a"], context=4)
    ix = BM25Index(["alpha beta", "gamma beta"], context=0)
    # zeta is in no entry: it can be matched by nothing, so it does not dilute alpha
    assert ix.coverage("alpha zeta").tolist() == [1.0, 0.0]
    cov = ix.coverage("alpha gamma")  # two known words: each entry holds part of the query
    assert 0 < cov[0] < 1 and 0 < cov[1] < 1
    assert ix.coverage("zeta omega").tolist() == [0.0, 0.0]  # no known word covers nothing


def test_bm25_context_matches_brute_force():
    import math
    from collections import Counter

    rng = np.random.default_rng(1)
    vocab = ["apple", "pear", "plum", "node-3", "kiwi", "fig", "lime", "date"]
    docs = [" ".join(rng.choice(vocab, size=rng.integers(0, 6))) for _ in range(40)]
    files = np.sort(rng.integers(0, 6, size=40)).astype(np.int32)
    k1, b, w = 1.2, 0.5, 0.4
    ix = BM25Index(docs, k1=k1, b=b, file_ids=files, context=2, context_weight=w)
    own = [Counter(tokenize(d)) for d in docs]
    merged, lengths = [], []
    for i in range(40):
        c = Counter({t: float(v) for t, v in own[i].items()})
        length = float(sum(own[i].values()))
        for lag in (1, 2):
            if i - lag >= 0 and files[i - lag] == files[i]:
                for t, v in own[i - lag].items():
                    c[t] += w * v
                length += w * sum(own[i - lag].values())
        merged.append(c)
        lengths.append(length)
    avgdl = sum(lengths) / 40
    for q in ("apple", "pear plum", "node-3 kiwi fig", "node"):
        expect = np.zeros(40)
        for t in set(tokenize(q)):
            df = sum(1 for o in own if t in o)
            idf = math.log1p((40 - df + 0.5) / (df + 0.5))
            for i in range(40):
                tf = merged[i][t]
                if tf:
                    expect[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[i] / avgdl))
        assert np.allclose(ix.scores(q), expect, rtol=1e-4, atol=1e-5), q


def test_plain_cosine_and_previous_smoothing_settings():
    p = RankParams(vec_context_weights=(), smooth_prev=0.2, context=0)
    r = Ranker(TEXTS, VECS, FILES, p)
    cos, ctx, vec = r.vector_scores(VECS[3])
    assert np.allclose(cos, ctx) and np.allclose(vec, cos)
    assert r.search("sunrise", VECS[3], k=1)[0][0] == 3


# -- persistence (Ranker.state / from_state) ----------------------------------------------------

def _random_corpus(n=300, dim=16, seed=3):
    rng = np.random.default_rng(seed)
    words = ["apple", "pear", "plum", "node-3", "kiwi", "fig", "lime", "date", "hAP", "ax3", "café",
             "router", "painting", "camping", "lake", "https://example.org/some/very/long/path/x"]
    people = ["Caroline", "Melanie", "Jon Snow", ""]
    texts = []
    for _ in range(n):
        who = people[rng.integers(0, len(people))]
        body = " ".join(rng.choice(words, size=rng.integers(0, 9)))
        texts.append(f"{who}: {body}" if who else body)
    files = np.sort(rng.integers(0, n // 7 + 1, size=n)).astype(np.int32)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return texts, files, vecs, rng


QUERIES = ["Caroline apple", "hAP ax3 router", "what did Melanie paint?", "lake camping", "zzz unknown",
           "", "node-3 example.org"]


def _same_results(a, b, vecs, rng, files):
    for q in QUERIES:
        qv = vecs[rng.integers(0, len(vecs))] + 0.1 * rng.standard_normal(vecs.shape[1]).astype(np.float32)
        mask = files % 2 == 0
        for kw in (dict(), dict(mode="vector"), dict(mode="lexical"), dict(threshold=0.2), dict(mask=mask, k=5)):
            assert a.search(q, qv, **kw) == b.search(q, qv, **kw), (q, kw)
        ca, cb = a.component_scores(q, qv), b.component_scores(q, qv)
        for key in ca:
            assert np.array_equal(ca[key], cb[key]), key


def test_ranker_state_round_trip_gives_identical_results():
    texts, files, vecs, rng = _random_corpus()
    r = Ranker(texts, vecs, files)
    st = r.state()
    assert all(isinstance(v, np.ndarray) for v in st.values())
    assert "vectors" not in st and "file_ids" not in st
    assert {"lex_docs", "lex_weights", "lex_idf", "lex_vocab", "ctx_inv", "speaker", "fingerprint"} <= set(st)
    r2 = Ranker.from_state(st, vecs, files)
    assert r2.lex.vocab == r.lex.vocab and r2.speaker_names == r.speaker_names
    _same_results(r, r2, vecs, rng, files)


def test_ranker_state_round_trips_through_np_save_and_mmap(tmp_path):
    texts, files, vecs, rng = _random_corpus(seed=5)
    p = RankParams(context=1, vec_context_weights=(0.5, 0.25))
    r = Ranker(texts, vecs, files, p)
    for key, arr in r.state().items():
        np.save(tmp_path / f"{key}.npy", arr, allow_pickle=False)
    np.save(tmp_path / "vectors.npy", vecs)
    loaded = {f.stem: np.load(f, mmap_mode="r", allow_pickle=False)
              for f in tmp_path.glob("*.npy") if f.stem != "vectors"}
    mvecs = np.load(tmp_path / "vectors.npy", mmap_mode="r")
    assert isinstance(mvecs, np.memmap) and not mvecs.flags.writeable
    r2 = Ranker.from_state(loaded, mvecs, files, p)
    assert isinstance(r2.lex.docs, np.memmap)  # not copied
    _same_results(r, r2, vecs, rng, files)


def test_ranker_state_rejects_other_params_and_mismatches():
    texts, files, vecs, _ = _random_corpus(n=50)
    st = Ranker(texts, vecs, files).state()
    for other in (RankParams(k1=1.5), RankParams(b=0.7), RankParams(context=1), RankParams(context_weight=0.3),
                  RankParams(vec_context_weights=(0.4,))):
        with pytest.raises(ValueError):
            Ranker.from_state(st, vecs, files, other)
    Ranker.from_state(st, vecs, files, RankParams(lex_weight=0.7, file_prior=0.1))  # query-time only: fine
    with pytest.raises(ValueError):
        Ranker.from_state(st, vecs[:-1], files[:-1])
    with pytest.raises(ValueError):
        Ranker.from_state(st, vecs[:, :8], files)
    with pytest.raises(ValueError):
        Ranker.from_state(st, vecs, np.zeros(50, dtype=np.int32))  # other file boundaries
    bad = dict(st)
    bad["fingerprint"] = bad["fingerprint"].copy()
    bad["fingerprint"][-2] ^= 1
    with pytest.raises(ValueError):
        Ranker.from_state(bad, vecs, files)
    with pytest.raises(ValueError):
        Ranker.from_state({k: v for k, v in st.items() if k != "lex_docs"}, vecs, files)


def test_bm25_and_empty_ranker_state_round_trip():
    ix = BM25Index(DOCS, context=1, context_weight=0.25, k1=1.1)
    ix2 = BM25Index.from_state(ix.state(), context=1, context_weight=0.25, k1=1.1)
    for q in ("rice", "hAP ax3 router", "nothing"):
        assert np.array_equal(ix.scores(q), ix2.scores(q)) and np.array_equal(ix.coverage(q), ix2.coverage(q))
    with pytest.raises(ValueError):
        BM25Index.from_state(ix.state(), context=2)
    empty = Ranker([], np.zeros((0, 4), dtype=np.float32))
    e2 = Ranker.from_state(empty.state(), np.zeros((0, 4), dtype=np.float32))
    assert e2.search("x", np.ones(4, dtype=np.float32)) == [] and e2.lex.vocab == {}


def test_bm25_chunked_build_is_identical(monkeypatch):
    import memkit.lexical as lexical

    texts, files, _, rng = _random_corpus(n=200, seed=7)
    for kw in (dict(context=2, context_weight=0.5), dict(context=0), dict(context=3, context_weight=[0.5, 0.0, 0.2])):
        whole = BM25Index(texts, file_ids=files, **kw)
        for chunk in (1, 2, 3, 17):
            monkeypatch.setattr(lexical, "_BUILD_CHUNK", chunk)
            part = BM25Index(texts, file_ids=files, **kw)
            assert set(part.vocab) == set(whole.vocab) and part.avgdl == whole.avgdl
            assert np.array_equal(part.doc_len, whole.doc_len) and part.docs.size == whole.docs.size
            for t, i in whole.vocab.items():  # term ids may differ; each term's postings may not
                j = part.vocab[t]
                s, e, s2, e2 = whole.indptr[i], whole.indptr[i + 1], part.indptr[j], part.indptr[j + 1]
                assert np.array_equal(whole.docs[s:e], part.docs[s2:e2])
                assert np.array_equal(whole.own[s:e], part.own[s2:e2])
                assert np.array_equal(whole.weights[s:e], part.weights[s2:e2]), t
            for q in QUERIES + ["apple pear plum lime fig"]:
                assert np.array_equal(part.scores(q), whole.scores(q)), (chunk, kw, q)
                assert np.array_equal(part.coverage(q), whole.coverage(q)), (chunk, kw, q)
            monkeypatch.undo()


# -- fast path (large indexes: approximate scan, fusion on candidates) ---------------------------

def _fast(monkeypatch, **consts):
    import memkit.rank as rank

    monkeypatch.setattr(rank, "FAST_MIN_N", 0)
    monkeypatch.setattr(rank, "PREFIX_MIN_N", 0)
    monkeypatch.setattr(rank, "PREFIX_DIMS", 64)
    for k, v in consts.items():
        monkeypatch.setattr(rank, k, v)
    return rank


def _exact(rank, fn):
    saved = rank.FAST_MIN_N
    rank.FAST_MIN_N = 10**12
    try:
        return fn()
    finally:
        rank.FAST_MIN_N = saved


@pytest.mark.parametrize("params", [RankParams(), RankParams(smooth_prev=0.2, vec_context_weights=(0.5, 0.25)),
                                    RankParams(vec_floor="median"), RankParams(vec_floor="zero", file_prior=0.0),
                                    RankParams(mention_boost=0.1, smooth_next=0.0)])
def test_fast_path_with_every_candidate_equals_exact_path(monkeypatch, params):
    texts, files, vecs, rng = _random_corpus(n=400, dim=128, seed=11)
    rank = _fast(monkeypatch, CANDIDATES=400, FLOOR_SAMPLE=400)
    r = Ranker(texts, vecs, files, params)
    assert r._prefix is not None and r._prefix.shape == (400, 64)
    for q in QUERIES:
        qv = vecs[rng.integers(0, 400)] + 0.2 * rng.standard_normal(128).astype(np.float32)
        for kw in (dict(), dict(mode="vector"), dict(threshold=0.15), dict(k=25)):
            fast = r.search(q, qv, **kw)
            exact = _exact(rank, lambda: r.search(q, qv, **kw))
            assert len(fast) == len(exact), (q, kw)
            assert np.allclose([s for _, s in fast], [s for _, s in exact], atol=1e-5), (q, kw)
            # same entries, except for exchanges between near-equal scores at the cut
            cut = exact[-1][1] + 1e-5 if exact else 0
            assert {i for i, s in exact if s > cut} <= {i for i, _ in fast}, (q, kw)


def test_fast_path_with_few_candidates_agrees_on_most_results(monkeypatch):
    texts, files, vecs, rng = _random_corpus(n=3000, dim=128, seed=12)
    # give the vectors a decreasing spectrum, like model2vec's PCA-ordered dimensions
    vecs = vecs * np.linspace(2.0, 0.2, 128, dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rank = _fast(monkeypatch, CANDIDATES=100, LOW_CANDIDATES=16)
    r = Ranker(texts, vecs, files)
    overlaps = []
    for q in QUERIES * 4:
        qv = vecs[rng.integers(0, 3000)] + 0.3 * rng.standard_normal(128).astype(np.float32)
        fast = r.search(q, qv, k=10)
        exact = _exact(rank, lambda: r.search(q, qv, k=10))
        assert len(fast) == 10 and [s for _, s in fast] == sorted((s for _, s in fast), reverse=True)
        assert all(0.0 <= s <= 1.0 for _, s in fast)
        overlaps.append(len({i for i, _ in fast} & {i for i, _ in exact}) / 10)
        # fewer than k candidates pass a high threshold (no query word is known): the exact path answers
        assert r.search("zzz", qv, k=10, threshold=0.5) == _exact(rank, lambda: r.search("zzz", qv, k=10, threshold=0.5))
    assert np.mean(overlaps) >= 0.9, np.mean(overlaps)
    assert len(r.search("apple", vecs[0], k=30)) == 30  # k above CANDIDATES // 4: exact path


def test_fast_path_state_round_trip_and_fingerprint(monkeypatch, tmp_path):
    texts, files, vecs, rng = _random_corpus(n=300, dim=128, seed=13)
    rank = _fast(monkeypatch, CANDIDATES=50)
    r = Ranker(texts, vecs, files)
    st = r.state()
    assert st["vec_prefix"].shape == (300, 64) and st["vec_prefix"].flags.c_contiguous
    for key, arr in st.items():
        np.save(tmp_path / f"{key}.npy", arr)
    loaded = {f.stem: np.load(f, mmap_mode="r") for f in tmp_path.glob("*.npy")}
    r2 = Ranker.from_state(loaded, vecs, files)
    _same_results(r, r2, vecs, rng, files)
    with pytest.raises(ValueError):
        Ranker.from_state({k: v for k, v in st.items() if k != "vec_prefix"}, vecs, files)
    monkeypatch.setattr(rank, "PREFIX_DIMS", 96)
    with pytest.raises(ValueError):  # built with another prefix width
        Ranker.from_state(st, vecs, files)


def test_fast_path_answers_a_threshold_that_leaves_few_results(monkeypatch):
    """When every entry able to pass the threshold is a candidate, the fast path answers with
    fewer than k results itself (no exact fallback), and they are the exact path's results."""
    texts, files, vecs, rng = _random_corpus(n=3000, dim=128, seed=14)
    vecs = vecs * np.linspace(2.0, 0.2, 128, dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    rank = _fast(monkeypatch, CANDIDATES=100, LOW_CANDIDATES=16)
    r = Ranker(texts, vecs, files)
    answered = 0
    for q in QUERIES * 3:
        qv = vecs[rng.integers(0, 3000)] + 0.3 * rng.standard_normal(128).astype(np.float32)
        exact = _exact(rank, lambda: r.search(q, qv, k=10, threshold=0.6))
        fast = r.search(q, qv, k=10, threshold=0.6)
        assert {i for i, _ in fast} == {i for i, _ in exact}, q
        answered += len(exact) < 10
    assert answered  # the case under test happened
