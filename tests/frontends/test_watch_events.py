"""The watcher refreshes the files its events named, without listing topics/ (a vault of 20,000
topics takes ~0.5 s to list); the first refresh, an overflow, a big burst and the periodic re-check
list every file. Real files and a real observer, as in test_watch.py (its fixtures, imported)."""
# ruff: noqa: F811
from __future__ import annotations

import logging
import os
import threading

import pytest
from test_watch import (  # noqa: F401
    DEADLINE_S,
    FakeEmbedder,
    disk_files,
    indexed,
    recent_topics,
    topic_text,
    vault,
    wait_until,
    watch,
    watch_a_failing_file,
    watch_gated,
    write,
)

import memkit.frontends.watch as watch_mod
from memkit import Vault

T0 = 1_790_000_000  # 2026-09-21, after every frontmatter date below: tests never depend on today's date


@pytest.fixture
def listings(vault, monkeypatch):
    """Count the listings of topics/ made on the watcher's worker thread (armed by calling it)."""
    seen: list[str] = []

    def arm() -> list[str]:
        real = vault.store.scan_topic_files

        def counted(*a, **k):
            if threading.current_thread().name == "memkit-watch":
                seen.append("listing")
            return real(*a, **k)

        monkeypatch.setattr(vault.store, "scan_topic_files", counted)
        return seen

    return arm


def no_events(monkeypatch) -> None:
    """The observer's events are dropped from now on (as when inotify's queue overflows)."""
    monkeypatch.setattr(watch_mod._Handler, "dispatch", lambda self, event: None)


def test_edits_moves_and_deletes_are_refreshed_without_listing_topics(vault, watch, listings, tmp_path):
    outside = vault.root / "drafts"
    outside.mkdir()
    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Prefers bomba rice", updated="2026-02-12T14:30:00"))
    write(vault.topics_dir / "garden.md", topic_text("Garden", "Waters daily", updated="2026-02-13T10:00:00"))
    write(vault.topics_dir / "leaving.md", topic_text("Leaving", "Goes with departword", updated="2026-02-11T10:00:00"))
    write(vault.topics_dir / "wrong.md", topic_text("Wrong", "Believes mistakenword", updated="2026-02-10T10:00:00"))
    write(outside / "arriving.md", topic_text("Arriving", "Comes with arrivalword", updated="2026-02-01T10:00:00"))
    watcher, rec = watch(debounce_s=0.3)
    assert recent_topics(vault.root) == ["garden", "cooking", "leaving", "wrong"]
    counted = listings()

    cooking = vault.topics_dir / "cooking.md"
    with cooking.open("a") as fh:  # a hand edit: the topic goes first in index.txt
        fh.write("- Toasts the rice first handword\n")
    os.utime(cooking, (T0, T0))
    assert wait_until(lambda: indexed(vault.root, "handword"))
    assert wait_until(lambda: recent_topics(vault.root)[0] == "cooking")

    tmp = vault.topics_dir / ".garden.md.tmp"  # an editor's save by rename
    write(tmp, topic_text("Garden", "Waters daily", "Plants renameword", updated="2026-02-13T10:00:00"))
    os.utime(tmp, (T0 + 60, T0 + 60))
    os.replace(tmp, vault.topics_dir / "garden.md")
    os.rename(vault.topics_dir / "leaving.md", outside / "leaving.md")
    os.utime(outside / "arriving.md", (T0 - 3600, T0 - 3600))
    os.rename(outside / "arriving.md", vault.topics_dir / "arriving.md")
    (vault.topics_dir / "wrong.md").unlink()
    assert wait_until(lambda: indexed(vault.root, "renameword") and indexed(vault.root, "arrivalword")
                      and not indexed(vault.root, "departword") and not indexed(vault.root, "mistakenword"))
    assert watcher.wait_idle(DEADLINE_S)
    assert disk_files(vault.root) == {"topics/cooking.md", "topics/garden.md", "topics/arriving.md"}
    assert recent_topics(vault.root) == ["garden", "cooking", "arriving"]  # hand edits: at their file times
    assert counted == []  # every refresh looked at the files its events named, nothing else
    assert rec.errors == []


def test_the_first_refresh_and_the_periodic_recheck_list_topics(vault, watch, listings, monkeypatch):
    monkeypatch.setattr(watch_mod, "RESCAN_INTERVAL_S", 0.3)
    counted = listings()
    watcher, rec = watch()
    assert counted  # the catch-up refresh
    no_events(monkeypatch)
    write(vault.topics_dir / "quiet.md", topic_text("Quiet", "No event for quietword"))
    assert wait_until(lambda: indexed(vault.root, "quietword"))  # the re-check found it
    assert wait_until(lambda: recent_topics(vault.root) == ["quiet"])


