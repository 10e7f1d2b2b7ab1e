"""The prompt context: layers and their order, session accumulation, topic detection, the budget,
session state on disk (safe names, corruption, concurrent calls)."""
from __future__ import annotations

import json
import logging
import threading
from datetime import datetime, timedelta

import pytest
from util import FakeEmbedder, write

from memkit import MemkitError, Vault
from memkit.context.block import build_context, reset_session, session_path
from memkit.context.render import INSTRUCTIONS, Context, fit
from memkit.search.hits import Hit
from memkit.search.route import detect_topic

NOW = datetime(2026, 2, 14, 12, 0, 0)

# Few entries per topic: no topic can win 3 of the 5 detection votes, so memories accumulate.
SPREAD = {
    "cooking": ["Prefers bomba rice for paella (2026-02-12)", "Uses homemade chicken broth never stock cubes"],
    "pets": ["Dog Biscuit sees the vet in Arroios every spring"],
    "travel": ["Favourite city trip was Porto by train"],
    "finance": ["Invests in VWCE every month"],
    "running": ["Runs the Lisbon half marathon in March"],
}

# Enough entries per topic for detection.
TOPICAL = {
    "cooking": ["Prefers bomba rice for paella", "Paella pan is a carbon steel paellera",
                "Rice to broth ratio for paella is one to three", "Never stirs paella rice once spread",
                "Saffron for paella steeps in warm broth", "Uses homemade chicken broth never stock cubes"],
    "pets": ["Dog Biscuit sees the vet every spring", "Biscuit the dog eats salmon kibble",
             "Biscuit the dog walks twice a day", "The vet for Biscuit is in Arroios"],
    "travel": ["Favourite city trip was Porto by train"],
    "finance": ["Invests in VWCE every month"],
}


def make_vault(tmp_path, topics: dict[str, list[str]], summaries: dict[str, str] | None = None) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    # explicit settings, so the tests do not depend on the defaults of the day
    write(root / "memkit.yaml", "embedding_similarity_threshold: 0.4\nmax_memories_per_search: 3\n"
                                "session_timeout_minutes: 7\n")
    for name, entries in topics.items():
        summary = (summaries or {}).get(name, f"all about {name}")
        head = f"---\ntitle: {name.capitalize()}\nsummary: {summary}\nupdated: 2026-02-01T10:00:00\n---\n# {name}\n\n"
        write(root / "topics" / f"{name}.md", head + "".join(f"- {e}\n" for e in entries))
    return Vault(root, embedder=FakeEmbedder())


def state_of(v: Vault, session: str) -> dict:
    return json.loads(session_path(v.store, session).read_text(encoding="utf-8"))


def section(text: str, title: str) -> str:
    """The body of one '## title' section of the block."""
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


@pytest.fixture
def spread(tmp_path) -> Vault:
    return make_vault(tmp_path, SPREAD)


@pytest.fixture
def topical(tmp_path) -> Vault:
    return make_vault(tmp_path, TOPICAL)


# ---- layers -------------------------------------------------------------------------------------

def test_layers_in_order_with_relative_times(spread):
    write(spread.root / "index.txt",
          "2026-02-12T12:00:00|cooking|rice recipes and oven timing\n"
          "2026-02-14T09:00:00|pets|biscuit the dog\n"
          "2026-01-01T08:00:00|finance|\n")
    ctx = build_context(spread.searcher, "bomba rice paella", now=NOW)
    text = ctx.text
    assert text.startswith("# Memory\n\n## Recent topics\n")
    assert text.index("## Recent topics") < text.index("## Relevant memories") < text.index("## Memory instructions")
    assert text.endswith(INSTRUCTIONS)
    recent = section(text, "Recent topics").splitlines()[1:]
    assert recent[:2] == ["- pets (3 hours ago): biscuit the dog", "- cooking (2 days ago): rice recipes and oven timing"]
    assert recent[-1] == "- finance (6 weeks ago)"
    # travel.md is not in index.txt (written by hand): it is listed anyway, at its own date
    assert [r.topic for r in ctx.recent][:2] == ["pets", "cooking"] and "travel" in [r.topic for r in ctx.recent]
    assert "- Prefers bomba rice for paella (2026-02-12) (topic: cooking)" in section(text, "Relevant memories")
    assert [h.topic for h in ctx.memories] == ["cooking"]
    assert ctx.topic is None and ctx.session is None
    assert ctx.tokens == -(-len(text) // 4)


def test_empty_vault_and_empty_message_still_give_a_block(tmp_path):
    v = Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())
    for message in ("", "   ", "what should I cook tonight?"):
        ctx = build_context(v.searcher, message, now=NOW)
        assert "## Recent topics\n- none yet\n" in ctx.text
        assert "## Relevant memories\n- none found for this conversation\n" in ctx.text
        assert ctx.text.endswith(INSTRUCTIONS)
        assert ctx.memories == [] and ctx.topic is None
    ctx = build_context(v.searcher, "", session="s1", now=NOW)  # empty message in a session: no error, no turn
    assert state_of(v, "s1")["turns"] == 0 and ctx.session == "s1"


