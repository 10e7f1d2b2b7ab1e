"""`memkit session …`: conversation sessions from the shell (a thin click layer over
``vault.conversations``, :class:`memkit.sessions.Conversations`; see :mod:`memkit.sessions.folder`
for the file format)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ...errors import InvalidValue, MemkitError
from ..operations import time_value
from .common import cli_params, echo_json, get_vault, json_option, plural, redacted


def _when(time: str) -> str:
    """``2026-11-24T10:03:12Z`` -> ``2026-11-24 10:03``."""
    return time.replace("T", " ")[:16]


def _metadata(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidValue(f"--meta takes KEY=VALUE, got {pair!r}")
        out[key.strip()] = value
    return out


def _text(text: str | None, what: str) -> str:
    given = text
    if text is None or text == "-":
        if text is None and sys.stdin.isatty():
            raise click.UsageError(f"give the {what}, or '-' to read it from stdin")
        text = sys.stdin.read()
    if not text.strip():
        if given is None:  # nothing given, and nothing came from stdin
            raise InvalidValue(f"no {what}: give it as an argument, or '-' to read it from stdin (stdin was empty)")
        raise InvalidValue(f"the {what} is empty")
    return text


@click.group("session")
def session_group() -> None:
    """Conversations: save, list, load and continue them (files in sessions/).

    \b
    Examples:
      id=$(memkit session new --title "Lisbon trip" --system "You are a travel assistant" -q)
      memkit session add $id user "I want to go to Lisbon in March"
      memkit session load $id --tokens 4096 --json
      memkit session list
      memkit search --sessions "when do I fly to Lisbon"
    """


@session_group.command("new")
@cli_params("start_session")
@json_option
@click.pass_context
def new(ctx: click.Context, session_id: str | None, title: str | None, system_prompt: str | None, user: str | None,
        tags: tuple[str, ...], meta: tuple[str, ...], quiet: bool, json_: bool) -> None:
    """Start a conversation session: sessions/DAY-ID.md."""
    conv = get_vault(ctx).conversations.new(session_id=session_id, title=title, system_prompt=system_prompt,
                                            user=user, tags=tags, metadata=_metadata(meta) or None)
    if json_:
        echo_json(conv.to_dict())
    elif quiet:
        click.echo(conv.id)
    else:
        click.echo(f"started session {conv.id} ({conv.file})")


@session_group.command("add")
@cli_params("save_message")
@json_option
@click.pass_context
def add(ctx: click.Context, session_id: str, role: str, text: str | None, important: bool, name: str | None,
        time: str | None, json_: bool) -> None:
    """Append a message to session ID (TEXT, or stdin with '-'). ROLE is user, assistant, system or tool.

    ID is the session's id or file name, never a prefix of another's: an ID with no session starts
    one, as `memkit context --session ID` does.

    \b
    Example:
      memkit session add lisbon user "Which hotel did we pick?"
    """
    message = get_vault(ctx).conversations.append(session_id, role, _text(text, "message text"), important=important,
                                                  name=name, now=time_value(time, "--time"), exact=True)
    if json_:
        echo_json(message.to_dict())
    else:
        started = "; a new session" if message.created else ""
        click.echo(f"added {role} message to {session_id} ({message.time}{started}){redacted(message.redacted)}")


@session_group.command("list")
@cli_params("list_sessions")
@json_option
@click.pass_context
def list_cmd(ctx: click.Context, limit: int | None, archived: bool, json_: bool) -> None:
    """Every session, most recently updated first."""
    infos = get_vault(ctx).conversations.list(archived=archived)[:limit]
    if json_:
        echo_json([i.to_dict() for i in infos])
        return
    if not infos:
        click.echo("no archived sessions" if archived else "no sessions yet: `memkit session new` starts one", err=True)
        return
    width = min(max(10, *(len(i.id) for i in infos)), 40)  # a long id (a UUID) shifts the columns, not one row
    for i in infos:
        stage = f"  ({i.stage})" if i.stage else ""
        click.echo(f"{i.id:<{width}} {_when(i.updated)}  {plural(i.messages, 'message'):<12}  {i.title}{stage}")


@session_group.command("show")
@click.argument("session_id", metavar="ID")
@click.option("--raw", is_flag=True, help="A conversation that aged: its raw conversation (sessions/archive/raw/).")
@json_option
@click.pass_context
def show(ctx: click.Context, session_id: str, raw: bool, json_: bool) -> None:
    """The whole conversation (the file as it is; --json: parsed).

    A conversation that aged (`memkit upkeep`: a summary after session_summary_days, a core
    memory after session_core_days) shows its stage text; --raw shows the raw conversation kept in
    sessions/archive/raw/ (--json: with the messages saved since).
    """
    vault = get_vault(ctx)
    conv = vault.conversations.show_raw(session_id) if raw else vault.conversations.show(session_id)
    if json_:
        echo_json(conv.to_dict())
        return
    click.echo((vault.root / conv.file).read_text(encoding="utf-8"), nl=False)
    if raw:
        live = vault.conversations.show(session_id)
        since = len(live.messages) if conv.file != live.file else 0
        if since:
            click.echo(f"({plural(since, 'message')} saved since: `memkit session show {conv.id}`)", err=True)


@session_group.command("load")
@cli_params("load_session")
@json_option
@click.pass_context
def load(ctx: click.Context, session_id: str, max_tokens: int, strategy: str | None, json_: bool) -> None:
    """The session's recent history within a token budget, oldest first: what an assistant sends
    its LLM to continue the conversation."""
    result = get_vault(ctx).conversations.window(session_id, max_tokens, strategy=strategy)
    if json_:
        echo_json(result.to_dict())
        return
    if result.note:
        click.echo(f"memkit: note: {result.note}", err=True)
    for m in result.messages:
        click.echo(f"{m.role}: {m.content}")
    left = f", {result.omitted} older left out" if result.omitted else ""
    summed = f", {result.summarised} summarised" if result.summarised else ""
    used = result.strategy if result.strategy == result.requested else \
        f"{result.strategy}: {result.requested} fell back"
    click.echo(f"({plural(len(result.messages), 'message')}, ~{result.tokens} tokens, {used}"
               f"{summed}{left})", err=True)


@session_group.command("delete")
@click.argument("session_id", metavar="ID")
@json_option
@click.pass_context
def delete(ctx: click.Context, session_id: str, json_: bool) -> None:
    """Delete a session's file for good (`prune` archives instead)."""
    info = get_vault(ctx).conversations.delete(session_id)
    if json_:
        echo_json(info.to_dict())
    else:
        click.echo(f"deleted {info.file} ({plural(info.messages, 'message')})")


