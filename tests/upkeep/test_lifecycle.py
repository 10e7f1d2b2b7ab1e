"""Memory that ages well: expiry and tidy, the pinned profile, edit with history, follow-ups,
compaction, distill and stats — on real files, with the loopback fake LLM."""
from __future__ import annotations

import json
import re
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

from click.testing import CliRunner
from fake_llm import FakeLLM
from util import FakeEmbedder, loopback_llm, write

from memkit import Vault
from memkit.frontends.cli.group import main

TODAY = date.today()


def day(offset: int) -> str:
    return (TODAY + timedelta(days=offset)).isoformat()


def make(tmp_path: Path, topics: dict[str, str], *, profile: bool = False) -> Vault:
    root = Vault.init(tmp_path / "v", profile=profile).root
    for name, text in topics.items():
        write(root / "topics" / f"{name}.md", text)
    return Vault(root, embedder=FakeEmbedder())


def cli(vault: Vault, *args: str, input: str | None = None):
    return CliRunner().invoke(main, ["--vault", str(vault.root), *args], input=input, obj={"vault_obj": vault})


def lines_everywhere(vault: Vault) -> Counter:
    """Every entry text in the topics and in archive.md (the 'nothing lost' check)."""
    found: Counter = Counter(e.body for e in vault.store.entries())
    for a in vault.store.archived():
        found[re.sub(r"^\[[\w-]+\]\s*", "", re.sub(r"\s*\(\d{4}-\d{2}-\d{2}\)$", "", a.text))] += 1
    return found


# ---- expiry -------------------------------------------------------------------------------------

EXPIRING = {
    "notes": (f"- [context] Is in a meeting until noon ({day(-2)})\n"
              f"- [context] Is at the dentist today ({day(0)})\n"
              f"- [conversation] Talked about the weekend plans ({day(-40)})\n"
              f"- [conversation] Talked about a new bike ({day(-3)})\n"
              f"- Parking spot at the office is B14 (until {day(-1)}) ({day(-30)})\n"
              f"- Conference badge pickup at hall C (until {day(5)}) ({day(-1)})\n"
              f"- [fact] Has a cat named Miso ({day(-400)})\n"),
}


def test_tidy_moves_expired_entries_to_the_archive_and_loses_nothing(tmp_path):
    vault = make(tmp_path, EXPIRING)
    before = lines_everywhere(vault)
    dry = vault.upkeep.tidy(dry_run=True)
    assert sorted(e.body for e, _ in dry.expired) == sorted([
        "Is in a meeting until noon", "Talked about the weekend plans", "Parking spot at the office is B14 (until "
        + day(-1) + ")"])
    assert dry.diff.count("\n-- [") + dry.diff.count("\n-- P") == 3 and "archive.md" in dry.diff
    assert (vault.topics_dir / "notes.md").read_text() == EXPIRING["notes"]  # a dry run writes nothing
    report = vault.upkeep.tidy()
    reasons = {e.body.split(" (")[0]: why for e, why in report.expired}
    assert reasons["Is in a meeting until noon"] == "expired: context entries are kept 1 day"
    assert reasons["Talked about the weekend plans"] == "expired: conversation entries are kept 30 days"
    assert reasons["Parking spot at the office is B14"] == f"expired: until {day(-1)}"
    left = [e.body for e in vault.topic("notes").entries]
    assert left == ["Is at the dentist today", "Talked about a new bike",
                    f"Conference badge pickup at hall C (until {day(5)})", "Has a cat named Miso"]
    assert lines_everywhere(vault) == before  # every line is in its topic or in the archive
    assert vault.upkeep.tidy().expired == []


def test_expire_config_changes_lifetimes(tmp_path):
    vault = make(tmp_path, EXPIRING)
    (vault.root / "memkit.yaml").write_text("expire:\n  context: never\n  fact: 1y\n")
    vault = Vault(vault.root, embedder=FakeEmbedder())
    gone = sorted(e.body.split(" (")[0] for e, _ in vault.upkeep.tidy(dry_run=True).expired)
    assert gone == ["Has a cat named Miso", "Parking spot at the office is B14", "Talked about the weekend plans"]


