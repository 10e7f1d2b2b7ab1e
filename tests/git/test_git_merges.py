"""Git merges of a vault that a person would expect (issue 26.14): an edit against a forget, the
same line added on both sides, a session aged on one clone and continued on the other, a session
aged on both. Real git: two clones of one origin, as in tests/git/test_git.py."""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from fake_llm import FakeLLM
from test_git import all_texts, assert_clean_merge, cli, clones, git, open_vault, sync  # noqa: F401
from util import loopback_llm

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def unmerged(b: Path) -> str:
    return git(b, "diff", "--name-only", "--diff-filter=U").stdout


# ---- topics --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("editor", ["a", "b"])
def test_an_edit_against_a_forget_is_a_loud_conflict(clones: tuple[Path, Path], editor: str) -> None:
    a, b = clones
    ed, fo = (a, b) if editor == "a" else (b, a)
    path = ed / "topics" / "pets.md"  # a person rewrites the line: nothing like the old words
    path.write_text(path.read_text().replace("Has a cat named Miso", "Miso: grey, 4 kg, loves boxes"))
    open_vault(fo).forget(match="Has a cat named Miso")
    result = sync(a, b)
    assert result.returncode != 0 and "topics/pets.md" in unmerged(b), result.stdout
    text = (b / "topics" / "pets.md").read_text()
    assert "<<<<<<<" in text and "Miso: grey, 4 kg, loves boxes" in text  # both sides shown, nothing lost
    check = cli(b, "check", "--json")
    assert check.exit_code == 1
    assert any(p["kind"] == "conflict" and p["file"] == "topics/pets.md" for p in json.loads(check.output)["problems"])


def test_an_edit_beside_a_forget_of_another_line_merges(clones: tuple[Path, Path]) -> None:
    a, b = clones
    path = a / "topics" / "pets.md"
    path.write_text(path.read_text().replace("Has a cat named Miso", "Miso: grey, 4 kg, loves boxes"))
    open_vault(b).forget(match="wet food")
    assert_clean_merge(sync(a, b), b)
    texts = all_texts(b)
    assert "Miso: grey, 4 kg, loves boxes" in texts and "Miso eats wet food twice a day" not in texts
    assert "Has a cat named Miso" not in texts


def test_the_same_line_added_on_both_sides_is_kept_once(clones: tuple[Path, Path]) -> None:
    a, b = clones
    for text in ("Miso hates the rain", "Miso sleeps on the sofa"):
        open_vault(a).add(text, topic="pets")
    for text in ("Bought Miso a scratching post", "Miso hates the rain"):
        open_vault(b).add(text, topic="pets")
    assert_clean_merge(sync(a, b), b)
    texts = all_texts(b)
    for text in ("Miso hates the rain", "Miso sleeps on the sofa", "Bought Miso a scratching post"):
        assert texts.count(text) == 1, (text, texts)


# ---- sessions ------------------------------------------------------------------------------------------

SUMMARY = {"summary": "Maya plans a week in Lisbon in March; the flight is booked.",
           "key_points": ["TAP flight TP 571 on March 3rd", "Wants a quiet hotel in Alfama"],
           "emotional_highlights": ["Excited: first trip since the move"]}
CORE = {"core": "Maya booked a March week in Lisbon and wanted a quiet hotel.", "clearly": ["the flight"],
        "vaguely": [], "barely": []}
CHAT = [("user", "I want to spend a week in Lisbon in March, my first trip since the move."),
        ("assistant", "Lovely! Shall I look at flights from Berlin for the first week of March?"),
        ("user", "Yes please, mornings only, and I'd like to be back on the 10th of March."),
        ("assistant", "Booked: TAP flight TP 571 on March 3rd at 09:05, back on March 10th."),
        ("user", "Great. Remind me to look for a quiet hotel in Alfama, without street noise.")]


def answer(request: dict) -> str:
    return json.dumps(CORE if "core memory" in str(request["messages"][0]["content"]) else SUMMARY)


def shared_session(a: Path, b: Path) -> str:
    """A session started on a, pushed, pulled by b; returns its file (relative)."""
    va = open_vault(a)
    s = va.conversations.new(session_id="lisbon", title="Lisbon trip", now=T0)
    for i, (role, text) in enumerate(CHAT):
        va.conversations.append("lisbon", role, text, now=T0 + timedelta(minutes=i))
    git(a, "add", "-A")
    git(a, "commit", "-m", "a session")
    git(a, "push", "origin", "HEAD:main")
    git(b, "pull", "origin", "main")
    return s.file


def age(root: Path, fake: FakeLLM, days: float) -> None:
    job = next(j for j in open_vault(root).upkeep.run(now=T0 + timedelta(days=days), llm=loopback_llm(fake)).jobs
               if j.name == "session-aging")
    assert job.changed, job.did


