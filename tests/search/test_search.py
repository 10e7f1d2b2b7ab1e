"""Search: the API and the CLI, filters, bad queries."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from util import FakeEmbedder, vault_with, write

from memkit import MemkitError, TopicNotFound, Vault
from memkit.frontends.cli.group import main

TOPICS = {
    "cooking": "---\ntitle: Cooking\nupdated: 2026-02-12T14:30:00\n---\n"
               "- [preference] Prefers bomba rice for paella #rice (2026-02-12)\n"
               "- [decision] Uses homemade chicken broth #broth (2025-01-10)\n"
               "- Bakes sourdough with rye flour (2026-02-01)\n",
    "home-lab": "- [fact] Router is a MikroTik hAP ax3 #network (2025-09-03)\n"
                "- Pi cluster runs k3s\n",
    "home-lab-power": "- UPS is an APC BX950MI (2025-10-01)\n",
}


@pytest.fixture
def v(tmp_path):
    return vault_with(tmp_path, TOPICS)


def test_hit_fields(v):
    hit = v.search("bomba rice paella", k=1, threshold=None)[0]
    assert (hit.topic, hit.kind, hit.tags, hit.date, hit.file, hit.line) == (
        "cooking", "preference", ("rice",), "2026-02-12", "topics/cooking.md", 5)
    assert len(hit.id) == 8 and 0 < hit.score <= 1 and hit.cosine > 0.5
    assert set(hit.to_dict()) >= {"id", "text", "topic", "kind", "date", "file", "line", "score"}


def test_rare_exact_word_found(v):
    assert v.search("hAP ax3", k=1)[0].topic == "home-lab"
    assert v.search("BX950MI", k=1)[0].topic == "home-lab-power"


def test_filters(v):
    assert {h.topic for h in v.search("rice router ups", k=10, threshold=None, topic="home-lab")} == {"home-lab", "home-lab-power"}
    assert [h.kind for h in v.search("rice broth", k=10, threshold=None, kind="decision")] == ["decision"]
    assert [h.tags for h in v.search("rice", k=10, threshold=None, tag="#rice")] == [("rice",)]
    since = v.search("rice broth sourdough", k=10, threshold=None, since="2026-01-01", topic="cooking")
    assert sorted(h.date for h in since) == ["2026-02-01", "2026-02-12"]
    with pytest.raises(TopicNotFound, match="no topic 'nothing-here'"):
        v.search("rice", topic="nothing-here", threshold=None)


def test_threshold(v):
    assert v.search("completely unrelated zebra", k=5, threshold=0.99) == []
    assert len(v.search("completely unrelated zebra", k=5, threshold=None)) == 5


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_empty_query(v, query):
    with pytest.raises(MemkitError, match="query is empty"):
        v.search(query)


def test_huge_and_emoji_queries(v):
    assert len(v.search("rice " * 20_000, k=2, threshold=None)) == 2
    assert v.search("🙂🎉🙂") == []
    with pytest.raises(MemkitError, match="must be a date"):
        v.search("rice", since="last week")


def test_empty_vault(tmp_path):
    vault = Vault(Vault.init(tmp_path / "e", profile=False).root, embedder=FakeEmbedder())
    assert vault.search("anything") == []
    assert vault.index().entries == 0


def test_new_entry_searchable_in_same_process(v):
    v.search("rice", threshold=None)
    v.add("Keeps spare Zigbee dongle in the drawer", topic="home-lab")
    v.searcher.index.last_check = 0  # the in-process index re-checks files at most once a second
    assert v.search("Zigbee dongle", k=1)[0].text.startswith("Keeps spare Zigbee dongle")


# ---- the CLI, on the real offline model (loaded once per test session) --------------------

def test_cli_index_and_search_with_offline_model(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    for name, text in TOPICS.items():
        write(root / "topics" / f"{name}.md", text)
    runner = CliRunner()
    out = runner.invoke(main, ["--vault", str(root), "--model", "memkit-m2v", "index"],
                        catch_exceptions=False)
    assert out.exit_code == 0 and out.output.startswith("indexed 6 entries in ")
    res = runner.invoke(main, ["--vault", str(root), "--model", "memkit-m2v", "search",
                               "MikroTik router", "--json"], catch_exceptions=False)
    assert res.exit_code == 0
    hits = json.loads(res.output)
    assert hits[0]["topic"] == "home-lab" and hits[0]["line"] == 1
    res = runner.invoke(main, ["--vault", str(root), "--model", "memkit-m2v", "search", ""])
    assert res.exit_code == 2 and "query is empty" in res.output
    res = runner.invoke(main, ["--vault", str(root), "--model", "memkit-m2v", "search", "x", "--mode", "magic"])
    assert res.exit_code == 2


def test_min_importance_filters_by_the_entries_own_marker(tmp_path):
    v = vault_with(tmp_path, {"family": "- Lina won the chess tournament (importance 0.9) #pride\n"
                                        "- Lina likes chess club on Tuesdays\n"
                                        "- Lina's chess coach is called Ben (importance 0.3)\n"})
    def texts(**kw):
        return [h.text.split(" (")[0].split(" #")[0] for h in v.search("Lina chess", threshold=None, **kw)]
    assert sorted(texts()) == ["Lina likes chess club on Tuesdays", "Lina won the chess tournament",
                               "Lina's chess coach is called Ben"]
    assert texts(min_importance=0.8) == ["Lina won the chess tournament"]
    assert sorted(texts(min_importance=0.5)) == ["Lina likes chess club on Tuesdays", "Lina won the chess tournament"]
    write(v.topics_dir / "family.md", "- Lina's chess coach is called Ben (importance 0.95)\n")  # edited by hand
    assert texts(min_importance=0.8, refresh=True) == ["Lina's chess coach is called Ben"]
    result = CliRunner().invoke(main, ["--vault", str(v.root), "search", "Lina chess", "--min-importance", "1.5"])
    assert result.exit_code == 2 and "1.5" in result.output
