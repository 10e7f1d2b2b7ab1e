"""`memkit add`, `show`, `topics`, `recent`, `forget`, `edit`, `history`, `why`, `pending`, `done`: reading and
changing memories by hand (click commands over :class:`memkit.Vault`; the group is in :mod:`memkit.frontends.cli.group`)."""
from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

import click

from ...errors import TopicNotFound
from ...vault import relative_time
from ..operations import operation
from .common import cli_params, echo_json, get_vault, json_option, plural, redacted, table_command


@table_command("add")
def add(entry: Any, answer: dict[str, Any], **_: Any) -> None:
    """Append a memory to a topic. TEXT '-' reads it from stdin (lines are joined into one entry).

    A topic that grows past topic_split_threshold_lines is split into subtopics right away; a
    topic that was split is not recreated: the memory goes to its closest subtopic. A pasted
    entry ('- [decision] Chose oak (2026-02-01)') keeps its kind and date. Text starting with
    '-' goes after '--'. The same text already in the topic (its date aside) is not written
    twice: memkit says where it is (--allow-duplicate writes it anyway).

    \b
    Example:
      memkit add "Prefers bomba rice for paella" --topic cooking --kind preference --tag rice
      echo "Allergic to tree nuts" | memkit add - --topic health
      memkit add -- "-5 degrees tonight, the pipes may freeze"
      memkit add "Ask how the job interview went" --due 2026-11-28
      memkit add "Parking spot at the office is B14" --until 2026-12-31
    """
    if entry.duplicate:
        click.echo(f"already in {entry.topic} as {entry.id}: {entry.text} (not added again; "
                   f"--allow-duplicate adds it anyway){redacted(entry.redacted)}")
    else:
        click.echo(f"added {entry.id} to {entry.topic}: {entry.text}{redacted(entry.redacted)}")


@click.command()
@cli_params("topics")
@json_option
@click.pass_context
def topics(ctx: click.Context, json_: bool) -> None:
    """List topics: name, entries, last update, summary.

    \b
    Example:
      memkit topics
    """
    now = datetime.now()
    # the latest first; topics whose times read alike ("just now", "2 days ago") by name, so the
    # list does not reorder on a second's difference no one sees
    infos = sorted(get_vault(ctx).topics(), key=lambda t: t.updated, reverse=True)
    infos = [t for _, same in itertools.groupby(infos, key=lambda t: relative_time(t.updated, now))
             for t in sorted(same, key=lambda t: t.name)]
    if json_:
        echo_json([t.to_dict() for t in infos])
        return
    if not infos:
        click.echo("no topics yet: add one with `memkit add TEXT --topic NAME`")
        return
    width = max(len(t.name) for t in infos)
    for t in infos:
        click.echo(f"{t.name:<{width}}  {t.entries:>4}  {relative_time(t.updated, now):<14}  {t.summary}")


@click.command()
@cli_params("show")
@json_option
@click.pass_context
def show(ctx: click.Context, topic: str, json_: bool) -> None:
    """Show a topic's entries with their ids (for `memkit forget ID`), and the entries of other
    topics that link to it ([[topic]], [[topic#heading]]: its backlinks).

    \b
    Examples:
      memkit show cooking
      memkit show work/harbor
    """
    vault = get_vault(ctx)
    if json_:
        echo_json(vault.store.show_topic(topic))
        return
    try:
        t = vault.topic(topic)
    except TopicNotFound:
        children = vault.store.subtopics(topic)
        if not children:  # a file's name alone, as a [[link]] names it
            name, also = vault.store.resolve_topic(topic)
            t = vault.topic(name)
            if also:
                click.echo(f"({topic} names {len(also) + 1} topics: this is {name}, the shortest path; "
                           f"also {', '.join(also)})")
        else:
            click.echo(f"{topic} was split into: {', '.join(children)} (see `memkit show {children[0]}`)")
            return
    children = vault.store.subtopics(t.name)
    click.echo(f"{t.title} ({t.name}, {plural(len(t.entries), 'entry', 'entries')})"
               f"{' — ' + t.summary if t.summary else ''}")
    for e in t.entries:
        click.echo(f"{e.id}  {e.text}")
    if children:
        click.echo(f"(it was split into {', '.join(children)}; `memkit check` says how to fold this file into them)")
    backlinks = vault.links.backlinks(t.name)
    if backlinks:
        click.echo(f"linked from ({len(backlinks)}):")
        for e in backlinks:
            click.echo(f"{e.id}  {e.topic}: {e.text}")


@click.command("rename")
@click.argument("old")
@click.argument("new")
@json_option
@click.pass_context
def rename(ctx: click.Context, old: str, new: str, json_: bool) -> None:
    """Rename topic OLD to NEW (into a folder too) and rewrite every [[link]] to it, as Obsidian does.

    The file moves as it is; in the files that link to it only the links change.

    \b
    Examples:
      memkit rename harbor work/harbor
    """
    done = get_vault(ctx).links.rename(old, new)
    if json_:
        echo_json(done.to_dict())
        return
    where = f"; links rewritten in {', '.join(done.links_in)}" if done.links_in else ""
    click.echo(f"renamed {done.old} to {done.new} ({done.file}){where}")


