"""Every write path redacts what the LLM answers (issue 41.11): an aged session's summary, core
memory and traces, a conversation window's cached summary, a compaction's and a distill's entries and
a split's titles land in git-tracked files; a scripted LLM that answers with a password, an AWS key,
a card number and an sk- key must leave none of them on disk.
"""
from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone

from fake_llm import FakeLLM, last_user_message
from util import FakeEmbedder, write

from memkit import Vault

KEY = "sk-proj-Zq8vXk2LmN4pRt6yWb1cDe3fGh5jKs7u"
AWS = "AKIAIOSFODNN7EXAMPLE"
PASSWORD = "Tr0ub4dor&3"
CARD = "4111 1111 1111 1111"
LEAK = f"the vault password is {PASSWORD}, key {KEY}, AWS {AWS}, card {CARD}"
SECRETS = (KEY, AWS, PASSWORD, CARD)
T0 = datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc)


def on_disk(root) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {s}" for s in SECRETS if s.encode() in data]
    return found


def answer(request: dict) -> str:
    """A careless LLM: every answer repeats the secrets."""
    system = str(request["messages"][0]["content"])
    last = last_user_message(request)
    if "core memory" in system:
        return json.dumps({"core": f"Maya talked about the trip; {LEAK}", "clearly": [f"the key {KEY}"],
                           "vaguely": [f"password is {PASSWORD}"], "barely": [f"card {CARD}"]})
    if "emotional highlights" in system:
        return json.dumps({"summary": f"Maya plans a trip. {LEAK}", "key_points": [f"AWS key {AWS}"],
                           "emotional_highlights": [f"the key {KEY}"]})
    if "subtopics" in system:
        k = int(last.split("split into ")[1].split()[0])
        return json.dumps({"parts": [{"name": f"part{i}", "title": f"Part {i} {KEY}", "summary": LEAK}
                                     for i in range(k)]})
    if '"profile"' in last:
        return json.dumps({"profile": [f"Maya's {LEAK}"]})
    if '"entries"' in last:
        return json.dumps({"entries": [{"text": f"Ran in the park; {LEAK}", "replaces": [1, 2, 3]}]})
    return f"Maya plans a trip. {LEAK}"  # a window's summary: plain text


def test_aging_writes_no_secret_the_llm_answers(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    with FakeLLM(answer) as fake:
        (root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n")
        v = Vault(root, embedder=FakeEmbedder())
        v.conversations.new(session_id="trip", title="Trip", now=T0)
        for i in range(6):
            v.conversations.append("trip", "user" if i % 2 == 0 else "assistant",
                                   f"Planning the week in Lisbon, step {i}: flights, hotels and museums to see.",
                                   now=T0 + timedelta(minutes=i))
        summary = next(j for j in v.upkeep.run(now=T0 + timedelta(days=3, hours=1)).jobs if j.name == "session-aging")
        assert summary.changed
        text = (root / "sessions" / "2026-11-24-trip.md").read_text()
        assert "stage: summary" in text and "Maya plans a trip" in text and "[redacted]" in text
        assert on_disk(root) == []
        core = next(j for j in v.upkeep.run(now=T0 + timedelta(days=8)).jobs if j.name == "session-aging")
        assert core.changed
        text = (root / "sessions" / "2026-11-24-trip.md").read_text()
        assert "stage: core" in text and "Remembered clearly: the key [redacted]" in text
    assert on_disk(root) == []


def test_a_window_summary_compaction_distill_and_split_write_no_secret(tmp_path):
    root = Vault.init(tmp_path / "v", profile=True).root
    runs = "".join(f"- [event] Ran {i} km in the park (2026-01-0{i})\n" for i in range(1, 5))
    write(root / "topics" / "running.md", "# Running\n\n" + runs)
    home = "".join(f"- Balcony tomatoes need water, note {i} (2026-01-0{i})\n" for i in range(1, 7)) + \
        "".join(f"- The car needs new tyres and an oil change, note {i} (2026-01-0{i})\n" for i in range(1, 7))
    write(root / "topics" / "home.md", "# Home\n\n" + home)
    with FakeLLM(answer) as fake:
        (root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n"
                                          "topic_split_threshold_lines: 200\n")
        v = Vault(root, embedder=FakeEmbedder())
        v.conversations.new(session_id="long", now=T0)
        for i in range(40):
            v.conversations.append("long", "user", f"message number {i} " + "blah " * 20,
                                   now=T0 + timedelta(minutes=i))
        w = v.conversations.window("long", max_tokens=300, strategy="summary")
        assert w.summarised > 0 and "[redacted]" in w.messages[0].content + w.messages[1].content
        v.upkeep.compact("running", before=date(2026, 2, 1))
        v.upkeep.distill()
        v.split("home", min_part=2)
    assert "[redacted]" in (root / "topics" / "profile.md").read_text()
    assert on_disk(root) == []


def test_a_split_named_by_its_words_takes_none_from_a_secret(tmp_path):
    """A topic with secrets a person typed in by hand, split without an LLM: the catch-all part was
    summarised "other entries from kitchen: password, ghijkl, hunter" — pieces of the key and the
    password, written into its frontmatter and index.txt (and shown in every memory block)."""
    root = Vault.init(tmp_path / "v", profile=False).root
    bake = "".join(f"- Baking note {i}: sourdough loaf hydration {60 + i}% with rye (2026-01-01)\n" for i in range(12))
    brew = "".join(f"- Espresso note {i}: grind size {i} on the Niche grinder (2026-01-01)\n" for i in range(12))
    secret = ("- The router admin password is Hunter2Router! and the key sk-proj-Abc123XyZ456DEF789ghiJKL012mno\n"
              "- Second router note: password is Hunter2Router! key sk-proj-Abc123XyZ456DEF789ghiJKL012mno\n")
    write(root / "topics" / "kitchen.md", "# Kitchen\n\n" + bake + brew + secret)
    (root / "memkit.yaml").write_text("topic_split_threshold_lines: 200\n")
    Vault(root, embedder=FakeEmbedder()).split("kitchen", min_part=3)
    written = "".join(p.read_text() for p in (root / "topics").glob("kitchen-*.md"))
    heads = "".join(t.split("\n# ")[0] for t in [p.read_text() for p in (root / "topics").glob("kitchen-*.md")])
    recent = (root / "index.txt").read_text()
    assert "Hunter2Router" in written  # the entries themselves move as they were written
    names = " ".join(p.stem for p in (root / "topics").glob("kitchen-*.md"))
    for piece in ("hunter", "ghijkl", "abc123xyz456def789ghijkl012mno", "router!"):
        assert piece not in heads.lower() and piece not in recent.lower() and piece not in names, (heads, recent)
