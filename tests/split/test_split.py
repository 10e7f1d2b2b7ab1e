"""Splitting a topic into subtopics: every entry survives exactly once, byte for byte."""
from __future__ import annotations

import json
import os
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from fake_llm import FakeLLM, Reply, last_user_message
from util import FakeEmbedder, vault_with, write

from memkit import MemkitError, Vault
from memkit.config.settings import Config
from memkit.formats.markdown import scan_blocks, split_lines
from memkit.formats.names import check_topic_name
from memkit.formats.topic import parse_topic_text, read_topic
from memkit.llm.client import HTTPChatLLM, LLMSettings
from memkit.split.split import (
    NothingToSplit,
    SplitConflict,
    apply_split,
    maybe_split,
    needs_split,
    plan_split,
    split_topic,
)

THEMES = {
    "rice": ["bomba", "paella", "saffron", "sushi", "risotto", "arborio", "basmati", "steamed", "cooker", "grain"],
    "bread": ["sourdough", "starter", "loaf", "flour", "oven", "crust", "yeast", "knead", "proof", "baguette"],
    "kimchi": ["napa", "cabbage", "gochugaru", "ferment", "jar", "brine", "radish", "garlic", "spicy", "crock"],
}


def make_vault(tmp_path: Path, name: str = "v", **config) -> Vault:
    root = tmp_path / name
    Vault.init(root, profile=False)
    return Vault(root, config=Config(**config) if config else None, embedder=FakeEmbedder())


def themed_lines(per_theme: int = 20, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for theme, words in THEMES.items():
        for i in range(per_theme):
            lines.append(f"- Likes {theme} with {' and '.join(rng.sample(words, 3))} ({2026}-02-{i % 28 + 1:02d})")
    rng.shuffle(lines)
    return lines


def cooking_text(lines: list[str], nl: str = "\n") -> str:
    head = ["---", "title: Cooking", "summary: food and recipes", "created: 2026-01-05T10:00:00",
            "updated: 2026-02-12T14:30:00", "---", "# Cooking", ""]
    return nl.join(head + lines) + nl


def theme_of(text: str) -> str:
    return next(t for t in THEMES if t in text)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".memkit" not in p.parts}


def llm_for(fake: FakeLLM) -> HTTPChatLLM:
    llm = HTTPChatLLM(LLMSettings(base_url=fake.base_url, model="m", timeout_s=5))
    llm.retry_delay_s = 0
    return llm


# ---- the invariant on many random topics -------------------------------------------------------

VOCAB = ("rice bread kimchi garden tomato basil compost python rust docker kernel bike chain tyre "
         "mountain trail rain coffee espresso grinder piano scales chord sleep dream tea kettle "
         "camera lens film budget taxes invoice train ticket berlin lisbon").split()


def random_words(rng: random.Random, theme: list[str], n: int) -> str:
    return " ".join(rng.choice(theme) if rng.random() < 0.7 else rng.choice(VOCAB) for _ in range(n))


