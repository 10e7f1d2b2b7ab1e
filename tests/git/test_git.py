"""A vault synced with git: the common concurrent edits merge by themselves, real conflicts are loud.

Real git: a vault is committed, cloned twice, both clones change it, one pushes, the other pulls.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from util import FakeEmbedder, write

from memkit import MemkitError, Vault
from memkit.frontends.cli.group import main

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

GIT_ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "Test",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **GIT_ENV, HOME=str(cwd.parent))
    return subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "pull.rebase=false", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, check=check)


def cli(root: Path, *args: str, input: str | None = None):
    vault = Vault(root, embedder=FakeEmbedder())
    return CliRunner().invoke(main, ["--vault", str(root), *args], input=input, obj={"vault_obj": vault})


def open_vault(root: Path) -> Vault:
    return Vault(root, embedder=FakeEmbedder())


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path]:
    """A vault with a `pets` topic, committed to a bare origin and cloned twice (git-setup in each)."""
    origin = tmp_path / "origin.git"
    seed = tmp_path / "seed"
    Vault.init(seed, profile=False)
    vault = open_vault(seed)
    for text in ("Has a cat named Miso", "Miso eats wet food twice a day", "The vet is Dr. Alves"):
        vault.add(text, topic="pets")
    vault.add("Lives in Porto", topic="general")
    git(tmp_path, "init", "--bare", str(origin))
    git(seed, "init")
    assert cli(seed, "git-setup").exit_code == 0
    git(seed, "add", "-A")
    git(seed, "commit", "-m", "seed")
    git(seed, "remote", "add", "origin", str(origin))
    git(seed, "push", "origin", "HEAD:main")
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        git(tmp_path, "clone", str(origin), str(clone))
        assert cli(clone, "git-setup").exit_code == 0  # registers the merge driver in this clone
    return a, b


def sync(a: Path, b: Path) -> subprocess.CompletedProcess[str]:
    """a commits and pushes; b commits and pulls (merging a's change)."""
    for clone in (a, b):
        git(clone, "add", "-A")
        git(clone, "commit", "-m", f"change in {clone.name}", check=False)
    git(a, "push", "origin", "HEAD:main")
    return git(b, "pull", "origin", "main", check=False)


def assert_clean_merge(result: subprocess.CompletedProcess[str], b: Path) -> None:
    assert result.returncode == 0, result.stdout + result.stderr
    assert git(b, "diff", "--name-only", "--diff-filter=U").stdout == ""  # no unmerged paths


def all_texts(root: Path) -> list[str]:
    return [e.body for e in open_vault(root).store.entries()]


def test_init_writes_gitattributes_and_gitignore(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    attrs = (root / ".gitattributes").read_text()
    assert "topics/*.md merge=memkit" in attrs and "archive.md merge=union" in attrs and "index.txt merge=union" in attrs
    ignore = (root / ".gitignore").read_text().split()
    assert {".memkit/", "inbox/done/", "*.error"} <= set(ignore)


def test_git_setup_is_idempotent_and_registers_the_driver(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / ".gitattributes").write_text("*.png binary\n")
    git(root, "init")
    for _ in range(2):
        result = cli(root, "git-setup")
        assert result.exit_code == 0, result.output
    attrs = (root / ".gitattributes").read_text()
    assert attrs.startswith("*.png binary\n") and attrs.count("merge=memkit") == 2  # topics/ and its folders
    assert "merge-driver" in git(root, "config", "merge.memkit.driver").stdout


def test_both_clones_add_to_one_topic(clones: tuple[Path, Path]) -> None:
    a, b = clones
    open_vault(a).add("Miso is afraid of the vacuum cleaner", topic="pets")
    open_vault(b).add("Bought Miso a scratching post", topic="pets")
    open_vault(b).add("Started learning Portuguese", topic="general")
    assert_clean_merge(sync(a, b), b)
    texts = all_texts(b)
    for text in ("Miso is afraid of the vacuum cleaner", "Bought Miso a scratching post", "Has a cat named Miso",
                 "Started learning Portuguese"):
        assert texts.count(text) == 1, text
    found = open_vault(b).search("vacuum cleaner scratching post", k=10, threshold=None)
    assert {"Miso is afraid of the vacuum cleaner", "Bought Miso a scratching post"} <= {h.text.split(" (")[0] for h in found}
    recent = open_vault(b).recent()
    assert len({r.topic for r in recent}) == len(recent)  # index.txt: one line per topic after the union merge
    assert [r.updated for r in recent] == sorted((r.updated for r in recent), reverse=True)


def test_one_adds_while_the_other_forgets(clones: tuple[Path, Path]) -> None:
    a, b = clones
    open_vault(a).add("Miso weighs 4.2 kg", topic="pets")
    open_vault(b).forget(match="wet food")
    open_vault(a).forget(match="Dr. Alves")  # both forget a line: both land in archive.md
    assert_clean_merge(sync(a, b), b)
    texts = all_texts(b)
    assert "Miso weighs 4.2 kg" in texts and "Miso eats wet food twice a day" not in texts
    assert "The vet is Dr. Alves" not in texts
    archive = (b / "archive.md").read_text()
    assert "wet food" in archive and "Dr. Alves" in archive


def test_both_edit_the_updated_key(clones: tuple[Path, Path]) -> None:
    a, b = clones
    for clone, stamp in ((a, "2030-01-01T10:00:00"), (b, "2030-02-01T09:00:00")):
        path = clone / "topics" / "pets.md"
        text = path.read_text()
        old = next(line for line in text.splitlines() if line.startswith("updated:"))
        path.write_text(text.replace(old, f"updated: {stamp}"))
    assert_clean_merge(sync(a, b), b)
    topic = open_vault(b).topic("pets")
    assert topic.updated().isoformat() == "2030-02-01T09:00:00"  # the newest wins
    assert len(topic.entries) == 3


def test_a_real_conflict_is_loud_and_loses_nothing(clones: tuple[Path, Path]) -> None:
    a, b = clones
    for clone, new in ((a, "Has a cat named Miso, a grey tabby"), (b, "Has a cat named Miso, adopted in 2024")):
        path = clone / "topics" / "pets.md"
        path.write_text(path.read_text().replace("Has a cat named Miso", new))
    result = sync(a, b)
    assert result.returncode != 0 and "pets.md" in git(b, "diff", "--name-only", "--diff-filter=U").stdout
    path = b / "topics" / "pets.md"
    before = path.read_bytes()
    assert b"<<<<<<<" in before
    check = cli(b, "check", "--json")
    assert check.exit_code == 1
    problems = json.loads(check.output)["problems"]
    conflict = [p for p in problems if p["kind"] == "conflict"]
    assert conflict and conflict[0]["file"] == "topics/pets.md" and conflict[0]["line"] >= 1
    vault = open_vault(b)
    texts = [h.text for h in vault.search("grey tabby adopted 2024 wet food", k=10, threshold=None)]
    assert any("grey tabby" in t for t in texts) and any("adopted in 2024" in t for t in texts)  # both sides
    assert any("wet food" in t for t in texts)  # and the other lines
    assert not any(t.startswith(("<<<<<<<", "=======", ">>>>>>>")) for t in all_texts(b))
    added = cli(b, "add", "more", "--topic", "pets")
    assert added.exit_code == 1 and "merge conflict" in added.output and "topics/pets.md" in added.output
    assert path.read_bytes() == before


def test_hand_edit_puts_the_topic_first_in_recent(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    vault = open_vault(root)
    vault.add("Has a cat", topic="pets")
    vault.add("Lives in Porto", topic="general")
    vault.add("Likes bomba rice", topic="cooking")
    assert vault.recent()[0].topic == "cooking"
    path = root / "topics" / "pets.md"
    with open(path, "a") as fh:  # an editor, some seconds later
        fh.write("- Miso sleeps on the sofa\n")
    later = path.stat().st_mtime + 60
    os.utime(path, (later, later))
    assert open_vault(root).recent()[0].topic == "pets"
    write(root / "topics" / "travel.md", "- Prefers window seats\n")  # a topic file created by hand
    os.utime(root / "topics" / "travel.md", (later + 60, later + 60))
    assert [r.topic for r in open_vault(root).recent()][:2] == ["travel", "pets"]


def test_adding_to_a_split_parent_goes_to_its_closest_subtopic(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "cooking-rice.md", "---\ntitle: Rice\nparent: cooking\n---\n- Bomba rice for paella\n- Soaks rice\n")
    write(root / "topics" / "cooking-general.md", "---\ntitle: Cooking\nparent: cooking\n---\n- Oven runs hot\n")
    vault = open_vault(root)
    entry = vault.add("Rinses the rice three times", topic="cooking")
    assert entry.topic == "cooking-rice" and not (root / "topics" / "cooking.md").exists()
    assert vault.add("Bought a cast iron pan", topic="cooking").topic == "cooking-general"
    shown = cli(root, "show", "cooking")
    assert shown.exit_code == 0 and "cooking-rice" in shown.output and "cooking-general" in shown.output


def test_forget_a_duplicated_line(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat\n- Walks the dog\n- Has a cat\n")
    vault = open_vault(root)
    entry = vault.forget(match="Has a cat")
    assert entry.line == 3  # one occurrence (the last), and the output names it
    assert (root / "topics" / "pets.md").read_text() == "- Has a cat\n- Walks the dog\n"
    write(root / "topics" / "pets.md", "- Has a cat\n- Walks the dog\n- Has a cat\n")
    result = cli(root, "forget", "--match", "Has a cat", "--all")
    assert result.exit_code == 0, result.output
    assert (root / "topics" / "pets.md").read_text() == "- Walks the dog\n"


def test_add_odd_input(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    assert cli(root, "add", "--", "-5 degrees tonight").exit_code == 0
    assert cli(root, "add", "--topic", "home", "--", "- [decision] Chose oak flooring (2026-02-01)").exit_code == 0
    (entry,) = open_vault(root).topic("home").entries
    assert (entry.kind, entry.date, entry.text) == ("decision", "2026-02-01", "[decision] Chose oak flooring (2026-02-01)")
    assert "-5 degrees tonight" in (root / "topics" / "general.md").read_text()


def test_check_reports_and_fixes(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "---\ntitle: Pets\nupdated: 2026-01-01T00:00:00\nupdated: 2026-02-01T00:00:00\n---\n"
                                       "- Has a cat\n- Has a cat\n")
    write(root / "topics" / "bad.md", "---\ntitle: [unclosed\n---\n- Still searchable\n")
    write(root / "inbox" / "chat.txt.error", "2026-01-01T00:00:00 the LLM did not answer\n")
    result = cli(root, "check", "--json")
    assert result.exit_code == 1
    kinds = {(p["kind"], p["file"]) for p in json.loads(result.output)["problems"]}
    assert ("duplicate", "topics/pets.md") in kinds and ("duplicate-key", "topics/pets.md") in kinds
    assert ("frontmatter", "topics/bad.md") in kinds and ("inbox-error", "inbox/chat.txt.error") in kinds
    assert [e.text for e in open_vault(root).topic("bad").entries] == ["Still searchable"]
    fixed = cli(root, "check", "--fix")
    assert "fixed" in fixed.output
    text = (root / "topics" / "pets.md").read_text()
    assert text.count("- Has a cat") == 1 and text.count("updated:") == 1 and "updated: 2026-02-01T00:00:00" in text
    assert "Has a cat" in (root / "archive.md").read_text()  # the duplicate went to the archive, not away
    again = json.loads(cli(root, "check", "--json").output)["problems"]
    assert {p["kind"] for p in again} == {"frontmatter", "inbox-error"}  # what needs a person stays


def test_invalid_frontmatter_keeps_the_body_searchable_and_refuses_writes(tmp_path: Path) -> None:
    root = Vault.init(tmp_path / "v", profile=False).root
    path = write(root / "topics" / "bad.md", "---\ntitle: [unclosed\n---\n- Router is a MikroTik\n")
    vault = open_vault(root)
    assert [h.topic for h in vault.search("MikroTik router", threshold=None)] == ["bad"]
    with pytest.raises(MemkitError, match="topics/bad.md line 3: frontmatter is not valid YAML"):
        vault.add("more", topic="bad")
    assert path.read_text() == "---\ntitle: [unclosed\n---\n- Router is a MikroTik\n"


def test_search_warns_about_a_conflict_on_every_command(tmp_path: Path, caplog) -> None:
    import logging

    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "pets.md", "- Has a cat\n<<<<<<< ours\n- Miso is grey\n=======\n- Miso is black\n>>>>>>> theirs\n")
    open_vault(root).index()
    for _ in range(2):  # each new process (a new Vault), the index already current, warns again
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="memkit"):
            hits = open_vault(root).search("Miso", threshold=None)
        assert {h.text for h in hits} >= {"Miso is grey", "Miso is black"}
        assert any("topics/pets.md line 2: unresolved merge conflict" in r.getMessage() for r in caplog.records)
