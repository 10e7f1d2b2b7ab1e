"""Unit tests of memkit.lexical (tokeniser, BM25) and memkit.rank (fusion). Tiny hand-made vectors."""
from __future__ import annotations

import numpy as np
import pytest

from memkit.lexical import encode_terms
from memkit.lexical import BM25Index as _BM25Index
from memkit.rank import RankParams, Ranker, _speakers, speaker_of
from memkit.text import stem
from memkit.text import terms as tokenize


class BM25Index(_BM25Index):
    """The index built from raw texts, queried with raw queries (as the tests read best)."""

    def __init__(self, docs, **kw):
        super().__init__(*encode_terms(docs), **kw)

    def scores(self, query):
        return super().scores(self.query_terms(query))

    def coverage(self, query):
        return super().coverage(self.query_terms(query))


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


def test_params_validation():
    with pytest.raises(ValueError):
        RankParams(lex_weight=1.5)
    with pytest.raises(ValueError):
        RankParams(vec_floor="max")


@pytest.mark.parametrize("texts", [
    ["Rice: soak it overnight", "Prefers bomba rice for paella", "Uses a cast iron pan", "Salt the water"],
    ["TODO: call the plumber", "TODO: renew the passport", "Boiler serviced in March", "Fuse box in the hall",
     "Plumber is Anna", "Water meter under the sink"],
    ["Note: the router resets at night", "Rice", "Paella", "## Cooking"],
    ["Rice: soak it overnight"],
])
def test_ordinary_notes_have_no_speakers(texts):
    ids, names = _speakers(texts, np.zeros(len(texts), dtype=np.int64))
    assert names == [] and (ids == -1).all()
    r = Ranker(texts, _unit(np.ones((len(texts), 3))), np.zeros(len(texts), dtype=np.int32))
    rice = r.component_scores("how long do I soak rice", np.ones(3, dtype=np.float32))["fused"]
    assert rice.max() <= 1.0 and r.speaker_names == []


def test_a_conversation_has_speakers_and_a_qa_file_is_one():
    conv = ["Caroline: I went to a support group", "Melanie: Sounds great", "Caroline: It was",
            "Melanie: Tell me more"]
    ids, names = _speakers(conv, np.zeros(4, dtype=np.int64))
    assert names == ["Caroline", "Melanie"] and ids.tolist() == [0, 1, 0, 1]
    qa = ["Q: what is the wifi password?", "A: on the fridge", "Q: who fixes the boiler?", "A: Anna"]
    ids, names = _speakers(qa, np.zeros(4, dtype=np.int64))
    assert names == [] or all(len(n) > 1 for n in names)  # "Q"/"A" are not names (one capital letter)


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
                                    RankParams(smooth_next=0.0)])
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