def random_topic(rng: random.Random) -> str:
    """A topic file as a person might write it: lists, nested and continued items, prose, fences,
    comments, sub-headings, rules, unknown frontmatter; LF or CRLF; with or without final newline."""
    nl = rng.choice(["\n", "\r\n"])
    themes = [rng.sample(VOCAB, 4) for _ in range(rng.randint(1, 4))]
    out: list[str] = []
    fm = rng.random()
    if fm < 0.7:
        out += ["---", "title: Mixed notes", "created: 2025-12-01T08:00:00"]
        if rng.random() < 0.5:
            out += ["aliases:", "  - misc", "  - stuff"]
        if rng.random() < 0.3:
            out += ["# a comment in the frontmatter", "source: 'hand: written'"]
        if rng.random() < 0.5:
            out += ["summary: >", "  folded", "  summary"]
        out.append("---")
    if rng.random() < 0.15:
        out += rng.choice([["<!-- top -->"], ["<!--", "# inside a comment, not the title", "-->"]])
    if fm >= 0.7 or rng.random() < 0.8:  # a body starting with "---" would be frontmatter
        out += ["# Mixed notes", ""]
    for _ in range(rng.randint(5, 70)):
        theme = rng.choice(themes)
        kind = rng.random()
        words = random_words(rng, theme, rng.randint(2, 8))
        if kind < 0.45:
            bullet = rng.choice(["- ", "* ", "+ ", "1. ", "2) ", "  - ", "    * ", "\t- "])
            deco = rng.choice(["", "[fact] ", "[decision] "])
            tail = rng.choice(["", " #tag", " (2026-01-0%d)" % rng.randint(1, 9)])
            out.append(f"{bullet}{deco}{words}{tail}")
            if rng.random() < 0.15:
                out.append(rng.choice(["      ", "\t\t", "  "]) + random_words(rng, theme, 3))  # continuation
        elif kind < 0.65:
            for _ in range(rng.randint(1, 3)):
                out.append(random_words(rng, theme, rng.randint(3, 9)))
        elif kind < 0.72:
            out += ["```", random_words(rng, theme, 3), "- " + random_words(rng, theme, 2), "", "x = 1", "```"]
        elif kind < 0.78:
            out.append(f"## {random_words(rng, theme, 2).title()}")
        elif kind < 0.84:
            out.append(rng.choice(["<!-- note to self -->", "<!--", "-->"]) if rng.random() < 0.3
                       else "<!-- keep: " + random_words(rng, theme, 2) + " -->")
            if out[-1] == "<!--":
                out += [random_words(rng, theme, 3), "", "- inside a comment", "-->"]
        elif kind < 0.97:
            out.append(rng.choice(["---", "***", "===", "```", "~~~", "a --> b", "### Heading ###"]))
        else:
            out.append("!!! ???")  # a paragraph with no words: a zero vector
        if rng.random() < 0.5:
            out.append("")
    if rng.random() < 0.1:  # mixed line endings: each line keeps its own
        text = "".join(line + rng.choice(["\n", "\r\n"]) for line in out[:-1]) + out[-1]
    else:
        text = nl.join(out)
    if rng.random() < 0.8:
        text += nl
    return text


def entry_blocks(text: str) -> tuple[Counter, Counter]:
    """(entries as tuples of their exact lines, non-blank body lines that are not entries)."""
    nl = "\r\n" if "\r\n" in text.split("\n", 1)[0] + "\n" else "\n"
    topic = parse_topic_text(text, "t", "t.md")
    lines = split_lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += nl  # a part never ends without a newline; the line itself is the same
    inside = set()
    blocks: Counter = Counter()
    for e in topic.entries:
        blocks[tuple(lines[e.line - 1:e.end_line])] += 1
        inside.update(range(e.line - 1, e.end_line))
    rest = Counter(lines[i] for i in range(topic.body_start, len(lines)) if i not in inside and lines[i].strip())
    return blocks, rest


