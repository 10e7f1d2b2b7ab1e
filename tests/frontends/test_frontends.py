"""The three front ends (the CLI, the MCP server, the HTTP API) offer the same operations with the
same limits: the operation set, the search parameters and their ranges, checked against each
front end's own declaration (click's options, the MCP tools' schemas, the OpenAPI operations);
then the operations the HTTP API and the MCP server gained, used."""
from __future__ import annotations

import click
import pytest

pytest.importorskip("mcp", reason="the MCP server needs the MCP SDK: pip install 'mcp>=2'")
pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")

from test_http_api import Client, make_vault  # noqa: E402
from util import FakeEmbedder, write  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.base.limits import MAX_SEARCH_RESULTS, SEARCH_MODES  # noqa: E402
from memkit.errors import MemkitError  # noqa: E402
from memkit.frontends.cli.group import main  # noqa: E402
from memkit.frontends.http.api import HTTPServer  # noqa: E402
from memkit.frontends.http.spec import OPERATIONS  # noqa: E402
from memkit.frontends.mcp.server import TOOLS, Memory, TypedTools  # noqa: E402
from memkit.frontends.operations import OPERATIONS as TABLE  # noqa: E402
from memkit.frontends.operations import schema  # noqa: E402

SEARCH_PARAMS = schema("search", "http")
SESSION_SEARCH_PARAMS = schema("search_sessions", "http")

#: what one front end has for reasons of its own, as the table says (``absent``): the server's jobs
#: and state, a summary cached by a POST (a GET writes nothing); a transcript digested with the LLM
#: (the CLI's digest reads a file)
ONLY = {"http": {("GET", "/stats"), ("GET", "/busy"), ("GET", "/index"), ("POST", "/index"),
                 ("POST", "/sessions/{session}/window")},
        "mcp": {"digest_transcript"}}
SEARCH_FILTERS = {"k", "topic", "kind", "tag", "since", "mode", "min_importance", "fast", "person", "relation", "where",
                  "linked"}


def cli_command(path: tuple[str, ...]) -> click.Command:
    ctx = click.Context(main)
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None, f"no CLI command {' '.join(path)}"
        command = found
    return command


def cli_option(command: click.Command, name: str) -> click.Parameter:
    return next(p for p in command.params if p.name == name)


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    return TypedTools(Memory.open(make_vault(tmp_path_factory.mktemp("mcp"))))


def test_every_front_end_has_every_operation(tools):
    """Iterates the table: each operation is a CLI command, an MCP tool and an HTTP route, or the
    table says why not; what is in one front end only is the list above."""
    routes = {(op.method, op.path) for op in OPERATIONS}
    everywhere: set[tuple[str, str]] = set()
    for op in TABLE:
        if op.cli is not None:
            cli_command(op.cli)
        if op.mcp is not None:
            assert op.mcp.name in TOOLS, f"{op.name}: no MCP tool {op.mcp.name}"
            assert op.mcp.name in tools.tools or op.mcp.name in ONLY["mcp"], f"{op.name}: {op.mcp.name} not served"
        for route in op.http:
            assert (route.method, route.path) in routes, f"{op.name}: no HTTP route {route.method} {route.path}"
        if op.cli is not None and op.mcp is not None and op.http:
            everywhere.add((op.http[0].method, op.http[0].path))
    assert routes - everywhere == ONLY["http"]
    assert set(TOOLS) - {op.mcp.name for op in TABLE if op.mcp is not None and op.cli and op.http} == ONLY["mcp"]


def test_search_takes_the_same_parameters_with_the_same_limits(tools):
    cli = cli_command(("search",))
    mcp = tools.schema("search_memories")["properties"]
    http = SEARCH_PARAMS["properties"]
    assert SEARCH_FILTERS <= {p.name for p in cli.params} and SEARCH_FILTERS <= set(mcp) <= SEARCH_FILTERS | {"query"}
    assert set(http) == SEARCH_FILTERS | {"q"}
    k = cli_option(cli, "k").type
    assert (k.min, k.max) == (mcp["k"]["minimum"], mcp["k"]["maximum"]) == (http["k"]["minimum"],
                                                                            http["k"]["maximum"]) == (1, MAX_SEARCH_RESULTS)
    assert tuple(cli_option(cli, "mode").type.choices) == tuple(mcp["mode"]["enum"]) == tuple(http["mode"]["enum"]) \
        == SEARCH_MODES
    importance = cli_option(cli, "min_importance").type
    assert (importance.min, importance.max) == (mcp["min_importance"]["minimum"], mcp["min_importance"]["maximum"]) \
        == (http["min_importance"]["minimum"], http["min_importance"]["maximum"]) == (0, 1)
    # the conversations' search: the same cap
    k = cli_option(cli_command(("session", "search")), "k").type
    assert k.max == tools.schema("search_sessions")["properties"]["k"]["maximum"] \
        == SESSION_SEARCH_PARAMS["properties"]["k"]["maximum"] == MAX_SEARCH_RESULTS
    # adding: a due day and an expiry everywhere
    assert {"due", "until"} <= {p.name for p in cli_command(("add",)).params}
    assert {"due", "until"} <= set(tools.schema("add_memory")["properties"])
    assert {"due", "until"} <= set(next(op for op in OPERATIONS if op.path == "/add").body["properties"])


