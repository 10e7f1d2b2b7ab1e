"""The everyday-notes evaluation sets (bench/everyday.json, and its held-out twin
bench/everyday-heldout.json, another person's notes; both run by bench/eval_everyday.py in
`make eval`) keep their promises: enough notes and items of each group in every category,
answers that exist, plain questions sharing no search term with their answers (memkit's own
tokeniser and stemmer), so they can only be answered by meaning, messages with exactly one note
that matters, and unanswerable questions with no answer. No model needed."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from memkit.formats.words import terms

ROOT = Path(__file__).resolve().parents[2]
MAIN = ROOT / "bench" / "everyday.json"
HELDOUT = ROOT / "bench" / "everyday-heldout.json"
CATEGORIES = {"family", "health", "home", "work", "food", "hobbies", "travel", "money", "tech"}
GROUPS = {"plain", "rare", "message", "unanswerable"}
# the least of each per set: notes, notes per category, then items per group
SIZES = {
    MAIN: {"notes": 60, "per_category": 6, "plain": 60, "rare": 8, "message": 40, "unanswerable": 20},
    HELDOUT: {"notes": 40, "per_category": 4, "plain": 40, "rare": 0, "message": 20, "unanswerable": 12},
}


@pytest.fixture(scope="module", params=[MAIN, HELDOUT], ids=["main", "heldout"])
def path(request) -> Path:
    return request.param


@pytest.fixture(scope="module")
def data(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _group(data: dict, group: str) -> list[dict]:
    return [q for q in data["questions"] if q.get("group", "plain") == group]


def _shared(question: str, note: str) -> set[str]:
    return set(terms(question)) & set(terms(note))


def test_sizes_and_categories(path, data):
    least = SIZES[path]
    notes = data["notes"]
    assert set(data["categories"]) == CATEGORIES
    assert len(notes) >= least["notes"]
    ids = [n["id"] for n in notes]
    assert len(ids) == len(set(ids)), "duplicate note ids"
    assert len({n["text"] for n in notes}) == len(notes), "duplicate note texts"
    per_cat = Counter(n["category"] for n in notes)
    assert set(per_cat) == CATEGORIES
    assert min(per_cat.values()) >= least["per_category"], per_cat
    assert {q.get("group", "plain") for q in data["questions"]} <= GROUPS
    for group in GROUPS:
        assert len(_group(data, group)) >= least[group], group
    by_id = {n["id"]: n for n in notes}
    for group in ("plain", "message"):
        asked = Counter(by_id[q["answers"][0]]["category"] for q in _group(data, group))
        assert set(asked) == CATEGORIES, f"every category has {group} items: {asked}"


def test_answers_exist(data):
    ids = {n["id"] for n in data["notes"]}
    for q in data["questions"]:
        assert q["q"].strip(), q
        assert isinstance(q["answers"], list), q
        if q.get("group", "plain") == "unanswerable":
            assert q["answers"] == [], f"{q['q']!r}: an unanswerable question has no answer"
        else:
            assert q["answers"], f"{q['q']!r} has no answer"
        missing = [a for a in q["answers"] if a not in ids]
        assert not missing, f"{q['q']!r}: unknown answer ids {missing}"
    assert len({q["q"] for q in data["questions"]}) == len(data["questions"]), "duplicate questions"


def test_messages_have_exactly_one_note_and_mostly_no_shared_term(data):
    notes = {n["id"]: n["text"] for n in data["notes"]}
    messages = _group(data, "message")
    for q in messages:
        assert len(q["answers"]) == 1, f"{q['q']!r}: a message has exactly one note that matters"
    sharing = [q["q"] for q in messages if _shared(q["q"], notes[q["answers"][0]])]
    assert len(sharing) * 2 < len(messages), f"most messages share no search term with their note: {sharing}"


def test_safety_messages_and_the_health_notes_that_bear(path, data):
    """Issue 40 item 5: at least 12 messages of each set need a health note (an allergy, a medication,
    a condition); ``bears`` names other health notes that bear on a message, so the runner can
    count the ones a block shows where they do not."""
    from memkit.search.safety import is_safety_note

    notes = {n["id"]: n["text"] for n in data["notes"]}
    safety = [q for q in _group(data, "message") if q.get("safety")]
    assert len(safety) >= 12, len(safety)
    for q in safety:
        assert is_safety_note(notes[q["answers"][0]]), q["q"]
    for q in data["questions"]:
        if "bears" in q:
            assert q.get("group") == "message", q["q"]
            assert q["bears"] and not set(q["bears"]) & set(q["answers"]), q["q"]
            assert all(is_safety_note(notes[i]) for i in q["bears"]), q["q"]


def test_plain_questions_share_no_term_with_their_answers(data):
    notes = {n["id"]: n["text"] for n in data["notes"]}
    bad = []
    for q in _group(data, "plain") + _group(data, "unanswerable"):
        assert set(terms(q["q"])), f"{q['q']!r} has no search term at all"
    for q in _group(data, "plain"):
        for a in q["answers"]:
            shared = _shared(q["q"], notes[a])
            if shared:
                bad.append(f"{q['q']!r} / {a}: {sorted(shared)}")
    assert not bad, "plain questions sharing a term with an answer:\n" + "\n".join(bad)


def test_rare_questions_do_share_a_term(data):
    notes = {n["id"]: n["text"] for n in data["notes"]}
    for q in _group(data, "rare"):
        assert any(_shared(q["q"], notes[a]) for a in q["answers"]), q["q"]


def test_the_two_sets_are_different_people():
    main, held = (json.loads(p.read_text(encoding="utf-8")) for p in (MAIN, HELDOUT))
    assert not {n["text"] for n in main["notes"]} & {n["text"] for n in held["notes"]}
    assert not {q["q"] for q in _group(main, "message")} & {q["q"] for q in _group(held, "message")}


class _HashEmbedder:
    """A stand-in model (no model files): vectors from a hash of the text."""
    name = "test-hash"
    dim = 16

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, hash(t) % self.dim] = 1.0
        return out


def _runner():
    spec = importlib.util.spec_from_file_location("eval_everyday", ROOT / "bench" / "eval_everyday.py")
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_runner_vault_maps_every_note(tmp_path, path, data):
    """The runner's vault holds one entry per note, and its (file, line) map names the right
    note: each note's own text, searched lexically, finds that note first."""
    mod = _runner()
    loaded = mod.load_set(path)
    assert {q["group"] for q in loaded["questions"]} == GROUPS - ({"rare"} if not _group(data, "rare") else set())
    vault, where = mod.build_vault(tmp_path / "v", loaded, embedder=_HashEmbedder())
    assert sorted(where.values()) == sorted(n["id"] for n in data["notes"])
    assert len(vault.entries()) == len(data["notes"])
    for n in data["notes"]:
        hits = vault.search(n["text"], k=1, mode="lexical", threshold=None)
        assert hits and where[(hits[0].file, hits[0].line)] == n["id"], n["text"]