def test_tidy_cli(tmp_path):
    vault = make(tmp_path, EXPIRING)
    out = cli(vault, "tidy", "--dry-run")
    assert out.exit_code == 0 and "would move" in out.output and "--- a/topics/notes.md" in out.output
    data = json.loads(cli(vault, "tidy", "--json").output)
    assert len(data["expired"]) == 3 and data["dry_run"] is False
    assert "nothing has expired" in cli(vault, "tidy").output


# ---- the pinned profile -------------------------------------------------------------------------

def test_init_makes_a_pinned_profile_first_in_every_context(tmp_path):
    vault = make(tmp_path, {"cooking": "- Prefers bomba rice for paella\n"}, profile=True)
    profile = vault.topic("profile")
    assert profile.meta["pinned"] is True and profile.entries == []
    vault.add("Is called Maya and lives in Porto", topic="profile")
    vault.add("Works as a nurse on night shifts", topic="profile")
    ctx = vault.context("what's the weather like on mars?")  # nothing to do with anything
    assert ctx.text.startswith("# Memory\n\n## About the user\n- Is called Maya and lives in Porto")
    assert "- Works as a nurse on night shifts" in ctx.text
    assert ctx.text.index("## About the user") < ctx.text.index("## Recent topics")
    assert "- profile (" not in ctx.text  # shown whole above, not again as a recent topic
    small = vault.context("hi", budget_tokens=150)
    assert "## About the user" in small.text and small.text.endswith(small.text.split("## Memory instructions")[-1])


# ---- edit with history --------------------------------------------------------------------------

def test_edit_and_history_round_trip(tmp_path):
    vault = make(tmp_path, {"work": "# Work\n\n- [fact] Manager is Priya Nair #people (2026-01-10)\n- Uses Python daily\n"})
    old = vault.store.find(match="Priya")
    new = vault.edit(old.id, "Manager is Tom Berg since Priya moved teams")
    assert new.text == f"[fact] Manager is Tom Berg since Priya moved teams #people ({TODAY.isoformat()})"
    assert new.line == old.line  # in place
    text = (vault.topics_dir / "work.md").read_text()
    assert "Priya Nair" not in text and text.endswith("- Uses Python daily\n")
    newer = vault.edit(new.id, "Manager is Tom Berg")
    steps = vault.upkeep.history(newer.id)
    assert [s.id for s in steps] == [old.id, new.id, newer.id]
    assert steps[0].status == f"edited, now {new.id}" and steps[-1].status == "current"
    assert [s.id for s in vault.upkeep.history(old.id)] == [old.id, new.id, newer.id]  # from any version
    out = cli(vault, "history", old.id)
    assert out.exit_code == 0 and "Priya Nair" in out.output and "now, in work" in out.output
    via = cli(vault, "edit", "--match", "Python", "Uses Python and Rust daily")
    assert via.exit_code == 0 and "edited: now" in via.output


# ---- follow-ups ---------------------------------------------------------------------------------

def test_a_due_follow_up_is_in_the_context_until_done(tmp_path):
    vault = make(tmp_path, {"work": "- Works at Tidewater Logistics\n"})
    add = cli(vault, "add", "Ask how the job interview went", "--due", day(-1), "--topic", "work")
    assert add.exit_code == 0 and "[pending]" in add.output
    cli(vault, "add", "Ask about the marathon result", "--due", day(10))
    listed = json.loads(cli(vault, "pending", "--json").output)
    assert [p["overdue_days"] for p in listed] == [1, -10]
    ctx = vault.context("hello")
    assert "## To follow up" in ctx.text and "Ask how the job interview went" in ctx.text
    assert "1 day overdue" in ctx.text and "marathon" not in ctx.text  # not due yet
    entry = vault.store.find(match="job interview")
    assert cli(vault, "done", entry.id).exit_code == 0
    assert "job interview" not in vault.context("hello").text
    assert "): - [pending] Ask how the job interview went" in (vault.root / "archive.md").read_text()
    assert "(done)" in (vault.root / "archive.md").read_text()