def test_every_entry_survives_exactly_once_on_random_topics(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # this test is about content; fsync only costs time
    rng = random.Random(20260212)
    split_count = refused = 0
    vault = make_vault(tmp_path)
    for case in range(30):
        text = random_topic(rng)
        bom = rng.random() < 0.1
        shutil.rmtree(vault.topics_dir)  # a fresh vault for each case, without the cost of init
        write(vault.root / "index.txt", "")
        parent = vault.topics_dir / "mixed.md"
        write(parent, (b"\xef\xbb\xbf" if bom else b"") + text.encode())
        n = len(parse_topic_text(text, "mixed", "x").entries)
        min_part = rng.randint(2, 5)
        if n < 2 * min_part:
            with pytest.raises(NothingToSplit, match=f"topic mixed has only {n} entr(y|ies); nothing to split"):
                plan_split(vault.searcher, "mixed", min_part=min_part)
            refused += 1
            continue
        before = tree(vault.root)
        try:
            plan = plan_split(vault.searcher, "mixed", min_part=min_part)
        except NothingToSplit as exc:  # e.g. too few entries with words for two parts
            assert "do not fall into distinct subtopics" in str(exc)
            assert tree(vault.root) == before
            refused += 1
            continue
        assert tree(vault.root) == before, "planning writes nothing"
        names = apply_split(vault.store, plan)
        split_count += 1
        assert not parent.exists()
        assert len(names) == len(set(names)) >= 2
        want_blocks, want_rest = entry_blocks(text)
        got_blocks: Counter = Counter()
        got_rest: Counter = Counter()
        for name in names:
            path = vault.topics_dir / f"{name}.md"
            assert check_topic_name(name) == name and name.startswith("mixed-")
            data = path.read_bytes()
            assert data.startswith(b"\xef\xbb\xbf") == bom
            part = read_topic(path, name, f"topics/{name}.md")
            assert part.meta["parent"] == "mixed"
            blocks, rest = entry_blocks(part.raw)
            got_blocks += blocks
            heading = f"# {part.meta['title']}"
            first_heading = next(line for line in split_lines(part.raw)[part.body_start:] if line.strip())
            assert first_heading.rstrip("\r\n") == heading
            rest[first_heading] -= 1
            got_rest += rest
            nl = "\r\n" if text.split("\n", 1)[0].endswith("\r") else "\n"
            header = split_lines(part.raw)[: part.body_start + 1]  # copied frontmatter lines keep theirs
            generated = [header[0], header[-1]] + [x for x in header if re.match(r"(title|created|updated|parent):", x)]
            assert len(generated) == 6 and all(line.endswith(nl) for line in generated), "the parent's newline style"
        assert got_blocks == want_blocks, f"case {case}: entries differ"
        # lines a person wrote that are not entries: all kept, except the title heading
        title_lines = [line for line in want_rest if re.match(r"^# ", line)]
        missing = want_rest - got_rest
        assert sum(missing.values()) <= 1 and all(line in title_lines for line in missing), f"case {case}: {missing}"
        # the one line a split may add: the closing line of a fence the person never closed
        parsed = parse_topic_text(text, "mixed", "x")
        fence = scan_blocks(split_lines(text), parsed.body_start).unclosed_fence
        newline = "\r\n" if text.split("\n", 1)[0].endswith("\r") else "\n"
        allowed = Counter({fence + newline: 1}) if fence else Counter()
        assert (got_rest - want_rest) - allowed == Counter(), f"case {case}: lines were added or duplicated"
        recent = {r.topic for r in vault.recent()}
        assert "mixed" not in recent and set(names) <= recent
    assert split_count >= 20 and refused >= 1, (split_count, refused)


# ---- naming ------------------------------------------------------------------------------------


def test_word_names_from_a_three_theme_topic(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    plan = split_topic(vault.searcher, "cooking")
    assert plan.named_by == "words"
    assert sorted(plan.names) == ["cooking-bread", "cooking-kimchi", "cooking-rice"]
    for part in plan.parts:
        theme = part.name.split("-")[1]
        assert {theme_of(e.text) for e in part.entries} == {theme}
        assert len(part.entries) == 20
        assert theme in part.summary and part.title == f"Cooking: {theme}"
    assert not (vault.topics_dir / "cooking.md").exists()
    rice = read_topic(vault.topics_dir / "cooking-rice.md", "cooking-rice", "topics/cooking-rice.md")
    assert rice.meta["parent"] == "cooking"
    assert rice.meta["title"] == "Cooking: rice"
    assert str(rice.meta["created"]) == "2026-01-05 10:00:00"


def test_plans_are_deterministic(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines(seed=5) + ["- tea with lemon", "- tea"]))
    one = plan_split(vault.searcher, "cooking")
    two = plan_split(vault.searcher, "cooking")
    assert [(p.name, [e.line for e in p.entries]) for p in one.parts] == \
           [(p.name, [e.line for e in p.entries]) for p in two.parts]


def test_small_clusters_and_wordless_entries_go_to_general(tmp_path):
    vault = make_vault(tmp_path)
    lines = themed_lines(per_theme=12)[:24] + ["- Visited Lisbon in spring", "- ...", "- !!!"]
    write(vault.topics_dir / "cooking.md", cooking_text(lines))
    plan = plan_split(vault.searcher, "cooking", min_part=6)
    general = plan.parts[-1]
    assert general.name == "cooking-general" and general.title == "Cooking: general"
    assert {"- ...", "- !!!"} <= {f"- {e.text}" for e in general.entries}
    assert sum(len(p.entries) for p in plan.parts) == len(lines)


def names_reply(request: dict, names: dict[str, str]) -> str:
    """Answer the naming prompt from what each subtopic's samples are about."""
    prompt = last_user_message(request)
    blocks = re.split(r"\n(?=Subtopic \d+ )", prompt.split("\n\n", 1)[1])
    parts = []
    for block in blocks:
        if not block.startswith("Subtopic"):
            continue
        theme = Counter(t for t in THEMES for _ in re.finditer(t, block)).most_common(1)[0][0]
        parts.append({"name": names[theme], "title": f"All about {theme}", "summary": f"{theme} notes"})
    return json.dumps({"parts": parts})


def test_vault_split_uses_the_configured_llm_unless_told_none(tmp_path, no_thread_leaks):
    names = {"rice": "rice", "bread": "baking", "kimchi": "fermenting"}
    with FakeLLM(lambda req: names_reply(req, names)) as fake:
        vault = make_vault(tmp_path, llm=LLMSettings(base_url=fake.base_url, model="m", timeout_s=5))
        write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
        assert vault.split("cooking", dry_run=True).named_by == "llm"  # llm="auto": memkit.yaml's
        assert len(fake.requests) == 1
        assert vault.split("cooking", llm=None, dry_run=True).named_by == "words"
        entry = vault.add("Likes rice with bomba and saffron", topic="cooking")  # past the threshold: split at once
        assert not (vault.topics_dir / "cooking.md").exists()
        # issue 41 item 5: the split an add makes is named by the configured LLM too, not from words
        assert len(fake.requests) == 2
        assert sorted(p.stem for p in vault.topics_dir.glob("cooking-*.md")) == [
            "cooking-baking", "cooking-fermenting", "cooking-rice"]
        assert entry.topic == "cooking-rice"


def test_llm_names_the_parts(tmp_path, no_thread_leaks):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    names = {"rice": "Rice Dishes", "bread": "cooking-baking", "kimchi": "fermenting"}
    with FakeLLM(lambda req: names_reply(req, names)) as fake:
        plan = split_topic(vault.searcher, "cooking", llm=llm_for(fake))
    assert plan.named_by == "llm"
    assert len(fake.requests) == 1
    prompt = last_user_message(fake.requests[0])
    assert "cooking" in prompt and "Subtopic 3" in prompt and "bomba" in prompt
    by_theme = {theme_of(p.entries[0].text): p for p in plan.parts}
    assert by_theme["rice"].name == "cooking-rice-dishes"
    assert by_theme["bread"].name == "cooking-baking"  # the LLM's own prefix is not doubled
    assert by_theme["kimchi"].name == "cooking-fermenting"
    assert by_theme["rice"].title == "All about rice" and by_theme["rice"].summary == "rice notes"
    text = (vault.topics_dir / "cooking-rice-dishes.md").read_text()
    assert "# All about rice\n" in text and "summary: rice notes\n" in text
    assert {r.topic: r.summary for r in vault.recent()}["cooking-fermenting"] == "kimchi notes"


@pytest.mark.parametrize("replies", [
    ["Sure! Rice, bread and kimchi."],  # prose, then prose again after the repair request
    ['{"parts": [{"name": "rice"}]}'],  # the wrong number of parts
    [Reply(status=500)],  # the server is down
])
def test_llm_failure_falls_back_to_word_names(tmp_path, replies, no_thread_leaks, caplog):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    with FakeLLM(replies) as fake:
        plan = split_topic(vault.searcher, "cooking", llm=llm_for(fake))
    assert plan.named_by == "words"
    assert sorted(plan.names) == ["cooking-bread", "cooking-kimchi", "cooking-rice"]
    assert "naming them from their own words" in caplog.text


def test_unsafe_llm_names_are_made_safe(tmp_path, no_thread_leaks):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    names = {"rice": "../x", "bread": "../../etc/passwd", "kimchi": "CON"}
    with FakeLLM(lambda req: names_reply(req, names)) as fake:
        plan = split_topic(vault.searcher, "cooking", llm=llm_for(fake))
    assert sorted(plan.names) == ["cooking-con", "cooking-etc-passwd", "cooking-x"]
    for name in plan.names:
        assert check_topic_name(name) == name
    assert sorted(p.name for p in vault.topics_dir.iterdir()) == sorted(f"{n}.md" for n in plan.names)
    assert not (tmp_path / "x.md").exists() and not (tmp_path / "etc").exists()


def test_same_or_general_llm_names_stay_unique(tmp_path, no_thread_leaks):
    vault = make_vault(tmp_path)
    lines = themed_lines() + ["- Visited Lisbon", "- !!!"]
    write(vault.topics_dir / "cooking.md", cooking_text(lines))
    names = {"rice": "food", "bread": "food", "kimchi": "general"}
    with FakeLLM(lambda req: names_reply(req, names)) as fake:
        plan = plan_split(vault.searcher, "cooking", llm=llm_for(fake))
    by_theme = {theme_of(p.entries[0].text): p.name for p in plan.parts if p.name != "cooking-general"}
    assert sorted([by_theme["rice"], by_theme["bread"]]) == ["cooking-food", "cooking-food-2"]
    assert by_theme["kimchi"] == "cooking-kimchi"  # "general" is the catch-all's: words name it
    assert plan.names[-1] == "cooking-general"


def test_names_never_collide_with_existing_topics(tmp_path):
    vault = make_vault(tmp_path)
    vault.add("An older rice note", topic="cooking-rice")
    vault.add("Another one", topic="cooking-rice-2")
    before = (vault.topics_dir / "cooking-rice.md").read_bytes()
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    plan = split_topic(vault.searcher, "cooking")
    assert sorted(plan.names) == ["cooking-bread", "cooking-kimchi", "cooking-rice-3"]
    assert (vault.topics_dir / "cooking-rice.md").read_bytes() == before


def test_words_without_a_safe_spelling(tmp_path):
    vault = make_vault(tmp_path)
    lines = [f"- 고춧가루 배추김치 {i}번" for i in range(8)] + [f"- Café crème brûlée numéro {i}" for i in range(8)]
    write(vault.topics_dir / "notes.md", "\n".join(lines) + "\n")
    plan = split_topic(vault.searcher, "notes", min_part=3)
    by_name = {p.name: p for p in plan.parts}
    # a cluster no word can name (none spells in a topic name) is no "notes-part-1": it joins the catch-all
    assert set(by_name) == {"notes-general", "notes-brulee"}
    assert by_name["notes-brulee"].title == "Notes: brûlée"
    assert "고춧가루" in by_name["notes-general"].summary


def test_long_parent_names_give_valid_part_names(tmp_path):
    vault = make_vault(tmp_path)
    parent = "a-very-long-topic-name-that-goes-on-and-on-about-food-and-kitchens"[:64].rstrip("-")
    write(vault.topics_dir / f"{parent}.md", cooking_text(themed_lines(per_theme=8)))
    plan = split_topic(vault.searcher, parent, min_part=4)
    assert len(plan.names) >= 2
    for name in plan.names:
        assert check_topic_name(name) == name and len(name) <= 64


# ---- files, frontmatter, non-entry lines --------------------------------------------------------


def test_non_entry_lines_frontmatter_and_fences_are_kept(tmp_path):
    vault = make_vault(tmp_path)
    rice, bread = themed_lines(seed=2)[:60:3], [f"- Bakes bread with {w} and flour" for w in THEMES["bread"]]
    text = "\n".join([
        "---",
        "title: Cooking",
        "aliases:",
        "  - kitchen",
        "  - food",
        "source: hand written  # a comment",
        "created: 2026-01-05T10:00:00",
        "---",
        "<!-- generated by hand -->",
        "# Cooking",
        "",
        "## Rice",
        "",
        *[line for line in rice if "rice" in line],
        "",
        "## Bread",
        "<!--",
        "bread notes, in a comment",
        "-->",
        *bread,
        "",
        "```",
        "bread dough: flour water salt yeast",
        "",
        "- bread knead 10 minutes",
        "```",
        "",
        "---",
        "<!-- the end -->",
    ]) + "\n"
    write(vault.topics_dir / "cooking.md", text)
    plan = split_topic(vault.searcher, "cooking", min_part=3)
    files = {name: (vault.topics_dir / f"{name}.md").read_text() for name in plan.names}
    rice_name = next(n for n in plan.names if "rice" in n)
    bread_name = next(n for n in plan.names if "bread" in n)
    rice_text, bread_text = files[rice_name], files[bread_name]
    assert "<!-- generated by hand -->\n\n## Rice\n\n- Likes rice" in rice_text
    assert "## Bread\n<!--\nbread notes, in a comment\n-->\n- Bakes bread" in bread_text
    assert "```\nbread dough: flour water salt yeast\n\n- bread knead 10 minutes\n```\n" in bread_text
    assert bread_text.endswith("```\n\n---\n<!-- the end -->\n")
    for name, body in files.items():
        assert "\n# Cooking\n" not in body
        part = parse_topic_text(body, name, "x")
        assert part.meta["aliases"] == ["kitchen", "food"]
        assert part.meta["source"] == "hand written"
        assert part.meta["parent"] == "cooking"
        assert "aliases:\n  - kitchen\n  - food\nsource: hand written  # a comment\n---\n" in body
    fenced = [e for e in parse_topic_text(bread_text, "b", "b").entries if not e.is_list]
    assert len(fenced) == 1 and "knead" in fenced[0].text


def test_title_heading_is_replaced_but_a_heading_in_a_comment_is_kept(tmp_path):
    vault = make_vault(tmp_path)
    head = "<!--\n# not the title\n-->\n<!-- x -->\n# Cooking\n\n"
    write(vault.topics_dir / "cooking.md", head + "\n".join(themed_lines()) + "\n")
    plan = split_topic(vault.searcher, "cooking")
    texts = "".join((vault.topics_dir / f"{n}.md").read_text() for n in plan.names)
    assert texts.count("<!--\n# not the title\n-->\n<!-- x -->\n\n- Likes") == 1
    assert "# Cooking\n" not in texts


def test_frontmatter_that_cannot_be_copied_line_by_line_is_written_anew(tmp_path):
    vault = make_vault(tmp_path)
    fm = "---\ntitle: &t Cooking\nsummary: food\naliases: [*t, kitchen]\nrating: 5\n---\n"
    write(vault.topics_dir / "cooking.md", fm + "\n".join(themed_lines()) + "\n")
    plan = split_topic(vault.searcher, "cooking")
    for name in plan.names:
        part = read_topic(vault.topics_dir / f"{name}.md", name, "x")
        assert part.meta["aliases"] == ["Cooking", "kitchen"] and part.meta["rating"] == 5


def test_splitting_general_names_the_catch_all_other(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "general.md", "\n".join(themed_lines()[:40] + ["- Visited Lisbon", "- !!!"]) + "\n")
    plan = plan_split(vault.searcher, "general")
    assert plan.names[-1] == "general-other"
    assert all(name.startswith("general-") for name in plan.names)


def test_crlf_topic_stays_crlf(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines(), nl="\r\n").rstrip("\r\n"))
    plan = split_topic(vault.searcher, "cooking")
    for name in plan.names:
        data = (vault.topics_dir / f"{name}.md").read_bytes()
        assert data.count(b"\n") == data.count(b"\r\n") > 20
        assert data.endswith(b"\r\n")


