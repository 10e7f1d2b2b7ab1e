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


def test_changed_makes_the_next_search_check_the_files_even_while_watched(vault: Vault) -> None:
    """Vault.changed() (after a git sync, a check --fix, a busy refresh of a file this process
    wrote): the next search re-checks the files itself, the watcher's event may not have come."""
    vault.add("The boiler is serviced every October", topic="home")
    vault.search("boiler")
    mark = hold_lock(vault.searcher.index.watch_mark)
    try:
        with (vault.topics_dir / "home.md").open("a") as fh:
            fh.write("- Gutter cleaned changedword\n")
        vault.changed()
        assert any("changedword" in h.text for h in vault.search("changedword gutter"))
    finally:
        mark.release()


def test_a_forked_child_does_not_keep_the_mark() -> None:
    """A process forked without exec (multiprocessing's fork) must not keep a watcher's mark
    alive after the watcher gave it back."""
    import os
    import tempfile
    from pathlib import Path

    from memkit.base.fsutil import lock_held

    path = Path(tempfile.mkdtemp()) / "x.watch"
    mark = hold_lock(path)
    assert mark.held
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child (its at-fork handlers have run): say so, wait until the parent released
        os.write(ready_w, b"r")
        os.read(r, 1)
        os._exit(0)
    os.close(r)
    os.close(ready_w)
    try:
        assert os.read(ready_r, 1) == b"r"
        mark.release()
        assert not lock_held(path)  # the child's copy was closed at fork
    finally:
        os.write(w, b"x")
        os.close(w)
        os.close(ready_r)
        os.waitpid(pid, 0)
