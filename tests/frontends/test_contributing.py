"""docs/contributing.md's worked examples run: the operation it adds (`count`: a method of Vault and
one entry of the table of operations) appears in the command line, the MCP server and the HTTP API
with nothing else written; its printer makes a command for a person; the setting it adds
(``greeting_hours``: one field of Config) is checked, written into memkit.yaml and documented.

Each example is read from the page itself, so the page cannot drift from what works."""
from __future__ import annotations

import functools
import http.client
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from util import FakeEmbedder, vault_with

from memkit import Vault
from memkit.config import Config, default_yaml, docs_page
from memkit.config.kinds import Whole
from memkit.config.validate import build, setting
from memkit.errors import ConfigError
from memkit.frontends import operations
from memkit.frontends.cli import common
from memkit.frontends.cli.group import main

PAGE = Path(__file__).resolve().parents[2] / "docs" / "contributing.md"
TOPICS = {"cooking": "- [preference] Prefers bomba rice for paella (2026-01-01)\n"
                     "- [fact] The oven runs 10 degrees hot (2026-01-02)\n",
          "health": "- [fact] Allergic to tree nuts (2026-01-03)\n"}


def examples() -> list[str]:
    """The python blocks of the page that this test runs (their marker names it), in order."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(r"<!-- readme-test: skip — [^>]*tests/frontends/test_contributing\.py[^>]* -->\n```python\n(.*?)```",
                       text, re.S)
    assert len(found) == 4, "the page's worked examples: Vault.count, its entry, its printer, a setting"
    return found


@pytest.fixture
def table(monkeypatch):
    """The table with the page's `count` added, and Vault with the page's method."""
    method, entry, _, _ = examples()
    space: dict[str, Any] = {}
    exec(method, space)  # noqa: S102  # the page's own example
    monkeypatch.setattr(Vault, "count", space["count"], raising=False)
    names = {name: getattr(operations, name) for name in operations.__all__}
    names.update(vars(operations.kit), topic_param=operations.shared.topic_param)
    added = eval(entry, names)  # noqa: S307  # "Operation(…)," : a tuple of one entry
    return operations.OPERATIONS + added


class _Client:
    """http.client on a served toy table (test_http_api's Client checks against the real table's spec)."""

    def __init__(self, server: Any) -> None:
        self.host, self.port = server.socket.getsockname()[:2]

    def call(self, method: str, path: str) -> tuple[int, Any]:
        con = http.client.HTTPConnection(self.host, self.port, timeout=30)
        con.request(method, path)
        resp = con.getresponse()
        answer = json.loads(resp.read())
        con.close()
        return resp.status, answer


def test_an_operation_added_to_the_table_is_in_every_front_end(table, tmp_path, monkeypatch):
    pytest.importorskip("mcp", reason="the MCP server needs the MCP SDK: pip install 'mcp>=2'")
    from memkit.frontends.http.api import HTTPServer
    from memkit.frontends.http.spec import http_routes
    from memkit.frontends.mcp.server import Memory, TypedTools

    vault = vault_with(tmp_path, TOPICS, FakeEmbedder())
    (count,) = [op for op in table if op.name == "count"]
    assert count not in operations.OPERATIONS

    # the command line: `memkit count`, made from the table (its help: the tool's description)
    monkeypatch.setattr(main, "table", table)
    runner = CliRunner()
    result = runner.invoke(main, ["--vault", str(vault.root), "count", "--topic", "cooking"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"count": 2}
    assert json.loads(runner.invoke(main, ["--vault", str(vault.root), "count", "--json"]).output) == {"count": 3}
    assert "count_memories" not in runner.invoke(main, ["count", "--help"]).output
    assert "How many memories the user's vault holds" in runner.invoke(main, ["count", "--help"]).output
    assert "count" in runner.invoke(main, ["--help"]).output
    bad = runner.invoke(main, ["--vault", str(vault.root), "count", "--topic", "nowhere"])
    assert bad.exit_code == 1 and "nowhere" in bad.output

    # the MCP server: the tool count_memories, its schema from the parameters
    tools = TypedTools(Memory.open(vault, table))
    assert "count_memories" in tools.tools
    assert list(tools.schema("count_memories")["properties"]) == ["topic"]
    answer = tools.call("count_memories", {"topic": "health"})
    assert answer.structured == {"count": 1} and json.loads(answer.text) == {"count": 1}

    # the HTTP API: GET /count and its part of the OpenAPI document
    with HTTPServer(vault, port=0, operations=http_routes(table)) as server:
        client = _Client(server)
        assert client.call("GET", "/count?topic=cooking") == (200, {"count": 2})
        assert client.call("GET", "/count")[1] == {"count": 3}
        status, doc = client.call("GET", "/openapi.json")
        assert doc["paths"]["/count"]["get"]["operationId"] == "count"
        assert doc["paths"]["/count"]["get"]["parameters"][0]["name"] == "topic"
        assert client.call("GET", "/count?topik=cooking")[0] == 400  # the table's one validation
        assert client.call("GET", "/count?topic=nowhere")[0] == 404


def test_the_printer_makes_a_command_for_a_person(table, tmp_path, monkeypatch):
    printer = examples()[2]
    vault = vault_with(tmp_path, TOPICS, FakeEmbedder())
    monkeypatch.setenv("MEMKIT_VAULT", str(vault.root))
    space: dict[str, Any] = {"Any": Any, "click": click, "plural": common.plural,
                             "table_command": functools.partial(common.table_command, table=table)}
    exec(printer, space)  # noqa: S102  # the page's own example
    command = space["count"]
    assert isinstance(command, click.Command) and command.name == "count"
    runner = CliRunner()
    assert runner.invoke(command, ["--topic", "cooking"]).output == "2 memories\n"
    assert json.loads(runner.invoke(command, ["--json"]).output) == {"count": 3}
    assert "memkit count --topic cooking" in runner.invoke(command, ["--help"]).output


def test_a_setting_added_to_config_is_checked_written_and_documented():
    field = examples()[3]
    space: dict[str, Any] = {"dataclass": dataclass, "Config": Config, "setting": setting, "Whole": Whole}
    exec("@dataclass\nclass WithGreeting(Config):\n" + field, space)  # noqa: S102  # the page's own example
    with_greeting = space["WithGreeting"]
    assert build(with_greeting, {}).greeting_hours == 12
    assert build(with_greeting, {"greeting_hours": 3}).greeting_hours == 3
    with pytest.raises(ConfigError) as refused:
        build(with_greeting, {"greeting_hours": 0})
    said = str(refused.value)
    assert said == "greeting_hours must be a whole number, 1 or more, not 0 (int)"
    assert said in PAGE.read_text(encoding="utf-8")  # the page says what memkit says
    written = default_yaml(with_greeting)
    assert "# Hours after the last conversation before the assistant greets the user again.\ngreeting_hours: 12\n" \
        in written
    assert "| `greeting_hours` | `12` |" in docs_page(with_greeting)
    assert "greeting_hours" not in default_yaml() and "greeting_hours" not in docs_page()
