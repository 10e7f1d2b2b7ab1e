"""A split topic is never recreated (issue 26.7): after `memkit split general`, or a split of a
part one level down, a plain add, an add to the old name and a digest all go to a part, at any
depth, and `memkit check` stays quiet. Parts named without an LLM are named after their words."""
from __future__ import annotations

import json
from datetime import datetime

from click.testing import CliRunner, Result
from fake_llm import FakeLLM
from test_split import make_vault, themed_lines
from util import loopback_llm, write

from memkit import Vault
from memkit.digest.digest import digest_file
from memkit.frontends.cli.group import main
from memkit.split.split import split_topic


def cli(vault: Vault, *args: str) -> Result:
    return CliRunner().invoke(main, ["--vault", str(vault.root), *args], obj={"vault_obj": vault},
                              catch_exceptions=False)


def topic_files(vault: Vault) -> set[str]:
    return {p.stem for p in vault.topics_dir.glob("*.md")}


def test_a_plain_add_after_splitting_general_goes_to_a_part(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "general.md", "\n".join(themed_lines()) + "\n")
    assert cli(vault, "split", "general").exit_code == 0
    assert "general" not in topic_files(vault)
    out = cli(vault, "add", "Likes kimchi with napa cabbage and brine").output
    assert "general" not in topic_files(vault), out
    entry = vault.store.find(match="napa cabbage and brine")
    assert entry.topic.startswith("general-") and "kimchi" in " ".join(e.text for e in vault.entries(entry.topic)[:3])
    cli(vault, "add", "Zorblax quuxes the frobnicator")  # no word in common with any part: the catch-all
    assert "general" not in topic_files(vault)
    assert vault.store.find(match="Zorblax").topic == "general-other"
    result = cli(vault, "check")
    assert result.exit_code == 0, result.output


def test_adds_go_down_through_a_part_split_in_turn(tmp_path):
    vault = make_vault(tmp_path)
    part = "---\ntitle: \"Cooking: general\"\nparent: cooking\n---\n# Cooking: general\n\n"
    write(vault.topics_dir / "cooking-tea.md", part.replace("general", "tea") + "- Drinks green sencha tea daily\n")
    write(vault.topics_dir / "cooking-general.md", part + "\n".join(themed_lines()) + "\n")
    split_topic(vault.searcher, "cooking-general")
    assert "cooking-general" not in topic_files(vault)
    for text in ("Likes bread with a rye sourdough starter", "Zorblax quuxes the frobnicator"):
        entry = vault.add(text, topic="cooking")
        assert entry.topic.startswith("cooking-general-"), entry
    assert vault.add("Drinks sencha tea with lunch", topic="cooking").topic == "cooking-tea"
    assert not {"cooking", "cooking-general"} & topic_files(vault)
    result = cli(vault, "check")
    assert result.exit_code == 0, result.output


def test_a_digest_after_splitting_general_never_recreates_it(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "general.md", "\n".join(themed_lines()) + "\n")
    split_topic(vault.searcher, "general")
    reply = json.dumps({"conclusions": [{"kind": "fact", "text": "Owns a kayak named Blue Heron"}]})
    with FakeLLM(lambda r: reply if "outdated" not in r["messages"][-1]["content"] else '{"updates": []}') as fake:
        report = digest_file(vault.searcher, write(tmp_path / "t.txt", "Maya: my kayak\n"), loopback_llm(fake),
                             now=datetime(2026, 11, 21))
    assert [t for t, _ in report.written] == ["general-other"]
    assert "general" not in topic_files(vault)


# ---- names a person would choose -------------------------------------------------------------

def parts(tmp_path, name: str, lines: list[str]) -> dict[str, list[str]]:
    vault = make_vault(tmp_path)
    write(vault.topics_dir / f"{name}.md", "\n".join(f"- {line}" for line in lines) + "\n")
    plan = split_topic(vault.searcher, name, min_part=3, dry_run=True)
    return {p.name: [e.text for e in p.entries] for p in plan.parts}


def test_a_part_is_named_by_two_words_when_one_does_not_say_what_its_entries_share(tmp_path):
    brew = ["Makes cold brew coffee with a coarse grind", "Cold brew steeps twelve hours in the fridge",
            "Dilutes the cold brew with oat milk", "Keeps the cold brew jar on the top shelf",
            "Cold brew ratio is one to eight", "Serves coffee cold over ice in summer"]
    bread = [f"Bakes sourdough bread with {w} flour on sundays" for w in ("rye", "spelt", "wheat", "einkorn", "emmer", "barley")]
    names = set(parts(tmp_path, "cooking", brew + bread))
    assert names - {"cooking-general"} == {"cooking-brew", "cooking-sourdough"}, names  # not cooking-cold


def test_a_part_is_never_named_after_its_parent_or_a_word_like_daily(tmp_path):
    travels = [f"Travels light with one {w} backpack" for w in ("grey", "blue", "green", "red", "black", "small")]
    sleep = [f"Sleeps eight hours daily, {w}" for w in ("mostly", "usually", "ideally", "rarely less", "weekends more", "no screens")]
    names = set(parts(tmp_path, "travel", travels + sleep))
    assert not any(n.endswith(("-travels", "-daily", "-part-1", "-part-2")) for n in names), names
    assert names == {"travel-backpack", "travel-sleeps"}, names


def test_a_part_two_words_in_the_order_said():
    from memkit.formats.topic import parse_topic_text
    from memkit.split.naming import name_words
    lines = ["Batch cooks lentil soup", "Soup for the week", "Soup freezes well", "Soup tubs of 500 ml",
             "Soup pot holds eight litres"]
    topic = parse_topic_text("\n".join(f"- {line}" for line in lines) + "\n", "cooking", "topics/cooking.md")
    assert name_words(topic, [0, 1, 2, 3, 4], ["soup", "batch"], set()) == ["soup"]  # in every entry: enough
    assert name_words(topic, [0, 1, 2, 3, 4], ["batch", "soup"], set()) == ["batch", "soup"]  # in 1 of 5: not alone
    assert name_words(topic, [0, 1, 2, 3, 4], ["batch", "soup"], {"cooking-batch"}) == ["soup"]  # taken


def test_plain_adds_that_split_general_automatically_then_go_to_its_parts(tmp_path):
    vault = make_vault(tmp_path, topic_split_threshold_lines=20)
    lines = [line[2:].rsplit(" (", 1)[0] for line in themed_lines(per_theme=8)]
    for text in lines[:21]:
        vault.add(text)
    assert "general" not in topic_files(vault) and len(vault.store.subtopics("general")) >= 2
    for text in lines[21:]:
        assert vault.add(text).topic.startswith("general-")
    assert "general" not in topic_files(vault)
    result = cli(vault, "check")
    assert result.exit_code == 0, result.output