# ---- compaction and distill (the loopback fake LLM) --------------------------------------------

RUNS = "".join(f"- [event] Ran {5 + i} km in the park ({day(-300 + i * 10)})\n" for i in range(6)) + \
    f"- [event] Ran a half marathon in 1:58 ({day(-5)})\n- Prefers running early in the morning\n"


def configure_llm(vault: Vault, fake: FakeLLM) -> Vault:
    (vault.root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: fake, timeout_s: 10}}\n")
    return Vault(vault.root, embedder=FakeEmbedder())


def test_compact_archives_every_original_exactly_once(tmp_path):
    vault = make(tmp_path, {"running": RUNS})
    reply = {"entries": [{"text": "Ran 5 to 7 km runs in the park", "replaces": [1, 2, 3]},
                         {"text": "Ran 8 to 10 km runs in the park", "replaces": [4, 5, 6, 2]}]}
    with FakeLLM(lambda request: json.dumps(reply)) as fake:
        vault = configure_llm(vault, fake)
        before = (vault.topics_dir / "running.md").read_text()
        dry = vault.upkeep.compact("running", before=TODAY - timedelta(days=100), dry_run=True)
        assert (vault.topics_dir / "running.md").read_text() == before and len(dry.removed) == 6
        report = vault.upkeep.compact("running", before=TODAY - timedelta(days=100))
    texts = [e.text for e in vault.topic("running").entries]
    assert texts[0].startswith("[event] Ran 5 to 7 km runs in the park") and len(texts) == 4
    assert f"Ran a half marathon in 1:58 ({day(-5)})" in texts[2] and texts[3] == "Prefers running early in the morning"
    archive = (vault.root / "archive.md").read_text()
    for i in range(6):
        assert archive.count(f"Ran {5 + i} km in the park") == 1  # each original once, with its pointer
    new_ids = {e.id for e in vault.topic("running").entries[:2]}
    assert {m for m in re.findall(r"compacted into ([0-9a-f]{8})", archive)} == new_ids
    assert len(report.removed) == 6 and report.kept == []


def test_distill_rewrites_the_profile_under_its_limit(tmp_path):
    vault = make(tmp_path, {"work": "- [fact] Works as a nurse\n", "home": "- [fact] Lives in Porto\n"}, profile=True)
    vault.add("Lives in Lisbon", topic="profile")
    (vault.root / "memkit.yaml").write_text("profile_max_entries: 2\n")
    reply = {"profile": ["Works as a nurse", "Lives in Porto", "Likes long walks"]}
    with FakeLLM(lambda request: json.dumps(reply)) as fake:
        vault = configure_llm(vault, fake)
        (vault.root / "memkit.yaml").write_text((vault.root / "memkit.yaml").read_text() + "profile_max_entries: 2\n")
        vault = Vault(vault.root, embedder=FakeEmbedder())
        dry = vault.upkeep.distill(dry_run=True)
        assert "+- Works as a nurse" in dry.diff and "Lives in Lisbon" in dry.diff
        vault.upkeep.distill()
    assert [e.body for e in vault.topic("profile").entries] == ["Works as a nurse", "Lives in Porto"]
    assert "(replaced in the profile): - Lives in Lisbon" in (vault.root / "archive.md").read_text()


def test_stats(tmp_path):
    vault = make(tmp_path, EXPIRING)
    vault.add("Call the plumber", kind="pending", topic="notes")
    data = json.loads(cli(vault, "stats", "--json").output)
    assert data["entries"] == 8 and data["per_topic"] == {"notes": 8}
    assert data["pending"] == 1 and data["expired_awaiting_tidy"] == 3
    assert data["per_kind"]["context"] == 2 and data["inbox"] == {"waiting": [], "errors": []}
    assert "8 entries in 1 topic;" in cli(vault, "stats").output


