"""What the `memkit` commands share: the vault of the run, --json and its printing, plurals, and the
error for a refused value (the group itself is :mod:`memkit.frontends.cli.group`)."""
from __future__ import annotations

import json
import os
from typing import Any, Callable

import click

from ...vault import Vault, find_vault


class BadValue(click.ClickException):
    """A value the library refused (a topic name, a date, an empty query): exit 2, like click's own."""

    exit_code = 2


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 entry``, ``3 entries``."""
    return f"{n} {one if n == 1 else (many or one + 's')}"


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



__all__ = ["BadValue", "plural", "json_option", "echo_json", "get_vault"]