# ---- the operations the HTTP API gained -------------------------------------------------------------

def test_http_forget_edit_topics_show_and_recent(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0) as server:
        c = Client(server)
        status, answer = c.call("GET", "/topics")
        assert status == 200 and {t["name"] for t in answer["topics"]} == {"cooking", "health", "general"}
        status, topic = c.call("GET", "/topics/cooking")
        assert status == 200 and topic["file"] == "topics/cooking.md" and topic["split_into"] == []
        rice = next(e for e in topic["entries"] if "bomba" in e["text"])
        status, entry = c.call("POST", "/edit", {"id": rice["id"], "text": "Prefers arborio rice for paella"})
        assert status == 200 and "arborio" in entry["text"] and entry["kind"] == "preference"
        assert "bomba" in (server.api.vault.root / "archive.md").read_text()  # the old line is kept
        status, answer = c.call("POST", "/forget", {"match": "sourdough"})
        assert status == 200 and [e["topic"] for e in answer["forgotten"]] == ["cooking"]
        assert "sourdough" not in (server.api.vault.topics_dir / "cooking.md").read_text()
        assert c.call("GET", "/search?q=sourdough&mode=lexical")[1]["hits"] == []
        status, answer = c.call("POST", "/forget", {})
        assert status == 400 and "'id' or a 'match'" in answer["error"]
        assert c.call("POST", "/forget", {"id": "zzzzzzzz"})[0] == 404
        assert c.call("POST", "/edit", {"match": "nothing like it", "text": "x"})[0] == 404
        assert c.call("GET", "/topics/nowhere")[0] == 404
        assert c.call("GET", "/topics/..")[0] == 400
        status, answer = c.call("GET", "/recent")
        assert status == 200 and answer["recent"][0]["topic"] == "cooking"
        assert c.call("GET", f"/search?q=rice&k={MAX_SEARCH_RESULTS}")[0] == 200
        assert c.call("GET", f"/search?q=rice&k={MAX_SEARCH_RESULTS + 1}")[0] == 400


# ---- the tools the MCP server gained ---------------------------------------------------------------------

def test_mcp_edit_pending_done_and_add_with_dates(tools):
    entry = tools.call("add_memory", {"text": "Ask how the dentist went", "due": "2999-01-02"}).structured
    assert entry["kind"] == "pending" and "(due 2999-01-02)" in entry["text"]
    kept = tools.call("add_memory", {"text": "Parking spot is B14", "until": "2999-12-31"}).structured
    assert "(until 2999-12-31)" in kept["text"]
    with pytest.raises(MemkitError, match="in the past"):
        tools.call("add_memory", {"text": "Too late", "until": "2001-01-01"})
    with pytest.raises(MemkitError, match="due must be a date"):
        tools.call("add_memory", {"text": "When?", "due": "soon"})
    pending = tools.call("pending_follow_ups", {}).structured["pending"]
    assert entry["id"] in [p["id"] for p in pending]
    done = tools.call("mark_done", {"id": entry["id"]}).structured
    assert done["id"] == entry["id"]
    assert entry["id"] not in [p["id"] for p in tools.call("pending_follow_ups", {}).structured["pending"]]
    edited = tools.call("edit_memory", {"id": kept["id"], "text": "Parking spot is C3 (until 2999-12-31)"}).structured
    assert "C3" in edited["text"]
    hits = tools.call("search_memories", {"query": "parking", "mode": "lexical", "k": MAX_SEARCH_RESULTS}).structured
    assert [h["id"] for h in hits["hits"]] == [edited["id"]]
    tools.call("add_memory", {"text": "Parking at the gym is free (importance 0.9)"})
    hits = tools.call("search_memories", {"query": "parking", "mode": "lexical", "min_importance": 0.8}).structured
    assert len(hits["hits"]) == 1 and "gym" in hits["hits"][0]["text"]
    with pytest.raises(MemkitError, match="mode"):
        tools.call("search_memories", {"query": "parking", "mode": "fuzzy"})
    with pytest.raises(MemkitError, match="above the maximum 1000"):
        tools.call("search_memories", {"query": "parking", "k": MAX_SEARCH_RESULTS + 1})


def test_http_shows_a_topic_in_a_folder(tmp_path):
    vault = make_vault(tmp_path)
    write(vault.topics_dir / "work" / "harbor.md", "- The harbor office opens at 8 (2026-01-01)\n")
    with HTTPServer(Vault(vault.root, embedder=FakeEmbedder()), port=0) as server:
        c = Client(server)
        status, topic = c.call("GET", "/topics/work/harbor")
        assert status == 200 and topic["file"] == "topics/work/harbor.md"
        assert [e["text"] for e in topic["entries"]] == ["The harbor office opens at 8 (2026-01-01)"]
        assert c.call("GET", "/topics/work/nowhere")[0] == 404
        assert c.call("GET", "/topics/work/../cooking")[0] == 400  # a folder's name is never ".."
        assert c.call("GET", "/topics/cooking")[0] == 200
