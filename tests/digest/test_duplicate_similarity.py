"""duplicate_similarity (issue 30.6): the static model's cosine from which a digest takes a reworded
conclusion for an entry it already has; auto is calibrated for the shipped model."""
from __future__ import annotations

import json
from datetime import datetime

import pytest
from fake_llm import FakeLLM
from util import loopback_llm

from memkit import Vault
from memkit.digest.digest import digest_file
from memkit.errors import ConfigError

NOW = datetime(2026, 11, 21, 18, 0, 0)
REWORDED = ["Has a tree nut allergy", "Rent is due on the first of every month"]  # cosines 0.85, 0.87 (memkit-m2v)


def conclude(request):
    if "outdated" in request["messages"][-1]["content"]:
        return json.dumps({"updates": []})
    return json.dumps({"conclusions": [{"kind": "fact", "text": t} for t in REWORDED], "new_topic": None})


def digest_into(tmp_path, setting: str | None):
    root = tmp_path / "v"
    Vault.init(root, profile=False)
    if setting is not None:
        (root / "memkit.yaml").write_text(f"duplicate_similarity: {setting}\n")
    vault = Vault(root)  # memkit's built-in model: memkit-m2v
    vault.add("Allergic to tree nuts", topic="health")
    vault.add("Pays rent on the 1st of each month", topic="home")
    chat = tmp_path / "chat.txt"
    chat.write_text("user: I can't eat tree nuts, and rent is due on the first\nassistant: noted\n")
    with FakeLLM(conclude) as fake:
        return vault, digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW)


def test_auto_takes_reworded_memories_for_the_entries_they_repeat(tmp_path):
    vault, report = digest_into(tmp_path, None)
    assert vault.searcher.duplicate_similarity() == 0.80
    assert report.written == []
    assert [why.split(" in ")[0][:len("near duplicate of")] for _, why in report.skipped] == ["near duplicate of"] * 2


def test_a_higher_value_stores_them_and_a_number_is_used_as_given(tmp_path):
    vault, report = digest_into(tmp_path, "0.95")
    assert vault.searcher.duplicate_similarity() == 0.95
    assert sorted(line for _, line in report.written) == sorted(f"- [fact] {t} (from chat.txt) (2026-11-21)"
                                                                for t in REWORDED)


def test_a_model_not_calibrated_keeps_the_cautious_value(tmp_path):
    from memkit.search.searcher import DUPLICATE_SIMILARITY, MODEL_DUPLICATE

    assert DUPLICATE_SIMILARITY >= max(MODEL_DUPLICATE.values())


@pytest.mark.parametrize("value", ["1.5", "high", "-2"])
def test_a_bad_value_names_the_key(tmp_path, value):
    root = tmp_path / "v"
    Vault.init(root, profile=False)
    (root / "memkit.yaml").write_text(f"duplicate_similarity: {value}\n")
    with pytest.raises(ConfigError, match="duplicate_similarity"):
        Vault(root).searcher.duplicate_similarity()
