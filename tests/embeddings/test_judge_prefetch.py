"""The query's pass through the judge runs in a thread beside the first stage: the search takes
that vector (one pass a query, the same vector as embedded alone), never another judge's."""
from __future__ import annotations

import numpy as np
import pytest

from memkit import Vault
from memkit.embeddings import judge as judge_mod
from memkit.embeddings.judge import judge_status, prefetch_query, prefetched, shared_judge

needs_judge = pytest.mark.skipif(judge_status() is not None, reason=f"judge unavailable: {judge_status()}")


@needs_judge
def test_the_prefetched_vector_is_the_one_embedded_alone():
    judge = shared_judge().judge()
    assert judge is not None
    prefetch_query("which bike did I buy?")
    got = prefetched(judge, "which bike did I buy?")
    assert got is not None and np.array_equal(got, judge.embed(["which bike did I buy?"])[0])
    assert prefetched(judge, "another question") is None  # not asked for
    assert prefetched(object(), "which bike did I buy?") is None  # another judge's: not taken


@needs_judge
def test_a_search_passes_its_query_through_the_judge_once(tmp_path, monkeypatch):
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics" / "bikes.md").write_text("---\ntitle: bikes\n---\n# bikes\n\n- Bought a Brompton folding bike\n"
                                              "- The road bike needs new brake pads\n")
    v = Vault(root)
    v.index()
    judge = shared_judge().judge()
    seen = []
    embed = type(judge).embed
    monkeypatch.setattr(type(judge), "embed", lambda self, texts, *a, **kw: seen.append(list(texts)) or embed(self, texts, *a, **kw))
    hits = v.search("what folding bike do I have?", threshold=None)
    assert hits and hits[0].judge is not None and "Brompton" in hits[0].text
    assert seen.count(["what folding bike do I have?"]) == 1


def test_without_a_judge_nothing_is_prefetched(monkeypatch):
    monkeypatch.setenv("MEMKIT_NO_JUDGE", "1")
    monkeypatch.setattr(judge_mod, "_SHARED", judge_mod.LazyJudge())  # turned off: not available
    monkeypatch.setattr(judge_mod, "_SOON", None)
    prefetch_query("anything")
    assert judge_mod._SOON is None


@needs_judge
def test_a_process_does_not_exit_while_its_judge_thread_loads(tmp_path):
    """A search that found nothing to re-score (an empty vault: a new user's first search) left the
    judge loading in a daemon thread; the interpreter's exit then killed that thread inside
    onnxruntime's session setup, and the process aborted (rc 134, "terminate called without an
    active exception"). The exit waits for the judge's threads."""
    import subprocess
    import sys

    script = ("import atexit, threading\n"
              "atexit.register(lambda: print(sorted(t.name for t in threading.enumerate()"
              " if t.name.startswith('memkit-judge'))))\n"  # registered first: runs after memkit's own
              "from memkit.embeddings.judge import prefetch_query\n"
              "prefetch_query('what rice do I use')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # no judge thread left running when the interpreter shuts down


@needs_judge
def test_a_search_that_ends_early_exits_with_its_own_code(tmp_path):
    """A search refused (no such topic) or finding nothing returns while the judge's thread is still
    loading or embedding the query; the process used to abort in onnxruntime at exit ("terminate
    called without an active exception", exit 134) about half the time. It waits for the thread."""
    import os
    import subprocess
    import sys

    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics" / "bikes.md").write_text("---\ntitle: bikes\n---\n# bikes\n\n- Bought a Brompton folding bike\n")
    env = {**os.environ, "MEMKIT_VAULT": str(root)}
    for args, code in [(["--topic", "nosuch"], 1), (["--kind", "weird"], 0)] * 2:
        done = subprocess.run([sys.executable, "-m", "memkit", "search", "folding bike", *args],
                              capture_output=True, text=True, env=env, timeout=120)
        assert "terminate called" not in done.stderr
        assert done.returncode == code, done.stderr
