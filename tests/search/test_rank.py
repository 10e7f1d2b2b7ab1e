"""Unit tests of memkit.search.lexical (tokeniser, BM25) and memkit.search.rank (fusion). Tiny hand-made vectors."""
from __future__ import annotations

import numpy as np
import pytest

from memkit.formats.words import stem
from memkit.formats.words import terms as tokenize
from memkit.search.lexical import BM25Index as _BM25Index
from memkit.search.lexical import encode_terms
from memkit.search.rank import Ranker, RankParams, speaker_of, speakers


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
ONE_FILE = np.zeros(5, dtype=np.int32)
VECS = _unit([[1, 0, 0, 0], [0.8, 0.6, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0.6, 0, 0.8]])


def test_vector_mode_orders_by_vector_score():
    r = Ranker(TEXTS, VECS, FILES)
    q = np.array([0, 0, 0, 1], dtype=np.float32)
    res = r.search("anything", q, k=3, mode="vector")
    assert res[0][0] == 4
    _, _, vec = r.vector_scores(q)
    assert [s for _, s in res] == sorted(vec.tolist(), reverse=True)[:3]


def test_hybrid_keeps_exact_rare_word_against_vectors():
    r = Ranker(TEXTS, VECS, FILES)
    q = np.array([1, 0, 0, 0], dtype=np.float32)  # the vector side points at entry 0
    assert r.search("hAP ax3", q, k=1)[0][0] == 2


def test_lexical_mode_returns_only_matches():
    r = Ranker(TEXTS, VECS, FILES)
    res = r.search("camping mountains", None, k=10, mode="lexical")
    assert [i for i, _ in res] == [4]
    assert r.search("zzz", None, k=10, mode="lexical") == []
    with pytest.raises(ValueError):
        r.search("x", None, mode="hybrid")


def test_mask_restricts_results():
    r = Ranker(TEXTS, VECS, FILES)
    mask = np.array([False, False, False, True, True])
    res = r.search("router hAP", VECS[2], k=10, mask=mask)
    assert {i for i, _ in res} <= {3, 4} and len(res) == 2


def test_threshold_keeps_similar_or_strong_lexical_matches():
    r = Ranker(TEXTS, VECS, FILES)
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
    r = Ranker(TEXTS, VECS, FILES)
    q = _unit([[0.3, 0.2, 0.5, 0.1]])[0]
    cos, ctx, vec = r.vector_scores(q)
    for i in range(len(TEXTS)):
        v = VECS[i] + (w * VECS[i - 1] if i > 0 and FILES[i - 1] == FILES[i] else 0)
        assert ctx[i] == pytest.approx(float(v @ q / np.linalg.norm(v)), abs=1e-5)
        assert cos[i] == pytest.approx(float(VECS[i] @ q), abs=1e-6)
        assert vec[i] == pytest.approx((cos[i] + ctx[i]) / 2, abs=1e-6)


def test_component_scores_keys_and_speaker_boost():
    params = RankParams(speaker_boost=0.5, smooth_next=0.0, file_prior=0.0)
    r = Ranker(TEXTS, VECS, ONE_FILE, params)  # one file: a dialogue
    q = _unit([[1, 1, 1, 1]])[0]
    comp = r.component_scores("What did Melanie do?", q)
    for key in ("cosine", "ctx_cosine", "vector", "lexical", "coverage", "fused"):
        assert comp[key].shape == (5,)
    top = [i for i, _ in r.search("What did Melanie do?", q, k=3)]
    assert set(top) == {1, 3, 4}


def test_speaker_detection():
    assert speaker_of("Caroline: hi") == "Caroline"
    assert speaker_of("- [fact] John Smith: likes tea") == "John Smith"
    assert speaker_of("prefers bomba rice: always") is None
    assert speaker_of("TODO: call the plumber") is None and speaker_of("Q: why?") is None
    r = Ranker(TEXTS, VECS, ONE_FILE)  # one file: Caroline 2 turns, Melanie 3
    assert r.speaker.tolist() == [0, 1, 0, 1, 1] and r.speaker_names == ["Caroline", "Melanie"]
    # in FILES, file 0 has one Melanie turn and file 1 only Melanie: neither is a dialogue
    assert Ranker(TEXTS, VECS, FILES).speaker.tolist() == [-1] * 5


# -- the person signal never fires on ordinary notes -------------------------------------------

