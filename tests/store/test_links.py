"""Links between memories (issue 44): [[Topic]] and [[Topic#heading]] resolved as Obsidian does,
backlinks, search --linked, broken links in check, and related memories without a query."""
from __future__ import annotations

import pytest
from util import FakeEmbedder, write

from memkit import Vault
from memkit.errors import AmbiguousEntry, EntryNotFound, MemkitError, TopicNotFound
from memkit.formats.links import LinkResolver, find_links, rewrite_links


def test_links_are_parsed_as_obsidian_writes_them():
    text = "See [[Harbor]], [[work/Budget#Q1|the budget]] and ![[pier.png]] and ![[Notes.md]]"
    links = find_links(text)
    assert [(k.target, k.heading, k.alias) for k in links] == [
        ("Harbor", None, None), ("work/Budget", "Q1", "the budget"), ("Notes.md", None, None)]
    assert find_links("no links [here] [[]]") == []


def test_a_link_resolves_by_path_name_alias_and_split():
    r = LinkResolver(["work/harbor", "home/harbor", "work/deep/budget", "cooking-rice", "cooking-bread"],
                     {"work/deep/budget": ["Money"]}, {"cooking": ["cooking-bread", "cooking-rice"]})
    assert r.resolve("Work/Harbor") == ["work/harbor"]
    assert r.resolve("harbor") == ["home/harbor"]  # two of that name: the shorter path, then by name
    assert r.resolve("Budget") == ["work/deep/budget"] and r.resolve("money") == ["work/deep/budget"]
    assert r.resolve("Cooking") == ["cooking-bread", "cooking-rice"]  # a split topic names its parts
    assert r.resolve("old/deep/budget") == ["work/deep/budget"]  # moved: found by its name alone
    assert r.resolve("Vendors") == []


def test_a_rename_rewrites_links_the_way_they_were_written():
    after = LinkResolver(["work/pier", "home/harbor"])
    text = "- see [[work/harbor#Q1|it]], [[Home/Harbor]] and [[other]]\n"
    assert rewrite_links(text, after, "work/harbor", "work/pier") == \
        "- see [[work/pier#Q1|it]], [[Home/Harbor]] and [[other]]\n"
    assert rewrite_links("- [[harbor]]", LinkResolver(["pier"]), "harbor", "pier") == "- [[pier]]"


@pytest.fixture
def linked(tmp_path) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "work" / "harbor.md", "---\naliases: [Harbour]\n---\n# Harbor\n\n"
          "- The harbor project ships in March, see [[Budget#Q1]]\n- Weekly call with [[Vendors]]\n")
    write(root / "topics" / "work" / "budget.md", "# Budget\n\n- Q1 budget is two million euros\n")
    write(root / "topics" / "journal.md", "- Met Marta about the [[Harbour]] project\n")
    write(root / "topics" / "garden.md", "- Tomatoes need water every day\n")
    return Vault(root, embedder=FakeEmbedder())


def test_backlinks_linked_search_and_broken_links(linked):
    assert [e.text for e in linked.links.backlinks("work/budget")] == [
        "The harbor project ships in March, see [[Budget#Q1]]"]
    assert [e.topic for e in linked.links.backlinks("work/harbor")] == ["journal"]  # through the alias
    topics = {h.topic for h in linked.search("harbor budget tomatoes", linked="work/harbor", threshold=None)}
    assert topics == {"work/harbor", "work/budget", "journal"}  # not garden: no link either way
    assert [(e.topic, target) for e, target in linked.links.broken()] == [("work/harbor", "Vendors")]
    report = linked.upkeep.check()
    broken = [p for p in report.problems if p.kind == "broken-link"]
    assert [(p.file, p.line) for p in broken] == [("topics/work/harbor.md", 7)] and not report.needs_person
    with pytest.raises(TopicNotFound):
        linked.search("x", linked="nothing-here")


def test_related_finds_what_is_like_an_entry_or_a_topic_without_itself(linked):
    entry = linked.store.find(match="ships in March")
    got = linked.links.related(entry.id)
    assert got.entry is not None and got.entry.id == entry.id
    assert entry.id not in [h.id for h in got.hits] and got.hits
    assert all(h.judge is not None for h in got.hits)  # the second stage ran, as in a search
    of_topic = linked.links.related("work/harbor", k=2)
    assert of_topic.entry is None and of_topic.hits and len(of_topic.hits) <= 2
    assert "work/harbor" not in {h.topic for h in of_topic.hits}
    with pytest.raises(TopicNotFound):
        linked.links.related("no-such-thing")


