"""`memkit hook`: the assistant's hook that puts the memory block into every prompt by itself
(:mod:`memkit.frontends.hook`; docs/hooks.md). A thin click layer: ``run`` answers one hook call,
``install`` and ``uninstall`` edit Claude Code's settings."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable

import click

from ..hook import (
    DEFAULT_BUDGET,
    HOOK_EVENTS,
    hook_command,
    install_claude_code,
    main,
    memkit_hooks,
    settings_path,
    uninstall_claude_code,
)
from .common import get_vault, plural

CLIENTS = click.Choice(["claude-code"])  #: the arguments say metavar="CLIENT", so usage and errors name it


@click.group("hook")
def hook_group() -> None:
    """Recall by itself: the memory block in every prompt of an assistant (Claude Code).

    `memkit hook install claude-code` writes Claude Code's hooks (UserPromptSubmit and
    SessionStart) into .claude/settings.json: before each prompt Claude Code runs the hook, which
    asks a warm `memkit serve` on the vault's socket (.memkit/serve.sock) for the memory block,
    starting one for the next prompts when none runs, and answers from this process meanwhile.
    A failing hook never blocks a prompt: no context, one line on stderr.

    \b
    Examples:
      memkit --vault ~/memory hook install claude-code
      memkit --vault ~/memory hook install claude-code --user
      memkit hook uninstall claude-code
    """


def _where(user: bool, project: str | None) -> Path:
    return settings_path(user=user, project=Path(project) if project else None)


def _settings_command(name: str) -> Callable[[Callable[..., Any]], click.Command]:
    """A subcommand on one client's settings file: CLIENT, --user and --project (install,
    uninstall, status share them)."""
    def make(fn: Callable[..., Any]) -> click.Command:
        fn = click.option("--project", type=click.Path(file_okay=False), metavar="DIR",
                          help="The project whose .claude/settings.json to edit (default: here).")(fn)
        fn = click.option("--user", is_flag=True, help="~/.claude/settings.json (every project) instead of "
                                                        "the project's .claude/settings.json.")(fn)
        return hook_group.command(name)(click.argument("client", type=CLIENTS, metavar="CLIENT")(fn))
    return make


@_settings_command("install")
@click.option("--budget", type=click.IntRange(1, 100_000), metavar="N",
              help=f"Tokens of memory block per prompt (default {DEFAULT_BUDGET}).")
@click.pass_context
def install(ctx: click.Context, client: str, user: bool, project: str | None, budget: int | None) -> None:
    """Write memkit's hook into Claude Code's settings (kept: every other key and hook).

    The hook runs this Python with the vault's absolute path, so it works from any project.
    Installing again replaces memkit's entries (never doubles them).

    \b
    Example:
      memkit --vault ~/memory hook install claude-code --project ~/code/harbor
    """
    root = get_vault(ctx).root
    path = _where(user, project)
    command = hook_command(root, budget=budget)
    changed = install_claude_code(path, command)
    events = ", ".join(HOOK_EVENTS)
    click.echo(f"{'installed' if changed else 'already installed:'} memkit's hook for {events} in {path}")
    click.echo(f"  {command}")


@_settings_command("uninstall")
def uninstall(client: str, user: bool, project: str | None) -> None:
    """Remove memkit's hooks from Claude Code's settings (only memkit's).

    \b
    Example:
      memkit hook uninstall claude-code --user
    """
    path = _where(user, project)
    removed = uninstall_claude_code(path)
    click.echo(f"removed {plural(removed, 'memkit hook')} from {path}" if removed else f"no memkit hook in {path}")


@_settings_command("status")
def status(client: str, user: bool, project: str | None) -> None:
    """Show memkit's hooks in Claude Code's settings.

    \b
    Example:
      memkit hook status claude-code
    """
    path = _where(user, project)
    found = memkit_hooks(path)
    if not found:
        click.echo(f"no memkit hook in {path}")
    for event, command in found:
        click.echo(f"{event}: {command}")


@hook_group.command("run", context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("client", type=CLIENTS, metavar="CLIENT")
@click.option("--budget", type=int, default=DEFAULT_BUDGET, metavar="N", help="Tokens of memory block.")
@click.option("--no-start", is_flag=True, help="Do not start a server when none runs (answer cold).")
@click.option("--verbose", is_flag=True, help="Say on stderr how the prompt was answered (warm or cold).")
@click.pass_context
def run(ctx: click.Context, client: str, budget: int, no_start: bool, verbose: bool) -> None:
    """Answer one hook call: Claude Code's JSON on stdin, the memory block on stdout.

    What the installed hook runs (as `python -m memkit.frontends.hook claude-code`, which skips
    loading the command line). Always exits 0: a problem is a line on stderr and no context.

    \b
    Example:
      echo '{"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "rice?"}' \\
        | memkit --vault ~/memory hook run claude-code
    """
    vault = (ctx.find_root().obj or {}).get("vault") or os.environ.get("MEMKIT_VAULT")
    argv = [client] + (["--vault", str(vault)] if vault else []) + ["--budget", str(budget)]
    argv += (["--no-start"] if no_start else []) + (["--verbose"] if verbose else []) + list(ctx.args)
    sys.stdout.flush()
    main(argv)
