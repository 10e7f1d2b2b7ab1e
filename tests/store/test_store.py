"""memkit.store.store (and the layout, inbox, index.txt and recovery parts it is built from): what one
write costs, and what it does to the files."""
from __future__ import annotations

import builtins
import os
import sys
from datetime import datetime
from pathlib import Path

import pytest
from util import FakeEmbedder, vault_with, write

from memkit import MemkitError, Vault
from memkit.base.fsutil import VaultLock
from memkit.formats.topic import read_topic
from memkit.store.layout import VaultFiles


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
        real_parse = sys.modules["memkit.formats.topic"].parse_topic_text

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


def test_forget_refuses_when_the_topic_changed_under_it(tmp_path: Path, monkeypatch) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    e = vault.add("keep me safe", topic="t")
    vault.add("forget me", topic="t")
    path = vault.topics_dir / "t.md"
    real = vault.store.read_for_write

    def read_then_edit(name):  # an editor rewrites the file between memkit's read and its rename
        topic = real(name)
        path.write_text(path.read_text().replace("keep me safe", "keep me safe, edited"))
        return topic

    monkeypatch.setattr(vault.store, "read_for_write", read_then_edit)
    with pytest.raises(MemkitError, match="topics/t.md.*changed by someone else"):
        vault.forget(match="forget me")
    text = path.read_text()
    assert "keep me safe, edited" in text and "forget me" in text
    assert e.id  # the entry object is still usable