def test_one_clone_ages_a_session_while_the_other_continues_it(clones: tuple[Path, Path]) -> None:
    a, b = clones
    file = shared_session(a, b)
    with FakeLLM(answer) as fake:
        age(a, fake, 4)
    open_vault(b).conversations.append("lisbon", "user", "Found one: Casa de Alfama, 4 nights.", now=T0 + timedelta(days=5))
    assert_clean_merge(sync(a, b), b)
    session = open_vault(b).conversations.show("lisbon")
    assert session.stage == "summary" and [m.content for m in session.messages] == ["Found one: Casa de Alfama, 4 nights."]
    assert session.stage_block is not None and session.stage_block.text.startswith(SUMMARY["summary"])
    assert "Key points" not in session.messages[0].content  # no text runs into another block
    text = (b / file).read_text()
    assert text.count("stage:") == 1 and text.count("### summary") == 1 and "<<<<<<<" not in text
    whole = open_vault(b).conversations.show_raw("lisbon")
    assert [m.content for m in whole.messages] == [t for _, t in CHAT] + ["Found one: Casa de Alfama, 4 nights."]
    assert json.loads(cli(b, "check", "--json").output)["problems"] == [] or cli(b, "check").exit_code == 0


@pytest.mark.parametrize("b_days", [5, 9])
def test_both_clones_age_the_same_session(clones: tuple[Path, Path], b_days: int) -> None:
    a, b = clones
    file = shared_session(a, b)
    with FakeLLM(answer) as fake:
        age(a, fake, 4)
        age(b, fake, b_days)  # 9 days: b's is the core memory
    assert_clean_merge(sync(a, b), b)
    text = (b / file).read_text()
    header = text.split("---")[1]
    for key in ("stage", "stage_at", "stage_ratio", "raw", "updated"):
        assert header.count(f"\n{key}:") == 1, (key, header)
    assert text.count("### summary") == 1
    session = open_vault(b).conversations.show("lisbon")
    assert session.stage == ("core" if b_days == 9 else "summary") and session.messages == []
    assert [m.content for m in open_vault(b).conversations.show_raw("lisbon").messages] == [t for _, t in CHAT]
    assert cli(b, "check").exit_code == 0


def test_both_clones_retitle_a_session_differently_is_a_loud_conflict(clones: tuple[Path, Path]) -> None:
    a, b = clones
    file = shared_session(a, b)
    for clone, title in ((a, "Lisbon, March"), (b, "Trip to Portugal")):
        path = clone / file
        path.write_text(path.read_text().replace("title: Lisbon trip", f"title: {title}"))
    result = sync(a, b)
    assert result.returncode != 0 and file in unmerged(b)
    check = cli(b, "check", "--json")
    assert check.exit_code == 1
    found = [p for p in json.loads(check.output)["problems"] if p["file"] == file]
    assert found and found[0]["kind"] == "conflict" and found[0]["line"] >= 1


def test_check_reports_what_a_union_merge_left_in_a_session(tmp_path: Path) -> None:
    """A clone without the driver (git-setup not run) merges sessions with merge=union: two stage
    blocks and duplicate stage keys are then reported, not silent."""
    from memkit import Vault

    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "sessions").mkdir()
    (root / "sessions" / "2026-03-01-x.md").write_text(
        "---\nid: x\ncreated: 2026-03-01T09:00:00Z\nstage: summary\nstage_at: 2026-03-05T09:00:00Z\n"
        "stage_at: 2026-03-06T09:00:00Z\n---\n# Conversation x\n\n"
        "### summary · 2026-03-05T09:00:00Z · of=stage · covers=5 · sha=aaaaaaaaaaaa\none\n\n"
        "### summary · 2026-03-06T09:00:00Z · of=stage · covers=5 · sha=aaaaaaaaaaaa\ntwo\n")
    check = cli(root, "check", "--json")
    assert check.exit_code == 1
    found = {(p["kind"], p["line"]) for p in json.loads(check.output)["problems"] if p["file"] == "sessions/2026-03-01-x.md"}
    assert found == {("session", 6), ("session", 13)}


def test_git_setup_names_the_session_files_in_the_clones_own_attributes(clones: tuple[Path, Path]) -> None:
    a, _ = clones
    assert cli(a, "git-setup").exit_code == 0  # again: idempotent
    lines = (a / ".git" / "info" / "attributes").read_text().splitlines()
    assert lines.count("/sessions/*.md merge=memkit") == 1 and "/sessions/archive/raw/*.md merge=memkit" in lines
    found = git(a, "check-attr", "merge", "sessions/2026-03-01-x.md", "topics/pets.md").stdout
    assert "sessions/2026-03-01-x.md: merge: memkit" in found and "topics/pets.md: merge: memkit" in found


