"""The CLI's flows on real files: digest (against the loopback LLM), split, context and watch,
and what an unexpected error looks like.

The commands run through click's CliRunner on a vault built by the test and passed as the CLI's
``obj`` (``{"vault_obj": Vault(root, embedder=FakeEmbedder())}``), so no model is loaded.
Waits poll a condition until a deadline; nothing sleeps a fixed time and then asserts.
"""
from __future__ import annotations

import json
import os
import random
import re
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner, Result
from fake_llm import FakeLLM
from util import FakeEmbedder, wait_until, write

import memkit.frontends.watch
from memkit import Vault
from memkit.context.render import INSTRUCTIONS
from memkit.formats.markdown import split_lines
from memkit.formats.topic import parse_topic_text
from memkit.frontends.cli.group import main

DEADLINE_S = 10.0
DATE = r"\(\d{4}-\d\d-\d\d\)"  # today's date, whatever day the test runs
FROM = r"\(from chat\.txt\)"  # the conversation a digested entry came from (its day: the entry's date)


def cli(vault: Vault, *args: str, input: str | None = None, catch: bool = True) -> Result:
    """Run ``memkit --vault ROOT ARGS…`` on ``vault`` (its embedder, no model loaded)."""
    return CliRunner().invoke(main, ["--vault", str(vault.root), *args], input=input,
                              obj={"vault_obj": vault}, catch_exceptions=catch)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def files(root: Path) -> dict[str, bytes]:
    """Every file of the vault but the derived .memkit/."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".memkit" not in p.relative_to(root).parts}



def make_vault(tmp_path: Path, topics: dict[str, str], config: str = "") -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    if config:
        write(root / "memkit.yaml", config)
    for name, text in topics.items():
        write(root / "topics" / f"{name}.md", text)
    return Vault(root, embedder=FakeEmbedder())


# ---- digest ------------------------------------------------------------------------------------

TOPICS = {
    "cooking": "---\ntitle: Cooking\nsummary: rice and bread\nupdated: 2026-01-01T00:00:00\n---\n# Cooking\n\n"
               "- Prefers bomba rice for paella (2026-01-01)\n- Bakes sourdough bread on sundays (2026-01-01)\n"
               "- Makes paella rice with saffron (2026-01-01)\n",
    "home": "- Lives in Portland Oregon with partner (2025-05-01)\n- Home office has a standing desk (2025-05-01)\n",
}

CONCLUSIONS = [
    {"kind": "fact", "text": "Has a cat named Miso", "topic": "home"},
    {"kind": "event", "text": "Moved from Portland Oregon to Seattle with partner", "topic": "home"},
    {"kind": "preference", "text": "Prefers bomba rice for paella", "topic": "cooking"},  # already there
]


def responder(request: dict[str, Any]) -> str:
    """The extraction prompt gets CONCLUSIONS; the update prompt marks the Portland entry, when it
    is shown for the Seattle conclusion, as outdated."""
    prompt = request["messages"][-1]["content"]
    if "outdated" not in prompt:
        return json.dumps({"conclusions": CONCLUSIONS, "new_topic": None})
    updates = []
    for block in re.split(r"\n(?=\d+\. NEW: )", prompt):
        head = re.match(r"(\d+)\. NEW: (.*)", block.strip())
        if head and "Seattle" in head.group(2):
            ids = re.findall(r"\[([0-9a-f]{8})\] Lives in Portland", block)
            updates.append({"new": int(head.group(1)), "outdated": ids})
    return json.dumps({"updates": updates})


def llm_vault(tmp_path: Path, fake: FakeLLM) -> Vault:
    return make_vault(tmp_path, TOPICS, f'llm: {{base_url: "{fake.base_url}", model: "fake", timeout_s: 5}}\n')


def chat(tmp_path: Path, name: str = "chat.txt") -> str:
    write(tmp_path / name, "Maya: we moved to Seattle last month, and the cat Miso came along\nAssistant: Nice!\n")
    return name  # relative to the working folder (tmp_path), as a person types it


def test_digest_dry_run_then_real_then_again(tmp_path):
    with FakeLLM(responder) as fake:
        vault = llm_vault(tmp_path, fake)
        before = files(vault.root)
        name = chat(tmp_path)

        # --dry-run: the change as a diff, then the report; nothing written
        out = ok(cli(vault, "digest", "--dry-run", name)).stdout
        assert out.startswith("--- a/topics/home.md\n+++ b/topics/home.md\n")
        assert re.search(rf"^\+- \[fact\] Has a cat named Miso {FROM} {DATE}$", out, re.M)
        assert "\n-- Lives in Portland Oregon with partner (2025-05-01)\n" in out
        assert "--- a/archive.md\n+++ b/archive.md\n" in out
        assert "chat.txt: would write 2 entries, archived 1 outdated, skipped 1\n" in out
        assert files(vault.root) == before
        assert not (vault.root / ".memkit" / "digested.json").exists()

        # the real run: the report, and the files changed accordingly
        out = ok(cli(vault, "digest", name)).stdout
        lines = out.splitlines()
        assert lines[0] == "chat.txt: wrote 2 entries, archived 1 outdated, skipped 1"
        assert re.fullmatch(rf"  \+ home: - \[fact\] Has a cat named Miso {FROM} {DATE}", lines[1])
        assert re.fullmatch(rf"  \+ home: - \[event\] Moved from Portland Oregon to Seattle with partner {FROM} {DATE}", lines[2])
        assert lines[3] == ('  ~ home: archived "Lives in Portland Oregon with partner (2025-05-01)" '
                            '(superseded by "Moved from Portland Oregon to Seattle with partner")')
        assert lines[4] == '  - skipped "Prefers bomba rice for paella": already in cooking'
        assert len(lines) == 5 and "---" not in out  # no diff without --dry-run
        home = (vault.topics_dir / "home.md").read_text()
        assert "Portland Oregon with partner (2025" not in home
        assert re.search(rf"^- \[fact\] Has a cat named Miso {FROM} {DATE}\n- \[event\] Moved from Portland Oregon to "
                         rf"Seattle with partner {FROM} {DATE}\n\Z", home, re.M)
        assert "Lives in Portland Oregon with partner" in (vault.root / "archive.md").read_text()
        assert (vault.topics_dir / "cooking.md").read_bytes() == before["topics/cooking.md"]
        after = files(vault.root)
        asked = len(fake.requests)

        # again: nothing added, the LLM not even asked
        result = ok(cli(vault, "digest", name))
        assert result.stdout == "chat.txt: already digested; nothing added\n"
        data = json.loads(ok(cli(vault, "digest", name, "--json")).stdout)
        assert [r["already_digested"] for r in data] == [True] and data[0]["written"] == []
        assert len(fake.requests) == asked
        assert files(vault.root) == after


def test_digest_json(tmp_path):
    with FakeLLM(responder) as fake:
        vault = llm_vault(tmp_path, fake)
        data = json.loads(ok(cli(vault, "digest", chat(tmp_path), "--json")).stdout)
    assert len(data) == 1
    report = data[0]
    assert report["transcript"] == "chat.txt" and not report["already_digested"] and not report["dry_run"]
    assert [w["topic"] for w in report["written"]] == ["home", "home"]
    assert report["written"][0]["line"].startswith("- [fact] Has a cat named Miso (")
    assert report["skipped"] == [{"text": "Prefers bomba rice for paella", "reason": "already in cooking"}]
    assert report["superseded"] == [{"topic": "home", "old": "Lives in Portland Oregon with partner (2025-05-01)",
                                     "new": "Moved from Portland Oregon to Seattle with partner"}]
    assert report["diff"].startswith("--- a/topics/home.md\n")  # what changed, also when it was written
    assert report["new_topics"] == [] and report["split"] == [] and len(report["sha"]) == 64


def test_digest_llm_garbage_is_one_line_and_writes_nothing(tmp_path):
    with FakeLLM(["this is not json at all", "still not json, sorry"]) as fake:
        vault = llm_vault(tmp_path, fake)
        before = files(vault.root)
        result = cli(vault, "digest", chat(tmp_path))
        assert len(fake.requests) == 2  # the request and one repair request
    assert result.exit_code == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("memkit: error: ") and "even after a repair request" in result.stderr
    assert "Traceback" not in result.output
    assert files(vault.root) == before
    assert not (vault.root / ".memkit" / "digested.json").exists()


def test_digest_of_several_transcripts_reports_each_failure_and_goes_on(tmp_path):
    write(tmp_path / "broken.txt", b"\x00\x01 not a transcript")
    with FakeLLM(responder) as fake:
        vault = llm_vault(tmp_path, fake)
        result = cli(vault, "digest", "broken.txt", chat(tmp_path))
    assert result.exit_code == 1
    errors = result.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("memkit: error: ") and "broken.txt" in errors[0]
    assert result.stdout.startswith("chat.txt: wrote 2 entries")
    assert "Has a cat named Miso" in (vault.topics_dir / "home.md").read_text()


def test_digest_without_an_llm_says_how_to_configure_one(tmp_path):
    vault = make_vault(tmp_path, TOPICS)
    result = cli(vault, "digest", chat(tmp_path))
    assert result.exit_code == 1
    assert result.stderr.startswith("memkit: error: digest needs an LLM: set `llm:` in memkit.yaml")
    assert len(result.stderr.splitlines()) == 1


# ---- split -------------------------------------------------------------------------------------

THEMES = {
    "rice": ["bomba", "paella", "saffron", "sushi", "risotto", "arborio", "basmati", "steamed", "cooker", "grain"],
    "bread": ["sourdough", "starter", "loaf", "flour", "oven", "crust", "yeast", "knead", "proof", "baguette"],
    "kimchi": ["napa", "cabbage", "gochugaru", "ferment", "jar", "brine", "radish", "garlic", "spicy", "crock"],
}


def themed_topic(per_theme: int = 20, seed: int = 1) -> tuple[str, list[str]]:
    """A cooking topic of three clear themes, shuffled (seeded); returns (text, entry lines)."""
    rng = random.Random(seed)
    lines = [f"- Likes {theme} with {' and '.join(rng.sample(words, 3))} (2026-02-{i % 28 + 1:02d})\n"
             for theme, words in THEMES.items() for i in range(per_theme)]
    rng.shuffle(lines)
    head = ("---\ntitle: Cooking\nsummary: food and recipes\ncreated: 2026-01-05T10:00:00\n"
            "updated: 2026-02-12T14:30:00\n---\n# Cooking\n\n")
    return head + "".join(lines), lines


def test_split_dry_run_json_and_real(tmp_path):
    text, entry_lines = themed_topic()
    vault = make_vault(tmp_path, {"cooking": text}, "topic_split_threshold_lines: 50\n")
    topics = json.loads(ok(cli(vault, "topics", "--json")).stdout)
    assert [(t["name"], t["entries"]) for t in topics] == [("cooking", 60)]  # over the threshold
    before = files(vault.root)

    # --dry-run: a diff creating the parts and removing the parent; nothing written
    diff = ok(cli(vault, "split", "cooking", "--dry-run")).stdout
    created = re.findall(r"^--- /dev/null\n\+\+\+ b/topics/(cooking-[a-z0-9-]+)\.md$", diff, re.M)
    assert sorted(created) == ["cooking-bread", "cooking-kimchi", "cooking-rice"]
    assert "--- a/topics/cooking.md\n+++ /dev/null\n" in diff
    assert "--- a/index.txt\n+++ b/index.txt\n" in diff
    for line in entry_lines:  # every entry is added once and removed once
        assert diff.count(f"\n+{line}") == 1 and diff.count(f"\n-{line}") == 1
    assert files(vault.root) == before

    plan = json.loads(ok(cli(vault, "split", "cooking", "--dry-run", "--json")).stdout)
    assert plan["parent"] == "cooking" and plan["applied"] is False and plan["named_by"] == "words"
    assert sorted((p["name"], p["entries"]) for p in plan["parts"]) == [
        ("cooking-bread", 20), ("cooking-kimchi", 20), ("cooking-rice", 20)]
    assert files(vault.root) == before

    # the real split
    out = ok(cli(vault, "split", "cooking")).stdout.splitlines()
    assert out[0] == "split cooking into 3 topics:"
    assert sorted(re.sub(r":.*", "", line) for line in out[1:]) == [
        "  cooking-bread (20 entries)", "  cooking-kimchi (20 entries)", "  cooking-rice (20 entries)"]
    assert not (vault.topics_dir / "cooking.md").exists()
    seen: Counter = Counter()
    for part in ("rice", "bread", "kimchi"):
        raw = (vault.topics_dir / f"cooking-{part}.md").read_text()
        topic = parse_topic_text(raw, f"cooking-{part}", "x.md")
        assert topic.meta["parent"] == "cooking" and len(topic.entries) == 20
        assert all(f"Likes {part} " in e.text for e in topic.entries)
        lines = split_lines(raw)
        seen.update(lines[e.line - 1] for e in topic.entries)
    assert seen == Counter(entry_lines)  # every entry exactly once, byte for byte
    assert {r["topic"] for r in json.loads(ok(cli(vault, "recent", "--json")).stdout)} == {
        "cooking-rice", "cooking-bread", "cooking-kimchi"}

    result = cli(vault, "split", "cooking")  # it is gone now
    assert result.exit_code == 1 and "no topic 'cooking'" in result.stderr


def test_split_refuses_a_small_topic(tmp_path):
    vault = make_vault(tmp_path, {"tiny": "- one\n- two\n- three\n"})
    before = files(vault.root)
    result = cli(vault, "split", "tiny")
    assert result.exit_code == 1
    assert result.stderr == "memkit: error: topic tiny has only 3 entries; nothing to split\n"
    assert files(vault.root) == before


# ---- context -----------------------------------------------------------------------------------

SPREAD = {  # few entries per topic: no topic wins the detection vote, so memories accumulate
    "cooking": ["Prefers bomba rice for paella (2026-02-12)", "Uses homemade chicken broth never stock cubes"],
    "pets": ["Dog Biscuit sees the vet in Arroios every spring"],
    "travel": ["Favourite city trip was Porto by train"],
    "finance": ["Invests in VWCE every month"],
}


@pytest.fixture
def spread(tmp_path) -> Vault:
    topics = {name: f"---\ntitle: {name.capitalize()}\nsummary: all about {name}\nupdated: 2026-02-01T10:00:00\n---\n"
                    f"# {name}\n\n" + "".join(f"- {e}\n" for e in entries)
              for name, entries in SPREAD.items()}
    vault = make_vault(tmp_path, topics, "embedding_similarity_threshold: 0.4\nmax_memories_per_search: 3\n")
    vault.recent(rebuild=True)
    return vault


def test_context_session_accumulates(spread):
    text = ok(cli(spread, "context", "bomba rice paella", "--session", "chat-1")).stdout
    assert text.startswith("# Memory\n\n## Recent topics\n")
    assert text.endswith(INSTRUCTIONS)
    assert "- Prefers bomba rice for paella (2026-02-12) (topic: cooking)\n" in text
    assert "Biscuit" not in text

    data = json.loads(ok(cli(spread, "context", "dog Biscuit vet", "--session", "chat-1", "--json")).stdout)
    assert set(data) >= {"text", "tokens", "session", "topic", "recent", "memories", "omitted"}
    assert data["session"] == "chat-1" and data["topic"] is None
    assert [m["topic"] for m in data["memories"]] == ["pets", "cooking"]  # the newest turn's first
    assert data["text"].index("Biscuit") < data["text"].index("bomba")
    assert data["tokens"] == -(-len(data["text"]) // 4)
    assert sorted(r["topic"] for r in data["recent"]) == ["cooking", "finance", "pets", "travel"]

    # MESSAGE "-" reads it from stdin
    data = json.loads(ok(cli(spread, "context", "-", "-s", "chat-1", "--json", input="VWCE invests month\n")).stdout)
    assert [m["topic"] for m in data["memories"]] == ["finance", "pets", "cooking"]

    # without a session the block is for this message alone; another session starts empty
    alone = json.loads(ok(cli(spread, "context", "VWCE invests month", "--json")).stdout)
    assert [m["topic"] for m in alone["memories"]] == ["finance"] and alone["session"] is None
    other = json.loads(ok(cli(spread, "context", "dog Biscuit vet", "-s", "chat-2", "--json")).stdout)
    assert [m["topic"] for m in other["memories"]] == ["pets"]

    # --reset forgets what chat-1 accumulated
    reset = json.loads(ok(cli(spread, "context", "Porto train trip", "-s", "chat-1", "--reset", "--json")).stdout)
    assert [m["topic"] for m in reset["memories"]] == ["travel"]


def test_context_budget(spread):
    small = json.loads(ok(cli(spread, "context", "bomba rice paella", "--budget", "1", "--json")).stdout)
    assert small["text"].endswith(INSTRUCTIONS)  # the instructions are always kept
    assert small["memories"] == [] and sum(small["omitted"].values()) >= 1
    result = cli(spread, "context", "x", "--budget", "0")
    assert result.exit_code == 2 and "--budget" in result.stderr


# ---- watch -------------------------------------------------------------------------------------

def run_watch_command(vault: Vault, monkeypatch, while_running: Callable[[memkit.frontends.watch.Watcher], None],
                      *args: str) -> tuple[Result, BaseException | None]:
    """Run ``memkit watch ARGS`` on the main thread (as from a shell) while ``while_running``
    works on its Watcher in a helper thread, then stop it with SIGTERM as a service manager would.

    SIGTERM is sent only while the command's own handler is installed, never to a process that
    would die of it; the helper's exception, if any, is returned."""
    watchers: list[memkit.frontends.watch.Watcher] = []

    class Recording(memkit.frontends.watch.Watcher):
        def __init__(self, *a: Any, **kw: Any) -> None:
            super().__init__(*a, **kw)
            watchers.append(self)

    monkeypatch.setattr(memkit.frontends.watch, "Watcher", Recording)
    original = signal.getsignal(signal.SIGTERM)
    failure: list[BaseException] = []

    def helper() -> None:
        try:
            assert wait_until(lambda: watchers and watchers[0].running), "the watcher did not start"
            assert watchers[0].wait_idle(DEADLINE_S), "the first refresh did not finish"
            while_running(watchers[0])
        except BaseException as exc:  # reported by the test, after the command has stopped
            failure.append(exc)
        finally:
            # run_watch installs its handler before starting the watcher and restores `original` on return
            if wait_until(lambda: signal.getsignal(signal.SIGTERM) is not original or not watchers
                          or not watchers[0].running, 2) and signal.getsignal(signal.SIGTERM) is not original:
                os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=helper, name="watch-test-helper")
    thread.start()
    try:
        result = cli(vault, "watch", *args)
    finally:
        thread.join(DEADLINE_S)
    assert not thread.is_alive()
    assert signal.getsignal(signal.SIGTERM) is original  # the command put the old handler back
    return result, failure[0] if failure else None


