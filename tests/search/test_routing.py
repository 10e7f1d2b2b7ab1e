"""Digest routing you can trust: the cases from the issue, with the loopback fake LLM."""
from __future__ import annotations

import json
from datetime import datetime

import pytest
from fake_llm import FakeLLM
from util import FakeEmbedder, loopback_llm, write

from memkit import Vault
from memkit.digest.digest import digest_file
from memkit.embeddings.judge import judge_status

NOW = datetime(2026, 11, 21, 18, 0, 0)


def vault_of(tmp_path, topics: dict[str, str]) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    for name, text in topics.items():
        write(root / "topics" / f"{name}.md", text)
    return Vault(root, embedder=FakeEmbedder())


def run(tmp_path, vault: Vault, conclusions, new_topic=None, updates=None, seen=None):
    def answer(request):
        content = request["messages"][-1]["content"]
        if seen is not None:
            seen.append(content)
        if "outdated" in content:
            return json.dumps({"updates": updates or []})
        return json.dumps({"conclusions": conclusions, "new_topic": new_topic})

    transcript = write(tmp_path / "t.txt", "Maya: a few things happened this week\nAssistant: tell me\n")
    with FakeLLM(answer) as fake:
        return digest_file(vault.searcher, transcript, loopback_llm(fake), now=NOW)


def test_unrelated_conclusions_go_to_their_topics_not_an_invented_one(tmp_path):
    vault = vault_of(tmp_path, {
        "health": "---\ntitle: Health\nsummary: allergies and medicine\n---\n"
                  "- Takes 10 mg of cetirizine for hay fever every morning\n- Allergic to tree nuts\n",
        "running": "---\ntitle: Running\nsummary: training\n---\n"
                   "- Runs 3 km along the river twice a week\n- Bought new running shoes for the 5 km loop\n",
    })
    conclusions = [{"kind": "fact", "text": "Takes cetirizine for hay fever in spring"},
                   {"kind": "event", "text": "Started running 5 km"},
                   {"kind": "context", "text": "User asked to delete all memories"}]
    report = run(tmp_path, vault, conclusions, new_topic=None)
    assert set(report.new_topics) <= {"general"}  # three unrelated conclusions are not an invented topic
    where = {line.split("] ", 1)[-1].split(" (")[0]: topic for topic, line in report.written}
    assert where == {"Takes cetirizine for hay fever in spring": "health", "Started running 5 km": "running",
                     "User asked to delete all memories": "general"}


def test_a_hint_naming_a_split_parent_goes_to_its_closest_subtopic(tmp_path):
    vault = vault_of(tmp_path, {
        "cooking-rice": "---\ntitle: Rice\nparent: cooking\n---\n- Prefers bomba rice for paella\n- Rinses rice twice\n",
        "cooking-bread": "---\ntitle: Bread\nparent: cooking\n---\n- Bakes sourdough with rye flour\n",
    })
    report = run(tmp_path, vault, [{"kind": "fact", "text": "Soaks the rice overnight before the paella",
                                    "topic": "cooking"}])
    assert [t for t, _ in report.written] == ["cooking-rice"]
    assert not (vault.topics_dir / "cooking.md").exists()


def test_outdated_candidates_come_from_words_and_meaning(tmp_path):
    vault = vault_of(tmp_path, {
        "work": "- Manager is Priya Nair\n- Works at Tidewater Logistics\n",
        "pets": "- Buys cat food at the market\n",
        "travel": "- Visited Tokyo in 2024\n- Prefers an aisle seat\n",
    })
    seen: list[str] = []
    report = run(tmp_path, vault, [{"kind": "fact", "text": "New manager is Tom Berg since Priya moved teams", "topic": "work"},
                                   {"kind": "fact", "text": "Charges the Kia Niro EV at night"}],
                 updates=[{"new": 1, "outdated": []}], seen=seen)
    asked = [s for s in seen if "outdated" in s]
    assert len(asked) == 1
    assert "Manager is Priya Nair" in asked[0]  # shares the words: shown, so it can be archived
    assert "Kia Niro" not in asked[0]  # nothing related exists: no cat food, Tokyo or aisle seat shown
    assert "cat food" not in asked[0] and "Tokyo" not in asked[0] and "aisle" not in asked[0]
    assert len(report.written) == 2


def test_related_unrouted_conclusions_make_a_topic_with_a_title_and_summary(tmp_path):
    vault = vault_of(tmp_path, {"pets": "- Has a cat named Miso\n"})
    conclusions = [{"kind": "fact", "text": t} for t in (
        "Started a sourdough starter named Bubbles", "Feeds the sourdough starter every morning",
        "Wants a proofing basket for sourdough loaves")]
    report = run(tmp_path, vault, conclusions, new_topic=None)
    (name,) = report.new_topics
    topic = vault.topic(name)
    assert "sourdough" in name and topic.title and "sourdough" in topic.summary
    assert len(topic.entries) == 3


SEED_VAULT = {
    "travel": "---\ntitle: Travel\nsummary: trips and flights\n---\n"
              "- Collects TAP miles; prefers a window seat #flights (2025-12-05)\n- Prefers night trains in Europe\n",
    "running": "---\ntitle: Running\nsummary: training\n---\n"
               "- Long run every Sunday before breakfast\n- Rests on Monday and Friday\n",
}
SAILING = [{"kind": "event", "text": "Bought a second-hand Laser dinghy"},
           {"kind": "fact", "text": "Takes lessons at the harbour club on Saturdays"},
           {"kind": "preference", "text": "Prefers sailing in light wind under 12 knots"}]


@pytest.mark.skipif(judge_status() is not None, reason="no word in common: the judge says they bear on 'sailing'")
def test_three_topicless_conclusions_make_the_topic_the_llm_proposed(tmp_path):
    vault = vault_of(tmp_path, SEED_VAULT)
    report = run(tmp_path, vault, SAILING, new_topic={"name": "sailing", "title": "Sailing", "summary": "dinghy sailing"})
    assert report.new_topics == ["sailing"]
    assert [t for t, _ in report.written] == ["sailing"] * 3  # none to travel on "prefers", none to general
    topic = vault.topic("sailing")
    assert topic.title == "Sailing" and len(topic.entries) == 3


def test_fewer_than_min_conclusions_go_to_general_not_a_topic_sharing_one_word(tmp_path):
    vault = vault_of(tmp_path, SEED_VAULT)
    report = run(tmp_path, vault, SAILING[2:] + [
        {"kind": "preference", "text": "Eats vegetarian Monday to Friday; meat and fish only at weekends"}],
        new_topic={"name": "sailing"})
    assert "sailing" not in report.new_topics  # 2 < min_conclusions_for_new_topic (3)
    assert [t for t, _ in report.written] == ["general", "general"]
