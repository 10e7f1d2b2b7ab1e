"""Never send a secret anywhere (issue 41.7): redaction runs before a request leaves the process, not
only before a write. A scripted OpenAI-compatible server on loopback records every request body of a
digest, a split, a distill, a proactive opening line and a remote embedder's; none holds a secret,
whether it came from a transcript, a line a person typed into a topic file, or a search query.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta

from fake_embed import FakeEmbedServer
from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder, write

from memkit import Vault
from memkit.llm.client import CommandLLM, HTTPChatLLM, LLMSettings

KEY = "sk-proj-Zq8vXk2LmN4pRt6yWb1cDe3fGh5jKs7u"
AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "hunter22"
CARD = "4111 1111 1111 1111"
BADGE = "QX51234"  # the user's own pattern
SECRETS = (KEY, AWS, PASSWORD, CARD, "4111111111111111", BADGE)
CONFIG = 'redact:\n  patterns: ["(?i)badge no\\\\.? ([A-Z]{2}\\\\d{5})"]\n'

NOW = datetime(2026, 11, 28, 10, 0)
HOME = "".join(f"- Home note {i}: the tomatoes on the balcony need water {i} (2026-01-0{i})\n" for i in range(1, 8)) + (
    f"- The wifi password is {PASSWORD} (2026-01-08)\n"
    f"- My OpenAI key is {KEY} and the AWS one {AWS} (2026-01-08)\n"
    f"- The gym badge no. {BADGE} opens the side door (2026-01-08)\n")
BILLS = f"# Bills\n\n- [pending] Pay the bill with the card {CARD} (due 2026-11-27) (2026-11-24)\n"
TRANSCRIPT = (f"User: my new key is {KEY}, the router password is {PASSWORD}\n"
              f"Assistant: noted. Card {CARD}, badge no. {BADGE}, AWS {AWS}.\n")


def leaks(bodies: list) -> list[str]:
    text = "\n".join(json.dumps(b) for b in bodies)
    return [s for s in SECRETS if s in text]


def answer(request: dict) -> str:
    system = " ".join(m.get("content", "") for m in request.get("messages", []) if m.get("role") == "system")
    last = last_user_message(request)
    if "subtopics" in system:
        k = int(last.split("split into ")[1].split()[0])
        return json.dumps({"parts": [{"name": f"part{i}", "title": f"Part {i}", "summary": "s"} for i in range(k)]})
    if '"profile"' in last or '"profile"' in system:
        return json.dumps({"profile": ["Keeps tomatoes on the balcony"]})
    if "outdated" in last or "outdated" in system:
        return json.dumps({"updates": []})
    if "conclusions" in last or "conclusions" in system:
        return json.dumps({"conclusions": [{"kind": "fact", "text": "Has a new router", "topic": None}],
                           "new_topic": None})
    return "How did paying the bill go?"


def test_no_request_to_the_llm_holds_a_secret(tmp_path):
    root = Vault.init(tmp_path / "v", profile=True).root
    write(root / "topics" / "home.md", "# Home\n\n" + HOME)
    write(root / "topics" / "bills.md", BILLS)
    transcript = write(tmp_path / "t.txt", TRANSCRIPT)
    with FakeLLM(answer) as fake:
        (root / "memkit.yaml").write_text(CONFIG + f"llm: {{base_url: '{fake.base_url}', model: fake, timeout_s: 10}}\n"
                                          "topic_split_threshold_lines: 200\n")
        vault = Vault(root, embedder=FakeEmbedder())
        vault.digest(transcript)
        vault.split("home", min_part=2)
        vault.upkeep.distill(dry_run=True)
        nudge = vault.proactive(now=NOW, last_conversation=NOW - timedelta(days=2))
        assert nudge.opening
        # an LLM a caller hands in gets the vault's own patterns too
        vault.digest(text=TRANSCRIPT, name="again", llm=HTTPChatLLM(LLMSettings(base_url=fake.base_url, model="m")))
        paths = set(fake.paths)
    assert len(fake.requests) >= 5 and paths == {"/v1/chat/completions"}
    prompts = "\n".join(json.dumps(b) for b in fake.requests)
    assert "subtopics" in prompts and "profile" in prompts and "conclusions" in prompts  # every flow asked
    assert "[redacted]" in prompts
    assert leaks(fake.requests) == []


def test_the_llm_clients_redact_what_they_send(tmp_path):
    """The choke point itself: HTTPChatLLM.chat (built-in rules when built alone) and CommandLLM."""
    messages = [{"role": "system", "content": f"the admin password is {PASSWORD}"},
                {"role": "user", "content": TRANSCRIPT}]
    with FakeLLM(["ok"]) as fake:
        assert HTTPChatLLM(LLMSettings(base_url=fake.base_url, model="m")).chat(messages) == "ok"
    assert leaks(fake.requests) == [BADGE]  # the built-in rules; the vault's own pattern is the vault's
    assert messages[1]["content"] == TRANSCRIPT  # the caller's messages are not changed
    seen = tmp_path / "stdin.txt"
    command = CommandLLM(LLMSettings(command=f"cat > {seen}; echo done"))
    assert command.chat(messages) == "done"
    assert [s for s in SECRETS[:-1] if s in seen.read_text()] == []


def test_no_request_to_a_remote_embedder_holds_a_secret(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "home.md", "# Home\n\n" + HOME)
    with FakeEmbedServer() as server:
        (root / "memkit.yaml").write_text(CONFIG + f"embedder: {{base_url: '{server.base_url}', model: m}}\n"
                                          "judge: false\n")
        vault = Vault(root)
        hits = vault.search(f"my password is {PASSWORD}: where is it, the card {CARD} or the badge no. {BADGE}?",
                            mode="vector")
        assert hits
    inputs = [body for body in server.requests if body.get("path") == "/v1/embeddings"]
    assert len(inputs) >= 2 and "[redacted]" in json.dumps(inputs)
    assert leaks(inputs) == []