def test_watch_indexes_changes_until_sigterm(tmp_path, monkeypatch, no_thread_leaks):
    vault = make_vault(tmp_path, {"garden": "---\ntitle: Garden\nsummary: plants\n---\n# Garden\n\n"
                                            "- Grows San Marzano tomatoes\n- Waters the basil daily\n"})

    def edit(watcher: memkit.frontends.watch.Watcher) -> None:
        with (vault.topics_dir / "garden.md").open("a") as fh:
            fh.write("- Planted zucchiniword seeds\n")
        assert watcher.wait_idle(DEADLINE_S)
        assert any("zucchiniword" in h.text for h in
                   Vault(vault.root, embedder=FakeEmbedder()).search("zucchiniword", threshold=None))

    result, failure = run_watch_command(vault, monkeypatch, edit, "--debounce", "0.05")
    assert failure is None, failure
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stderr.splitlines() == [f"watching {vault.root} (topics/); Ctrl-C to stop", "stopped"]
    lines = result.stdout.splitlines()
    assert len(lines) == 2, lines  # the catch-up refresh, then the edit
    assert re.fullmatch(r"indexed 2 entries in [\d.]+ s: 2 new, 0 removed(; 2 judge vectors in [\d.]+ s)?", lines[0])
    assert re.fullmatch(r"indexed 3 entries in [\d.]+ s: 1 new, 0 removed, 2 reused(; 1 judge vector in [\d.]+ s)?", lines[1])
    assert [r.topic for r in vault.recent()] == ["garden"]