def test_index_txt_is_updated(tmp_path):
    vault = make_vault(tmp_path)
    vault.add("Window seat on trains", topic="travel")
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    vault.recent(rebuild=True)
    assert {r.topic for r in vault.recent()} == {"travel", "cooking"}
    plan = split_topic(vault.searcher, "cooking")
    recent = vault.recent()
    assert {r.topic for r in recent} == {"travel", *plan.names}
    summaries = {r.topic: r.summary for r in recent}
    assert summaries["cooking-rice"].startswith("rice, ")


def test_dry_run_writes_nothing_and_shows_a_diff(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    vault.recent(rebuild=True)
    before = tree(vault.root)
    plan = split_topic(vault.searcher, "cooking", dry_run=True)
    assert tree(vault.root) == before
    assert not plan.applied
    diff = plan.diff(vault.store)
    assert tree(vault.root) == before
    for name in plan.names:
        assert f"--- /dev/null\n+++ b/topics/{name}.md\n" in diff
    assert "--- a/topics/cooking.md\n+++ /dev/null\n" in diff
    assert "-- Likes rice with" in diff and "+- Likes rice with" in diff
    assert "+parent: cooking\n" in diff
    assert "--- a/index.txt\n+++ b/index.txt\n" in diff and "|cooking|food and recipes" in diff
    names = apply_split(vault.store, plan)  # the dry-run plan can still be applied
    assert names == plan.names and plan.applied
    with pytest.raises(MemkitError, match="already applied"):
        apply_split(vault.store, plan)


# ---- refusals and failures ------------------------------------------------------------------------


def test_too_few_entries(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()[:9]))
    with pytest.raises(MemkitError, match="^topic cooking has only 9 entries; nothing to split$"):
        plan_split(vault.searcher, "cooking")
    plan = plan_split(vault.searcher, "cooking", min_part=3)
    assert len(plan.parts) >= 2


