"""A session's digest takes the topic the context detected for it as the hint of each conclusion
the LLM routes nowhere (issue 30.5); a transcript, or a session with no detected topic, does not."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder, write

from memkit import Vault

T0 = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc)
COOKING = ["Prefers bomba rice for paella", "Paella pan is a carbon steel paellera",
           "Rice to broth ratio for paella is one to three", "Never stirs paella rice once spread",
           "Saffron for paella steeps in warm broth", "Uses homemade chicken broth never stock cubes"]
NEW = "Maya bought a new gadget last week"


def answer(request: dict) -> str:
    prompt = last_user_message(request)
    if "<transcript>" in prompt:  # no topic named
        return json.dumps({"conclusions": [{"kind": "fact", "text": NEW}], "new_topic": None})
    if "outdated" in prompt:
        return json.dumps({"updates": []})
    return "{}"


def make(tmp_path, fake: FakeLLM) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "memkit.yaml", f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n")
    head = "---\ntitle: Cooking\nsummary: paella and rice\nupdated: 2026-02-01T10:00:00\n---\n# cooking\n\n"
    write(root / "topics" / "cooking.md", head + "".join(f"- {e}\n" for e in COOKING))
    return Vault(root, embedder=FakeEmbedder())


def where(v: Vault) -> list[str]:
    return [t.name for t in v.topics() if any(NEW in e.text for e in v.store.topic(t.name).entries)]


def test_the_detected_topic_is_the_hint(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        ctx = v.context("paella rice broth saffron paellera", session="dinner", now=T0.replace(tzinfo=None))
        assert ctx.topic == "cooking"  # detected, kept in the context state
        v.conversations.append("dinner", "user", "I bought a new gadget last week", now=T0, exact=True)
        v.conversations.digest("dinner")
        assert where(v) == ["cooking"]


def test_without_a_detected_topic_no_hint(tmp_path):
    with FakeLLM(answer) as fake:
        v = make(tmp_path, fake)
        v.conversations.new(session_id="other", now=T0)
        v.conversations.append("other", "user", "I bought a new gadget last week", now=T0, exact=True)
        v.conversations.digest("other")
        assert where(v) != ["cooking"]
