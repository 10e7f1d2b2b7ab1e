"""The `memkit` command: the click group, its error handling and where each subcommand lives.

The commands themselves are thin click layers over the library, by idea: :mod:`memkit.frontends.cli.memories`
(add, show, forget…), :mod:`memkit.frontends.cli.search` (search, context, index), :mod:`memkit.frontends.cli.jobs`
(digest, capture, watch, split…), :mod:`memkit.frontends.cli.vault` (init, check, stats…),
:mod:`memkit.frontends.cli.session` and :mod:`memkit.frontends.cli.serve`. A command's module is imported when the
command runs (``memkit --help`` imports them all): `memkit search` loads neither the LLM client nor
the MCP server (issue 16.5).
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import sqlite3
import sys
from typing import Any, Sequence

import click

from ...errors import InvalidValue, MemkitError, TopicNameError
from ..operations import OPERATIONS, Operation
from .common import BadValue, echo_json, table_command

DEBUG_ENV = "MEMKIT_DEBUG"

#: every subcommand, as "module:attribute"; its module is imported only when it is needed.
#: An operation of the table whose command no module holds is made from the table alone (LazyGroup).
#: Of the table's commands, `add`, `context`, `set`, `get`, `people add`, `why` and `history` are made from it
#: with a printer (cli.common.table_command); the others keep click's own decorators over cli_params
#: (the table's options), because each needs more than its answer printed: `search` (--sessions, the
#: filters' hint on stderr), `edit` (the [ID] TEXT pair), `forget` and
#: `done` (a usage error naming --match), `show` (backlinks, a split topic), `topics`, `recent` and
#: `pending` (relative times, all topics: the person at the shell sees private ones), `related` (the
#: same), `index` (progress bars), `upkeep` and `proactive` (--at named in errors), `people` (a group
#: that lists), `stats` and the session commands (stdin, --quiet, their group).
COMMANDS = {
    "add": "memkit.frontends.cli.memories:add",
    "capture": "memkit.frontends.cli.jobs:capture",
    "check": "memkit.frontends.cli.vault:check",
    "compact": "memkit.frontends.cli.jobs:compact",
    "context": "memkit.frontends.cli.search:context_cmd",
    "digest": "memkit.frontends.cli.jobs:digest",
    "distill": "memkit.frontends.cli.jobs:distill",
    "done": "memkit.frontends.cli.memories:done",
    "edit": "memkit.frontends.cli.memories:edit",
    "forget": "memkit.frontends.cli.memories:forget",
    "get": "memkit.frontends.cli.facts:get_cmd",
    "git-setup": "memkit.frontends.cli.vault:git_setup",
    "history": "memkit.frontends.cli.memories:history",
    "hook": "memkit.frontends.cli.hook:hook_group",
    "index": "memkit.frontends.cli.search:index",
    "init": "memkit.frontends.cli.vault:init",
    "mcp": "memkit.frontends.cli.vault:mcp_cmd",
    "merge-driver": "memkit.frontends.cli.vault:merge_driver",
    "pending": "memkit.frontends.cli.memories:pending",
    "people": "memkit.frontends.cli.facts:people_group",
    "proactive": "memkit.frontends.cli.jobs:proactive",
    "recent": "memkit.frontends.cli.memories:recent",
    "search": "memkit.frontends.cli.search:search",
    "related": "memkit.frontends.cli.search:related",
    "serve": "memkit.frontends.cli.serve:serve",
    "session": "memkit.frontends.cli.session:session_group",
    "set": "memkit.frontends.cli.facts:set_cmd",
    "show": "memkit.frontends.cli.memories:show",
    "split": "memkit.frontends.cli.jobs:split",
    "stats": "memkit.frontends.cli.vault:stats",
    "tidy": "memkit.frontends.cli.jobs:tidy",
    "topics": "memkit.frontends.cli.memories:topics",
    "upkeep": "memkit.frontends.cli.jobs:upkeep",
    "watch": "memkit.frontends.cli.jobs:watch",
    "why": "memkit.frontends.cli.memories:why",
    "rename": "memkit.frontends.cli.memories:rename",
}


class _StderrHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"memkit: {record.levelname.lower()}: {record.getMessage()}", err=True)


def _setup_logging() -> None:
    log = logging.getLogger("memkit")
    if not any(isinstance(h, _StderrHandler) for h in log.handlers):
        log.addHandler(_StderrHandler())
    log.setLevel(logging.INFO)
    log.propagate = False


GLOBAL_OPTIONS = ("--vault", "--model")  #: the group's options, also accepted after the command name


def hoist_global_options(args: list[str], commands: set[str]) -> list[str]:
    """``memkit topics --vault X`` -> ``memkit --vault X topics``: the group's options may follow the
    command name (never after ``--``, where everything is text)."""
    head: list[str] = []
    rest: list[str] = []
    seen_command = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        name = arg.split("=", 1)[0]
        if seen_command and name in GLOBAL_OPTIONS and ("=" in arg or i + 1 < len(args)):
            take = 1 if "=" in arg else 2
            head += args[i:i + take]
            i += take
            continue
        if not seen_command and arg in commands:
            seen_command = True
        (rest if seen_command else head).append(arg)
        i += 1
    return head + rest


def wants_json(args: list[str]) -> bool:
    """Whether ``--json`` was given (before any ``--``): errors are then JSON too."""
    return "--json" in (args[:args.index("--")] if "--" in args else args)


def usage_line(exc: click.UsageError, argv: list[str]) -> str:
    """One line for a usage error, with what to do (never click's usage block)."""
    message = exc.format_message().rstrip(".")
    message = message[:1].lower() + message[1:]
    command = exc.ctx.command_path if exc.ctx is not None else "memkit"
    if isinstance(exc, click.NoSuchOption):
        given = next((a for a in argv if a.startswith(exc.option_name)), exc.option_name)
        if not given.startswith("--") or " " in given:  # "-5 degrees", "-think again": text, not an option
            return f"{message}: text that starts with '-' goes after '--' ({command} -- {json.dumps(given)})"
    return f"{message} (see '{command} --help')"


def report_error(message: str, code: int, as_json: bool) -> None:
    """An error the way every command prints it: ``memkit: error: …`` on stderr, or with --json a
    ``{"error": …, "code": exit code}`` object on stdout."""
    if as_json:
        click.echo(json.dumps({"error": message, "code": code}, ensure_ascii=False))
    else:
        click.echo(f"memkit: error: {message}", err=True)


def _print_answer(result: Any, answer: Any, **_: Any) -> None:
    echo_json(answer)


class LazyGroup(click.Group):
    """A group whose subcommands are imported on demand from :data:`COMMANDS` (click's documented
    lazy-loading pattern): listing them costs nothing, running one imports its module alone.

    An operation of the table (:data:`table`) whose command is in no module of :data:`COMMANDS`
    is a command made from the table alone (:func:`memkit.frontends.cli.common.table_command`): its
    help is its MCP tool's description, and it prints its answer as JSON. A command that prints for
    a person is made in its theme's module, with ``table_command`` and a printer (``add``, ``set``,
    ``why``), or with click's own decorators where it needs more than the answer printed (a usage
    error of its own, other calls: ``search``, ``edit``, ``show``; see :data:`COMMANDS`)."""

    table: Sequence[Operation] = OPERATIONS

    def _from_table(self) -> dict[str, Operation]:
        return {op.cli[0]: op for op in self.table if op.cli is not None and len(op.cli) == 1 and op.cli[0] not in COMMANDS}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS) | set(self._from_table()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        plain = self._from_table().get(cmd_name)
        if plain is not None and cmd_name not in self.commands:
            help_ = plain.mcp.description if plain.mcp is not None else plain.name
            return table_command(plain.name, table=self.table, help=help_)(_print_answer)
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module, attr = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module), attr)
            if not isinstance(command, click.Command) or command.name != cmd_name:
                raise RuntimeError(f"{COMMANDS[cmd_name]} is not the command {cmd_name!r}")
            self.add_command(command)
        return super().get_command(ctx, cmd_name)