def test_no_match_gives_no_memories(spread):
    ctx = build_context(spread.searcher, "zebra quantum xylophone", now=NOW)
    assert ctx.memories == [] and "- none found for this conversation" in ctx.text


# ---- accumulation over a session ------------------------------------------------------------------

def test_memories_accumulate_without_duplicates(spread):
    messages = ["bomba rice paella", "dog Biscuit vet", "VWCE invests month"]
    for i, message in enumerate(messages):
        ctx = build_context(spread.searcher, message, session="chat-1", now=NOW + timedelta(minutes=i))
        assert ctx.topic is None
    # the newest message's hits first
    assert [h.topic for h in ctx.memories] == ["finance", "pets", "cooking"]
    body = section(ctx.text, "Relevant memories")
    assert body.index("VWCE") < body.index("Biscuit") < body.index("bomba")
    # asking again does not duplicate; the memory moves up to the newest turn
    ctx = build_context(spread.searcher, "bomba rice paella", session="chat-1", now=NOW + timedelta(minutes=3))
    assert [h.topic for h in ctx.memories] == ["cooking", "finance", "pets"]
    assert len({h.id for h in ctx.memories}) == len(ctx.memories) == 3
    assert ctx.text.count("bomba") == 1
    state = state_of(spread, "chat-1")
    assert state["turns"] == 4 and state["messages"] == messages[1:] + ["bomba rice paella"]
    # another session, and no session at all, start from nothing
    assert [h.topic for h in build_context(spread.searcher, "dog Biscuit vet", session="chat-2", now=NOW).memories] == ["pets"]
    assert [h.topic for h in build_context(spread.searcher, "dog Biscuit vet", now=NOW).memories] == ["pets"]


def test_forgotten_memory_leaves_the_session(spread):
    build_context(spread.searcher, "bomba rice paella", session="s", now=NOW)
    build_context(spread.searcher, "dog Biscuit vet", session="s", now=NOW)
    spread.forget(match="bomba")
    ctx = build_context(spread.searcher, "", session="s", now=NOW)
    assert [h.topic for h in ctx.memories] == ["pets"] and "bomba" not in ctx.text
    assert [m["topic"] for m in state_of(spread, "s")["memories"]] == ["pets"]


def test_reset_session(spread):
    build_context(spread.searcher, "bomba rice paella", session="s", now=NOW)
    reset_session(spread.store, "s")
    assert not session_path(spread.store, "s").exists()
    reset_session(spread.store, "never-used")  # no error
    assert build_context(spread.searcher, "dog Biscuit vet", session="s", now=NOW).memories[0].topic == "pets"
    assert len(build_context(spread.searcher, "", session="s", now=NOW).memories) == 1


def test_idle_session_starts_afresh(spread):
    build_context(spread.searcher, "bomba rice paella", session="s", now=NOW)
    ctx = build_context(spread.searcher, "dog Biscuit vet", session="s", now=NOW + timedelta(minutes=6))
    assert len(ctx.memories) == 2
    ctx = build_context(spread.searcher, "VWCE invests month", session="s", now=NOW + timedelta(minutes=14))
    assert [h.topic for h in ctx.memories] == ["finance"] and state_of(spread, "s")["turns"] == 1


# ---- topic detection --------------------------------------------------------------------------------

