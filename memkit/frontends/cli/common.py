"""What the `memkit` commands share: the vault of the run, --json and its printing, plurals, the
options and the commands made from the table of operations, and the error for a refused value (the group itself is
:mod:`memkit.frontends.cli.group`)."""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Sequence

import click

from ...vault import Vault, find_vault, parse_day
from ..operations import Operation, Param, operation


class BadValue(click.ClickException):
    """A value the library refused (a topic name, a date, an empty query): exit 2, like click's own."""

    exit_code = 2


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 entry``, ``3 entries``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


def redacted(n: int) -> str:
    """`` (1 secret redacted)`` after a report line, when a write replaced secrets (docs/privacy.md)."""
    return f" ({plural(n, 'secret')} redacted)" if n else ""


def json_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "json_", is_flag=True, help="Print JSON for scripts.")(fn)


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def get_vault(ctx: click.Context) -> Vault:
    obj = ctx.find_root().obj or {}
    if "vault_obj" not in obj:
        root = find_vault(obj.get("vault"), os.environ.get("MEMKIT_VAULT"))
        obj["vault_obj"] = Vault(root, model=obj.get("model"))
    return obj["vault_obj"]


def _day(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A day option (``format: date`` in the table), checked as the command line is read: its
    ISO day, or an error naming the option (``--due must be a date like 2026-03-01, got 'soon'``)."""
    return None if value is None else parse_day(value, param.opts[0]).isoformat()


def cli_params(op: str | Operation) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator giving a click command the options and arguments of ``op`` that the CLI offers,
    in the table's order (:mod:`memkit.frontends.operations`)."""

    def click_type(p: Param) -> Any:
        if p.choices is not None:
            return click.Choice(p.choices)
        if p.type == "integer":
            return click.IntRange(None if p.low is None else int(p.low), None if p.high is None else int(p.high))
        if p.type == "number":
            return click.FloatRange(p.low, p.high)
        return None

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        for p in reversed((operation(op) if isinstance(op, str) else op).offered("cli")):
            name = p.name_in("cli")
            if p.argument:
                fn = click.argument(name, required=p.required, nargs=p.nargs, type=click_type(p),
                                    metavar=p.metavar)(fn)
            elif p.type == "boolean":
                fn = click.option(*p.cli, name, is_flag=True, help=p.help)(fn)
            else:
                fn = click.option(*p.cli, name, type=click_type(p), default=p.default, metavar=p.metavar,
                                  multiple=p.type == "array", help=p.help, show_default=p.default is not None,
                                  callback=_day if p.format == "date" else None)(fn)
        return fn

    return apply


def table_command(op: str, *, table: Sequence[Operation] | None = None,
                  help: str | None = None) -> Callable[[Callable[..., None]], click.Command]:  # noqa: A002
    """A command made from the table of operations (:mod:`memkit.frontends.operations`): the
    decorated function prints the result for a person; the command's name, options and arguments,
    its handler (one call into the Vault) and its --json (the operation's answer) are the table's.

    The function is called as ``show(result, answer, **arguments)`` (the handler's result, its
    JSON answer, the arguments by the table's names); its docstring is the command's help (or
    ``help``). A parameter the table marks ``stdin`` is read from stdin when given as '-'. A command
    that needs more than the answer printed (a usage error of its own, other calls) keeps click's
    own decorators over :func:`cli_params`."""
    entry = operation(op) if table is None else next(o for o in table if o.name == op)
    assert entry.cli is not None and entry.call is not None, f"{op}: no CLI command or no handler"
    name = entry.cli[-1]
    reads_stdin = [p.name_in("cli") for p in entry.offered("cli") if p.stdin]

    def make(show: Callable[..., None]) -> click.Command:
        @click.pass_context
        def command(ctx: click.Context, json_: bool, **given: Any) -> None:
            for name in reads_stdin:
                if given[name] == "-":
                    given[name] = sys.stdin.read()
            result = entry.run(get_vault(ctx), "cli", given)
            answer = entry.answer(result)
            if json_:
                echo_json(answer)
            else:
                show(result, answer, **entry.arguments("cli", given))

        return click.command(name, help=help or show.__doc__)(cli_params(entry)(json_option(command)))

    return make


__all__ = ["BadValue", "plural", "json_option", "echo_json", "get_vault", "cli_params", "table_command"]