def test_parent_changed_since_planning(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    plan = plan_split(vault.searcher, "cooking")
    vault.add("Toasts the rice first", topic="cooking", split=False)
    before = tree(vault.root)
    with pytest.raises(SplitConflict, match="topics/cooking.md changed since the split was planned"):
        apply_split(vault.store, plan)
    assert tree(vault.root) == before


def test_part_name_taken_since_planning(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    plan = plan_split(vault.searcher, "cooking")
    vault.add("Someone else's note", topic="cooking-rice")
    before = tree(vault.root)
    with pytest.raises(SplitConflict, match="topics/cooking-rice.md exists now"):
        apply_split(vault.store, plan)
    assert tree(vault.root) == before


def test_a_failed_write_leaves_the_parent_and_no_parts(tmp_path, monkeypatch):
    import memkit.store.store as store_mod

    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    before = tree(vault.root)
    calls = []
    real = store_mod.atomic_write

    def failing(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(path, data)

    monkeypatch.setattr(store_mod, "atomic_write", failing)
    with pytest.raises(MemkitError, match="No space left on device"):
        split_topic(vault.searcher, "cooking")
    assert tree(vault.root) == before


def test_edited_plans_are_checked(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines()))
    plan = plan_split(vault.searcher, "cooking")
    plan.parts[0].entries.pop()
    with pytest.raises(MemkitError, match="leaves out entries"):
        apply_split(vault.store, plan)
    plan = plan_split(vault.searcher, "cooking")
    plan.parts[0].name = "../evil"
    with pytest.raises(MemkitError, match="invalid"):
        apply_split(vault.store, plan)
    assert (vault.topics_dir / "cooking.md").exists()


# ---- automatic split ---------------------------------------------------------------------------------


def test_needs_split_and_maybe_split(tmp_path):
    vault = make_vault(tmp_path, topic_split_threshold_lines=50)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines(per_theme=16)))  # 48 entries
    assert not needs_split(vault.store, "cooking")
    assert maybe_split(vault.searcher, "cooking") is None
    assert (vault.topics_dir / "cooking.md").exists()
    for theme in ("rice", "bread", "kimchi"):
        vault.add(f"Likes {theme} with {' and '.join(THEMES[theme][:3])}", topic="cooking", split=False)
    assert needs_split(vault.store, "cooking")
    plan = maybe_split(vault.searcher, "cooking")
    assert plan is not None and plan.applied
    assert sorted(plan.names) == ["cooking-bread", "cooking-kimchi", "cooking-rice"]
    assert not any(needs_split(vault.store, name) for name in plan.names)


