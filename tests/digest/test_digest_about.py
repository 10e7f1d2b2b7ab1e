"""The digest writes who each conclusion is about ((people: …), resolved through people.md) and
sets the keyed fact a conclusion states (the old value archived), against a real loopback LLM."""
from __future__ import annotations

import json
import re
from datetime import date, datetime

from fake_llm import FakeLLM
from util import loopback_llm, vault_with, write

from memkit.digest.digest import digest_file

NOW = datetime(2026, 11, 21, 18, 0, 0)
PEOPLE = "# People\n\n- Maya (self)\n- Ana (family: sister): lives in Porto\n"
CONCLUSIONS = [
    {"kind": "decision", "text": "Maya and Ana will share a flat in Porto", "people": ["user", "ana"],
     "key": "city", "value": "Porto"},
    {"kind": "fact", "text": "Ana starts a climbing course in March", "people": "Ana"},
    {"kind": "fact", "text": "The router was replaced", "people": [3, None], "key": "due", "value": "x"},
]


def responder(request):
    if "outdated" in request["messages"][-1]["content"]:
        return json.dumps({"updates": []})
    return json.dumps({"conclusions": CONCLUSIONS})


def test_people_and_a_keyed_fact_from_a_conversation_of_two(tmp_path):
    vault = vault_with(tmp_path, {"home": "- Has a balcony with tomatoes (2026-01-01)\n"})
    write(vault.root / "people.md", PEOPLE)
    vault.facts.set("city", "Lisbon", today=date(2026, 1, 5))
    chat = write(tmp_path / "chat.txt", "Maya: Ana and I found a flat in Porto!\nAna: we move in May.\n")
    with FakeLLM(responder) as fake:
        dry = digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW, dry_run=True)
        assert dry.facts == [{"key": "city", "value": "Porto", "old": "Lisbon", "changed": True, "id": None}]
        assert vault.facts.get("city").value == "Lisbon"
        report = digest_file(vault.searcher, chat, loopback_llm(fake), now=NOW)
        prompt = fake.requests[0]["messages"][0]["content"]
    assert "- Ana (family: sister): lives in Porto" in prompt and '"people"' in prompt
    lines = [line for _, line in report.written]
    assert "- [decision] Maya and Ana will share a flat in Porto (people: Maya, Ana) (city: Porto) (from chat.txt) (2026-11-21)" in lines
    assert "- [fact] Ana starts a climbing course in March (people: Ana) (from chat.txt) (2026-11-21)" in lines
    assert "- [fact] The router was replaced (from chat.txt) (2026-11-21)" in lines  # malformed people and a reserved key: left out
    assert [(f["key"], f["value"], f["old"]) for f in report.facts] == [("city", "Porto", "Lisbon")]
    assert "set city: Porto" in report.summary() and report.to_dict()["facts"][0]["changed"] is True
    assert [(v.value, v.live) for v in vault.facts.history("city")] == [("Lisbon", False), ("Porto", True)]
    vault.changed()

    def found(**filters) -> set[str]:
        return {re.sub(r"^\[\w+\] ", "", h.text.split(" (")[0]) for h in vault.search("flat climbing router balcony", threshold=None, k=10,
                                                           **filters)}

    shared = "Maya and Ana will share a flat in Porto"
    assert found(person="Ana") == {shared, "Ana starts a climbing course in March"}
    assert shared in found(person="Maya") and found(person="Maya") == found(person="me")  # the user's side too
    assert "Ana starts a climbing course in March" not in found(person="me")
    assert found(where=["city=Porto"]) == {shared, "city: Porto"}
