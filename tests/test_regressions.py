"""Regressions found by review: each reproduces a way a person's line could be lost or misplaced."""
from __future__ import annotations

import json
import os
import threading
import time

import pytest

from fake_llm import FakeLLM, Reply
from memkit import MemkitError, Vault
from memkit.digest import _new_topic_name, digest_file
from memkit.llm import HTTPChatLLM, LLMSettings
from memkit.transcript import parse_transcript
from util import FakeEmbedder, loopback_llm, vault_with, write


make = vault_with
llm = loopback_llm


HOME = "- Lives in Portland Oregon\n- Keeps the spare key under the blue flowerpot\n- Wife's birthday is March 3\n"


def test_two_conclusions_outdating_one_entry_remove_only_it(tmp_path):
    v = make(tmp_path, {"home": HOME})
    old = next(e for e in v.entries() if "Portland" in e.text)
    conclusions = [{"kind": "event", "text": "Moved from Portland Oregon to Seattle", "topic": "home"},
                   {"kind": "fact", "text": "Lives in Seattle now, not Portland Oregon", "topic": "home"}]

    def answer(req):
        if "outdated" in req["messages"][-1]["content"]:
            return json.dumps({"updates": [{"new": 1, "outdated": [old.id]}, {"new": 2, "outdated": [old.id]}]})
        return json.dumps({"conclusions": conclusions})

    with FakeLLM(answer) as fake:
        digest_file(v.searcher, write(tmp_path / "t.txt", "A: moved\n"), llm(fake), split=False)
    text = (v.topics_dir / "home.md").read_text()
    assert "spare key under the blue flowerpot" in text and "Wife's birthday" in text
    assert "Lives in Portland Oregon\n" not in text
    assert (v.root / "archive.md").read_text().count("Lives in Portland Oregon") == 1


def test_closing_comment_marker_in_added_text_hides_nothing(tmp_path):
    v = make(tmp_path, {"health": "- Blood type O negative\n<!-- TODO tidy this list\n- Allergic to tree nuts\n"})
    before = [e.text for e in v.topic("health").entries]
    entry = v.add("Uses the a --> b notation", topic="health")
    after = [e.text for e in v.topic("health").entries]
    assert after[:-1] == before and entry.text == after[-1] and "-->" not in entry.text


def test_same_transcript_digested_twice_at_once_writes_once(tmp_path):
    v = make(tmp_path, {"pets": "- Dog named Biscuit\n"})
    reply = Reply(delay=0.4, content=json.dumps({"conclusions": [{"kind": "fact", "text": "Cat Miso eats salmon kibble", "topic": "pets"}]}))
    path = write(tmp_path / "t.txt", "A: cat\n")
    with FakeLLM([reply]) as fake:
        threads = [threading.Thread(target=digest_file, args=(Vault(v.root, embedder=FakeEmbedder()).searcher, path, llm(fake)),
                                    kwargs={"split": False}) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert (v.topics_dir / "pets.md").read_text().count("Cat Miso eats salmon kibble") == 1


def test_hand_named_topic_file_is_addressable(tmp_path):
    v = make(tmp_path, {"My Notes": "- Dentist is Dr. Silva\n"})
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
    v = make(tmp_path, {"a": "- Same line\n", "b": "- Same line\n"})
    with pytest.raises(MemkitError, match="give --topic"):
        v.forget(match="Same line")
    v.forget(match="Same line", topic="b")
    assert [e.topic for e in v.entries()] == ["a"]


def test_new_topic_name_never_reuses_an_existing_topic():
    assert _new_topic_name({"name": "cooking"}, [], {"cooking", "general"}) == "cooking-2"


def test_transcript_null_and_string_parts():
    data = b'[{"role": "assistant", "content": null}, {"role": "user", "content": ["hi", {"text": "there"}]}]'
    assert [(m.role, m.content) for m in parse_transcript(data)] == [("user", "hi there")]


def test_split_keeps_a_custom_heading_and_the_summary(tmp_path):
    from memkit.split import split_topic

    themes = {"rice": "rice paella bomba saffron", "bread": "bread sourdough flour oven", "kimchi": "kimchi cabbage ferment jar"}
    lines = [f"- {words} note {i} {theme}\n" for theme, words in themes.items() for i in range(8)]
    head = "---\ntitle: Cooking\nsummary: recipes from grandma\n---\n# Cooking — recipes from grandma Rosa, do not share\n\n"
    v = make(tmp_path, {"cooking": head + "".join(lines)})
    plan = split_topic(v.searcher, "cooking", min_part=3)
    texts = "".join((v.topics_dir / f"{n}.md").read_text() for n in plan.names)
    assert texts.count("# Cooking — recipes from grandma Rosa, do not share") == 1
    assert "parent_summary: recipes from grandma" in texts


def test_topic_files_whose_names_slug_alike_keep_separate_rows(tmp_path):
    v = make(tmp_path, {"my notes": "- first\n", "my_notes": "- second\n"})
    assert v.index().entries == 2
    fresh = Vault(v.root, embedder=FakeEmbedder())
    assert fresh.index().new == 0  # nothing re-embedded: each file has its own row in the index
