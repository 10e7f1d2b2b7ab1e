"""index.txt kept in step without reading every topic: a file it leaves out, unchanged since memkit
last looked, stays out unread; when a listed topic goes, the others are read again to fill its place."""
from __future__ import annotations

import os

import memkit.store.recent_file as recent_mod
from memkit import Vault


def make(tmp_path, n=30):
    v = Vault.init(tmp_path / "v", profile=False)
    for i in range(n):
        path = v.root / "topics" / f"t{i:02d}.md"
        path.write_text(f"---\ntitle: T{i}\nsummary: topic {i}\nupdated: 2025-01-{i % 28 + 1:02d}\n---\n- entry {i}\n")
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return v


def test_unlisted_unchanged_topics_are_not_read_again(tmp_path, monkeypatch):
    v = make(tmp_path)
    first = [r.topic for r in v.recent()]
    assert len(first) == v.store.config.index_max_entries
    reads = []
    real = recent_mod.read_topic
    monkeypatch.setattr(recent_mod, "read_topic", lambda *a, **k: reads.append(a[1]) or real(*a, **k))
    assert [r.topic for r in v.recent()] == first and reads == []
    # a listed topic goes: the newest of the others takes its place (they are read again)
    (v.root / "topics" / f"{first[0]}.md").unlink()
    again = [r.topic for r in v.recent()]
    assert first[0] not in again and len(again) == len(first) and reads
    left_out = sorted(set(f"t{i:02d}" for i in range(30)) - set(first))
    assert set(again) - set(first) <= set(left_out) and len(set(again) - set(first)) == 1
