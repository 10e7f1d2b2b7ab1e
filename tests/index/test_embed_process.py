"""A large refresh embeds in a child process (memkit.index.embed_process) where the machine has a
second CPU and the model can be made there: the same vectors, bit for bit, as in this process; a
failure in the child fails the refresh and leaves the previous index; the child always ends."""
from __future__ import annotations

import signal

import numpy as np
import pytest
from child_embedders import FailingStatic
from test_streaming import CHUNK, make_topics, tables
from util import FakeEmbedder, vault_with, write

import memkit.index.embed_process as process_mod
import memkit.index.queue as queue_mod
import memkit.index.writer as writer_mod
from memkit import ModelError, Vault
from memkit.embeddings.static import BUILTIN_MODEL, LazyEmbedder, builtin_model_folder


@pytest.fixture
def children(monkeypatch):
    """Small chunks and batches, a child from the first batch on, two CPUs; the children started."""
    started: list[process_mod.EmbedProcess] = []
    real_init = process_mod.EmbedProcess.__init__

    def init(self, spec):
        real_init(self, spec)
        started.append(self)

    monkeypatch.setattr(process_mod.EmbedProcess, "__init__", init)
    monkeypatch.setattr(writer_mod, "CHUNK_ENTRIES", CHUNK)
    monkeypatch.setattr(queue_mod, "EMBED_BATCH", 5)
    monkeypatch.setattr(queue_mod, "THREAD_MIN_ENTRIES", 1)
    monkeypatch.setattr(queue_mod, "PROCESS_MIN_ENTRIES", 1)
    monkeypatch.setattr(queue_mod, "usable_cpus", lambda: 2)
    return started


def vectors(v: Vault) -> list[tuple[str, int, bytes]]:
    view = v.searcher.index.view()
    rows = range(len(view)) if view.live is None else np.flatnonzero(view.live)
    return sorted((view.files[view.file_ids[i]], int(view.lines[i]), np.asarray(view.vectors[i]).tobytes())
                  for i in rows)


def model():
    return LazyEmbedder(BUILTIN_MODEL)


def test_a_large_refresh_embeds_in_a_child_the_vectors_this_process_makes(tmp_path, children, no_thread_leaks):
    here = vault_with(tmp_path / "here", make_topics(), embedder=model())
    there = vault_with(tmp_path / "there", make_topics(), embedder=model())
    with pytest.MonkeyPatch.context() as m:
        m.setattr(queue_mod, "usable_cpus", lambda: 1)  # one CPU: the thread
        here.index(full=True)
    assert not children
    report = there.index(full=True)
    assert len(children) == 1 and children[0].proc.returncode == -signal.SIGTERM  # ended when idle, and reaped
    assert report.new > 20 and not there.embedder.loaded  # this process never loaded the model
    assert tables(there) == tables(here)
    assert vectors(there) == vectors(here)  # bit for bit
    assert len({v for _, _, v in vectors(there)}) > 20


def with_lookalikes() -> dict[str, str]:
    """make_topics, and entries of one hash (same words but for case: 'Straße' casefolds to
    'strasse') whose search terms differ, in one file and across files."""
    topics = make_topics()
    topics["t04"] += "- Walk down the Straße to the bakery\n- WALK DOWN THE STRASSE TO THE BAKERY\n"
    topics["t21"] += "- walk down the strasse to the bakery\n"
    return topics


@pytest.mark.parametrize("backlog", [10**6, -1, 1], ids=["child-terms", "own-terms", "as-keeps-up"])
def test_the_search_terms_are_the_ones_this_process_works_out(tmp_path, children, monkeypatch, backlog,
                                                              no_thread_leaks):
    """The child works out a batch's terms while it keeps up (TERMS_BACKLOG); the index holds the
    same terms whoever did, each entry its own (not those of another text of its hash)."""
    monkeypatch.setattr(queue_mod, "TERMS_BACKLOG", backlog)
    here = vault_with(tmp_path / "here", with_lookalikes(), embedder=model())
    there = vault_with(tmp_path / "there", with_lookalikes(), embedder=model())
    with pytest.MonkeyPatch.context() as m:
        m.setattr(queue_mod, "usable_cpus", lambda: 1)  # one CPU: the thread, terms worked out here
        here.index(full=True)
    asked: list[bool] = []
    real = process_mod.EmbedProcess.embed_entries

    def embed_entries(self, texts, with_terms=True):
        asked.append(with_terms)
        return real(self, texts, with_terms)

    monkeypatch.setattr(process_mod.EmbedProcess, "embed_entries", embed_entries)
    there.index(full=True)
    assert len(children) == 1
    if backlog == 10**6:
        assert asked and all(asked)
    elif backlog == -1:
        assert asked and not any(asked)
    assert tables(there) == tables(here)
    assert vectors(there) == vectors(here)
    for query in ("straße", "strasse"):  # each spelling finds its own lines first
        hits = [h.text for h in there.search(query, k=3, mode="lexical")]
        assert hits == [h.text for h in here.search(query, k=3, mode="lexical")] and hits


