"""The search filters person, relation and where (memkit.search.about), from the library."""
from __future__ import annotations

import os

import pytest
from util import FakeEmbedder, write

from memkit import Vault
from memkit.errors import InvalidValue
from memkit.search.about import check_where

PEOPLE = "# People\n\n- Maya (self)\n- Ana (family: sister)\n- Tom Reyes (colleague)\n- Tom Silva (friend)\n"


@pytest.fixture
def vault(tmp_path) -> Vault:
    v = Vault.init(tmp_path / "v", profile=False)
    write(v.root / "people.md", PEOPLE)
    write(v.topics_dir / "notes.md", "- Dinner with @Ana and @Zoe (2026-01-01)\n"
                                     "- Lunch with @TomSilva (2026-01-02)\n"
                                     "- Dinner at home (2026-01-03)\n"
                                     "- Dinner plans (people: user, Tom Reyes) (2026-01-04)\n"
                                     "- Dinner in town (wifi: Casa) (2026-01-05)\n")
    v = Vault(v.root, embedder=FakeEmbedder())
    v.facts.set("wifi", "Casa")
    return v


def found(vault: Vault, **filters) -> list[str]:
    return sorted(h.text.split(" (2026")[0] for h in vault.search("dinner lunch wifi", threshold=None, k=20, **filters))


def test_person_by_name_handle_first_name_or_someone_not_in_people_md(vault):
    assert found(vault, person="Ana") == found(vault, person="@ana") == ["Dinner with @Ana and @Zoe"]
    assert found(vault, person="Zoe") == ["Dinner with @Ana and @Zoe"]  # not in people.md: as written
    assert found(vault, person="Tom Silva") == ["Lunch with @TomSilva"]
    with pytest.raises(InvalidValue, match="'Tom' names 2 people of people.md \\(Tom Reyes, Tom Silva\\)"):
        found(vault, person="Tom")


def test_the_user_is_self_and_owns_what_names_no_one(vault):
    mine = ["Dinner at home", "Dinner in town (wifi: Casa)", "Dinner plans (people: user, Tom Reyes)"]
    assert found(vault, person="Maya") == found(vault, person="me") == found(vault, relation="self") == \
        sorted(mine + ["wifi: Casa"])
    assert found(vault, person="Tom Reyes") == ["Dinner plans (people: user, Tom Reyes)"]


def test_relation_is_any_person_of_the_entry(vault):
    assert found(vault, relation="Family") == ["Dinner with @Ana and @Zoe"]
    assert found(vault, relation="friend") == ["Lunch with @TomSilva"]
    assert found(vault, relation="partner") == []


def test_where_matches_markers_and_facts_lines_all_of_them(vault):
    assert found(vault, where=["wifi=casa"]) == ["Dinner in town (wifi: Casa)", "wifi: Casa"]
    assert found(vault, where={"wifi": "Casa"}, person="me") == ["Dinner in town (wifi: Casa)", "wifi: Casa"]
    assert found(vault, where=["wifi=Casa", "city=Porto"]) == []


def test_bad_where_is_refused_before_anything_is_read():
    assert check_where(["City = Porto  Norte"]) == (("city", "porto norte"),)
    for bad, message in (("city", "KEY=VALUE"), ("city=", "empty"), ("due=2026-01-01", "own markers")):
        with pytest.raises(InvalidValue, match=message):
            check_where([bad])


def test_people_md_a_link_out_of_the_vault_is_not_read(vault, tmp_path):
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- Ana (family)\n")
    os.replace(vault.root / "people.md", tmp_path / "old.md")
    (vault.root / "people.md").symlink_to(outside)
    assert vault.facts.people() == []
    with pytest.raises(InvalidValue, match="is a link"):
        vault.facts.add_person("Bea")
