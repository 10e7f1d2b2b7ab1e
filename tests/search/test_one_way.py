"""Issue 28.4: a search walks one way. Its query is checked once (memkit.search.Query), and its term
ids come from the index's view before it is ranked, not from a callback of the ranker into the
index's SQLite mid-search."""
from __future__ import annotations

import pytest

from memkit import InvalidValue
from memkit.index.view import TermIds
from memkit.search import Query
from memkit.search.lexical import BM25Index


def test_a_query_is_checked_and_normalised_once(vault):
    searcher = vault.searcher
    q = searcher.query("  what   rice  ", kind=" Fact ", tag="#Food", since="2026-03-01", topic="cooking")
    assert q == Query("what rice", vault.config.max_memories_per_search, "hybrid", "auto", "cooking", True,
                      "fact", "food", "2026-03-01")
    for bad, match in [(dict(text=" "), "query is empty"), (dict(k=0), "k must be at least 1"),
                       (dict(mode="fuzzy"), "unknown search mode"), (dict(since="March"), "since must be a date"),
                       (dict(min_importance=2.0), "min_importance"), (dict(threshold="high"), "threshold must be")]:
        args = dict(dict(text="rice"), **bad)
        with pytest.raises(InvalidValue, match=match):
            searcher.query(args.pop("text"), **args)


def test_find_answers_a_checked_query_as_search_does(vault):
    vault.add("Prefers bomba rice for paella", topic="cooking")
    vault.add("Walks the dog at seven", topic="pets")
    searcher = vault.searcher
    q = searcher.query("bomba rice", threshold=None, k=2)
    assert [h.id for h in searcher.find(q)] == [h.id for h in searcher.search("bomba rice", threshold=None, k=2)]


def test_the_ranker_gets_the_query_s_term_ids_from_the_view(vault, monkeypatch):
    vault.add("Prefers bomba rice for paella", topic="cooking")
    vault.add("Walks the dog at seven", topic="pets")
    vault.search("warm up", mode="lexical")
    asked: list[list[str]] = []
    real_ids = TermIds.ids

    def ids(self, terms):
        asked.append(list(terms))
        return real_ids(self, terms)

    def no_lookup(self, query):
        raise AssertionError("the ranker looked the query's terms up itself")

    monkeypatch.setattr(TermIds, "ids", ids)
    monkeypatch.setattr(BM25Index, "query_terms", no_lookup)
    for mode in ("lexical", "hybrid"):
        asked.clear()
        hits = vault.search("bomba paella", mode=mode, threshold=None, weak=3, refresh=False)
        assert hits and hits[0].topic == "cooking"
        assert asked == [["bomba", "paella"]]  # once, by the view, before the ranking


def test_an_add_hands_its_parsed_topic_to_the_index(vault, monkeypatch):
    """The store parsed the topic as it appended to it: the index takes that, with the file's stat
    after the write, instead of reading the file again."""
    from memkit.index.sources import TopicSource

    vault.add("Prefers bomba rice for paella", topic="cooking")
    vault.search("warm up", mode="lexical")  # the index exists: a write is indexed at once
    reads: list[str] = []
    real = TopicSource.lookup
    monkeypatch.setattr(TopicSource, "lookup", lambda self, name: reads.append(name) or real(self, name))
    entry = vault.add("Soaks chickpeas overnight", topic="cooking")
    assert reads == []
    hits = vault.search("chickpeas", mode="lexical", refresh=False)
    assert [h.id for h in hits] == [entry.id]
    vault.add("Walks the dog at seven", topic="pets")  # a new file: written whole, read by the index
    assert reads == ["pets"]
    monkeypatch.undo()
    assert vault.searcher.index.stale() == ([], [])  # the stat it recorded is the file's


def test_an_append_after_someone_else_s_is_not_taken_as_parsed(tmp_path):
    from memkit.base.fsutil import AppendFile

    path = tmp_path / "t.md"
    path.write_bytes(b"- one\n")
    with AppendFile(path, 1 << 20) as f:
        assert f.data == b"- one\n"
        with open(path, "ab") as other:  # a person's editor appends meanwhile
            other.write(b"- two\n")
        assert f.append(b"- three\n") is False  # the file is not what was read plus this line
    with AppendFile(path, 1 << 20) as f:
        assert f.append(b"- four\n") is True and f.stamp[0] == path.stat().st_size