def test_maybe_split_leaves_a_topic_that_does_not_separate(tmp_path):
    vault = make_vault(tmp_path, topic_split_threshold_lines=10)
    write(vault.topics_dir / "same.md", "\n".join(["- !!!"] * 12) + "\n")
    assert needs_split(vault.store, "same")
    assert maybe_split(vault.searcher, "same") is None
    assert (vault.topics_dir / "same.md").exists()


def test_add_over_the_threshold_splits_automatically(tmp_path):
    vault = make_vault(tmp_path, topic_split_threshold_lines=50)
    write(vault.topics_dir / "cooking.md", cooking_text(themed_lines(per_theme=17)))  # 51 entries after add
    entry = vault.add("Likes rice with saffron and paella and bomba", topic="cooking")
    assert not (vault.topics_dir / "cooking.md").exists()
    names = sorted(p.stem for p in vault.topics_dir.glob("cooking-*.md"))
    assert len(names) >= 2
    assert entry.topic in names  # add reports where the entry lives now
    assert any(e.hash == entry.hash and e.line == entry.line for e in vault.topic(entry.topic).entries)


def _split_dying_at_rename(root: Path, n: int) -> None:
    """Split ``big``, killing this process (SIGKILL: nothing is cleaned up) at its ``n``-th rename."""
    import signal

    from util import FakeEmbedder

    count, real = [0], os.replace

    def dying_replace(src, dst, *a, **k):
        count[0] += 1
        if count[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *a, **k)

    os.replace = dying_replace  # in this forked process only
    Vault(root, embedder=FakeEmbedder()).split("big", llm=None)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the splits are forked processes")
