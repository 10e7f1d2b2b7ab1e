"""Issue 30.3: `memkit why ID` (and --json), the MCP tool why_memory and GET /why/{id} answer the
same, from the library's Vault.why; a memory that names no conversation is a clear error (exit 1,
404)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from util import FakeEmbedder, vault_with, write

from memkit.frontends.cli.group import main

pytest.importorskip("mcp", reason="the MCP server needs the MCP SDK: pip install 'mcp>=2'")
pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")

from test_http_api import Client  # noqa: E402

from memkit.frontends.http.api import HTTPServer  # noqa: E402
from memkit.frontends.mcp.server import Memory, TypedTools  # noqa: E402

CHAT = ("Maya: can you plan dinners?\nAssistant: Any constraints?\n"
        "Maya: I eat vegetarian Monday to Friday, fish at weekends.\nAssistant: Noted.\n")


@pytest.fixture
def vault(tmp_path):
    v = vault_with(tmp_path, {"food": "- [preference] Eats vegetarian Monday to Friday (from dinner.txt 2026-11-23) "
                                      "(2026-11-23)\n- Allergic to tree nuts (2026-11-20)\n"}, FakeEmbedder())
    write(v.root / "inbox" / "done" / "dinner.txt", CHAT)
    return v


def ids(v):
    entries = {("vegetarian" if "vegetarian" in e.text else "nuts"): e.id for e in v.entries()}
    return entries["vegetarian"], entries["nuts"]


def run(v, *args):
    return CliRunner().invoke(main, ["--vault", str(v.root), *args])


def test_the_cli_shows_the_lines_and_json(vault):
    veg, nuts = ids(vault)
    result = run(vault, "why", veg)
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"{veg} (food): [preference] Eats vegetarian Monday to Friday (from dinner.txt 2026-11-23) (2026-11-23)\n"
        "from transcript dinner.txt of 2026-11-23: inbox/done/dinner.txt\n"
        "  2  Assistant: Any constraints?\n"
        "> 3  Maya: I eat vegetarian Monday to Friday, fish at weekends.\n")
    data = json.loads(run(vault, "why", veg, "--json").output)
    assert (data["file"], data["kind"], data["lines"][1]) == (
        "inbox/done/dinner.txt", "transcript",
        {"line": 3, "role": "Maya", "text": "I eat vegetarian Monday to Friday, fish at weekends.", "match": True})
    bad = run(vault, "why", nuts)
    assert bad.exit_code == 1 and "written by hand or before provenance was recorded" in bad.output


def test_mcp_and_http_answer_the_same(vault):
    veg, nuts = ids(vault)
    tools = TypedTools(Memory.open(vault))
    outcome = tools.call("why_memory", {"id": veg})
    assert "> 3  Maya: I eat vegetarian" in outcome.text
    with HTTPServer(vault, port=0) as server:
        c = Client(server)
        status, answer = c.call("GET", f"/why/{veg}")
        assert status == 200 and answer == outcome.structured
        status, answer = c.call("GET", f"/why/{nuts}")
        assert status == 404 and "written by hand" in answer["error"]
        assert c.call("GET", "/why/zzzzzzzz")[0] == 404
