"""`memkit set`, `get` and `people`: keyed facts (one live value per key, in topics/facts.md) and the
people memories are about (people.md). Click commands over :class:`memkit.Vault`; the answers are
:mod:`memkit.frontends.facts`'s, the same as the servers'."""
from __future__ import annotations

import click

from ..facts import add_person_answer, get_answer, people_answer, set_answer
from .common import cli_params, echo_json, get_vault, json_option, redacted


@click.command("set")
@cli_params("set")
@json_option
@click.pass_context
def set_cmd(ctx: click.Context, key: str, value: str, json_: bool) -> None:
    """Set KEY to VALUE: one live value per key (the user's city, the wifi name).

    The key's line in topics/facts.md ('- city: Porto (2026-11-27)') is replaced where it stands;
    the old value goes to archive.md with its date (`memkit get KEY --history` lists them).

    \b
    Examples:
      memkit set city Porto
      memkit set wifi "Casa Maya 5G"
    """
    answer = set_answer(get_vault(ctx), key, value)
    if json_:
        echo_json(answer)
    elif not answer["changed"]:
        click.echo(f"{answer['key']} is {answer['value']} already")
    elif answer["old"] is None:
        click.echo(f"{answer['key']}: {answer['value']}{redacted(answer.get('redacted', 0))}")
    else:
        click.echo(f"{answer['key']}: {answer['value']} (was {answer['old']}; kept in archive.md)"
                   f"{redacted(answer.get('redacted', 0))}")


@click.command("get")
@cli_params("get")
@json_option
@click.pass_context
def get_cmd(ctx: click.Context, key: str | None, history: bool, json_: bool) -> None:
    """Print KEY's value (exit 1 when it has none); without KEY, every key and its value.

    \b
    Examples:
      memkit get city
      memkit get
      memkit get city --history
    """
    answer = get_answer(get_vault(ctx), key, history)
    if json_:
        echo_json(answer)
    elif key is None:
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
    answer = people_answer(get_vault(ctx))
    if json_:
        echo_json(answer)
        return
    if not answer["people"]:
        click.echo("no people yet: `memkit people add NAME --relation family`, or write people.md", err=True)
    for person in answer["people"]:
        click.echo(_person_line(person))


@people_group.command("add")
@cli_params("add_person")
@json_option
@click.pass_context
def people_add(ctx: click.Context, name: str, relation: str | None, detail: str | None, about: str | None,
               json_: bool) -> None:
    """Add a person to people.md: NAME, their relation to the user, a line about them.

    \b
    Example:
      memkit people add Ana --relation family --detail sister --about "lives in Porto"
    """
    answer = add_person_answer(get_vault(ctx), name, relation, detail, about)
    if json_:
        echo_json(answer)
    else:
        click.echo(f"added to people.md: {_person_line(answer)}")


__all__ = ["get_cmd", "people_group", "set_cmd"]
