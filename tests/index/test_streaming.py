"""A large refresh streams (memkit.index.writer): it parses, embeds and writes its rows in chunks
inside one transaction, holding the vectors of two chunks at most; the index it writes is the one
a single chunk writes, and a failure in the middle of the chunks leaves the previous index."""
from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest
from test_index_views import QUERIES, live_rows, results, topic_text
from util import FakeEmbedder, vault_with, write

import memkit.index.matrix as matrix_mod
import memkit.index.queue as queue_mod
import memkit.index.writer as writer_mod
from memkit import Vault

CHUNK = 12  # entries a chunk in these tests (the vault holds ~200)
BIGGEST = 14  # entries of the largest topic file of make_topics(): a chunk closes past CHUNK with one


def make_topics(seed: int = 3) -> dict[str, str]:
    rng = np.random.default_rng(seed)
    topics = {f"t{i:02d}": topic_text(rng, int(rng.integers(3, 12)), who=i % 5 == 0) for i in range(30)}
    topics["t02"] += "- the same line in three files\n"  # one text in files of different chunks
    topics["t15"] += "- the same line in three files\n"
    topics["t28"] += "- the same line in three files\n- [idea] a new bike rack #gear (2026-02-03)\n"
    return topics


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of CHUNK entries, embedding batches of 5, and the embedding thread from the start."""
    monkeypatch.setattr(writer_mod, "CHUNK_ENTRIES", CHUNK)
    monkeypatch.setattr(queue_mod, "EMBED_BATCH", 5)
    monkeypatch.setattr(queue_mod, "THREAD_MIN_ENTRIES", 1)


def state(v: Vault):
    """What a search of a new process sees: every live row, and the results of the test queries."""
    fresh = Vault(v.root, embedder=FakeEmbedder())
    return live_rows(fresh.searcher.index.view()), results(fresh.searcher, QUERIES, threshold=None)


def tables(v: Vault):
    """The SQLite rows a view is read from (file ids and generations aside)."""
    con = sqlite3.connect(next((v.store.state_dir / "index").glob("*.sqlite3")))
    try:
        vocab = dict(con.execute("SELECT id, term FROM terms"))  # ids are given in the order terms come
        files = [(*row[:4], [vocab[t] for t in np.frombuffer(row[4], dtype=np.int32).tolist()], *row[5:])
                 for row in con.execute("SELECT f.path, f.topic, f.n, f.pending, d.terms, d.counts, d.lines, d.days, "
                                        "d.hashes, d.body FROM files f JOIN file_data d ON d.file_id = f.id "
                                        "ORDER BY f.path")]
        entries = con.execute("SELECT f.path, e.pos, e.hash FROM entries e JOIN files f ON f.id = e.file_id "
                              "ORDER BY 1, 2").fetchall()
        meta = dict(con.execute("SELECT key, value FROM meta WHERE key IN ('entries', 'pending')").fetchall())
        index = con.execute("SELECT name FROM sqlite_master WHERE name = 'entries_hash'").fetchall()
        return files, entries, meta, index
    finally:
        con.close()


def change(v: Vault) -> None:
    rng = np.random.default_rng(9)
    write(v.topics_dir / "t03.md", topic_text(rng, 9))  # edited
    write(v.topics_dir / "new-topic.md", topic_text(rng, 4, who=True) + "- the same line in three files\n")
    (v.topics_dir / "t07.md").unlink()  # gone
    (v.topics_dir / "t15.md").unlink()


def twins(tmp_path):
    """Two copies of the same vault: one indexed in one chunk, one in small chunks."""
    one = vault_with(tmp_path / "one", make_topics())
    other = tmp_path / "chunked"
    shutil.copytree(one.root, other)
    return one, Vault(other, embedder=FakeEmbedder())


@pytest.mark.parametrize("full", [True, False], ids=["full", "first-refresh"])
def test_an_index_written_in_chunks_is_the_one_a_single_chunk_writes(tmp_path, monkeypatch, full):
    one, chunked = twins(tmp_path)
    r1 = one.index(full=full)
    appended: list[int] = []
    real_append = matrix_mod.FileMatrix.append
    monkeypatch.setattr(matrix_mod.FileMatrix, "append",
                        lambda self, name, rows, data: appended.append(len(data)) or real_append(self, name, rows, data))
    with monkeypatch.context() as m:
        m.setattr(writer_mod, "CHUNK_ENTRIES", CHUNK)
        m.setattr(queue_mod, "EMBED_BATCH", 5)
        m.setattr(queue_mod, "THREAD_MIN_ENTRIES", 1)
        r2 = chunked.index(full=full)
    assert len(appended) > 10 and max(appended) < CHUNK + BIGGEST  # written chunk by chunk
    assert (r2.entries, r2.new + r2.reused, r2.removed, r2.changed_files) == (
        r1.entries, r1.new + r1.reused, r1.removed, r1.changed_files)
    # a text in files of two chunks is embedded once: a full index re-embeds it in each chunk
    assert r2.new == r1.new + (2 if full else 0)
    assert tables(chunked) == tables(one)
    assert state(chunked) == state(one)
    # and again over the index each holds: files changed, edited, gone; a line in files of several chunks
    change(one)
    change(chunked)
    r1 = one.index(full=full)
    with monkeypatch.context() as m:
        m.setattr(writer_mod, "CHUNK_ENTRIES", CHUNK)
        m.setattr(writer_mod, "CHUNK_FILES", 2)
        r2 = chunked.index(full=full)
    assert r1.removed > 0 and (r2.entries, r2.removed, r2.changed_files) == (r1.entries, r1.removed, r1.changed_files)
    assert tables(chunked) == tables(one)
    assert state(chunked) == state(one)


def test_a_large_refresh_holds_the_vectors_of_two_chunks_at_most(tmp_path, small_chunks, monkeypatch):
    v = vault_with(tmp_path, make_topics())
    held: list[int] = []
    real_ready = queue_mod.EmbedQueue.ready
    monkeypatch.setattr(queue_mod.EmbedQueue, "ready",
                        lambda self, entries: real_ready(self, entries) or held.append(len(self.vectors)))
    report = v.index(full=True)
    assert report.entries > 10 * CHUNK
    assert max(len(text.splitlines()) for text in make_topics().values()) <= BIGGEST
    # two chunks (the one written, the next one parsed), each closed past CHUNK entries by a file
    assert 0 < max(held) <= 2 * (CHUNK + BIGGEST) < report.entries / 4


def test_an_incremental_refresh_in_chunks_reuses_vectors_across_chunks(tmp_path, small_chunks):
    v = vault_with(tmp_path, make_topics())
    v.index()
    for i in range(3):  # files of later chunks take lines out of the first ones'
        write(v.topics_dir / f"z{i}.md", (v.topics_dir / f"t0{i}.md").read_text())
        (v.topics_dir / f"t0{i}.md").unlink()
    report = v.index()
    assert report.new == 0 and report.removed == 0 and report.reused > 0


class FailingEmbedder(FakeEmbedder):
    """Raises on its ``fail_at``-th batch."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at

    def embed(self, texts):
        if len(self.calls) + 1 == self.fail_at:
            self.calls.append(0)
            raise RuntimeError("the model failed")
        return super().embed(texts)