def test_topic_detection_adds_the_topic_file_after_the_memories(topical):
    s = "talk"
    ctx = build_context(topical.searcher, "hello there", session=s, now=NOW)
    assert ctx.topic is None and "## Relevant memories" in ctx.text

    ctx = build_context(topical.searcher, "paella rice", session=s, now=NOW)
    assert detect_topic(topical.searcher, "hello there paella rice").topic == "cooking"  # the premise
    assert ctx.topic == "cooking" and ctx.memories  # the message's memories stay, first
    body = section(ctx.text, "Current topic: Cooking")
    assert body.splitlines()[1] == "Summary: all about cooking"
    shown = {h.text for h in ctx.memories}
    for entry in TOPICAL["cooking"]:  # the whole file, as written, less what the memories show above it
        assert (f"- {entry}\n" in body) != (entry in shown), entry
    text = ctx.text
    assert text.index("## Recent topics") < text.index("## Relevant memories") < text.index("## Current topic") \
        < text.index("## Memory instructions")

    # a message that detects nothing keeps the topic
    ctx = build_context(topical.searcher, "thanks sounds good", session=s, now=NOW)
    assert detect_topic(topical.searcher, "hello there paella rice thanks sounds good") is None
    assert ctx.topic == "cooking"

    # messages that clearly detect another topic switch to it
    build_context(topical.searcher, "biscuit the dog vet", session=s, now=NOW)
    ctx = build_context(topical.searcher, "biscuit walks", session=s, now=NOW)
    assert ctx.topic == "pets" and "## Current topic: Pets" in ctx.text
    assert "paellera" not in section(ctx.text, "Current topic: Pets")  # the earlier topic's file is gone
    assert state_of(topical, s)["topic"] == "pets"


def test_deleted_topic_falls_back_to_memories(topical):
    build_context(topical.searcher, "hello there", session="s", now=NOW)
    assert build_context(topical.searcher, "paella rice", session="s", now=NOW).topic == "cooking"
    (topical.root / "topics" / "cooking.md").unlink()
    ctx = build_context(topical.searcher, "", session="s", now=NOW)
    assert ctx.topic is None and "## Relevant memories" in ctx.text
    assert state_of(topical, "s")["topic"] is None


def test_topic_file_prose_stays_a_paragraph(topical):
    path = topical.root / "topics" / "cooking.md"
    write(path, path.read_text() + "\nWeeknights are quick: a rice bowl and a salad.\n\n- Bakes on Sundays\n")
    with open(topical.root / "memkit.yaml", "a") as fh:  # the static stage's few memories: the file shows whole
        fh.write("judge: false\n")
    topical = Vault(topical.root, embedder=FakeEmbedder())
    ctx = build_context(topical.searcher, "hello there paella rice", now=NOW)
    assert ctx.topic == "cooking"
    assert "stock cubes\n\nWeeknights are quick: a rice bowl and a salad.\n\n- Bakes on Sundays\n" in ctx.text


# ---- the budget ---------------------------------------------------------------------------------------

def big_topic_vault(tmp_path) -> Vault:
    entries = [f"Paella rice note number {i} about bomba rice and saffron broth ({2022 + i // 12}-{i % 12 + 1:02d}-01)"
               for i in range(40)]
    v = make_vault(tmp_path, {"cooking": entries, "travel": ["Favourite city trip was Porto by train"]})
    for i in range(12):  # index.txt lists only topics that exist
        write(v.topics_dir / f"topic-{i}.md", f"- note {i}\n")
    write(v.root / "index.txt", "".join(
        f"2026-02-{14 - i:02d}T10:00:00|topic-{i}|summary of topic number {i} with a few words\n" for i in range(12)))
    return v