def test_a_split_killed_at_any_rename_leaves_each_entry_once(tmp_path: Path) -> None:
    from collections import Counter

    from util import fork, reap

    themes = ["rice paella bomba saffron", "bread sourdough rye flour", "kimchi cabbage ferment jar"]
    lines = [f"- {themes[i % 3]} note number {i}" for i in range(30)]
    n = 1
    while True:
        root = Vault.init(tmp_path / f"v{n}", profile=False).root
        write(root / "topics" / "big.md", "# Big\n\n" + "\n".join(lines) + "\n")
        code = reap(fork(_split_dying_at_rename, root, n))
        assert code in (0, -9), code  # finished, or killed at the n-th rename
        killed = code != 0
        vault = Vault(root)
        vault.add("a later write takes the lock", topic="other")  # recovery runs here
        found = Counter(line for f in (root / "topics").glob("*.md") for line in f.read_text().splitlines()
                        if line.startswith("- ") and "note number" in line)
        assert all(found[line] == 1 for line in lines), (n, killed, +found)
        assert not [p.name for p in (root / "topics").iterdir() if p.name.endswith(".tmp")]
        assert not [p.name for p in root.iterdir() if p.name.endswith(".tmp")]
        assert not (root / ".memkit" / "split-journal.json").exists()
        if not killed:
            break
        n += 1
    assert n >= 4  # the journal, the parts and index.txt: each rename was a kill point