@pytest.mark.parametrize("fail_at", [3, 12])
@pytest.mark.parametrize("full", [True, False], ids=["full", "changed-files"])
def test_a_failure_in_the_middle_of_the_chunks_leaves_the_previous_index(tmp_path, small_chunks, monkeypatch,
                                                                         fail_at, full):
    v = vault_with(tmp_path, make_topics())
    v.index()
    before, before_tables = state(v), tables(v)
    index_dir = v.store.state_dir / "index"
    files_before = sorted(p.name for p in index_dir.iterdir() if not p.name.endswith(("-wal", "-shm")))
    for name in list(make_topics())[::2]:  # half the files change (the other half stays)
        write(v.topics_dir / f"{name}.md", topic_text(np.random.default_rng(100 + int(name[1:])), 6))
    appended: list[int] = []
    real_append = matrix_mod.FileMatrix.append
    monkeypatch.setattr(matrix_mod.FileMatrix, "append",
                        lambda self, name, rows, data: appended.append(len(data)) or real_append(self, name, rows, data))
    failing = Vault(v.root, embedder=FailingEmbedder(fail_at))
    with pytest.raises(RuntimeError, match="the model failed"):
        failing.index(full=full)
    if fail_at > 3:
        assert appended  # the later failure comes after chunks were written
    monkeypatch.undo()
    assert tables(v) == before_tables
    assert sorted(p.name for p in index_dir.iterdir() if not p.name.endswith(("-wal", "-shm"))) == files_before
    assert state(v) == before  # a new process searches the previous index (without a refresh)
    # the next index writes over what the failed one left: as a full rebuild would
    report = failing.index(full=full)
    after = tables(v)
    assert report.changed_files > 0 and after != before_tables
    assert Vault(v.root, embedder=FakeEmbedder()).index(full=True).removed == 0
    assert tables(v) == after


def test_entries_indexed_without_vectors_are_embedded_in_chunks(tmp_path, small_chunks, monkeypatch):
    one, later = twins(tmp_path)
    one.index()
    report = later.searcher.index.refresh(embed=False)  # a lexical search's refresh: no vectors
    assert report.new == 0 and tables(later)[2]["pending"] == "1"
    appended: list[int] = []
    real_append = matrix_mod.FileMatrix.append
    monkeypatch.setattr(matrix_mod.FileMatrix, "append",
                        lambda self, name, rows, data: appended.append(len(data)) or real_append(self, name, rows, data))
    done: list[tuple[int, int]] = []
    report = later.searcher.index.refresh(progress=lambda d, t: done.append((d, t)))
    assert len(appended) > 10 and max(appended) < CHUNK + BIGGEST
    assert report.new == len({h for _, _, h in tables(one)[1]})  # each text once (found again in later chunks)
    assert done[-1][0] == done[-1][1] == report.new
    assert tables(later) == tables(one)
    assert state(later)[0] == state(one)[0]  # the rows (scores differ: the pending rows are dead ones, as before)