def test_an_overflow_lists_topics(vault, watch, monkeypatch):
    watcher, rec = watch()
    no_events(monkeypatch)
    write(vault.topics_dir / "lost.md", topic_text("Lost", "Its event was lost lostword"))
    # what watchdog logs when inotify's queue overflowed (it sends the handler no event)
    logging.getLogger("watchdog.observers.inotify_c").warning("Inotify queue overflowed; filesystem events were lost")
    assert wait_until(lambda: indexed(vault.root, "lostword"))
    assert watcher.wait_idle(DEADLINE_S)
    assert recent_topics(vault.root) == ["lost"]


def test_a_burst_of_many_files_lists_topics(vault, watch, listings, monkeypatch):
    monkeypatch.setattr(watch_mod, "MAX_EVENT_FILES", 3)
    watcher, rec = watch(debounce_s=0.3)
    counted = listings()
    for i in range(8):
        write(vault.topics_dir / f"t{i}.md", topic_text(f"T{i}", f"Burstword{i} here"))
    assert watcher.wait_idle(DEADLINE_S)
    assert wait_until(lambda: len(disk_files(vault.root)) == 8)
    assert counted
    assert sorted(recent_topics(vault.root)) == [f"t{i}" for i in range(8)]


def test_a_file_left_behind_is_retried_with_the_next_event(tmp_path, watch):
    """A file the refresh could not index (its model call failed) stays stuck; the next event's
    refresh retries it too, without a listing."""
    root, watcher, _ = watch_a_failing_file(tmp_path, watch)
    topics = root / "topics"
    write(topics / "bad.md", topic_text("Bad", "Now a calm recoveredword"))
    write(topics / "other.md", topic_text("Other", "Another otherword"))
    assert wait_until(lambda: indexed(root, "recoveredword") and indexed(root, "otherword"))
    assert watcher.wait_idle(DEADLINE_S)
    assert disk_files(root) == {"topics/ok.md", "topics/bad.md", "topics/other.md"}


def test_index_txt_waits_for_the_end_of_a_burst(tmp_path, watch, monkeypatch):
    """An edit that comes while a refresh runs is indexed first; index.txt follows both at once,
    and is current when the watcher is idle."""
    root, vault, watcher, slow, gate = watch_gated(tmp_path, watch)
    updates: list[set[str]] = []
    real = vault.frontend_internals.recent_update

    def recent_update(names):
        updates.append(set(names))
        return real(updates[-1])

    monkeypatch.setattr(vault.frontend_internals, "recent_update", recent_update)
    gate.clear()
    slow.entered.clear()
    write(vault.topics_dir / "first.md", topic_text("First", "Held firstword", updated="2026-02-12T10:00:00"))
    try:
        assert slow.entered.wait(DEADLINE_S)  # the first file's refresh is embedding, held at the gate
        before = watcher.events
        write(vault.topics_dir / "second.md", topic_text("Second", "Then secondword", updated="2026-02-13T10:00:00"))
        assert wait_until(lambda: watcher.events > before)  # noted while the first refresh runs
    finally:
        gate.set()
    assert watcher.wait_idle(DEADLINE_S)
    assert indexed(root, "firstword") and indexed(root, "secondword")
    assert sorted(recent_topics(root)) == ["first", "second"]
    assert updates == [{"first", "second"}]  # once, after the second file's refresh


def watch_with_the_mark(vault, watch):
    """A watcher on ``vault`` (one topic, cooking.md) that has earned the index's watch mark: it
    holds none after its first refresh (no event heard yet), then one after an edit's event."""
    from memkit.base.fsutil import lock_held

    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Prefers bomba rice", updated="2026-02-12T14:30:00"))
    mark = vault.searcher.index.watch_mark
    assert not lock_held(mark)
    watcher, _ = watch(debounce_s=0.1)
    assert not lock_held(mark)  # no event heard yet: searches check the files themselves
    with (vault.topics_dir / "cooking.md").open("a") as fh:
        fh.write("- Rinses the rice heardword\n")
    assert wait_until(lambda: lock_held(mark))
    return watcher, mark