def test_digest_records_follow_ups_with_their_due_date(tmp_path):
    from memkit.digest.digest import digest_file

    vault = make(tmp_path, {"work": "- Works at Tidewater Logistics\n"})
    seen: list[str] = []

    def answer(request):
        seen.append(request["messages"][0]["content"])
        return json.dumps({"conclusions": [
            {"kind": "pending", "text": "Has a job interview at Acme on Friday; ask how it went", "topic": "work",
             "due": day(4)},
            {"kind": "pending", "text": "Will send the photos from the trip", "topic": None, "due": "someday"}]})

    transcript = write(tmp_path / "t.txt", "Maya: I have an interview at Acme on Friday!\n")
    with FakeLLM(answer) as fake:
        digest_file(vault.searcher, transcript, loopback_llm(fake))
    assert f"today is {TODAY.isoformat()}" in seen[0] and '"pending"' in seen[0] or "pending" in seen[0]
    follow = vault.upkeep.pending()
    texts = {f.entry.body.replace(" (from t.txt)", ""): f.due for f in follow}
    assert texts[f"Has a job interview at Acme on Friday; ask how it went (due {day(4)})"] == TODAY + timedelta(days=4)
    assert texts["Will send the photos from the trip"] is None  # no real date given: no due date


# ---- from a new-user trial ----------------------------------------------------------------------

def test_edit_keeps_the_due_and_until_days(tmp_path):
    vault = make(tmp_path, {"home": f"- [pending] Call the plumber (due {day(3)}) ({day(-1)})\n"
                                    f"- Parking spot is B14 (until {day(30)}) ({day(-1)})\n"})
    plumber = vault.edit(vault.store.find(match="plumber").id, "Call the plumber about the boiler")
    assert plumber.kind == "pending" and f"(due {day(3)})" in plumber.text
    assert vault.upkeep.pending()[0].due == TODAY + timedelta(days=3)
    parking = vault.edit(vault.store.find(match="Parking").id, "Parking spot is B15")
    assert f"(until {day(30)})" in parking.text
    moved = vault.edit(vault.store.find(match="B15").id, f"Parking spot is C2 (until {day(60)})")
    assert moved.text.count("(until") == 1 and day(60) in moved.text


def test_history_of_a_compacted_entry_shows_every_original(tmp_path):
    vault = make(tmp_path, {"running": RUNS})
    reply = {"entries": [{"text": "Ran 5 to 10 km in the park", "replaces": [1, 2, 3, 4, 5, 6]}]}
    with FakeLLM(lambda request: json.dumps(reply)) as fake:
        vault = configure_llm(vault, fake)
        vault.upkeep.compact("running", before=TODAY - timedelta(days=100))
    first = [a for a in vault.store.archived() if "Ran 5 km" in a.text][0]
    steps = vault.upkeep.history(first.id)
    assert len(steps) == 7 and steps[-1].status == "current" and "5 to 10 km" in steps[-1].text
    assert first.id in [s.id for s in steps]


def test_done_is_for_follow_ups(tmp_path):
    vault = make(tmp_path, {"home": "- Has a cat named Miso\n"})
    result = cli(vault, "done", "--match", "Miso")
    assert result.exit_code == 2 and "not a follow-up" in result.output and "memkit forget" in result.output
    assert "Miso" in (vault.topics_dir / "home.md").read_text()


def test_a_hand_named_topic_is_found_by_its_canonical_name(tmp_path):
    vault = make(tmp_path, {})
    write(vault.topics_dir / "Books.md", "- Reading Dune\n")
    assert [e.text for e in vault.topic("books").entries] == ["Reading Dune"]
    vault.add("Finished Dune", topic="books")
    assert sorted(p.name for p in vault.topics_dir.iterdir()) == ["Books.md"]


