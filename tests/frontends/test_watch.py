"""The watcher: real files, a real observer (inotify, and polling once), a deterministic fake embedder.

Waits poll a condition until a deadline; nothing sleeps a fixed time and then asserts.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
import zlib
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pytest
from util import wait_until as poll

from memkit import Vault
from memkit.frontends.watch import Watcher, is_topic_path, run_watch
from memkit.index.index import Index

DEADLINE_S = 5.0


def wait_until(predicate: Callable[[], object], timeout: float = DEADLINE_S) -> bool:
    return poll(predicate, timeout)  # this file's deadline: 5 s




class FakeEmbedder:
    """Bag of words: each word a random unit vector seeded by its crc32; a text is their mean."""

    name = "fake-bow"
    dim = 32

    def __init__(self, delay: float = 0.0, fail_on: str | None = None, gate: threading.Event | None = None) -> None:
        self.delay = delay  #: seconds each call takes (to catch the watcher mid-refresh)
        self.gate = gate  #: when given, each call waits until it is set (the watcher held mid-refresh)
        self.fail_on = fail_on  #: raise when a text contains this word
        self.entered = threading.Event()  #: set when a call starts
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.entered.set()
        if self.fail_on and any(self.fail_on in t for t in texts):
            raise RuntimeError(f"cannot embed {self.fail_on!r}")
        if self.gate is not None:
            assert self.gate.wait(60), "the test never opened the gate"
        if self.delay:
            time.sleep(self.delay)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = re.findall(r"[\w-]+", text.lower())
            if not words:
                continue
            rows = [np.random.default_rng(zlib.crc32(w.encode())).standard_normal(self.dim) for w in words]
            rows = [r / np.linalg.norm(r) for r in rows]
            mean = np.mean(rows, axis=0)
            out[i] = mean / (np.linalg.norm(mean) or 1.0)
        return out


def topic_text(title: str, *lines: str, updated: str = "2026-02-12T14:30:00") -> str:
    return (f"---\ntitle: {title}\nsummary: about {title.lower()}\nupdated: {updated}\n---\n# {title}\n\n"
            + "".join(f"- {line}\n" for line in lines))


def write(path: Path, text: str | bytes) -> None:
    path.write_bytes(text.encode() if isinstance(text, str) else text)



def disk_texts(root: Path) -> set[str]:
    """Entry texts in the sidecar on disk, as a new process reads it before refreshing anything."""
    index = Index(Vault(root, embedder=FakeEmbedder()).store, FakeEmbedder())
    return set(index.view().texts)


def disk_files(root: Path) -> set[str]:
    index = Index(Vault(root, embedder=FakeEmbedder()).store, FakeEmbedder())
    return set(index.indexed_paths())


def indexed(root: Path, word: str) -> bool:
    return any(word in t for t in disk_texts(root))


def recent_topics(root: Path) -> list[str]:
    return [line.split("|")[1] for line in (root / "index.txt").read_text().splitlines() if line]


@pytest.fixture
def vault(tmp_path) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    return Vault(root, embedder=FakeEmbedder())


class Recorder:
    def __init__(self) -> None:
        self.updates: list = []
        self.errors: list[str] = []


@pytest.fixture
def watch(vault, no_thread_leaks):
    """Start a watcher on ``vault`` (stopped at teardown, before the thread-leak check)."""
    started: list[Watcher] = []

    def start(v: Vault | None = None, **options) -> tuple[Watcher, Recorder]:
        rec = Recorder()
        options.setdefault("debounce_s", 0.1)
        watcher = Watcher(v or vault, on_update=rec.updates.append, on_error=rec.errors.append, **options)
        watcher.start()
        started.append(watcher)
        assert watcher.wait_idle(DEADLINE_S)
        return watcher, rec

    yield start
    for watcher in started:
        watcher.stop()


# ---- the filter -------------------------------------------------------------------------------

@pytest.mark.parametrize("name, relevant", [
    ("cooking.md", True), ("a-b.md", True),
    (".cooking.md.swp", False), (".cooking.md.tmp", False), (".cooking.md.k3j2_x.tmp", False),
    ("4913", False), ("cooking.md~", False), ("#cooking.md#", False), (".#cooking.md", False),
    ("cooking.txt", False), (".md", False), ("", False),
])
def test_filter_names(tmp_path, name, relevant):
    topics = str(tmp_path / "topics")
    assert is_topic_path(topics, os.path.join(topics, name) if name else "") is relevant


def test_filter_takes_topics_in_folders_but_not_hidden_ones(tmp_path):
    topics = str(tmp_path / "topics")
    assert is_topic_path(topics, str(tmp_path / "topics" / "sub" / "deeper" / "a.md"))
    assert not is_topic_path(topics, str(tmp_path / "topics" / ".obsidian" / "a.md"))
    assert not is_topic_path(topics, str(tmp_path / "topics" / "sub" / ".a.md.swp"))
    assert not is_topic_path(topics, str(tmp_path / ".memkit" / "a.md"))
    assert not is_topic_path(topics, str(tmp_path / "a.md"))
    assert is_topic_path(topics, os.fsencode(os.path.join(topics, "a.md")))


# ---- changes become searchable ------------------------------------------------------------------

def test_catch_up_on_start(vault, watch):
    write(vault.topics_dir / "garden.md", topic_text("Garden", "Tomatoes need zucchiniwords daily"))
    watcher, rec = watch()
    assert indexed(vault.root, "zucchiniwords")
    assert recent_topics(vault.root) == ["garden"]
    assert rec.updates and rec.updates[0].new == 1 and rec.errors == []


def test_a_topic_in_a_subfolder_is_seen_written_and_moved(vault, watch):
    watcher, rec = watch()
    (vault.topics_dir / "work" / "ships").mkdir(parents=True)
    write(vault.topics_dir / "work" / "ships" / "harbor.md", topic_text("Harbor", "The pier needs quaywords"))
    assert wait_until(lambda: indexed(vault.root, "quaywords"))
    assert "topics/work/ships/harbor.md" in disk_files(vault.root)
    os.rename(vault.topics_dir / "work", vault.topics_dir / "jobs")  # a folder renamed: one directory event
    assert wait_until(lambda: "topics/jobs/ships/harbor.md" in disk_files(vault.root))
    assert "topics/work/ships/harbor.md" not in disk_files(vault.root)
    (vault.topics_dir / ".obsidian").mkdir()
    write(vault.topics_dir / ".obsidian" / "x.md", topic_text("X", "hiddenwords"))
    assert watcher.wait_idle(DEADLINE_S) and not indexed(vault.root, "hiddenwords")
    assert rec.errors == []


def test_appended_entry_becomes_searchable(vault, watch):
    path = vault.topics_dir / "cooking.md"
    write(path, topic_text("Cooking", "Prefers bomba rice"))
    watcher, rec = watch(debounce_s=0.3)  # the default
    for i in range(3):
        word = f"saffronword{i}"
        with path.open("a") as fh:  # an in-place append, as `echo >>` or an editor writing in place
            fh.write(f"- Adds {word} to paella (2026-02-1{i})\n")
        assert wait_until(lambda: indexed(vault.root, word)), word
    vault2 = Vault(vault.root, embedder=FakeEmbedder())
    hits = vault2.search("saffronword2", threshold=None)
    assert hits and "saffronword2" in hits[0].text and hits[0].topic == "cooking"
    assert rec.errors == []


def test_editor_save_by_rename(vault, watch):
    path = vault.topics_dir / "cooking.md"
    write(path, topic_text("Cooking", "Prefers bomba rice"))
    watcher, rec = watch(debounce_s=0.3)
    tmp = vault.topics_dir / ".cooking.md.tmp"
    write(tmp, topic_text("Cooking", "Prefers bomba rice", "Soaks chickpeasword overnight"))
    os.replace(tmp, path)
    assert wait_until(lambda: indexed(vault.root, "chickpeasword"))
    assert disk_files(vault.root) == {"topics/cooking.md"}
    assert watcher.wait_idle(DEADLINE_S)
    assert rec.errors == []


def test_swap_and_temp_files_trigger_nothing(vault, watch):
    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Prefers bomba rice"))
    watcher, rec = watch()
    refreshes, events = watcher.refreshes, watcher.events
    junk = [".cooking.md.swp", ".cooking.md.tmp", "4913", "cooking.md~", "#cooking.md#", ".cooking.md.ab12cd.tmp"]
    for name in junk:
        write(vault.topics_dir / name, "- swapword junk\n")
    (vault.topics_dir / "4913").unlink()  # vim's probe file comes and goes
    (vault.root / ".memkit" / "x.md").write_text("- swapword state\n")
    # each junk file sent at least a create and a close event; all of them were seen and dropped
    assert wait_until(lambda: watcher.ignored >= 2 * len(junk))
    assert watcher.wait_idle(DEADLINE_S)
    assert watcher.events == events and watcher.refreshes == refreshes
    assert not indexed(vault.root, "swapword")
    assert disk_files(vault.root) == {"topics/cooking.md"}


def test_move_out_of_and_into_topics(vault, watch):
    outside = vault.root / "drafts"
    outside.mkdir()
    write(vault.topics_dir / "leaving.md", topic_text("Leaving", "Goes away with departword"))
    write(outside / "arriving.md", topic_text("Arriving", "Comes in with arrivalword"))
    watcher, rec = watch()
    assert indexed(vault.root, "departword") and not indexed(vault.root, "arrivalword")
    os.rename(vault.topics_dir / "leaving.md", outside / "leaving.md")
    os.rename(outside / "arriving.md", vault.topics_dir / "arriving.md")
    assert wait_until(lambda: indexed(vault.root, "arrivalword") and not indexed(vault.root, "departword"))
    assert watcher.wait_idle(DEADLINE_S)
    assert recent_topics(vault.root) == ["arriving"]
    assert disk_files(vault.root) == {"topics/arriving.md"}


def test_deleted_topic_leaves_search_and_index_txt(vault, watch):
    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Prefers bomba rice", updated="2026-02-12T14:30:00"))
    write(vault.topics_dir / "wrong.md", topic_text("Wrong", "Believes mistakenword", updated="2026-02-13T10:00:00"))
    watcher, rec = watch()
    assert recent_topics(vault.root) == ["wrong", "cooking"]
    vault2 = Vault(vault.root, embedder=FakeEmbedder())
    assert any("mistakenword" in h.text for h in vault2.search("mistakenword", threshold=None))
    (vault.topics_dir / "wrong.md").unlink()
    assert wait_until(lambda: recent_topics(vault.root) == ["cooking"])
    assert not indexed(vault.root, "mistakenword")
    vault3 = Vault(vault.root, embedder=FakeEmbedder())
    assert not any("mistakenword" in h.text for h in vault3.search("mistakenword", threshold=None))
    assert watcher.wait_idle(DEADLINE_S)
    assert rec.updates[-1].removed == 1


def test_index_txt_follows_hand_edits(vault, watch, monkeypatch):
    cooking = vault.topics_dir / "cooking.md"
    write(cooking, topic_text("Cooking", "Prefers bomba rice", updated="2026-02-12T14:30:00"))
    write(vault.topics_dir / "garden.md", topic_text("Garden", "Waters daily", updated="2026-02-13T10:00:00"))
    watcher, rec = watch()
    assert recent_topics(vault.root) == ["garden", "cooking"]
    rebuilds: list[int] = []
    real = vault.recent
    monkeypatch.setattr(vault, "recent", lambda rebuild=False: (rebuilds.append(1) if rebuild else None) or
                        real(rebuild=rebuild))
    with cooking.open("a") as fh:  # a new entry by hand: a hand edit counts as an update, now
        fh.write("- Toasts the rice first handword\n")
    assert wait_until(lambda: indexed(vault.root, "handword")) and watcher.wait_idle(DEADLINE_S)
    assert wait_until(lambda: recent_topics(vault.root) == ["cooking", "garden"])
    assert rebuilds == []  # followed without re-reading the whole vault
    write(vault.topics_dir / "garden.md", topic_text("Garden", "Waters daily", updated="2026-02-13T10:00:00")
          .replace("about garden", "vegetables and herbs"))  # a new summary, by hand
    assert wait_until(lambda: "|garden|vegetables and herbs\n" in (vault.root / "index.txt").read_text())
    write(vault.topics_dir / "plain.md", "- No frontmatter at all plainword\n")  # a topic file made by hand
    assert wait_until(lambda: recent_topics(vault.root)[:1] == ["plain"])


def test_burst_like_git_checkout(vault, watch):
    watcher, rec = watch(debounce_s=0.3)
    before = watcher.refreshes
    t0 = time.monotonic()
    for i in range(300):
        write(vault.topics_dir / f"topic-{i:03d}.md",
              topic_text(f"Topic {i}", f"Checkoutword{i} first", f"Second line {i}"))
    written = time.monotonic() - t0
    # indexing 300 new files can take seconds on a busy VM: wait on the cheap stat check
    assert watcher.wait_idle(30)
    assert len(disk_files(vault.root)) == 300
    assert watcher.events >= 300  # hundreds of events, one flag
    refreshes = watcher.refreshes - before
    assert 1 <= refreshes <= 2 + int(written)  # at most one refresh a second while the burst lasts
    assert sum(u.new for u in rec.updates) == 600
    assert len(recent_topics(vault.root)) == vault.config.index_max_entries
    assert indexed(vault.root, "Checkoutword299")


# ---- problems ---------------------------------------------------------------------------------

def test_malformed_files_are_reported_and_the_rest_goes_on(vault, watch, caplog):
    write(vault.topics_dir / "good.md", topic_text("Good", "Fine line"))
    watcher, rec = watch()
    write(vault.topics_dir / "binary.md", b"- starts fine\n- then \xff\xfe\x80 garbage\n")
    write(vault.topics_dir / "yaml.md", "---\ntitle: [unclosed\n---\n- lost line\n")
    (vault.topics_dir / "folder.md").mkdir()  # a directory with a topic's name is no topic
    assert wait_until(lambda: len(rec.errors) >= 2)
    joined = "\n".join(rec.errors)
    assert "topics/binary.md line 2: not valid UTF-8" in joined
    assert re.search(r"topics/yaml.md line \d: frontmatter is not valid YAML", joined)
    write(vault.topics_dir / "later.md", topic_text("Later", "Still indexed laterword"))
    assert wait_until(lambda: indexed(vault.root, "laterword"))
    assert watcher.running and watcher.wait_idle(DEADLINE_S)
    assert len(rec.errors) == 2  # each problem once, not at every refresh
    warned = [r.getMessage() for r in caplog.records if r.name == "memkit" and "yaml.md" in r.getMessage()]
    assert len(warned) == 1, warned
    # fixing the file brings its entries in
    write(vault.topics_dir / "binary.md", "- starts fine\n- now fixedword\n")
    assert wait_until(lambda: indexed(vault.root, "fixedword"))


def watch_a_failing_file(tmp_path, watch) -> tuple[Path, Watcher, Recorder]:
    """A watcher on a vault whose model fails on ``explodeword``, once a file holding it made its
    refresh fail: (the vault's root, the watcher, its recorder)."""
    root = Vault.init(tmp_path / "w", profile=False).root
    vault = Vault(root, embedder=FakeEmbedder(fail_on="explodeword"))
    write(vault.topics_dir / "ok.md", topic_text("Ok", "Fine line"))
    watcher, rec = watch(vault)
    write(vault.topics_dir / "bad.md", topic_text("Bad", "This explodeword breaks the model"))
    assert wait_until(lambda: rec.errors)
    return root, watcher, rec


def test_a_failing_refresh_is_reported_and_retried(tmp_path, watch, caplog):
    root, watcher, rec = watch_a_failing_file(tmp_path, watch)
    assert "updating the index failed: RuntimeError: cannot embed 'explodeword'; retrying in 1 s" == rec.errors[0]
    assert any("updating the index failed" in r.getMessage() for r in caplog.records if r.name == "memkit")
    assert watcher.running
    write(root / "topics" / "bad.md", topic_text("Bad", "Now a calm recoveredword"))
    assert wait_until(lambda: indexed(root, "recoveredword"))
    assert disk_files(root) == {"topics/ok.md", "topics/bad.md"}


def test_topics_folder_replaced(vault, watch):
    write(vault.topics_dir / "old.md", topic_text("Old", "Before oldword"))
    watcher, rec = watch()
    shutil.rmtree(vault.topics_dir)
    assert wait_until(lambda: not indexed(vault.root, "oldword"))
    vault.topics_dir.mkdir()
    write(vault.topics_dir / "new.md", topic_text("New", "After newword"))
    assert wait_until(lambda: indexed(vault.root, "newword"))
    write(vault.topics_dir / "newer.md", topic_text("Newer", "Watched again newerword"))
    assert wait_until(lambda: indexed(vault.root, "newerword"))
    assert rec.errors == []


def test_a_failing_callback_does_not_stop_the_watcher(vault, no_thread_leaks, caplog):
    def on_update(report) -> None:
        raise RuntimeError("printer on fire")

    with Watcher(vault, debounce_s=0.05, on_update=on_update) as watcher:
        assert watcher.wait_idle(DEADLINE_S)
        write(vault.topics_dir / "after.md", topic_text("After", "Still going callbackword"))
        assert wait_until(lambda: indexed(vault.root, "callbackword"))
        assert watcher.wait_idle(DEADLINE_S) and watcher.running
    assert any("printer on fire" in r.getMessage() or (r.exc_info and "printer on fire" in str(r.exc_info[1]))
               for r in caplog.records)


# ---- readers and stopping ---------------------------------------------------------------------

def watch_gated(tmp_path, watch) -> tuple[Path, Vault, Watcher, FakeEmbedder, threading.Event]:
    """A watcher started on a new vault whose model waits at a gate, open for the first refresh
    (root, vault, watcher, the model, the gate): clear the gate to hold the next refresh."""
    root = Vault.init(tmp_path / "w", profile=False).root
    gate = threading.Event()
    slow = FakeEmbedder(gate=gate)
    vault = Vault(root, embedder=slow)
    gate.set()
    watcher, _ = watch(vault)
    return root, vault, watcher, slow, gate


def test_search_does_not_wait_for_a_refresh(tmp_path, watch):
    root, vault, watcher, slow, gate = watch_gated(tmp_path, watch)
    gate.clear()
    slow.entered.clear()
    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Uses readerword stock"))
    try:
        assert slow.entered.wait(DEADLINE_S)  # the watcher is embedding, holding the index lock, until the gate opens
        hits = Vault(root, embedder=FakeEmbedder()).search("readerword", threshold=None)
        assert not watcher.wait_idle(0)  # answered while the refresh is still held
        assert hits and "readerword" in hits[0].text
        out = subprocess.run([sys.executable, "-c", SUBPROCESS_SEARCH, str(root), "readerword"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert "readerword" in out.stdout
        assert not watcher.wait_idle(0)  # another process, too, searched without waiting
    finally:
        gate.set()
    assert watcher.wait_idle(DEADLINE_S)


SUBPROCESS_SEARCH = textwrap.dedent("""
    import sys, zlib, re
    import numpy as np
    from memkit import Vault
    class Fake:
        name, dim = "fake-bow", 32
        def embed(self, texts):
            out = np.zeros((len(texts), 32), np.float32)
            for i, t in enumerate(texts):
                words = re.findall(r"[\\w-]+", t.lower())
                if words:
                    rows = [np.random.default_rng(zlib.crc32(w.encode())).standard_normal(32) for w in words]
                    m = np.mean([r / np.linalg.norm(r) for r in rows], axis=0)
                    out[i] = m / np.linalg.norm(m)
            return out
    for hit in Vault(sys.argv[1], embedder=Fake()).search(sys.argv[2], threshold=None):
        print(hit.text)
""")


def test_stop_during_a_refresh_leaves_a_readable_sidecar(tmp_path, no_thread_leaks):
    root = Vault.init(tmp_path / "w", profile=False).root
    slow = FakeEmbedder(delay=0.5)
    vault = Vault(root, embedder=slow)
    rec = Recorder()
    watcher = Watcher(vault, debounce_s=0.05, on_update=rec.updates.append, on_error=rec.errors.append)
    watcher.start()
    assert watcher.wait_idle(DEADLINE_S)
    slow.entered.clear()
    for i in range(50):
        write(vault.topics_dir / f"t{i}.md", topic_text(f"T{i}", f"Stopword{i} here"))
    assert slow.entered.wait(DEADLINE_S)
    watcher.stop()  # it waits for the batch being embedded, not for the 50 files' (25 s)
    assert rec.updates and rec.updates[-1].changed_files > 0  # the in-flight refresh finished
    assert not watcher.running
    index = Index(Vault(root, embedder=FakeEmbedder()).store, FakeEmbedder())
    view = index.view()  # the sidecar reads: the last committed refresh, whole
    assert set(view.files) == set(index.indexed_paths())
    report = Vault(root, embedder=FakeEmbedder()).index()  # and what was not refreshed catches up
    assert report.entries == 50 and report.errors == []


def test_start_stop_leaks_no_threads(vault, no_thread_leaks):
    baseline = threading.active_count()
    for _ in range(3):
        with Watcher(vault, debounce_s=0.05) as watcher:
            assert watcher.wait_idle(DEADLINE_S)
            assert threading.active_count() > baseline
        assert not watcher.running and not watcher.wait_idle(0)
        watcher.stop()  # a second stop is harmless
    assert threading.active_count() == baseline
    with pytest.raises(Exception, match="already started"):
        watcher.start()
    Watcher(vault).stop()  # stopping a watcher never started is harmless too


# ---- other modes ------------------------------------------------------------------------------

def test_polling_observer(vault, watch):
    watcher, rec = watch(polling=True)
    write(vault.topics_dir / "nfs.md", topic_text("Nfs", "On a network drive pollword"))
    assert wait_until(lambda: indexed(vault.root, "pollword"))
    assert rec.errors == []


def test_topics_folder_is_a_symlink(tmp_path, watch):
    root = Vault.init(tmp_path / "w", profile=False).root
    shutil.rmtree(root / "topics")
    (root / "notes").mkdir()
    (root / "topics").symlink_to(root / "notes", target_is_directory=True)
    vault = Vault(root, embedder=FakeEmbedder())
    watcher, rec = watch(vault)
    write(root / "notes" / "linked.md", topic_text("Linked", "Through a linkword"))
    assert wait_until(lambda: indexed(root, "linkword"))
    assert watcher.wait_idle(DEADLINE_S) and watcher.refreshes >= 2  # an event did it


def test_inbox_handler_runs_and_its_errors_are_reported(vault, watch):
    calls: list[float] = []

    def handler() -> None:
        calls.append(time.monotonic())
        if len(calls) == 2:
            raise ValueError("transcript is garbage")

    watcher, rec = watch(inbox_handler=handler, inbox_interval_s=0.05)
    assert wait_until(lambda: len(calls) >= 4)
    assert rec.errors == ["processing inbox/ failed: ValueError: transcript is garbage"]
    write(vault.topics_dir / "digested.md", topic_text("Digested", "From the inbox inboxword"))
    assert wait_until(lambda: indexed(vault.root, "inboxword"))


def test_run_watch_until_stop_event(vault, no_thread_leaks):
    stop = threading.Event()
    updates: list = []
    thread = threading.Thread(target=run_watch, args=(vault,),
                              kwargs={"stop_event": stop, "debounce_s": 0.05, "on_update": updates.append})
    thread.start()
    try:
        assert wait_until(lambda: updates)
        write(vault.topics_dir / "cli.md", topic_text("Cli", "Typed runwatchword"))
        assert wait_until(lambda: indexed(vault.root, "runwatchword"))
    finally:
        stop.set()
        thread.join(DEADLINE_S)
    assert not thread.is_alive()


SUBPROCESS_WATCH = SUBPROCESS_SEARCH.split("for hit in")[0] + textwrap.dedent("""
    from memkit.frontends.watch import run_watch
    run_watch(Vault(sys.argv[1], embedder=Fake()), debounce_s=0.05,
              on_update=lambda report: print("update", report.entries, flush=True))
    print("stopped", flush=True)
""")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_run_watch_stops_on_signal(vault, signum):
    write(vault.topics_dir / "a.md", topic_text("A", "One line"))
    proc = subprocess.Popen([sys.executable, "-c", SUBPROCESS_WATCH, str(vault.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "update 1\n"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=DEADLINE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out == "stopped\n"


def test_stop_ends_the_judge_fill_after_its_batch(vault, no_thread_leaks, monkeypatch):
    """A watcher stopped while it fills the judge's vectors ends the fill after the batch it is on
    (a process exiting while onnxruntime runs a pass in the watcher's daemon thread aborts)."""
    batches: list[int] = []
    filling = threading.Event()

    def fill_judge(progress=None, index=None, workers=1):  # 1,000 slow batches: ~100 s if never stopped
        for done in range(1, 1001):
            filling.set()
            time.sleep(0.1)
            batches.append(done)
            if progress is not None:
                progress(done * 32, 32_000)
        return 32_000

    monkeypatch.setattr(vault.frontend_internals.runtime.searcher, "fill_judge", fill_judge)
    watcher = Watcher(vault, debounce_s=0.05)
    watcher.start()
    write(vault.topics_dir / "cooking.md", topic_text("Cooking", "Bomba rice for paella"))
    assert filling.wait(DEADLINE_S)
    watcher.stop(timeout=5.0)
    assert not watcher.running and not watcher._worker.is_alive()
    assert len(batches) < 100  # it stopped at a batch's end, long before the 1,000th