def test_watch_digests_an_idle_inbox_transcript(tmp_path, monkeypatch, no_thread_leaks):
    with FakeLLM(responder) as fake:
        vault = llm_vault(tmp_path, fake)
        transcript = write(vault.root / "inbox" / "s1.txt", "Maya: the cat Miso moved to Seattle with us\n")
        old = time.time() - 3600  # idle for an hour: over session_timeout_minutes
        os.utime(transcript, (old, old))

        def digested(watcher: memkit.frontends.watch.Watcher) -> None:
            assert wait_until(lambda: (vault.root / "inbox" / "done" / "s1.txt").exists())
            assert watcher.wait_idle(DEADLINE_S)

        result, failure = run_watch_command(vault, monkeypatch, digested, "--debounce", "0.05")
    assert failure is None, failure
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stderr.splitlines()[0] == f"watching {vault.root} (topics/ and inbox/); Ctrl-C to stop"
    assert result.stderr.splitlines()[-1] == "stopped"
    assert "inbox/s1.txt: wrote 2 entries, archived 1 outdated, skipped 1 (moved to inbox/done/)\n" in result.stdout
    assert not transcript.exists()
    assert "Has a cat named Miso" in (vault.topics_dir / "home.md").read_text()


def test_watch_digesting_two_transcripts_in_one_pass_writes_a_conclusion_once(tmp_path, monkeypatch, no_thread_leaks):
    """Issue 41.13: the second digest of the pass sees what the first wrote (as `memkit digest A B`
    does): its near duplicate, which only the search finds, is skipped."""
    said = {"s1.txt": "Has a grey cat named Miso", "s2.txt": "Has a cat named Miso"}

    def answer(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "NEW: " in prompt:
            return json.dumps({"updates": []})
        text = next(t for n, t in said.items() if f"({n})" in prompt)
        return json.dumps({"conclusions": [{"kind": "fact", "text": text, "topic": "home"}], "new_topic": None})

    with FakeLLM(answer) as fake:
        vault = llm_vault(tmp_path, fake)
        old = time.time() - 3600
        for name in said:
            os.utime(write(vault.root / "inbox" / name, f"Maya: our cat is called Miso ({name})\n"), (old, old))

        def digested(watcher: memkit.frontends.watch.Watcher) -> None:
            assert wait_until(lambda: all((vault.root / "inbox" / "done" / n).exists() for n in said))
            assert watcher.wait_idle(DEADLINE_S)

        result, failure = run_watch_command(vault, monkeypatch, digested, "--debounce", "0.05")
    assert failure is None, failure
    text = (vault.topics_dir / "home.md").read_text()
    assert text.count("cat named Miso") == 1, text
    assert "inbox/s2.txt: wrote 0 entries, skipped 1 (moved to inbox/done/)" in result.stdout, result.stdout


# ---- unexpected errors -------------------------------------------------------------------------

def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom")


@pytest.mark.parametrize("command, target", [
    (["digest", "chat.txt"], (Vault, "digest")),
    (["context", "hello"], (Vault, "context")),
    (["split", "cooking"], (Vault, "split")),
    (["watch"], (memkit.frontends.watch.Watcher, "start")),
])
def test_unexpected_error_is_one_line_unless_debugging(tmp_path, monkeypatch, command, target):
    vault = make_vault(tmp_path, TOPICS)
    monkeypatch.setattr(*target, _boom)
    monkeypatch.delenv("MEMKIT_DEBUG", raising=False)
    result = cli(vault, *command)
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if not line.startswith("watching ")]  # watch's banner
    assert errors == ["memkit: error: unexpected error: RuntimeError: boom (set MEMKIT_DEBUG=1 for the traceback)"]
    assert "Traceback" not in result.output

    monkeypatch.setenv("MEMKIT_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        cli(vault, *command, catch=False)


def test_watch_banner_lists_transcripts_nothing_will_digest(tmp_path, monkeypatch):
    vault = make_vault(tmp_path, {"garden": "- Grows San Marzano tomatoes\n"})
    write(vault.root / "inbox" / "chat-1.jsonl", '{"role": "user", "content": "I moved to Porto"}\n')
    result, failure = run_watch_command(vault, monkeypatch, lambda watcher: None)
    assert failure is None and result.exit_code == 0, (result.output, failure)
    assert result.stderr.splitlines()[1] == ("1 transcript waiting in inbox/: no LLM is configured, so nothing "
                                             "digests them (set `llm:` in memkit.yaml)")
