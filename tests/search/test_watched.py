"""A search lists no topic files while ``memkit watch`` keeps the index current (it holds a lock
on the index's watch mark): at 20,000 topic files that listing is ~0.4 s of every search."""
from __future__ import annotations

from memkit import Vault
from memkit.base.fsutil import hold_lock
from memkit.index.sources import TopicSource


def _listings(monkeypatch) -> list[int]:
    calls: list[int] = []
    files = TopicSource.files

    def counted(self):
        calls.append(1)
        return files(self)

    monkeypatch.setattr(TopicSource, "files", counted)
    return calls


def test_a_watched_index_is_searched_without_listing_the_topics(vault: Vault, monkeypatch) -> None:
    vault.add("The boiler is serviced every October", topic="home")
    searcher = vault.searcher
    assert not searcher.watched()
    calls = _listings(monkeypatch)
    searcher.index.last_check = 0.0  # a check is due
    assert vault.search("boiler service")
    assert calls  # not watched: the search checked every file
    mark = hold_lock(searcher.index.watch_mark)
    try:
        assert mark.held and searcher.watched()
        calls.clear()
        searcher.index.last_check = 0.0
        hits = vault.search("boiler service")
        assert hits and "boiler" in hits[0].text
        assert not calls  # the watcher keeps it current: no listing
        vault.search("boiler service", refresh=True)  # asked for: checked all the same
        assert calls
    finally:
        mark.release()
    assert not searcher.watched()


def test_a_new_process_reads_what_the_watcher_indexed(vault: Vault, monkeypatch) -> None:
    vault.add("Passport renewal is due in March", topic="travel")
    vault.searcher.refresh(force=True)
    mark = hold_lock(vault.searcher.index.watch_mark)
    try:
        other = Vault(vault.root)  # another process's first search
        calls = _listings(monkeypatch)
        hits = other.search("passport renewal")
        assert hits and "Passport" in hits[0].text
        assert not calls
    finally:
        mark.release()


def test_the_conversations_index_has_a_mark_of_its_own(vault: Vault) -> None:
    from memkit.search.searcher import Searcher

    topics = vault.searcher.index.watch_mark
    sessions = Searcher.of_sessions(vault.store, vault.embedder).index.watch_mark
    assert topics.parent == sessions.parent == vault.searcher.index.dir
    assert topics.name.endswith(".watch") and sessions.name.endswith("-sessions.watch")
    mark = hold_lock(topics)  # the watcher keeps the topics current, not the conversations
    try:
        assert not Searcher.of_sessions(vault.store, vault.embedder).watched()
    finally:
        mark.release()