@click.command()
@cli_params("forget")
@json_option
@click.pass_context
def forget(ctx: click.Context, entry_id: str | None, match: str | None, topic: str | None, all_: bool,
           json_: bool) -> None:
    """Remove an entry; it is kept in archive.md so you (and git) can undo it.

    \b
    Examples:
      memkit forget 3f2a9c1e
      memkit forget --match "stock cubes"
      memkit forget 3f2a9c1e --all       # the same line twice after a merge: both copies

    An entry written more than once loses its last copy (the output says which line), or every
    copy with --all.
    """
    if bool(entry_id) == bool(match):
        raise click.UsageError("give either an entry ID or --match TEXT")
    entries = operation("forget").run(get_vault(ctx), "cli", {"entry_id": entry_id, "match": match, "topic": topic,
                                                             "all_": all_})
    if json_:
        echo_json(entries[0].to_dict() if not all_ else [e.to_dict() for e in entries])
    else:
        for entry in entries:
            click.echo(f"forgot {entry.id} from {entry.file} line {entry.line}: {entry.text}")
        click.echo("(moved to archive.md; put the line back in its topic to undo)")


@click.command()
@cli_params("recent")
@json_option
@click.pass_context
def recent(ctx: click.Context, rebuild: bool, json_: bool) -> None:
    """Show the recent-topics index (index.txt) with relative times.

    \b
    Examples:
      memkit recent
      memkit recent --rebuild
    """
    vault = get_vault(ctx)
    items = vault.recent(rebuild=rebuild)
    if json_:
        echo_json([r.to_dict() for r in items])
        return
    if rebuild:
        click.echo(f"rebuilt index.txt: {len(items)} topics", err=True)
    now = datetime.now()
    width = max((len(r.topic) for r in items), default=0)
    for r in items:
        click.echo(f"{relative_time(r.updated, now):<14}  {r.topic:<{width}}  {r.summary}".rstrip())


@click.command()
@cli_params("edit")
@json_option
@click.pass_context
def edit(ctx: click.Context, args: tuple[str, ...], match: str | None, topic: str | None, json_: bool) -> None:
    """Change a memory where it stands; the old line is kept in archive.md (see `memkit history`).

    Its kind and tags stay unless TEXT gives its own; it is dated today.

    \b
    Examples:
      memkit edit 3f2a9c1e "Manager is Tom Berg since Priya moved teams"
      memkit edit --match "Priya" "Manager is Tom Berg"
    """
    if len(args) == 2 and match is None:
        entry_id, text = args
    elif len(args) == 1 and match is not None:
        entry_id, text = None, args[0]
    else:
        raise click.UsageError("give an entry ID and the new text, or --match TEXT and the new text")
    entry = get_vault(ctx).edit(entry_id, text, match=match, topic=topic)
    if json_:
        echo_json(entry.to_dict())
    else:
        click.echo(f"edited: now {entry.id} in {entry.topic}: {entry.text}{redacted(entry.redacted)}")
        click.echo(f"(the old line is in archive.md; `memkit history {entry.id}` shows the chain)")


@table_command("history")
def history(found: Any, answer: dict[str, Any], id: str) -> None:  # noqa: A002
    """Every version of a memory, oldest first (from archive.md; and git log in a git vault).

    \b
    Example:
      memkit history 3f2a9c1e
    """
    click.echo(found.render())


@table_command("why")
def why(found: Any, answer: dict[str, Any], id: str) -> None:  # noqa: A002
    """Why memkit believes something: the lines of the conversation a memory came from.

    A digest ends each entry with '(from SOURCE DAY)': a session's id or a transcript's file name.
    This finds that conversation (sessions/, an aged session's raw archive in
    sessions/archive/raw/, or inbox/done/) and shows the messages that say the memory ('>'), each
    after the one before it, with their line numbers in the file. An archived memory's id works too.

    \b
    Example:
      memkit why 3f2a9c1e
    """
    click.echo(found.render())


@click.command()
@cli_params("pending")
@json_option
@click.pass_context
def pending(ctx: click.Context, json_: bool) -> None:
    """List follow-ups (kind pending), the most urgent first.

    A follow-up is an entry like '- [pending] Interview at Acme (due 2026-11-28) (urgency high)
    (ask: How did it go?)': its background, when to ask, how urgent and what to ask. Add one with
    `memkit add TEXT --due DATE`; a digest writes them too. The due and overdue ones appear in
    `memkit context`. A follow-up is kept 7 days, or until its due day (memkit.yaml expire.pending).

    \b
    Example:
      memkit pending
    """
    items = get_vault(ctx).upkeep.pending()
    if json_:
        echo_json([f.to_dict() for f in items])
        return
    if not items:
        click.echo("no follow-ups: add one with `memkit add TEXT --due DATE`")
    for f in items:
        when = ("no due date" if f.due is None else f"due {f.due.isoformat()}" +
                (f", {f.overdue_days} day{'s' if f.overdue_days != 1 else ''} overdue" if f.overdue_days > 0
                 else " (today)" if f.overdue_days == 0 else ""))
        click.echo(f"{f.entry.id}  {f.entry.text}  [{when}; {f.entry.topic}]")
        if f.urgency or f.question:
            said = " · ".join(x for x in (f.urgency, f"ask: {f.question}" if f.question else None) if x)
            click.echo(f"          {said}")


@click.command()
@cli_params("done")
@json_option
@click.pass_context
def done(ctx: click.Context, entry_id: str | None, match: str | None, topic: str | None, json_: bool) -> None:
    """Mark a follow-up done: it moves to archive.md ('done').

    \b
    Example:
      memkit done 3f2a9c1e
    """
    if bool(entry_id) == bool(match):
        raise click.UsageError("give either an entry ID or --match TEXT")
    entry = get_vault(ctx).upkeep.done(entry_id, match=match, topic=topic)
    if json_:
        echo_json(entry.to_dict())
    else:
        click.echo(f"done: {entry.id} ({entry.text}) moved to archive.md")



__all__ = ["add", "topics", "show", "rename", "forget", "recent", "edit", "history", "why", "pending", "done"]