def test_runner_reports_messages_context_and_confidence(tmp_path, capsys):
    """run() gives every item its default hits with their confident flags, a message what
    Vault.context made of it (whether the block shows the note), and the tables count them."""
    mod = _runner()
    data = mod.load_set(MAIN)
    picked = {}
    for q in data["questions"]:
        picked.setdefault(q["group"], q)
    data["questions"] = list(picked.values())
    vault, where = mod.build_vault(tmp_path / "v", data, embedder=_HashEmbedder())
    rows = mod.run(data, vault, where, "auto")
    by_group = {r["group"]: r for r in rows}
    assert set(by_group) == GROUPS
    assert set(by_group["plain"]["ranked"]) == set(mod.MODES)
    assert set(by_group["message"]["ranked"]) == {"default", "hybrid"}
    assert set(by_group["unanswerable"]["ranked"]) == {"default"}
    for r in rows:
        assert [h["id"] for h in r["default"]] == r["ranked"]["default"]
        assert all(isinstance(h["confident"], bool) for h in r["default"])
    ctx = by_group["message"]["context"]
    assert isinstance(ctx["held"], bool) and set(ctx) == {"held", "topic", "tokens", "memories", "health"}
    text = {n["id"]: n["text"] for n in data["notes"]}[by_group["message"]["answers"][0]]
    assert ctx["held"] == mod._in_block(vault.context(by_group["message"]["q"]).text, text)
    held, n = mod.print_messages([by_group["message"]], data["categories"])
    assert (held, n) == (int(ctx["held"]), 1)
    wrong, n_un = mod.print_confidence(rows)
    assert n_un == 1 and wrong == int(mod.confidence(by_group["unanswerable"]) == "wrong")
    out = capsys.readouterr().out
    assert "Messages" in out and "unanswerable" in out
    json.dumps(rows)  # --json writes them as they are


def test_runner_block_and_confidence_rules():
    mod = _runner()
    block = "# Memory\n\n## Relevant memories\n- Mum turns 70 (topic: family)\n- Dad's knee\n"
    assert mod._in_block(block, "Mum turns 70") and mod._in_block(block, "Dad's knee")
    assert not mod._in_block(block, "Mum turns") and not mod._in_block(block, "knee")

    def row(answers, *hits):
        return {"answers": answers, "default": [{"id": i, "confident": c} for i, c in hits]}

    assert mod.confidence(row(["a"])) == "empty"
    assert mod.confidence(row(["a"], ("a", False), ("b", False))) == "weak"
    assert mod.confidence(row(["a"], ("a", True), ("b", True))) == "right"
    assert mod.confidence(row(["a"], ("b", True), ("a", True))) == "wrong"
    assert mod.confidence(row([], ("b", True))) == "wrong"
    message = {"answers": ["hea-nuts"], "bears": ["hea-pill"], "context": {"health": ["hea-nuts", "hea-pill", "hea-knee"]}}
    assert mod.strays(message) == ["hea-knee"]  # a health note in the block that bears on nothing said
    assert mod.strays({"answers": ["x"], "context": {"held": True}}) == []
