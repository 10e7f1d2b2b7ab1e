"""Keyed facts (memkit.upkeep.facts): one live value per key in topics/facts.md, old values archived."""
from __future__ import annotations

from datetime import date

import pytest

from memkit import Vault
from memkit.errors import EntryNotFound, InvalidValue
from memkit.store import Store
from memkit.store.facts import all_facts, fact_history, get_fact, set_fact


@pytest.fixture
def store(tmp_path) -> Store:
    Vault.init(tmp_path / "v", profile=False)
    return Store(tmp_path / "v")


def test_a_new_key_is_a_line_of_facts_md(store):
    change = set_fact(store, "city", "Lisbon", today=date(2026, 3, 1))
    assert change.to_dict() == {"key": "city", "value": "Lisbon", "old": None, "changed": True, "id": change.entry.id}
    assert "- city: Lisbon (2026-03-01)\n" in (store.root / "topics" / "facts.md").read_text()
    assert get_fact(store, "city").value == "Lisbon"


def test_a_new_value_replaces_the_line_and_the_old_one_is_history(store):
    set_fact(store, "wifi", "CasaMaya", today=date(2026, 3, 1))
    set_fact(store, "city", "Lisbon", today=date(2026, 3, 1))
    change = set_fact(store, "city", "Porto", today=date(2026, 11, 27))
    assert (change.old, change.value) == ("Lisbon", "Porto")
    text = (store.root / "topics" / "facts.md").read_text()
    assert text.index("wifi: CasaMaya") < text.index("city: Porto") and "Lisbon" not in text
    assert [(v.value, v.day, v.live) for v in fact_history(store, "city")] == [
        ("Lisbon", "2026-03-01", False), ("Porto", "2026-11-27", True)]
    archive = (store.root / "archive.md").read_text()
    assert f"(replaced by {change.entry.id}): - city: Lisbon (2026-03-01)" in archive
    assert {k: f.value for k, f in all_facts(store).items()} == {"wifi": "CasaMaya", "city": "Porto"}


def test_the_same_value_writes_nothing(store):
    set_fact(store, "city", "Porto", today=date(2026, 3, 1))
    before = (store.root / "topics" / "facts.md").read_bytes()
    assert set_fact(store, "city", "  Porto ").changed is False
    assert (store.root / "topics" / "facts.md").read_bytes() == before


def test_a_second_line_a_person_wrote_is_archived_too(store):
    set_fact(store, "city", "Lisbon", today=date(2026, 3, 1))
    path = store.root / "topics" / "facts.md"
    path.write_text(path.read_text() + "- city: Faro (2026-04-01)\n")
    assert get_fact(store, "city").value == "Faro"  # the last line wins
    set_fact(store, "city", "Porto", today=date(2026, 11, 27))
    assert [f.value for f in all_facts(store).values()] == ["Porto"]
    assert [v.value for v in fact_history(store, "city")] == ["Lisbon", "Faro", "Porto"]


def test_bad_keys_and_unknown_keys_are_named(store):
    with pytest.raises(InvalidValue, match="invalid key"):
        set_fact(store, "../etc", "x")
    with pytest.raises(EntryNotFound, match="no value was ever set for 'city'"):
        fact_history(store, "city")
    assert get_fact(store, "city") is None


def test_the_facts_topic_is_never_split_by_an_add(tmp_path):
    from util import FakeEmbedder

    root = Vault.init(tmp_path / "w", profile=False).root
    (root / "memkit.yaml").write_text("topic_split_threshold_lines: 10\n")
    vault = Vault(root, embedder=FakeEmbedder())
    for n in range(12):
        vault.facts.set(f"key{n}", f"value {n}")
    entry = vault.add("key-extra: by hand", topic="facts")
    assert entry.topic == "facts" and [t.name for t in vault.topics()] == ["facts"]
    assert vault.facts.get("key11").value == "value 11"


def test_a_secret_in_a_value_is_never_stored(store):
    token = "ghp_" + "a1B2c3D4e5" * 4
    set_fact(store, "wifi", "Casa", today=date(2026, 3, 1))
    change = set_fact(store, "wifi", f"the password is {token}", today=date(2026, 3, 2))
    assert change.redacted >= 1 and change.to_dict()["redacted"] == change.redacted
    assert token not in (store.root / "topics" / "facts.md").read_text() and "[redacted]" in change.value
    assert "redacted" not in set_fact(store, "city", "Porto").to_dict()