def test_a_rename_moves_the_file_and_rewrites_the_links_to_it(linked):
    root = linked.root
    harbor = (root / "topics" / "work" / "harbor.md").read_bytes()
    journal = (root / "topics" / "journal.md").read_bytes()
    done = linked.links.rename("work/budget", "money/budget-2026")
    assert done.new == "money/budget-2026" and done.links_in == ["work/harbor"]
    assert not (root / "topics" / "work" / "budget.md").exists()
    assert (root / "topics" / "money" / "budget-2026.md").read_text() == "# Budget\n\n- Q1 budget is two million euros\n"
    assert (root / "topics" / "work" / "harbor.md").read_bytes() == harbor.replace(b"[[Budget#Q1]]", b"[[budget-2026#Q1]]")
    assert [e.topic for e in linked.links.backlinks("money/budget-2026")] == ["work/harbor"]
    linked.links.rename("work/harbor", "harbor")  # linked to by its alias: that link still names it
    assert (root / "topics" / "journal.md").read_bytes() == journal
    assert [e.topic for e in linked.links.backlinks("harbor")] == ["journal"]
    assert "harbor" in [r.topic for r in linked.recent()] and linked.search("euros", threshold=None)
    with pytest.raises(MemkitError, match="exists already"):
        linked.links.rename("journal", "garden")


def test_an_id_prefix_several_entries_share_is_its_own_error(tmp_path):
    """related's lookup told "several entries" from "none" by the words of the message; now by its type."""
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "topics" / "many.md", "".join(f"- note number {n}\n" for n in range(1500)))
    v = Vault(root, embedder=FakeEmbedder())
    seen: dict[str, str] = {}
    for e in v.store.entries("many"):
        if e.hash[:4] in seen:
            prefix = e.hash[:4]
            break
        seen[e.hash[:4]] = e.hash
    else:
        pytest.fail("no two ids share 4 digits")
    with pytest.raises(AmbiguousEntry, match="be more specific") as got:
        v.links.related(prefix)
    assert isinstance(got.value, EntryNotFound)  # still what callers caught
    with pytest.raises(AmbiguousEntry):
        v.store.find(prefix)
    with pytest.raises(EntryNotFound) as none:
        v.store.find("ffff0000")
    assert not isinstance(none.value, AmbiguousEntry)


def test_show_finds_a_topic_by_its_file_name_as_a_link_does(linked):
    """Issue 44: `memkit show Budget` did not find topics/work/budget.md, which [[Budget]] names."""
    from click.testing import CliRunner

    from memkit.frontends.cli.group import main

    root = linked.root
    shown = linked.store.show_topic("Budget")
    assert shown["name"] == "work/budget" and shown["named_as"] == "Budget" and "also_named_so" not in shown
    assert linked.store.show_topic("harbour")["name"] == "work/harbor"  # an alias, as a link
    run = CliRunner().invoke(main, ["--vault", str(root), "show", "Budget"])
    assert run.exit_code == 0 and run.output.startswith("Budget (work/budget, 1 entry)\n"), run.output
    write(root / "topics" / "home" / "deep" / "budget.md", "- The household budget is tight\n")
    write(root / "topics" / "zoo" / "budget.md", "- The zoo's budget\n")
    shown = linked.store.show_topic("budget")
    assert shown["name"] == "work/budget" and shown["also_named_so"] == ["home/deep/budget", "zoo/budget"]
    run = CliRunner().invoke(main, ["--vault", str(root), "show", "budget"])
    assert run.output.splitlines()[:2] == [
        "(budget names 3 topics: this is work/budget, the shortest path; also home/deep/budget, zoo/budget)",
        "Budget (work/budget, 1 entry)"], run.output
    run = CliRunner().invoke(main, ["--vault", str(root), "show", "nothing-here"])
    assert run.exit_code == 1 and "no topic 'nothing-here'" in run.output
    with pytest.raises(TopicNotFound):
        linked.store.show_topic("deep/nothing")