def test_the_child_embeds_an_entry_as_this_process_does():
    """embed_entries: the rows of each entry's embedded text (no [kind], date or provenance) and
    its terms (provenance left out) joined by spaces; without terms when not asked."""
    texts = ["[idea] a new bike rack #gear (2026-02-03)", "Met Ana at the café (from chat 2026-01-02)", "", "x"]
    child = process_mod.EmbedProcess(model().process_spec())
    try:
        rows, terms = child.embed_entries(texts)
        bare, none = child.embed_entries(texts, with_terms=False)
    finally:
        child.close()
    assert np.array_equal(rows, model().embed([process_mod.embed_text(t) for t in texts]))
    assert np.array_equal(bare, rows) and none is None
    assert terms == [" ".join(process_mod.entry_terms(t)) for t in texts]
    assert process_mod.embed_text(texts[0]) == "a new bike rack #gear"
    assert "chat" not in terms[1].split(" ") and "ana" in terms[1].split(" ")


@pytest.mark.parametrize("fail_at, how", [(3, "raise"), (12, "raise"), (5, "exit")])
def test_a_failure_in_the_child_leaves_the_previous_index(tmp_path, children, fail_at, how, no_thread_leaks):
    folder = builtin_model_folder()
    v = vault_with(tmp_path, make_topics(), embedder=model())
    v.index()
    before = tables(v), vectors(v)
    for name in list(make_topics())[::2]:
        write(v.topics_dir / f"{name}.md", make_topics(seed=7)[name])
    failing = Vault(v.root, embedder=FailingStatic(str(folder), BUILTIN_MODEL, fail_at, how))
    error = RuntimeError if how == "raise" else ModelError
    with pytest.raises(error, match="the model failed" if how == "raise" else "embedding process ended"):
        failing.index(full=True)
    assert len(children) == 2 and all(c.proc.returncode is not None for c in children)
    assert (tables(v), vectors(Vault(v.root, embedder=model()))) == before
    report = Vault(v.root, embedder=model()).index()  # the next refresh writes what the failed one did not
    assert report.changed_files == 15


def test_an_interrupt_ends_the_child(tmp_path, children, monkeypatch, no_thread_leaks):
    v = vault_with(tmp_path, make_topics(), embedder=model())
    real_write = writer_mod.Writer._write
    calls = []

    def interrupted(self, chunk, queue, gone):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_write(self, chunk, queue, gone)

    monkeypatch.setattr(writer_mod.Writer, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        v.index(full=True)
    assert len(children) == 1 and children[0].proc.returncode is not None
    monkeypatch.setattr(writer_mod.Writer, "_write", real_write)
    assert v.index().changed_files == len(make_topics())


@pytest.mark.parametrize("why", ["one-cpu", "own-embedder", "small", "one-file"])
def test_the_thread_embeds_where_a_child_would_not_win(tmp_path, children, monkeypatch, why):
    topics = make_topics()
    embedder = FakeEmbedder() if why == "own-embedder" else model()
    if why == "one-cpu":
        monkeypatch.setattr(queue_mod, "usable_cpus", lambda: 1)
    if why == "small":
        monkeypatch.setattr(queue_mod, "PROCESS_MIN_ENTRIES", 10_000)
    if why == "one-file":
        topics = {"all": "".join(topics.values())}
    threads: list[int] = []
    real_start = queue_mod.EmbedQueue._start
    monkeypatch.setattr(queue_mod.EmbedQueue, "_start", lambda self: threads.append(1) or real_start(self))
    report = vault_with(tmp_path, topics, embedder=embedder).index(full=True)
    assert report.new > 20 and not children
    assert threads == ([] if why == "one-file" else [1])


def test_a_model_the_child_cannot_load_fails_the_refresh(tmp_path, children):
    spec = ("memkit.embeddings.static", "StaticEmbedder", (str(tmp_path / "nowhere"), "x"))
    child = process_mod.EmbedProcess(spec)
    try:
        with pytest.raises(ModelError, match="cannot load the model"):
            child.embed_entries(["a text"])
        with pytest.raises(ModelError, match="cannot load the model"):  # every batch says so
            child.embed_entries(["a text"])
    finally:
        child.close()
    assert child.proc.returncode is not None


def test_without_an_interpreter_to_start_the_thread_embeds(tmp_path, children, monkeypatch):
    here = vault_with(tmp_path / "here", make_topics(), embedder=model())
    monkeypatch.setattr(process_mod.sys, "executable", "")
    report = here.index(full=True)
    assert report.new > 20 and not children and here.embedder.loaded