@session_group.command("prune")
@click.option("--days", type=click.IntRange(0), metavar="N",
              help="Sessions idle longer than this (default: memkit.yaml's expire: conversation, 30d).")
@click.option("--delete", "delete_", is_flag=True, help="Delete them instead of moving them to sessions/archive/.")
@click.option("--dry-run", is_flag=True, help="Only say what would be pruned.")
@json_option
@click.pass_context
def prune(ctx: click.Context, days: int | None, delete_: bool, dry_run: bool, json_: bool) -> None:
    """Archive (or delete) sessions nobody has added to for a while."""
    report = get_vault(ctx).conversations.prune(days, delete=delete_, dry_run=dry_run)
    if json_:
        echo_json(report.to_dict())
        return
    if report.days is None:
        click.echo("expire: conversation is never: nothing pruned")
        return
    verb = ("would be " if dry_run else "") + report.action
    for i in report.sessions:
        click.echo(f"{verb}: {i.file} (last message {_when(i.updated)})")
    click.echo(f"{plural(len(report.sessions), 'session')} {verb} (idle more than {report.days} days)")


@session_group.command("export")
@click.argument("session_id", metavar="ID")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), metavar="FILE",
              help="Write to FILE instead of stdout.")
@click.pass_context
def export(ctx: click.Context, session_id: str, output: str | None) -> None:
    """The session as JSONL: {"role", "content", "time"} a line, the system prompt first."""
    data = get_vault(ctx).conversations.export(session_id)
    if output is None:
        click.echo(data, nl=False)
        return
    Path(output).write_text(data, encoding="utf-8")
    click.echo(f"wrote {output} ({plural(data.count(chr(10)), 'message')})", err=True)


@session_group.command("import")
@click.argument("file", metavar="FILE")
@click.option("--format", "fmt", type=click.Choice(["auto", "jsonl", "claude-code", "chatgpt"]), default="auto",
              show_default=True, help="The file's format.")
@click.option("--id", "session_id", metavar="ID", help="Into this session (only the messages it lacks are added).")
@click.option("--title", metavar="TEXT", help="The title of a new session.")
@json_option
@click.pass_context
def import_cmd(ctx: click.Context, file: str, fmt: str, session_id: str | None, title: str | None,
               json_: bool) -> None:
    """Bring conversations in: JSONL / JSON messages, a Claude Code transcript, a ChatGPT export."""
    path = Path(file).expanduser()
    if file == "-":
        data, name = sys.stdin.buffer.read(), "stdin"
    else:
        if not path.is_file():
            raise MemkitError(f"{file}: no such file")
        data, name = path.read_bytes(), file
    results = get_vault(ctx).conversations.import_(data, name=name, fmt=fmt, session_id=session_id, title=title)
    if json_:
        echo_json([r.to_dict() for r in results])
        return
    for r in results:
        verb = "imported" if r.created else "updated"
        click.echo(f"{verb} {r.session.id} ({r.session.file}): {plural(r.added, 'message')} added, "
                   f"{r.session.display_title}{redacted(r.redacted)}")


@session_group.command("digest")
@click.argument("session_id", metavar="ID")
@click.option("--dry-run", is_flag=True, help="Only show the change as a diff.")
@json_option
@click.pass_context
def digest(ctx: click.Context, session_id: str, dry_run: bool, json_: bool) -> None:
    """Digest a session into memories with the configured LLM (as `memkit digest` does a transcript)."""
    report = get_vault(ctx).conversations.digest(session_id, dry_run=dry_run)
    if json_:
        echo_json(report.to_dict())
        return
    if dry_run and report.diff:
        click.echo(report.diff, nl=False)
    click.echo(report.summary())
    for topic, line in report.written:
        click.echo(f"  + {topic}: {line}")


@session_group.command("search")
@cli_params("search_sessions")
@json_option
@click.pass_context
def search(ctx: click.Context, query: str, k: int, session_id: str | None, role: str | None, since: str | None,
           json_: bool) -> None:
    """Find messages of past conversations (as `memkit search --sessions`)."""
    hits = get_vault(ctx).conversations.search(query, k=k, session=session_id, role=role, since=since)
    print_session_hits(hits, json_)


def print_session_hits(hits: list[Any], json_: bool) -> None:
    """How `memkit search --sessions` and `memkit session search` print what they found."""
    if json_:
        echo_json([h.to_dict() for h in hits])
        return
    if not hits:
        click.echo("no messages match", err=True)
        return
    width = min(max(10, *(len(h.session) for h in hits)), 40)
    for h in hits:
        text = " ".join(h.text.split())
        text = text if len(text) <= 100 else text[:99] + "…"
        click.echo(f"{h.score:.2f}  {h.session:<{width}} {_when(h.time)}  {h.role:<9} {text}")


__all__ = ["session_group", "print_session_hits"]
