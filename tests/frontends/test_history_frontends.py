"""The `history` operation, made from the table of operations alone (its entry and one method,
`vault.upkeep.versions`): `memkit history ID` (and --json), the MCP tool memory_history and GET
/history/{id} answer the same; an unknown id is a clear error (exit 1, 404)."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from util import FakeEmbedder, vault_with

from memkit.frontends.cli.group import main

pytest.importorskip("mcp", reason="the MCP server needs the MCP SDK: pip install 'mcp>=2'")
pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")

from test_http_api import Client  # noqa: E402

from memkit.frontends.http.api import HTTPServer  # noqa: E402
from memkit.frontends.mcp.server import Memory, TypedTools  # noqa: E402


@pytest.fixture
def edited(tmp_path):
    """A vault where one memory was edited twice: three versions, the newest current."""
    v = vault_with(tmp_path, {"home": "- Lives in Portland (2026-11-02)\n"}, FakeEmbedder())
    first = v.entries()[0]
    second = v.edit(first.id, "Lives in Seattle")
    third = v.edit(second.id, "Lives in Seattle, Capitol Hill")
    return v, (first, second, third)


def run(v, *args):
    return CliRunner().invoke(main, ["--vault", str(v.root), *args])


def test_the_cli_prints_every_version_and_json(edited):
    vault, (first, second, third) = edited
    result = run(vault, "history", second.id)  # any version names the chain
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split("  ", 1)[0] for line in lines[::2]] == [first.id, second.id, third.id]
    assert lines[-1].strip() == "(now, in home)" and "left home: edited, now" in lines[1]
    data = json.loads(run(vault, "history", first.id, "--json").output)
    assert [re.sub(r" \(\d{4}-\d\d-\d\d\)$", "", v["text"]) for v in data["versions"]] == [
        "Lives in Portland", "Lives in Seattle", "Lives in Seattle, Capitol Hill"]  # without the day it was written
    assert data["versions"][-1]["status"] == "current" and data["versions"][-1]["day"] is None
    assert data["git"] == []  # not a git repository
    bad = run(vault, "history", "zzzzzzzz")
    assert bad.exit_code == 1 and "no entry" in bad.output


def test_mcp_and_http_answer_as_the_cli(edited):
    vault, (first, _second, third) = edited
    cli = json.loads(run(vault, "history", third.id, "--json").output)
    tools = TypedTools(Memory.open(vault))
    outcome = tools.call("memory_history", {"id": first.id})
    assert outcome.structured == cli and f"{third.id}  Lives in Seattle, Capitol Hill" in outcome.text
    with HTTPServer(vault, port=0) as server:
        c = Client(server)
        assert c.call("GET", f"/history/{first.id}") == (200, cli)
        status, answer = c.call("GET", "/history/zzzzzzzz")
        assert status == 404 and "no entry" in answer["error"]
        assert c.call("GET", "/history/ab")[0] in (400, 404)  # too short an id