def test_budget_trims_recent_then_topic_entries_never_instructions(tmp_path):
    v = big_topic_vault(tmp_path)
    full = build_context(v.searcher, "paella bomba rice saffron", now=NOW, budget_tokens=100_000)
    assert full.topic == "cooking" and len(full.recent) == 14 and "not shown" not in full.text

    ctx = build_context(v.searcher, "paella bomba rice saffron", now=NOW, budget_tokens=700)
    assert ctx.tokens <= 700 and len(ctx.text) <= 2800
    assert ctx.text.endswith(INSTRUCTIONS)
    assert len(ctx.memories) == 8  # the message's own memories are shed last
    assert len(ctx.recent) == 5 and [r.topic for r in ctx.recent] == [f"topic-{i}" for i in range(5)]
    assert "- (9 more not shown)" in section(ctx.text, "Recent topics")
    body = section(ctx.text, "Current topic: Cooking")
    shown = [line for line in body.splitlines() if line.startswith("- Paella")]
    hidden = ctx.omitted["topic_entries"]
    # the message's memories come first and are not repeated in the topic file below them
    assert hidden > 0 and 40 - hidden - len(ctx.memories) <= len(shown) <= 40 - hidden
    assert f"- ({hidden} less relevant entries not shown)" in body
    assert ctx.omitted == {"recent": 9, "memories": 0, "topic_entries": hidden, "profile": 0}

    # tighter: the topic file, then the last recent topics go before the message's memories
    ctx = build_context(v.searcher, "paella bomba rice saffron", now=NOW, budget_tokens=400)
    assert ctx.tokens <= 400 and ctx.text.endswith(INSTRUCTIONS)
    assert ctx.recent == [] and ctx.omitted["topic_entries"] == 40 and len(ctx.memories) == 8

    # a budget that cannot even hold the instructions: they are kept whole, with a warning
    tiny = build_context(v.searcher, "paella bomba rice saffron", now=NOW, budget_tokens=10)
    assert INSTRUCTIONS in tiny.text and tiny.recent == []
    with pytest.raises(MemkitError, match="at least 1"):
        build_context(v.searcher, "x", budget_tokens=0)


def hit(i: int, topic: str = "cooking") -> Hit:
    return Hit(f"{i:08x}", f"memory number {i} with some words to take space", topic, None, (), None,
               f"topics/{topic}.md", i + 1, 1.0 - i / 100, 0.9)


def test_budget_trims_memories_from_the_bottom():
    from memkit.formats.recent import RecentTopic

    recent = [RecentTopic(NOW - timedelta(days=i), f"t{i}", "summary") for i in range(8)]
    memories = [hit(i) for i in range(20)]
    untrimmed = fit(recent, memories, None, None, 100_000, NOW)
    assert len(untrimmed.memories) == 20
    budget = untrimmed.tokens - 60
    ctx = fit(recent, memories, None, "s", budget, NOW)
    assert ctx.tokens <= budget and len(ctx.recent) == 5  # recent topics go first, down to five
    assert 0 < len(ctx.memories) < 20 and ctx.memories == memories[:len(ctx.memories)]
    assert f"- ({20 - len(ctx.memories)} more not shown)" in section(ctx.text, "Relevant memories")
    assert ctx.text.endswith(INSTRUCTIONS)


# ---- session state on disk ------------------------------------------------------------------------------

@pytest.mark.parametrize("session", ["../../x", "/etc/passwd", "..\\..\\x", "a/../../b", "CON", "\x00", "\udcff", "ü" * 300])
def test_session_ids_stay_inside_the_sessions_folder(spread, tmp_path, session):
    ctx = build_context(spread.searcher, "bomba rice paella", session=session, now=NOW)
    path = session_path(spread.store, session)
    sessions = spread.store.state_dir / "sessions"
    assert path.parent == sessions and path.exists() and path.resolve().parent == sessions.resolve()
    assert ctx.session == session and state_of(spread, session)["session"] == session
    assert [p.name for p in tmp_path.iterdir()] == ["v"]  # nothing written beside the vault
    assert sorted(p.suffix for p in sessions.iterdir()) == [".json", ".lock"]
    assert session_path(spread.store, session) != session_path(spread.store, session + " ")


def test_distinct_ids_get_distinct_files(spread):
    assert session_path(spread.store, "a/b") != session_path(spread.store, "a-b") != session_path(spread.store, "A-B")


def test_blank_session_is_stateless(spread):
    assert build_context(spread.searcher, "bomba rice paella", session="  ", now=NOW).session is None
    assert not (spread.store.state_dir / "sessions").exists()


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe\x00", b"[]", b'{"format": 1}',
                                     b'{"format": 1, "created": "2026-02-14T12:00:00", "updated": "2026-02-14T12:00:00",'
                                     b' "turns": 1, "messages": [], "topic": null, "memories": [{"id": 3}]}'])
