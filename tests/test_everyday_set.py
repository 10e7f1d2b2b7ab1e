"""The everyday-notes evaluation set (bench/everyday.json, run by bench/eval_everyday.py in
`make eval`) keeps its promises: enough notes and questions in every category, answers that
exist, and plain questions sharing no search term with their answers (memkit's own tokeniser
and stemmer), so they can only be answered by meaning. No model needed."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from memkit.text import terms

ROOT = Path(__file__).resolve().parent.parent
SET = ROOT / "bench" / "everyday.json"
CATEGORIES = {"family", "health", "home", "work", "food", "hobbies", "travel", "money", "tech"}


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(SET.read_text(encoding="utf-8"))


def _plain(data: dict) -> list[dict]:
    return [q for q in data["questions"] if q.get("group", "plain") == "plain"]


def test_sizes_and_categories(data):
    notes = data["notes"]
    assert set(data["categories"]) == CATEGORIES
    assert len(notes) >= 60
    ids = [n["id"] for n in notes]
    assert len(ids) == len(set(ids)), "duplicate note ids"
    assert len({n["text"] for n in notes}) == len(notes), "duplicate note texts"
    per_cat = Counter(n["category"] for n in notes)
    assert set(per_cat) == CATEGORIES
    assert min(per_cat.values()) >= 6, per_cat
    assert len(_plain(data)) >= 60
    assert {q.get("group", "plain") for q in data["questions"]} <= {"plain", "rare"}
    by_id = {n["id"]: n for n in notes}
    asked = Counter(by_id[q["answers"][0]]["category"] for q in _plain(data))
    assert set(asked) == CATEGORIES, "every category has plain questions"


def test_answers_exist(data):
    ids = {n["id"] for n in data["notes"]}
    for q in data["questions"]:
        assert q["q"].strip() and q["answers"], q
        missing = [a for a in q["answers"] if a not in ids]
        assert not missing, f"{q['q']!r}: unknown answer ids {missing}"
    assert len({q["q"] for q in data["questions"]}) == len(data["questions"]), "duplicate questions"


def test_plain_questions_share_no_term_with_their_answers(data):
    notes = {n["id"]: n["text"] for n in data["notes"]}
    bad = []
    for q in _plain(data):
        qt = set(terms(q["q"]))
        assert qt, f"{q['q']!r} has no search term at all"
        for a in q["answers"]:
            shared = qt & set(terms(notes[a]))
            if shared:
                bad.append(f"{q['q']!r} / {a}: {sorted(shared)}")
    assert not bad, "plain questions sharing a term with an answer:\n" + "\n".join(bad)


def test_rare_questions_do_share_a_term(data):
    notes = {n["id"]: n["text"] for n in data["notes"]}
    rare = [q for q in data["questions"] if q.get("group") == "rare"]
    assert len(rare) >= 8
    for q in rare:
        assert any(set(terms(q["q"])) & set(terms(notes[a])) for a in q["answers"]), q["q"]


class _HashEmbedder:
    """A stand-in model (no model files): vectors from a hash of the text."""
    name = "test-hash"
    dim = 16

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, hash(t) % self.dim] = 1.0
        return out


def test_runner_vault_maps_every_note(tmp_path, data):
    """The runner's vault holds one entry per note, and its (file, line) map names the right
    note: each note's own text, searched lexically, finds that note first."""
    spec = importlib.util.spec_from_file_location("eval_everyday", ROOT / "bench" / "eval_everyday.py")
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    vault, where = mod.build_vault(tmp_path / "v", mod.load_set(SET), embedder=_HashEmbedder())
    assert sorted(where.values()) == sorted(n["id"] for n in data["notes"])
    assert len(vault.entries()) == len(data["notes"])
    for n in data["notes"]:
        hits = vault.search(n["text"], k=1, mode="lexical", threshold=None)
        assert hits and where[(hits[0].file, hits[0].line)] == n["id"], n["text"]
