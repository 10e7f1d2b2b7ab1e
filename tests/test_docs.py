"""The README, the docs/ pages and the sample vault stay true: every command and setting documented,
every relative link leads somewhere, the architecture names every package, the sample vault loads
clean."""
from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import click
import pytest

from memkit import Vault
from memkit.frontends.cli.group import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: the hand-written pages (docs/cli.md is generated from the commands' --help)
WRITTEN = "\n".join(p.read_text(encoding="utf-8") for p in PAGES if p.name != "cli.md")
#: pages linked before they exist, and why (each must land, then leave this list)
NOT_YET: dict[str, str] = {}  #: a page a link may name before it exists, and why


def test_every_command_is_documented():
    for name in main.list_commands(click.Context(main)):
        assert f"memkit {name}" in WRITTEN, f"neither README.md nor docs/ documents `memkit {name}`"


def test_config_keys_are_documented():
    from dataclasses import fields

    from memkit.config.settings import Config

    for f in fields(Config):
        assert f"`{f.name}`" in WRITTEN, f.name


def test_the_readme_is_short():
    """Issue 28: a new user met sixty lines of crash safety before the first example."""
    lines = README.splitlines()
    assert len(lines) <= 220, f"README.md has {len(lines)} lines: move detail to a docs/ page"
    first_example = next(i for i, line in enumerate(lines) if line.startswith("$ memkit"))
    assert first_example < 60, "the first example comes too late in README.md"


# ---- links --------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?:[^\]`]|`[^`]*`)*\]\(([^)\s]+)\)")


def outside_code(text: str) -> list[str]:
    """The lines of a markdown page that are not in a fenced code block, inline code blanked."""
    lines, fence = [], ""
    for line in text.splitlines():
        marker = re.match(r"^\s*(`{3,}|~{3,})", line)
        if fence:
            if marker and marker[1][0] == fence[0] and len(marker[1]) >= len(fence):
                fence = ""
            continue
        if marker:
            fence = marker[1]
            continue
        lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: set[str] = set()
    for line in outside_code(path.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6} (.*)$", line)
        if heading:
            base = slug(heading[1])
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


#: an inline code span (skipped: `[x](y)` in code is no link) or a link, whichever starts first
CODE_OR_LINK = re.compile(r"`[^`]*`|" + LINK.pattern)


def links(path: Path) -> list[str]:
    """The targets of a page's links, outside code blocks and inline code."""
    return [m[1] for line in outside_code(path.read_text(encoding="utf-8"))
            for m in CODE_OR_LINK.finditer(line) if m[1]]


@pytest.mark.parametrize("page", [pytest.param(p, id=p.relative_to(ROOT).as_posix()) for p in PAGES])
def test_every_relative_link_leads_to_a_file_and_heading(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file, _, fragment = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        shown = dest.relative_to(ROOT).as_posix() if dest.is_relative_to(ROOT) else str(dest)
        if not dest.exists():
            if shown not in NOT_YET:
                broken.append(f"{target}: no file {shown}")
            continue
        if fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target}: {shown} has no heading #{fragment}")
    assert not broken, f"{page.relative_to(ROOT)}: broken links:\n  " + "\n  ".join(broken)


def test_the_link_check_finds_broken_links(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## `memkit mcp`: the MCP server\n## ARM (aarch64)\n")
    page.write_text("# Page\n\n[a](other.md#memkit-mcp-the-mcp-server) [b](other.md#arm-aarch64) "
                    "[c](missing.md) [d](other.md#nowhere) [e](#page) [f](https://example.com)\n"
                    "```\n[g](in-code.md)\n```\n`[h](inline.md)`\n")
    assert links(page) == ["other.md#memkit-mcp-the-mcp-server", "other.md#arm-aarch64", "missing.md",
                           "other.md#nowhere", "#page", "https://example.com"]
    assert anchors(tmp_path / "other.md") == {"other", "memkit-mcp-the-mcp-server", "arm-aarch64"}


def test_every_repository_path_named_exists():
    """A path in backticks (`memkit/search/rank.py`, `bench/demo.sh`) names a file of the repository:
    after the package moved into folders, the README still named `memkit/rank.py`."""
    named = {m for p in PAGES if p.name != "cli.md"
             for m in re.findall(r"`((?:memkit|bench|tests|vault)/[\w./-]*)`", p.read_text(encoding="utf-8"))}
    assert len(named) > 20
    missing = sorted(n for n in named if not (ROOT / n).exists())
    assert not missing, f"README.md or docs/ names paths that do not exist: {missing}"


# ---- the architecture page ----------------------------------------------------------------------

def packages() -> list[str]:
    """Every package of memkit, as ``memkit/frontends/cli/``."""
    return sorted(p.parent.relative_to(ROOT).as_posix() + "/" for p in (ROOT / "memkit").rglob("__init__.py")
                  if p.parent != ROOT / "memkit")


def test_the_architecture_names_every_package():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert len(packages()) >= 18
    missing = [p for p in packages() if f"`{p}`" not in text]
    assert not missing, f"docs/architecture.md does not describe {missing}"
    assert "memkit/frontends/watch.py" in text


def test_readme_setup_commands():
    assert "make install" in README and "make test" in README and "make demo" in README


def test_sample_vault_loads_clean(tmp_path, caplog):
    copy = tmp_path / "vault"
    shutil.copytree(ROOT / "vault", copy, ignore=shutil.ignore_patterns(".memkit"))
    v = Vault(copy)
    with caplog.at_level(logging.WARNING, logger="memkit"):
        topics = v.topics()
    assert not caplog.records, caplog.text
    assert len(topics) >= 8
    assert sum(t.entries for t in topics) >= 150
    assert not any(t.entries > v.config.topic_split_threshold_lines for t in topics)  # README adds to them
    kinds = {e.kind for e in v.entries()}
    assert {"fact", "preference", "decision", "event"} <= kinds
    assert any(not e.is_list for e in v.entries())  # hand-written prose paragraphs
    lines = (copy / "index.txt").read_text().splitlines()
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\|[a-z0-9-]+\|.*", line) for line in lines)
    before = [(r.topic, r.updated) for r in v.recent()]
    assert [(r.topic, r.updated) for r in v.recent(rebuild=True)] == before