def test_topics_and_recent_agree_on_the_time(tmp_path):
    vault = make(tmp_path, {})
    vault.add("Prefers window seats", topic="travel")
    info = {t.name: t.updated for t in vault.topics()}
    assert info["travel"] == vault.recent()[0].updated  # not midnight of the entry's date


def test_expired_entries_leave_search_and_context_at_once(tmp_path):
    vault = make(tmp_path, EXPIRING)
    texts = [h.text for h in vault.search("meeting dentist weekend bike parking badge cat", k=20, threshold=None)]
    assert not any("meeting until noon" in t or "weekend plans" in t or "B14" in t for t in texts)
    assert any("dentist" in t for t in texts) and any("badge" in t for t in texts)  # not expired yet
    assert not vault.search("meeting until noon", threshold=None, mode="lexical") or \
        all("meeting" not in h.text for h in vault.search("meeting until noon", threshold=None, mode="lexical"))
    ctx = vault.context("where is the parking spot at the office")
    assert "B14" not in ctx.text
    vault.add("Parking spot moved to C2 (until " + day(10) + ")", topic="notes")
    assert any("C2" in h.text for h in vault.search("parking spot", threshold=None))  # the new one is found


def test_tidy_never_archives_prose_or_code_that_mentions_until(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    text = ("I rented in Paris (until 2019-06-30) and then moved to Lyon.\n\n"
            "```python\ndef f():\n    return 1  # (until 2020-01-01)\n```\n\n"
            "- Parking spot B14 (until 2020-01-01)\n")
    path = write(root / "topics" / "notes.md", text)
    report = Vault(root).upkeep.tidy()
    assert [e.text for e, _ in report.expired] == ["Parking spot B14 (until 2020-01-01)"]
    assert path.read_text() == text.replace("- Parking spot B14 (until 2020-01-01)\n", "")


# ---- follow-ups with urgency and a question; importance (issue 20) -------------------------------

def test_follow_up_markers_and_their_order(tmp_path):
    v = make(tmp_path, {"life": (
        f"- [pending] Dentist check-up booked (due {day(20)}) (urgency low) ({day(-1)})\n"
        f"- [pending] Job interview at Acme, nervous about the design round (urgency high) "
        f"(ask: How did the Acme interview go?) ({day(-1)})\n"
        f"- [pending] Sister's flight lands (due {day(0)}) ({day(-2)})\n"
        f"- [pending] Plant cuttings rooting (urgency medium) ({day(-1)})\n")})
    items = v.upkeep.pending(today=TODAY)
    assert [f.entry.body.split(" (")[0] for f in items] == [
        "Sister's flight lands",  # due today: first
        "Job interview at Acme, nervous about the design round",  # high
        "Plant cuttings rooting",  # medium
        "Dentist check-up booked"]  # low
    interview = items[1]
    assert (interview.urgency, interview.question) == ("high", "How did the Acme interview go?")
    assert interview.to_dict()["question"] == "How did the Acme interview go?"
    result = cli(v, "pending")
    assert result.exit_code == 0, result.output
    assert "high · ask: How did the Acme interview go?" in result.output


def test_a_follow_up_expires_after_a_week_unless_due_later(tmp_path):
    v = make(tmp_path, {"life": (
        f"- [pending] Old question nobody asked ({day(-8)})\n"
        f"- [pending] Recent question ({day(-6)})\n"
        f"- [pending] Far appointment (due {day(3)}) ({day(-30)})\n"
        f"- [pending] Past appointment (due {day(-1)}) ({day(-30)})\n")})
    assert sorted(f.entry.body.split(" (")[0] for f in v.upkeep.pending(today=TODAY)) == [
        "Far appointment", "Recent question"]
    report = v.upkeep.tidy(today=TODAY)
    assert sorted(e.body.split(" (")[0] for e, _ in report.expired) == ["Old question nobody asked",
                                                                          "Past appointment"]


def test_markers_read_and_written():
    from memkit.formats.lifecycle import follow_up_markers, importance, importance_marker

    assert follow_up_markers("2026-12-01", "HIGH", "Did (really) it work?") == \
        "(due 2026-12-01) (urgency high) (ask: Did really it work?)"
    assert follow_up_markers(None, "urgent", "") == ""  # not an urgency: left out
    assert importance("Loves sailing (importance 0.9) (2026-01-02)") == 0.9
    assert importance("Loves sailing (importance 1)") == 1.0
    assert importance("no marker") == 0.5 and importance("(importance 7)") == 0.5
    assert importance_marker(1.7) == "(importance 1.0)" and importance_marker(0.26) == "(importance 0.3)"


def test_compact_keeps_the_importance_of_what_it_merges(tmp_path):
    vault = make(tmp_path, {"family": f"- Lina's first chess win (importance 0.9) ({day(-200)})\n"
                                      f"- Lina played chess at school ({day(-199)})\n"
                                      f"- The chess club meets in room 4 (importance 0.2) ({day(-198)})\n"})
    reply = {"entries": [{"text": "Lina won her first chess game at school", "replaces": [1, 2]},
                         {"text": "Chess club: room 4", "replaces": [3]}]}
    with FakeLLM(lambda request: json.dumps(reply)) as fake:
        vault = configure_llm(vault, fake)
        vault.upkeep.compact("family", before=TODAY - timedelta(days=100))
        prompt = fake.requests[0]["messages"][-1]["content"]
    assert "keep the important ones" in prompt and "(importance 0.9)" in prompt
    assert [e.body for e in vault.topic("family").entries] == [
        "Lina won her first chess game at school (importance 0.9)", "Chess club: room 4 (importance 0.2)"]


# ---- issue 26.6: compact and edit keep what the entry was ----------------------------------------

def test_compact_takes_an_echoed_kind_once_and_leaves_an_unchanged_entry_alone(tmp_path):
    vault = make(tmp_path, {"running": RUNS})
    first = vault.topic("running").entries[0]
    reply = {"entries": [{"text": first.text, "replaces": [1]},  # returned as it was
                         {"text": "[event] Ran 6 to 10 km runs in the park", "replaces": [2, 3, 4, 5, 6]}]}
    with FakeLLM(lambda request: json.dumps(reply)) as fake:
        vault = configure_llm(vault, fake)
        report = vault.upkeep.compact("running", before=TODAY - timedelta(days=100))
    texts = [e.text for e in vault.topic("running").entries]
    assert texts[0] == first.text and not any("[event] [event]" in t or "[event] [Event]" in t for t in texts)
    assert texts[1] == f"[event] Ran 6 to 10 km runs in the park ({day(-300 + 50)})"
    archive = (vault.root / "archive.md").read_text()
    assert first.text not in archive and f"compacted into {first.id}" not in archive
    assert [e.id for e in report.kept] == [first.id] and len(report.removed) == 5


def test_edit_keeps_the_importance_and_urgency_markers(tmp_path):
    vault = make(tmp_path, {"family": "- Lina's first chess win (importance 0.9) (2026-01-02)\n"
                                      "- [pending] Call the school (urgency high) (due 2026-12-01) (2026-11-20)\n"})
    edited = vault.edit(vault.store.find(match="chess").id, "Lina won her first chess game")
    assert edited.text.startswith("Lina won her first chess game (importance 0.9) (")
    again = vault.edit(edited.id, "Lina won her first chess tournament (importance 1.0)")  # the text's own wins
    assert "(importance 1.0)" in again.text and "0.9" not in again.text
    call = vault.edit(vault.store.find(match="school").id, "Call the school about the trip")
    assert call.text.startswith("[pending] Call the school about the trip (urgency high) (due 2026-12-01) (")
