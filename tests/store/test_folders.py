"""Topics in folders (issue 44): topic files at any depth under topics/ are topics named by their
path (``work/harbor``); include/exclude globs; an existing folder of notes (an Obsidian vault)
adopted and searched without one of its files changing."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from util import FakeEmbedder, write

from memkit import Vault
from memkit.config.settings import Config
from memkit.errors import MemkitError, VaultExists
from memkit.formats.globs import Globs
from memkit.frontends.cli.group import main


def hashes(root: Path) -> dict[str, str]:
    """Every file under ``root`` (but memkit's own derived .memkit/) with its SHA-256."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".memkit" not in p.relative_to(root).parts}


def obsidian_tree(root: Path) -> None:
    """A small Obsidian vault: nested folders, .obsidian/, .trash/, attachments, frontmatter tags and
    aliases, wikilinks, #tags, and a prose note (no list items) with headings."""
    write(root / ".obsidian" / "app.json", '{"attachmentFolderPath": "attachments"}\n')
    write(root / ".obsidian" / "workspace.md", "- not a note\n")
    write(root / ".trash" / "old.md", "- a deleted note about zebrawords\n")
    write(root / "attachments" / "scan.md", "- an attachment about zebrawords\n")
    (root / "attachments" / "pier.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    write(root / "Work" / "Projects" / "Harbor Project.md",
          "---\ntags: [work, shipping]\naliases: [Harbour]\n---\n# Harbor\n\n"
          "- The harbor project ships in March, see [[Budget#Q1]]\n"
          "- Talks to [[Vendors]] every Monday #meetings\n")
    write(root / "Work" / "Budget.md",
          "---\ntags: finance\n---\n# Budget\n\n## Q1\n\n"
          "The first quarter's budget for the harbor project is two million euros,\napproved by Marta.\n\n"
          "## Q2\n\nNothing approved yet for the second quarter.\n")
    write(root / "Journal" / "2026-03-01.md",
          "Met Marta about the [[Harbour]] project; she wants weekly updates. #journal\n")
    write(root / "Inbox note.md", "* [decision] Keep notes in plain markdown\r\n")  # CRLF, '*' bullets


@pytest.fixture
def notes(tmp_path) -> Path:
    root = tmp_path / "Notes"
    obsidian_tree(root)
    return root


def test_an_obsidian_tree_is_adopted_and_searched_without_a_file_changing(notes, runner):
    before = hashes(notes)
    got = runner.invoke(main, ["init", "--existing", str(notes)])
    assert got.exit_code == 0, got.output
    assert "4 notes as topics, no file changed" in got.output
    vault = Vault(notes, embedder=FakeEmbedder())
    assert sorted(t.name for t in vault.topics()) == [
        "Inbox note", "Journal/2026-03-01", "Work/Budget", "Work/Projects/Harbor Project"]
    # a prose note is read by paragraph, each with the heading it is under
    budget = vault.search("two million euros", topic="work/budget", threshold=None)
    assert budget[0].text.startswith("Q1: The first quarter's budget") and budget[0].topic == "Work/Budget"
    # frontmatter tags are each entry's tags; #tags too
    assert {h.topic for h in vault.search("harbor", tag="work", threshold=None)} == {"Work/Projects/Harbor Project"}
    assert vault.search("weekly updates", tag="journal", threshold=None)[0].topic == "Journal/2026-03-01"
    assert vault.search("finance", tag="finance", threshold=None)[0].topic == "Work/Budget"
    # a folder and everything under it
    assert {h.topic for h in vault.search("harbor project", topic="work", threshold=None)} == {
        "Work/Budget", "Work/Projects/Harbor Project"}
    assert not [h for h in vault.search("zebrawords", threshold=None) if "zebrawords" in h.text]  # .trash/, attachments/
    for args in (["topics"], ["search", "harbor"], ["show", "work/projects/harbor-project"], ["check"],
                 ["recent"], ["search", "Marta", "--topic", "Journal"], ["related", "work/budget"],
                 ["show", "work/budget"], ["search", "harbor", "--linked", "Harbour"]):
        got = runner.invoke(main, ["--vault", str(notes), *args])
        assert got.exit_code == 0, (args, got.output)
    after = hashes(notes)
    new = sorted(set(after) - set(before))
    assert new == [".gitignore", "index.txt", "memkit.yaml"]
    assert {k: after[k] for k in before} == before  # not one byte of a person's file changed


def test_adopting_refuses_a_vault_and_a_folder_with_memkits_own_files(notes, tmp_path):
    Vault.init(notes, existing=True)
    with pytest.raises(VaultExists):
        Vault.init(notes, existing=True)
    other = tmp_path / "Other"
    write(other / "people.md", "- Marta, my manager\n")
    with pytest.raises(MemkitError, match="people.md at its top"):
        Vault.init(other, existing=True)
    assert not (other / "memkit.yaml").exists()
    keep = tmp_path / "Keep"
    write(keep / ".gitignore", "*.pdf\n")
    Vault.init(keep, existing=True)
    assert (keep / ".gitignore").read_text() == "*.pdf\n"  # a person's .gitignore is left as it is


def test_topics_in_folders_are_listed_shown_added_to_and_checked(vault, runner):
    write(vault.topics_dir / "work" / "harbor.md", "# Harbor\n\n- The pier opens in May\n")
    write(vault.topics_dir / "work" / "old" / "pier.md", "- The old pier closed in 1990\n")
    write(vault.topics_dir / "workshop.md", "- Saws and drills\n")
    assert [t.name for t in vault.topics()] == ["work/harbor", "work/old/pier", "workshop"]
    assert vault.topic("work/harbor").title == "Harbor"
    entry = vault.add("The pier needs new lights", topic="work/harbor")
    assert entry.topic == "work/harbor" and entry.file == "topics/work/harbor.md"
    new = vault.add("A ferry timetable", topic="travel/ferries")  # a new topic's folder is made
    assert (vault.topics_dir / "travel" / "ferries.md").is_file() and new.topic == "travel/ferries"
    assert {h.topic for h in Vault(vault.root, embedder=FakeEmbedder()).search("pier", topic="work", threshold=None)} \
        == {"work/harbor", "work/old/pier"}  # not workshop: a folder is not a name's prefix
    got = runner.invoke(main, ["--vault", str(vault.root), "show", "work/harbor", "--json"])
    assert json.loads(got.output)["file"] == "topics/work/harbor.md"
    assert runner.invoke(main, ["--vault", str(vault.root), "check"]).exit_code == 0
    assert "travel/ferries" in [r.topic for r in vault.recent()]
    with pytest.raises(MemkitError):
        vault.add("escape", topic="../outside")


def test_include_and_exclude_globs(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    topics = root / "topics"
    for rel in ("work/a.md", "work/drafts/b.md", "home/c.md", "d.md", "work/e.draft.md"):
        write(topics / rel, f"- note {rel}\n")
    config = Config(include=["work/**", "d.md"], exclude=["drafts/", "*.draft.md"])
    vault = Vault(root, config=config, embedder=FakeEmbedder())
    assert [t.name for t in vault.topics()] == ["d", "work/a"]
    g = Globs()
    assert g.is_topic("a/b/c.md") and not g.is_topic(".obsidian/x.md") and not g.is_topic("a/.trash/x.md")
    assert not g.is_topic("x/attachments/y.md") and not g.is_topic("notes.txt")


def test_globs_in_memkit_yaml_are_checked(tmp_path, runner):
    root = Vault.init(tmp_path / "v", profile=False).root
    text = (root / "memkit.yaml").read_text()
    (root / "memkit.yaml").write_text(text + "\nexclude: ['../x']\n")
    got = runner.invoke(main, ["--vault", str(root), "topics"])
    assert got.exit_code != 0 and "exclude" in got.output


def test_a_topic_in_a_folder_splits_into_the_same_folder(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    lines = [f"- Rice dish number {i} with saffron and bomba rice" for i in range(12)]
    lines += [f"- Bread loaf number {i} with sourdough starter and rye flour" for i in range(12)]
    write(root / "topics" / "home" / "cooking.md", "# Cooking\n\n" + "\n".join(lines) + "\n")
    vault = Vault(root, embedder=FakeEmbedder())
    plan = vault.split("home/cooking", llm=None, min_part=3)
    assert plan.names and all(n.startswith("home/cooking-") for n in plan.names)
    assert not (root / "topics" / "home" / "cooking.md").exists()
    names = [t.name for t in vault.topics()]
    assert sorted(names) == sorted(plan.names)
    assert sum(len(vault.topic(n).entries) for n in names) == 24


def _adopted(tmp_path: Path) -> Vault:
    notes = tmp_path / "Notes"
    write(notes / "Work" / "harbor.md", "# Harbor\n\n" + "".join(
        f"- {word} note {n} about the {word} plans\n" for n in range(12) for word in ("rice", "bread")))
    Vault.init(notes, existing=True)
    return Vault(notes, embedder=FakeEmbedder())


def test_with_topics_folder_dot_previews_name_the_files_where_they_are(tmp_path):
    """Issue 44: with ``topics_folder: .`` a split's preview still said topics/Work/harbor.md."""
    v = _adopted(tmp_path)
    diff = v.split("Work/harbor", llm=None, dry_run=True, min_part=3).diff(v.store)
    labels = [line for line in diff.splitlines() if line.startswith(("--- ", "+++ "))]
    assert "--- a/Work/harbor.md" in labels and any(line.startswith("+++ b/Work/harbor-") for line in labels), labels
    assert not any("topics/" in line for line in labels), labels
    plan = v.split("Work/harbor", llm=None, min_part=3)  # the parts go into the folder as it is named
    assert all(name.startswith("Work/harbor-") for name in plan.names) and not (v.root / "work").exists()


def test_temp_files_of_dead_writers_are_swept_in_every_topic_folder(tmp_path):
    """Issue 44: the sweep looked only at the top of the topics folder."""
    v = _adopted(tmp_path)
    root = v.root
    stale = [write(root / "Work" / ".harbor.md.abcd1234.tmp", "half a file"),
             write(root / "Work" / "Deep" / ".new.md.zz99yy88.tmp", "half a file"),
             write(root / ".top.md.qq11ww22.tmp", "half a file")]
    kept = [write(root / "Work" / ".harbor.txt.abcd1234.tmp", "not memkit's"),
            write(root / ".obsidian" / ".x.md.abcd1234.tmp", "Obsidian's folder: not memkit's")]
    v.add("The pier opens in May", topic="Work/harbor")
    assert [p for p in stale if p.exists()] == [] and all(p.exists() for p in kept)
    plain = Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())
    deep = write(plain.topics_dir / "work" / "deep" / ".harbor.md.abcd1234.tmp", "half a file")
    plain.add("The pier opens in May", topic="work/harbor")
    assert not deep.exists()