def test_two_raw_conversations_added_on_both_clones_merge_message_by_message() -> None:
    """Both clones aged the session, one after a further message: both added its raw file."""
    from memkit.formats.session import SessionMessage, parse_session, render_header, render_message
    from memkit.git.session_merge import merge_session

    head = render_header("lisbon", "2026-03-01T09:00:00Z", title="Lisbon trip")
    said = [render_message(SessionMessage(role, text, f"2026-03-01T09:0{i}:00Z")) for i, (role, text) in enumerate(CHAT)]
    later = render_message(SessionMessage("user", "one more", "2026-03-02T10:00:00Z"))
    merged, left = merge_session("", head + "".join(said), head + "".join(said) + later)
    assert left == 0
    assert [m.content for m in parse_session(merged, "raw", "lisbon").messages] == [t for _, t in CHAT] + ["one more"]
    assert merged.startswith(head) and merged.count("---\n") == 2


def test_a_merge_driver_killed_mid_write_leaves_ours_whole(tmp_path: Path, monkeypatch) -> None:
    """The merge result is written atomically: a driver that dies while writing leaves git's %A as
    it was (it was cut to 0 bytes), never a half or empty topic file."""
    from memkit.base import fsutil
    from memkit.git.sync import merge_files

    base, ours, theirs = (tmp_path / n for n in ("base", "ours", "theirs"))
    base.write_text("- Has a cat named Miso\n")
    ours.write_text("- Has a cat named Miso\n- The vet is Dr. Alves\n")
    theirs.write_text("- Has a cat named Miso\n- Miso eats wet food\n")
    before = ours.read_bytes()

    def killed(path, data):
        raise KeyboardInterrupt  # the process is stopped while it writes the merged file

    monkeypatch.setattr(fsutil, "_write_temp", killed)
    with pytest.raises(KeyboardInterrupt):
        merge_files(str(base), str(ours), str(theirs), "topics/pets.md")
    assert ours.read_bytes() == before


def test_check_refuses_a_topic_git_knows_that_lost_every_entry(clones: tuple[Path, Path]) -> None:
    a, _ = clones
    (a / "topics" / "pets.md").write_bytes(b"")  # what a driver killed mid-write used to leave
    result = cli(a, "check")
    assert result.exit_code == 1, result.output
    assert "topics/pets.md is empty, but git's last commit of it holds 3 entries" in result.output
    git(a, "checkout", "--", "topics/pets.md")
    assert cli(a, "check").exit_code == 0
    vault = open_vault(a)  # forgetting every entry keeps the file's frontmatter: not a problem
    for entry in vault.store.topic("pets").entries:
        vault.forget(entry.id)
    assert cli(a, "check").exit_code == 0


def test_after_a_merge_index_txt_is_in_step_without_a_fix(clones: tuple[Path, Path]) -> None:
    """Issue 41 item 6: a union merge of index.txt left each topic's old and new lines, and `memkit
    check` (the pre-commit hook) said it was out of step until `check --fix`. The driver merges it
    as memkit reads it: one line per topic, the newest, newest first."""
    a, b = clones
    open_vault(a).add("Miso is afraid of the vacuum cleaner", topic="pets")
    open_vault(b).add("Started learning Portuguese", topic="general")
    open_vault(b).add("Bakes sourdough on Sundays", topic="cooking")
    assert_clean_merge(sync(a, b), b)
    assert git(b, "status", "--porcelain").stdout == ""  # the merge commit holds index.txt as memkit writes it
    lines = (b / "index.txt").read_text().splitlines()
    assert len({line.split("|")[1] for line in lines}) == len(lines) == 3, lines
    report = open_vault(b).upkeep.check()
    assert [p.kind for p in report.problems if p.kind == "recent"] == [], report.problems
    assert git(b, "status", "--porcelain").stdout == ""  # and no command rewrites it afterwards


def test_the_index_merge_keeps_each_topics_newest_line_and_what_a_side_removed_stays_out() -> None:
    from memkit.git.sync import merge_index

    base = b"2026-03-01T10:00:00|pets|cats\n2026-02-01T10:00:00|old|gone soon\n2026-01-01T10:00:00|general|\n"
    ours = b"2026-03-02T10:00:00|general|\n2026-03-01T10:00:00|pets|cats\n"  # removed "old"
    theirs = (b"2026-03-03T09:00:00|pets|cats and a dog\n2026-02-01T10:00:00|old|gone soon\n"
              b"2026-01-01T10:00:00|general|\n")
    assert merge_index(base, ours, theirs) == (b"2026-03-03T09:00:00|pets|cats and a dog\n"
                                                b"2026-03-02T10:00:00|general|\n")
    assert merge_index(b"", b"<<<<<<< x\n2026-03-02T10:00:00|a|\n", b"2026-03-03T10:00:00|b|\n") == \
        b"2026-03-03T10:00:00|b|\n2026-03-02T10:00:00|a|\n"