NOTES_FILES = {
    "notes": ["Rice: soak it overnight", "Bomba rice is best for paella", "TODO: call the plumber",
              "Note: the oven runs hot", "Buy flour and yeast", "Plumber's number is in the phone book"],
    "labels": ["Rice:", "Ingredients:", "Method:", "Rice", "Beans", "Salt"],  # headings, one-word entries
    "headings": ["# Rice: notes", "## Rice", "Rice: soak it overnight", "rinse it three times"],
    "qa": ["Q: how long do I soak rice?", "A: overnight, in cold water", "Q: which rice for paella?",
           "A: bomba rice", "Q: who fixes the sink?", "A: the plumber, call him on Monday"],
    "todo": ["TODO: call the plumber", "TODO: fix the gate", "NOTE: the gate code is 4711",
             "NOTE: plumber comes Monday"],
    "note": ["Note: the oven runs hot", "Note: rice needs more water at altitude", "Note: soak beans"],
    "rice": ["Rice: soak it overnight", "Rice: rinse it three times", "Beans: soak for 12 hours"],
    "one": ["Rice: soak it overnight"],
    # from an independent review: each of these fired before the turn-taking and label checks
    "pantry": ["Rice: bought in March", "Rice: 2 kg left", "Water: six bottles", "Water: check the filter",
               "Paella needs a wide pan"],
    "recipe": ["Ingredients:", "Method:", "Ingredients:", "Method:", "Focaccia ingredients: flour, water, oil"],
    "journal": ["Monday: ran 5 km", "Tuesday: rest day", "Monday: ran 6 km", "Tuesday: swim"],
    "meeting": ["Decision: move to Postgres", "Action: Tom writes the plan", "Decision: keep the cron job",
                "Action: review on Friday"],
    "ideas": ["Todo: renew the passport", "Idea: a rice cooker", "Todo: book the vet", "Idea: garden beds"],
    "tips": ["[tip] Rice: rinse it first", "[tip] Beans: soak overnight", "[tip] Rice: salt the water",
             "[tip] Beans: no salt until soft"],
}
NOTES_QUERIES = ["how long should I soak rice", "rice", "Rice", "call the plumber TODO", "todo", "note",
                 "rice for paella", "focaccia ingredients", "what did I do on Monday", "decision", "Beans",
                 "What did Rice say?", "ingredients", "what did Q answer", "A", "beans", "NOTE oven"]