def test_the_watcher_holds_the_watch_mark_while_the_index_is_current(vault, watch, tmp_path):
    """While the watcher keeps the index current it holds the index's watch mark: a search in
    another Vault (another process) then lists no topic files, and still finds a hand edit as
    soon as the watcher indexed it. The mark is earned by a first event-driven refresh (events
    arrive here); a failed refresh gives it back; so does stop()."""
    from memkit.base.fsutil import lock_held
    from memkit.index.sources import TopicSource

    watcher, mark = watch_with_the_mark(vault, watch)

    reader = Vault(vault.root, embedder=FakeEmbedder())
    assert reader.search("bomba rice")  # its first search: the watcher's mark, no listing needed
    listed: list[int] = []
    real = TopicSource.files
    try:
        TopicSource.files = lambda self: (listed.append(1), real(self))[1]  # type: ignore[method-assign]
        with (vault.topics_dir / "cooking.md").open("a") as fh:
            fh.write("- Soaks the rice markword\n")
        assert wait_until(lambda: any("markword" in h.text for h in reader.search("markword rice")))
        reader_listings = len(listed)
    finally:
        TopicSource.files = real  # type: ignore[method-assign]
    assert reader_listings == 0  # neither the reader nor the event-driven watcher listed topics/
    vault.searcher.index.embedder.fail_on = "brokenword"  # the watcher's refreshes fail from now on
    with (vault.topics_dir / "cooking.md").open("a") as fh:
        fh.write("- Burns the rice brokenword\n")
    assert wait_until(lambda: not lock_held(mark))  # behind: a search checks the files itself again
    vault.searcher.index.embedder.fail_on = None
    assert wait_until(lambda: lock_held(mark), timeout=15)  # the retry caught up (a second later)
    watcher.stop()
    assert not lock_held(mark)  # nobody keeps it current now: searches check the files again


def test_a_watcher_that_hears_no_events_never_holds_the_mark(vault, watch, monkeypatch):
    """A file system that sends no events (a network drive, a mount): the watcher never takes the
    mark, so a hand edit is found by a search's own check within about a second, as without it."""

    from memkit.base.fsutil import lock_held

    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Prefers bomba rice", updated="2026-02-12T14:30:00"))
    monkeypatch.setattr(watch_mod.Watcher, "on_event", lambda self, event: None)  # deaf
    mark = vault.searcher.index.watch_mark
    watch(debounce_s=0.1)
    reader = Vault(vault.root, embedder=FakeEmbedder())
    assert reader.search("bomba rice")
    with (vault.topics_dir / "cooking.md").open("a") as fh:
        fh.write("- Soaks the rice deafword\n")
    # within the test's deadline (5 s), long before the watcher's once-a-minute re-check
    assert wait_until(lambda: any("deafword" in h.text for h in reader.search("deafword rice")))
    assert not lock_held(mark)


def test_a_change_the_periodic_recheck_finds_without_an_event_ends_the_mark(vault, watch, monkeypatch, caplog):
    """Events that stop coming (a mount that sends local events only): once the once-a-minute
    re-check finds a change no event announced, the watcher gives the mark back for good."""
    from memkit.base.fsutil import lock_held

    watcher, mark = watch_with_the_mark(vault, watch)
    monkeypatch.setattr(watch_mod.Watcher, "on_event", lambda self, event: None)  # events stop here
    with (vault.topics_dir / "cooking.md").open("a") as fh:
        fh.write("- Toasts the rice silentword\n")
    watcher._refresh(quiet=True)  # what the periodic re-check runs
    assert not lock_held(mark)
    assert any("without a file event" in r.getMessage() for r in caplog.records)
    watcher._mark_current(True)
    assert not lock_held(mark)  # for the rest of this run


def test_a_stopped_watcher_never_takes_the_mark_again(vault, watch, monkeypatch):
    """stop() whose worker outlives its timeout: the refresh that finishes later takes no mark."""
    import time

    from memkit.base.fsutil import lock_held

    watcher, mark = watch_with_the_mark(vault, watch)
    gate = threading.Event()
    real = watcher._refresh

    def slow(*a, **k):
        gate.wait(5)
        return real(*a, **k)

    monkeypatch.setattr(watcher, "_refresh", slow)
    with (vault.topics_dir / "cooking.md").open("a") as fh:
        fh.write("- Stirs the rice stopword\n")
    assert wait_until(lambda: watcher._busy)
    watcher.stop(timeout=0.2)
    assert not lock_held(mark)
    gate.set()
    assert wait_until(lambda: not watcher._busy)
    time.sleep(0.2)
    assert not lock_held(mark)