def test_cr_only_file_is_read_and_appended_with_its_line_ending(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    original = b"---\rtitle: Old Mac\r---\r# Old Mac\r\r- first entry\r- second entry\r"
    path = write(vault.topics_dir / "oldmac.md", original)
    topic = vault.topic("oldmac")
    assert [e.text for e in topic.entries] == ["first entry", "second entry"]
    assert topic.title == "Old Mac"
    vault.add("third entry", topic="oldmac", when=datetime(2026, 3, 1))
    assert path.read_bytes() == original + b"- third entry (2026-03-01)\r"
    vault.forget(match="first entry")
    assert path.read_bytes() == b"---\rtitle: Old Mac\r---\r# Old Mac\r\r- second entry\r- third entry (2026-03-01)\r"


def test_add_after_an_unclosed_fence_lands_outside_it(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    path = write(vault.topics_dir / "notes.md", "- before\n~~~\nsome code the person never closed\n")
    entry = vault.add("after the code", topic="notes", when=datetime(2026, 3, 1))
    assert path.read_text() == ("- before\n~~~\nsome code the person never closed\n~~~\n"
                                "- after the code (2026-03-01)\n")
    again = read_topic(path, "notes", "topics/notes.md")
    assert [e.text for e in again.entries if e.is_list] == ["before", "after the code (2026-03-01)"]
    assert entry.line == 5


def test_add_to_a_file_without_final_newline(tmp_path: Path) -> None:
    vault = Vault.init(tmp_path / "v", profile=False)
    path = write(vault.topics_dir / "t.md", "- no newline at the end")
    vault.add("next", topic="t", when=datetime(2026, 3, 1))
    assert path.read_text() == "- no newline at the end\n- next (2026-03-01)\n"


def test_closing_an_open_fence_on_add_changes_no_existing_entry(tmp_path: Path) -> None:
    """An unclosed fence runs to the end of the file (CommonMark): what follows it is code both
    before and after the add closes it, so every existing entry keeps its id, text and lines."""
    vault = Vault.init(tmp_path / "v", profile=False)
    write(vault.topics_dir / "notes.md", "- before\n~~~\n- [decision] Switched to fish shell #shell (2026-01-05)\n")
    before = [(e.id, e.text, e.line, e.end_line) for e in vault.topic("notes").entries]
    vault.add("after", topic="notes", when=datetime(2026, 3, 1))
    after = [(e.id, e.text, e.line, e.end_line) for e in vault.topic("notes").entries]
    assert after[:-1] == before and after[-1][1] == "after (2026-03-01)"


@pytest.mark.parametrize("text", ["likes caf\udce9 au lait", "a\x00z", "bell \x07 here"])
def test_text_that_would_break_the_file_is_refused_before_writing(tmp_path: Path, text: str) -> None:
    from util import FakeEmbedder

    vault = Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())
    vault.add("likes pasta", topic="food")
    before = (vault.topics_dir / "food.md").read_bytes()
    with pytest.raises(MemkitError, match="memkit writes plain UTF-8 text only"):
        vault.add(text, topic="food")
    with pytest.raises(MemkitError, match="memkit writes plain UTF-8 text only"):
        vault.edit(None, text, match="pasta")
    assert (vault.topics_dir / "food.md").read_bytes() == before
    assert [e.text.split(" (")[0] for e in vault.topic("food").entries] == ["likes pasta"]


def test_the_temp_sweep_touches_only_memkits_own_files_inside_the_vault(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    mine = write(root / ".notes.txt.abcdefgh.tmp", "a person's file")
    outside = tmp_path / "outside"
    write(outside / ".report.2024_q1x.tmp", "another program's file")
    (root / "topics").rmdir()
    os.symlink(outside, root / "topics")
    with pytest.raises(MemkitError):
        Vault(root).add("x", topic="t")
    assert mine.exists() and (outside / ".report.2024_q1x.tmp").exists()


HOME = "- Lives in Portland Oregon\n- Keeps the spare key under the blue flowerpot\n- Wife's birthday is March 3\n"


def test_closing_comment_marker_in_added_text_hides_nothing(tmp_path):
    v = vault_with(tmp_path, {"health": "- Blood type O negative\n<!-- TODO tidy this list\n- Allergic to tree nuts\n"})
    before = [e.text for e in v.topic("health").entries]
    entry = v.add("Uses the a --> b notation", topic="health")
    after = [e.text for e in v.topic("health").entries]
    assert after[:-1] == before and entry.text == after[-1] and "-->" not in entry.text


def test_hand_named_topic_file_is_addressable(tmp_path):
    v = vault_with(tmp_path, {"My Notes": "- Dentist is Dr. Silva\n"})
    assert [t.name for t in v.topics()] == ["My Notes"]
    v.forget(match="Dentist")
    v.add("Second note", topic="My Notes")
    assert sorted(p.name for p in v.topics_dir.iterdir()) == ["My Notes.md"]


def test_symlinked_topics_folder_outside_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    write(outside / "general.md", "- secret\n")
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics").rmdir()
    os.symlink(outside, root / "topics")
    v = Vault(root, embedder=FakeEmbedder())
    assert v.topics() == [] and v.search("secret", threshold=None) == []
    with pytest.raises(MemkitError, match="outside the vault"):
        v.add("written through")
    assert (outside / "general.md").read_text() == "- secret\n"


def test_symlink_inside_the_vault_is_written_through(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    real = write(root / "notes" / "real.md", "- one\n")
    os.symlink(real, root / "topics" / "linked.md")
    v = Vault(root, embedder=FakeEmbedder())
    v.add("two", topic="linked")
    assert (root / "topics" / "linked.md").is_symlink()
    assert "- two" in real.read_text()


def test_same_line_in_two_topics_can_be_forgotten_with_topic(tmp_path):
    v = vault_with(tmp_path, {"a": "- Same line\n", "b": "- Same line\n"})
    with pytest.raises(MemkitError, match="give --topic"):
        v.forget(match="Same line")
    v.forget(match="Same line", topic="b")
    assert [e.topic for e in v.entries()] == ["a"]


def test_topic_files_whose_names_slug_alike_keep_separate_rows(tmp_path):
    v = vault_with(tmp_path, {"my notes": "- first\n", "my_notes": "- second\n"})
    assert v.index().entries == 2
    fresh = Vault(v.root, embedder=FakeEmbedder())
    assert fresh.index().new == 0  # nothing re-embedded: each file has its own row in the index