def _words_vecs(texts, dim=16):
    vecs = np.random.default_rng(5).standard_normal((len(texts), dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


@pytest.mark.parametrize("name", sorted(NOTES_FILES))
def test_speaker_boost_never_fires_on_ordinary_notes(name):
    texts = NOTES_FILES[name]
    vecs = _words_vecs(texts)
    files = np.zeros(len(texts), dtype=np.int32)
    r = Ranker(texts, vecs, files)
    assert r.speaker.tolist() == [-1] * len(texts) and r.speaker_names == []
    off = Ranker(texts, vecs, files, RankParams(speaker_boost=0.0))
    q = _unit([[1.0] * 16])[0]
    for query in NOTES_QUERIES:
        on_f, off_f = r.component_scores(query, q)["fused"], off.component_scores(query, q)["fused"]
        # the same scores, but for the scale: hybrid scores are divided by (1 + speaker_boost) ...
        assert np.allclose(on_f * (1 + r.params.speaker_boost), off_f, atol=1e-6), (name, query)
        assert [i for i, _ in r.search(query, q, k=10)] == [i for i, _ in off.search(query, q, k=10)]


def test_speaker_guard_keeps_dialogues_and_ignores_notes_beside_them():
    dialogue = ["Caroline: I went to a support group yesterday", "Melanie: That sounds great!",
                "Caroline: It was about rice farming, oddly", "Melanie: I painted a sunrise last year",
                "Caroline: Note: I want to paint too", "Note: this line is a stray label"]
    notes = NOTES_FILES["notes"]
    texts = dialogue + notes
    files = np.array([0] * len(dialogue) + [1] * len(notes), dtype=np.int32)
    ids, names = speakers(texts, files)
    got = [names[i] if i >= 0 else None for i in ids.tolist()]
    assert got == ["Caroline", "Melanie", "Caroline", "Melanie", "Caroline", None] + [None] * len(notes)
    r = Ranker(texts, _words_vecs(texts), files)
    q = _unit([[1.0] * 16])[0]
    melanie = r.component_scores("what did Melanie paint?", q)["fused"]
    assert int(np.argmax(melanie)) == 3  # her turn about painting


def test_sample_vault_has_no_speakers(tmp_path):
    """The sample vault's "Focaccia: 80% hydration ...", "VLANs: ...", "Project Harbor: ..."
    entries are labels, not people speaking."""
    import shutil
    from pathlib import Path

    from memkit import Vault

    copy = tmp_path / "vault"
    shutil.copytree(Path(__file__).resolve().parents[2] / "vault", copy, ignore=shutil.ignore_patterns(".memkit"))
    entries = list(Vault(copy).entries())
    texts = [e.text for e in entries]
    files = np.unique([e.file for e in entries], return_inverse=True)[1]
    assert sum(speaker_of(t) is not None for t in texts) >= 5  # labelled entries exist
    r = Ranker(texts, _words_vecs(texts), files)
    assert r.speaker_names == [] and (r.speaker == -1).all()


def test_file_prior_and_smoothing_stay_within_files():
    params = RankParams(file_prior=0.5, smooth_next=0.3, speaker_boost=0.0)
    r = Ranker(TEXTS, VECS, FILES, params)
    f = r.component_scores("hAP ax3 router", np.array([0, 0, 1, 0], dtype=np.float32))["fused"]
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
        RankParams(context=4)


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


def test_scores_at_equals_scores():
    ix = BM25Index(DOCS, context=1)
    qt = ix.query_terms("rice paella broth router")
    rows = np.array([4, 0, 2, 1])
    assert np.allclose(_BM25Index.scores_at(ix, qt, rows), _BM25Index.scores(ix, qt)[rows])


# -- the fast path on large vaults --------------------------------------------------------------

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


def _fast(monkeypatch, **consts):
    import memkit.search.rank as rank

    monkeypatch.setattr(rank, "FAST_MIN_N", 100)
    monkeypatch.setattr(rank, "CANDIDATE_SHARE", 1.0)  # CANDIDATES as given
    monkeypatch.setattr(rank, "MIN_CANDIDATES", 0)
    for k, v in consts.items():
        monkeypatch.setattr(rank, k, v)
    return rank


def _exact(r, fn):
    saved, r.prefix = r.prefix, None
    try:
        return fn()
    finally:
        r.prefix = saved


def test_fast_path_with_every_candidate_equals_exact_path(monkeypatch):
    texts, files, vecs, rng = _random_corpus(n=400, dim=128, seed=11)
    _fast(monkeypatch, CANDIDATES=400, LOW_CANDIDATES=400)
    r = Ranker(texts, vecs, files)
    assert r.prefix is not None and r.prefix.shape == (64, 400)
    for q in QUERIES:
        qv = vecs[rng.integers(0, 400)] + 0.2 * rng.standard_normal(128).astype(np.float32)
        for kw in (dict(), dict(threshold=0.15), dict(k=25)):
            fast = r.search(q, qv, **kw)
            exact = _exact(r, lambda: r.search(q, qv, **kw))
            assert len(fast) == len(exact), (q, kw)
            assert np.allclose([s for _, s in fast], [s for _, s in exact], atol=1e-5), (q, kw)
            cut = exact[-1][1] + 1e-5 if exact else 0
            assert {i for i, s in exact if s > cut} <= {i for i, _ in fast}, (q, kw)


def test_fast_path_with_few_candidates_agrees_on_most_results(monkeypatch):
    texts, files, vecs, rng = _random_corpus(n=3000, dim=128, seed=12)
    # a decreasing spectrum, like model2vec's PCA-ordered dimensions
    vecs = vecs * np.linspace(2.0, 0.2, 128, dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    _fast(monkeypatch, CANDIDATES=100, LOW_CANDIDATES=16)
    r = Ranker(texts, vecs, files)
    overlaps = []
    for q in QUERIES * 4:
        qv = vecs[rng.integers(0, 3000)] + 0.3 * rng.standard_normal(128).astype(np.float32)
        fast = r.search(q, qv, k=10)
        exact = _exact(r, lambda: r.search(q, qv, k=10))
        assert len(fast) == 10 and [s for _, s in fast] == sorted((s for _, s in fast), reverse=True)
        assert all(0.0 <= s <= 1.0 for _, s in fast)
        overlaps.append(len({i for i, _ in fast} & {i for i, _ in exact}) / 10)
        # too few candidates pass a high threshold (no query word is known): the exact path answers
        assert r.search("zzz", qv, k=10, threshold=0.5) == _exact(r, lambda: r.search("zzz", qv, k=10, threshold=0.5))
    assert np.mean(overlaps) >= 0.9, np.mean(overlaps)
    assert len(r.search("apple", vecs[0], k=30)) == 30  # k above CANDIDATES // 4: exact path


def test_fast_path_answers_a_threshold_that_leaves_few_results(monkeypatch):
    texts, files, vecs, rng = _random_corpus(n=3000, dim=128, seed=14)
    vecs = vecs * np.linspace(2.0, 0.2, 128, dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    _fast(monkeypatch, CANDIDATES=100, LOW_CANDIDATES=16)
    r = Ranker(texts, vecs, files)
    for q in QUERIES * 3:
        qv = vecs[rng.integers(0, 3000)] + 0.3 * rng.standard_normal(128).astype(np.float32)
        exact = _exact(r, lambda: r.search(q, qv, k=10, threshold=0.6))
        fast = r.search(q, qv, k=10, threshold=0.6)
        assert {i for i, _ in fast} == {i for i, _ in exact}, q


# ---- notes are asked about in other words; conversations by their names and rare words -------------

def _unit_rows(n: int, dim: int = 16, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_one_shared_common_word_does_not_outrank_the_meaning_in_notes():
    notes = ["Car wash every other Saturday at the Galp station", "I drive a 2014 Subaru Outback",
             "Dentist is Dr Okafor", "Sister Ana lives in Porto", "Allergic to penicillin"]
    vecs = _unit_rows(len(notes))
    query = vecs[1] * 0.9 + vecs[0] * 0.1  # means the Subaru; shares only "car" with the car wash
    r = Ranker(notes, vecs, [0] * len(notes))
    assert [i for i, _ in r.search("which car is parked outside my flat", query, k=1)] == [1]
    # the same query asked of a conversation: its words win, as LoCoMo shows they should there
    turns = [f"{who}: {text}" for who, text in zip(["Maya", "Jon"] * 3, notes)]
    conv = Ranker(turns, vecs, [0] * len(turns))
    assert conv.has_speakers
    assert [i for i, _ in conv.search("which car is parked outside my flat", query, k=1)] == [0]


def test_a_query_the_notes_answer_word_for_word_keeps_the_full_lexical_weight():
    notes = ["Router is a MikroTik hAP ax3", "Grafana runs on node-3", "Prefers bomba rice for paella"]
    r = Ranker(notes, _unit_rows(3), [0, 0, 0])
    qt = r.lex.query_terms("MikroTik hAP ax3")
    assert r.note_weight("MikroTik hAP ax3", qt, r.lex.coverage(qt)) == pytest.approx(r.params.lex_weight)
    qt = r.lex.query_terms("what router brand sits in the hallway closet")
    assert r.note_weight("what router brand sits in the hallway closet", qt, r.lex.coverage(qt)) < 0.1


@pytest.mark.parametrize("context", [0, 2])
@pytest.mark.parametrize("fold", [True, False])
def test_scores_rows_and_coverage_rows_name_every_row_above_zero(context, fold):
    """A large vault's fast path reads the lexical scores and the coverage only at the rows these
    name (the others must be 0), so they must name every row a query word reaches, context too."""
    texts, files, _, rng = _random_corpus(400)
    live = rng.random(len(texts)) > 0.1  # some rows dead: their scores are 0 whatever they hold
    ix = _BM25Index(*encode_terms(texts), file_ids=files, context=context, live=live)
    ix._fold = fold and bool(context)
    for query in QUERIES + ["Caroline Melanie apple lake paint router camping node-3 example.org hAP"]:
        qt = ix.query_terms(query)
        scores, rows = ix.scores_rows(qt)
        np.testing.assert_array_equal(scores, ix.scores(qt))
        outside = np.ones(len(texts), dtype=bool)
        outside[rows] = False
        assert not scores[outside].any(), query
        coverage, cov_rows = ix.coverage_rows(qt)
        np.testing.assert_array_equal(coverage, ix.coverage(qt))
        outside = np.ones(len(texts), dtype=bool)
        outside[cov_rows] = False
        assert not coverage[outside].any(), query
