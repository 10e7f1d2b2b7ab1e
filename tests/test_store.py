"""memkit.store (and the layout, inbox, index.txt and recovery parts it is built from): what one
write costs, and what it does to the files."""
from __future__ import annotations

import builtins
import os
import sys
from pathlib import Path

import pytest

from memkit import Vault
from memkit.fsutil import VaultLock
from memkit.layout import VaultFiles


class Counter:
    """Counts, while installed, the opens of one file, the parses of topic text, the resolutions
    of topic names to files, the takings of the write lock and the listings of topics/."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, file: Path, topics_dir: Path) -> None:
        self.file = os.path.realpath(file)
        self.topics_dir = os.path.realpath(topics_dir)
        self.opens = self.parses = self.resolves = self.locks = self.listings = 0
        real_open, real_os_open, real_scandir = builtins.open, os.open, os.scandir

        def counted_open(path, *args, **kwargs):
            self._opened(path)
            return real_open(path, *args, **kwargs)

        def counted_os_open(path, *args, **kwargs):
            self._opened(path)
            return real_os_open(path, *args, **kwargs)

        def counted_scandir(path="."):
            if os.path.realpath(path) == self.topics_dir:
                self.listings += 1
            return real_scandir(path)

        monkeypatch.setattr(builtins, "open", counted_open)
        monkeypatch.setattr(os, "open", counted_os_open)
        monkeypatch.setattr(os, "scandir", counted_scandir)
        real_parse = sys.modules["memkit.topic"].parse_topic_text

        def counted_parse(*args, **kwargs):
            self.parses += 1
            return real_parse(*args, **kwargs)

        for name, module in list(sys.modules.items()):  # every module that imported it by name
            if name.startswith("memkit") and getattr(module, "parse_topic_text", None) is real_parse:
                monkeypatch.setattr(module, "parse_topic_text", counted_parse)
        real_topic_path, real_enter = VaultFiles.topic_path, VaultLock.__enter__

        def counted_topic_path(files, name):
            self.resolves += 1
            return real_topic_path(files, name)

        def counted_enter(lock):
            self.locks += 1
            return real_enter(lock)

        monkeypatch.setattr(VaultFiles, "topic_path", counted_topic_path)
        monkeypatch.setattr(VaultLock, "__enter__", counted_enter)

    def _opened(self, path) -> None:
        if isinstance(path, (str, os.PathLike)) and os.path.realpath(path) == self.file:
            self.opens += 1


def test_one_add_opens_parses_resolves_and_locks_once(vault: Vault, monkeypatch):
    """Issue 16.4: one add opens its topic once, parses it once, resolves its path once and takes
    the lock once (it was 3 opens, 2 parses, 5 resolutions, 3 locks)."""
    vault.add("Prefers bomba rice", topic="cooking")
    fresh = Vault(vault.root)  # as the command line has it: no search loaded
    count = Counter(monkeypatch, vault.topics_dir / "cooking.md", vault.topics_dir)
    entry = fresh.add("Toasts the saffron first", topic="cooking", kind="preference")
    assert (count.opens, count.parses, count.resolves, count.locks) == (1, 1, 1, 1)
    monkeypatch.undo()
    entries = vault.topic("cooking").entries
    assert len(entries) == 2 and entries[-1] == entry and entry.kind == "preference"


def test_adding_a_new_topic_resolves_parses_and_locks_once(vault: Vault, monkeypatch):
    fresh = Vault(vault.root)
    count = Counter(monkeypatch, vault.topics_dir / "garden.md", vault.topics_dir)
    entry = fresh.add("Basil likes the south window", topic="garden")
    assert (count.parses, count.resolves, count.locks) == (1, 1, 1)
    monkeypatch.undo()
    assert vault.topic("garden").entries[0].hash == entry.hash


def test_a_search_in_one_topic_lists_topics_once(vault: Vault, monkeypatch):
    """Issue 16.4: with --topic a search lists topics/ once (the refresh), not again to check the
    topic exists."""
    vault.add("Prefers bomba rice", topic="cooking")
    vault.add("Basil likes the south window", topic="garden")
    fresh = Vault(vault.root)
    count = Counter(monkeypatch, vault.topics_dir / "cooking.md", vault.topics_dir)
    hits = fresh.search("rice", topic="cooking", mode="lexical")
    assert count.listings == 1
    assert [h.topic for h in hits] == ["cooking"]


def test_an_add_to_a_topic_with_a_conflict_writes_nothing(vault: Vault):
    vault.add("Prefers bomba rice", topic="cooking")
    path = vault.topics_dir / "cooking.md"
    path.write_text(path.read_text() + "<<<<<<< ours\n- a\n=======\n- b\n>>>>>>> theirs\n")
    before = path.read_bytes()
    with pytest.raises(Exception, match="merge conflict"):
        vault.add("Toasts the saffron", topic="cooking")
    assert path.read_bytes() == before


def test_an_add_to_a_dangling_symlink_creates_nothing(vault: Vault):
    (vault.topics_dir / "ghost.md").symlink_to(vault.topics_dir / "nowhere.md")
    with pytest.raises(Exception, match="ghost.md"):
        vault.add("Boo", topic="ghost")
    assert not (vault.topics_dir / "nowhere.md").exists()