class MemkitGroup(LazyGroup):
    """Turns library errors into one-line messages (exit 1; bad values and usage exit 2), JSON ones
    with --json; MEMKIT_DEBUG=1 shows tracebacks."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, **extra: Any) -> Any:
        argv = hoist_global_options(list(sys.argv[1:] if args is None else args), set(self.commands) | set(COMMANDS))
        if not standalone_mode:
            return super().main(argv, prog_name, complete_var, standalone_mode, **extra)
        as_json = wants_json(argv)
        try:
            result = super().main(argv, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:  # plain `memkit`: its help, as always
            click.echo(exc.ctx.get_help() if exc.ctx is not None else "")
            sys.exit(0)
        except click.UsageError as exc:
            report_error(usage_line(exc, argv), exc.exit_code, as_json)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            report_error(exc.format_message(), exc.exit_code, as_json)
            sys.exit(exc.exit_code)
        except click.Abort:
            report_error("aborted", 1, as_json)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (TopicNameError, InvalidValue) as exc:
            raise BadValue(str(exc)) from exc
        except MemkitError as exc:
            raise click.ClickException(str(exc)) from exc
        except (click.exceptions.Exit, click.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            raise click.Abort() from None
        except BrokenPipeError:  # `memkit topics | head`: the reader left, that is fine
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except OSError as exc:  # a full disk, a read-only folder, a vanished file: one line, never a traceback
            where = f" ({exc.filename})" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from exc
        except sqlite3.OperationalError as exc:  # the index: "database or disk is full", "unable to open"
            raise click.ClickException(f"the search index (.memkit/index/): {exc}; memkit rebuilds it from the "
                                       f"files once the cause (disk space, permissions) is fixed") from exc
        except Exception as exc:  # an unexpected error: one line unless debugging
            if os.environ.get(DEBUG_ENV):
                raise
            raise click.ClickException(
                f"unexpected error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for the traceback)"
            ) from exc


@click.group(cls=MemkitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--vault", "vault", type=click.Path(file_okay=False), metavar="PATH",
              help="The vault folder. Default: $MEMKIT_VAULT, else the nearest parent folder with memkit.yaml.")
@click.option("--model", envvar="MEMKIT_MODEL", metavar="MODEL",
              help="model2vec model id or folder (default: memkit.yaml's model). Env: MEMKIT_MODEL.")
@click.version_option(package_name="memkit-md", prog_name="memkit")
@click.pass_context
def main(ctx: click.Context, vault: str | None, model: str | None) -> None:
    """File-first, plain-text long-term memory for LLM assistants.

    Memories are markdown list items in vault/topics/*.md; edit them by hand, commit them to git.

    \b
    Quick start:
      memkit init ~/memory && cd ~/memory
      memkit add "Prefers bomba rice for paella" --topic cooking --kind preference
      memkit search "what rice do I use"
    """
    _setup_logging()
    # An ``obj`` given by the caller is kept: a test (or a program embedding the CLI) may pass
    # ``{"vault_obj": Vault(...)}`` to run the commands on a vault it built.
    ctx.ensure_object(dict).update(vault=vault, model=model)



__all__ = ["main", "COMMANDS", "LazyGroup", "MemkitGroup", "hoist_global_options", "wants_json", "usage_line", "report_error"]
