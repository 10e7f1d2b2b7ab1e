"""`memkit set`, `get` and `people`: keyed facts (one live value per key, in topics/facts.md) and the
people memories are about (people.md). `set`, `get` and `people add` are made from the table of operations
(:func:`memkit.frontends.cli.common.table_command`: their handler and --json answer are the
servers'); `people` keeps click's own group, which lists when no subcommand is given."""
from __future__ import annotations

from typing import Any

import click

from ..operations import operation
from .common import cli_params, echo_json, get_vault, json_option, redacted, table_command


@table_command("set")
def set_cmd(result: Any, answer: dict[str, Any], key: str, value: str) -> None:
    """Set KEY to VALUE: one live value per key (the user's city, the wifi name).

    The key's line in topics/facts.md ('- city: Porto (2026-11-27)') is replaced where it stands;
    the old value goes to archive.md with its date (`memkit get KEY --history` lists them).

    \b
    Examples:
      memkit set city Porto
      memkit set wifi "Casa Maya 5G"
    """
    if not answer["changed"]:
        click.echo(f"{answer['key']} is {answer['value']} already")
    elif answer["old"] is None:
        click.echo(f"{answer['key']}: {answer['value']}{redacted(answer.get('redacted', 0))}")
    else:
        click.echo(f"{answer['key']}: {answer['value']} (was {answer['old']}; kept in archive.md)"
                   f"{redacted(answer.get('redacted', 0))}")


@table_command("get")
def get_cmd(result: Any, answer: dict[str, Any], key: str | None, history: bool) -> None:
    """Print KEY's value (exit 1 when it has none); without KEY, every key and its value.

    \b
    Examples:
      memkit get city
      memkit get
      memkit get city --history
    """
    if key is None:
        for fact in answer["facts"]:
            click.echo(f"{fact['key']}: {fact['value']}" + (f"  ({fact['day']})" if fact["day"] else ""))
    elif history:
        for step in answer["history"]:
            click.echo(f"{step['day'] or '?':<10}  {step['value']}" + ("  (now)" if step["live"] else ""))
    else:
        click.echo(answer["value"])


def _person_line(person: dict[str, object]) -> str:
    relation = f" ({person['relation']}" + (f": {person['detail']}" if person["detail"] else "") + ")" \
        if person["relation"] else ""
    return f"{person['name']}{relation}" + (f": {person['about']}" if person["about"] else "")


@click.group("people", invoke_without_command=True)
@cli_params("people")
@json_option
@click.pass_context
def people_group(ctx: click.Context, json_: bool) -> None:
    """List the people memories are about (people.md: name, relation, a line about them).

    people.md is a plain list a person edits, one line each: '- Ana (family: sister): lives in
    Porto'. '@Ana' in a memory, or '(people: Ana)', says it is about her: `memkit search --with
    Ana`, `--relation family`.

    \b
    Examples:
      memkit people
      memkit people add Ana --relation family --detail sister --about "lives in Porto"
    """
    if ctx.invoked_subcommand is not None:
        return
    people = operation("people")  # a group: `people add` is its subcommand, so click's own decorators
    answer = people.answer(people.run(get_vault(ctx), "cli", {}))
    if json_:
        echo_json(answer)
        return
    if not answer["people"]:
        click.echo("no people yet: `memkit people add NAME --relation family`, or write people.md", err=True)
    for person in answer["people"]:
        click.echo(_person_line(person))


@table_command("add_person")
def people_add(result: Any, answer: dict[str, Any], name: str, relation: str | None, detail: str | None,
               about: str | None) -> None:
    """Add a person to people.md: NAME, their relation to the user, a line about them.

    \b
    Example:
      memkit people add Ana --relation family --detail sister --about "lives in Porto"
    """
    click.echo(f"added to people.md: {_person_line(answer)}")


people_group.add_command(people_add)


__all__ = ["get_cmd", "people_group", "set_cmd"]
