"""`memkit init`, `check`, `stats`, `git-setup`, `merge-driver` and `mcp`: the vault itself (click commands
over :class:`memkit.Vault`; the group is in :mod:`memkit.frontends.cli.group`)."""
from __future__ import annotations

import os
import sys

import click

from ...vault import Vault, merge_files
from .common import cli_params, echo_json, get_vault, json_option, plural


@click.command()
@click.argument("path", default=".", type=click.Path(file_okay=False))
@click.option("--existing", is_flag=True, help="Adopt PATH, a folder of notes (an Obsidian vault), as it is: "
                                              "its notes at any depth are the topics; no file in it is changed.")
def init(path: str, existing: bool) -> None:
    """Create a vault in PATH (default: here).

    Writes memkit.yaml with commented defaults, topics/, inbox/, index.txt and a .gitignore that
    ignores .memkit/. Refuses to touch an existing vault. With --existing, PATH is a folder of
    markdown notes kept as it is (docs/folders.md): only memkit.yaml, index.txt and (when it has
    none) a .gitignore are added.

    \b
    Examples:
      memkit init ~/memory
      memkit init --existing ~/Notes
    """
    if existing:
        vault = Vault.init(path, existing=True)
        click.echo(f"adopted {vault.root}: {plural(len(vault.topics()), 'note')} as topics, no file changed")
        return
    vault = Vault.init(path)
    click.echo(f"created vault {vault.root}")
    hint = "" if os.path.abspath(path) == os.getcwd() else f"cd {path} && "
    click.echo(f"next: {hint}memkit add \"your first memory\"")


@click.command("check")
@click.option("--fix", is_flag=True, help="Repair what is safe: duplicate entries (to archive.md), duplicate "
                                         "frontmatter keys, index.txt, the search index.")
@json_option
@click.pass_context
def check(ctx: click.Context, fix: bool, json_: bool) -> None:
    """Report every problem in the vault, with file and line; exit 1 if one needs a person.

    Needs a person: merge conflicts, invalid frontmatter, files memkit skips (and why), a topic
    recreated beside its subtopics, transcripts the watcher could not digest. --fix repairs the
    rest. As a git pre-commit hook (.git/hooks/pre-commit):

    \b
      #!/bin/sh
      exec memkit --vault "$(git rev-parse --show-toplevel)" check

    \b
    Examples:
      memkit check
      memkit check --fix
      memkit check --json
    """
    report = get_vault(ctx).upkeep.check(fix=fix)
    if json_:
        echo_json(report.to_dict())
    else:
        for line in report.fixed:
            click.echo(f"fixed: {line}")
        for problem in report.problems:
            label = "needs you" if problem.needs_person else "note" if problem.note else "fixable"
            click.echo(f"{label}: {problem.message}")
        if report.clean:
            click.echo("no problems found" + (" (after the fixes above)" if report.fixed else ""))
        elif not fix and not report.needs_person:
            click.echo("run `memkit check --fix` to repair these")
    if report.needs_person:
        ctx.exit(1)


@click.command()
@cli_params("stats")
@json_option
@click.pass_context
def stats(ctx: click.Context, json_: bool) -> None:
    """Counts: entries per topic and kind, follow-ups, expired entries, archive, index, inbox.

    \b
    Example:
      memkit stats --json
    """
    data = get_vault(ctx).upkeep.stats()
    if json_:
        echo_json(data)
        return
    click.echo(f"{plural(data['entries'], 'entry', 'entries')} in {plural(data['topics'], 'topic')}; "
               f"{data['archive_entries']} in archive.md")
    click.echo("by kind: " + ", ".join(f"{k} {n}" for k, n in data["per_kind"].items()))
    click.echo(f"follow-ups: {data['pending']} ({data['overdue']} overdue, {data['due'] - data['overdue']} due today); "
               f"expired awaiting `memkit tidy`: {data['expired_awaiting_tidy']}")
    index = data["index"]
    if index.get("model"):
        click.echo(f"index: {index['model']} ({index['dim']}-d), {index['stale_files']} topic file(s) to re-index")
    inbox = data["inbox"]
    click.echo(f"inbox: {len(inbox['waiting'])} waiting, {len(inbox['errors'])} error(s); "
               f"last digest: {data['last_digest'] or 'never'}")
    if data["files_needing_attention"]:
        click.echo(f"{data['files_needing_attention']} file(s) need you: see `memkit check`")


@click.command("git-setup")
@json_option
@click.pass_context
def git_setup(ctx: click.Context, json_: bool) -> None:
    """Make the vault merge-friendly in git; run once per clone (idempotent).

    Adds memkit's lines to .gitattributes (topic files use memkit's merge driver; archive.md and
    index.txt are union-merged) and .gitignore (.memkit/, inbox/done/, *.error), and registers
    the merge driver in this clone's .git/config, which git does not copy when cloning.

    \b
    Example:
      cd ~/memory && git init && memkit git-setup && git add -A && git commit -m memory
    """
    result = get_vault(ctx).git_setup()
    if json_:
        echo_json(result.to_dict())
        return
    click.echo(f"updated {', '.join(result.changed)}" if result.changed else ".gitattributes and .gitignore already set up")
    if result.registered:
        click.echo(f"merge driver 'memkit' registered in {result.repository}")
    else:
        click.echo("not in a git repository yet: run `git init`, then `memkit git-setup` again", err=True)


@click.command("merge-driver", hidden=True)
@click.argument("base")
@click.argument("ours")
@click.argument("theirs")
@click.argument("path", required=False)
def merge_driver(base: str, ours: str, theirs: str, path: str | None) -> None:
    """Git's merge driver for topic and session files: merges BASE, OURS and THEIRS into OURS.

    Git runs it (`memkit git-setup` registers it): both sides' new entries are kept, the newest
    `updated:` wins; a session file (PATH in sessions/) merges message by message, one stage
    kept when both clones aged it; real conflicts are left marked and exit 1.

    \b
    Example (what git runs; %O %A %B %P are git's placeholders):
      memkit merge-driver %O %A %B %P
    """
    left = merge_files(base, ours, theirs, path)
    if left:
        click.echo(f"memkit: {path or ours}: {left} conflict(s) left for you to resolve", err=True)
    sys.exit(1 if left else 0)


@click.command("mcp")
@click.pass_context
def mcp_cmd(ctx: click.Context) -> None:
    """Serve the vault to an assistant as an MCP server over stdio.

    Tools: search_memories, add_memory, forget_memory, get_context, list_topics, read_topic,
    recent_topics, and digest_transcript when memkit.yaml configures an LLM; topic files are
    resources (memkit://topics/NAME). The model loads once and stays warm; writes take the vault's
    lock like the CLI. Stdout carries only the protocol; messages go to stderr. Needs the MCP SDK:
    pip install 'mcp>=2'.

    \b
    Examples:
      memkit --vault ~/memory mcp
      claude mcp add memkit -- memkit --vault ~/memory mcp
    """
    from ..mcp import require_sdk, serve  # only this command needs the MCP SDK

    require_sdk()
    serve(get_vault(ctx))



__all__ = ["init", "check", "stats", "git_setup", "merge_driver", "mcp_cmd"]