def test_corrupt_session_file_is_a_new_session(spread, caplog, monkeypatch, content):
    monkeypatch.setattr(logging.getLogger("memkit"), "propagate", True)
    path = session_path(spread.store, "s")
    write(path, content)
    with caplog.at_level(logging.WARNING, logger="memkit"):
        ctx = build_context(spread.searcher, "dog Biscuit vet", session="s", now=NOW)
    assert "is corrupt" in caplog.text and "starting the session afresh" in caplog.text
    assert [h.topic for h in ctx.memories] == ["pets"]
    assert state_of(spread, "s")["turns"] == 1


def test_concurrent_builds_on_one_session_lose_nothing(spread):
    messages = ["bomba rice paella", "dog Biscuit vet", "VWCE invests month", "Porto train trip",
                "Lisbon half marathon", "homemade chicken broth"] * 2
    errors: list[BaseException] = []

    def run(message: str) -> None:
        try:
            build_context(spread.searcher, message, session="shared", now=NOW)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,)) for m in messages]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors and not any(t.is_alive() for t in threads)
    state = state_of(spread, "shared")
    assert state["turns"] == len(messages)
    assert {m["topic"] for m in state["memories"]} == set(SPREAD)  # every thread's hits survived
    assert len({m["id"] for m in state["memories"]}) == len(state["memories"]) == 6
    assert not list((spread.store.state_dir / "sessions").glob("*.tmp"))


def test_to_dict_shape(spread):
    write(spread.root / "index.txt", "2026-02-12T12:00:00|cooking|rice recipes\n")
    ctx = build_context(spread.searcher, "bomba rice paella", session="s", now=NOW)
    data = json.loads(json.dumps(ctx.to_dict()))
    assert set(data) == {"text", "tokens", "session", "topic", "recent", "memories", "omitted"}
    assert data["text"] == ctx.text and data["tokens"] == ctx.tokens and data["session"] == "s"
    assert data["topic"] is None
    assert data["recent"][0] == {"updated": "2026-02-12T12:00:00", "topic": "cooking", "summary": "rice recipes"}
    assert {r["topic"] for r in data["recent"]} == {t.name for t in spread.topics()}  # unlisted topics join
    assert data["memories"][0]["topic"] == "cooking" and {"id", "text", "score", "file", "line"} <= set(data["memories"][0])
    assert data["omitted"] == {"recent": 0, "memories": 0, "topic_entries": 0, "profile": 0}
    assert isinstance(ctx, Context)


def test_small_talk_adds_no_memories(tmp_path):
    """Static models give "hi!" a high cosine with anything; a message with no content word adds nothing."""
    vault = make_vault(tmp_path, TOPICAL)
    vault.config.embedding_similarity_threshold = -1.0  # even with a threshold that keeps everything
    ctx = build_context(vault.searcher, "hi!", session="s", now=NOW)
    assert ctx.memories == [] and ctx.topic is None


def test_a_memory_holding_every_word_of_the_message_is_shown(tmp_path):
    v = make_vault(tmp_path, {"car": ["Parking spot at the office is B15"], "pets": ["Has a cat named Miso"]})
    ctx = build_context(v.searcher, "parking", now=NOW)
    assert [h.text for h in ctx.memories] == ["Parking spot at the office is B15"]
    assert build_context(v.searcher, "hi!", now=NOW).memories == []


def test_a_tight_budget_keeps_the_topic_entries_the_message_is_about(tmp_path):
    car = ["I drive a 2014 Subaru Outback, bought used in 2022 (2025-01-10)",
           "Subaru insurance with Fidelidade renews every March (2025-02-01)"] + \
          [f"Car wash every other Saturday at the station number {i} (2026-0{1 + i % 9}-1{i % 9})" for i in range(14)]
    v = make_vault(tmp_path, {"car": car, "cooking": ["Prefers bomba rice for paella"]})
    first = build_context(v.searcher, "the car wash every other saturday at the station", session="s", now=NOW)
    assert first.topic == "car"  # the session's topic
    ctx = build_context(v.searcher, "what car do I drive? my Subaru", session="s", now=NOW, budget_tokens=300)
    body = section(ctx.text, "Current topic: Car")
    assert ctx.omitted["topic_entries"] > 0 and "less relevant entries not shown" in body
    # kept: as the message's memories (shed last), or in the topic file's relevant part
    assert "I drive a 2014 Subaru Outback" in ctx.text and "Subaru insurance with Fidelidade" in ctx.text