def test_a_split_whose_parent_changes_meanwhile_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    from util import FakeEmbedder

    import memkit.store.store as store_mod

    root = Vault.init(tmp_path / "v", profile=False).root
    lines = [f"- {('basil tomato garden', 'stuff boxes attic')[i % 2]} note {i}" for i in range(24)]
    path = write(root / "topics" / "stuff.md", "\n".join(lines) + "\n")
    vault = Vault(root, embedder=FakeEmbedder())
    real = store_mod.atomic_write
    typed = []

    def write_then_type(target, data):
        real(target, data)
        if not typed and target.name.startswith("stuff-"):  # a person saves the parent mid-split
            typed.append(1)
            with open(path, "a") as fh:
                fh.write("- PERSON TYPED\n")

    monkeypatch.setattr(store_mod, "atomic_write", write_then_type)
    with pytest.raises(MemkitError, match="changed by someone else during the split"):
        vault.split("stuff", llm=None)
    assert "- PERSON TYPED" in path.read_text() and path.read_text().count("note ") == 24
    assert sorted(p.name for p in (root / "topics").iterdir()) == ["stuff.md"]


def test_split_keeps_a_custom_heading_and_the_summary(tmp_path):
    from memkit.split.split import split_topic

    themes = {"rice": "rice paella bomba saffron", "bread": "bread sourdough flour oven", "kimchi": "kimchi cabbage ferment jar"}
    lines = [f"- {words} note {i} {theme}\n" for theme, words in themes.items() for i in range(8)]
    head = "---\ntitle: Cooking\nsummary: recipes from grandma\n---\n# Cooking — recipes from grandma Rosa, do not share\n\n"
    v = vault_with(tmp_path, {"cooking": head + "".join(lines)})
    plan = split_topic(v.searcher, "cooking", min_part=3)
    texts = "".join((v.topics_dir / f"{n}.md").read_text() for n in plan.names)
    assert texts.count("# Cooking — recipes from grandma Rosa, do not share") == 1
    assert "parent_summary: recipes from grandma" in texts
