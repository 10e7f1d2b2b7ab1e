"""The table of operations (memkit/frontends/operations.py) is the one declaration of what each
front end takes: every front end offers every operation and parameter of the table, under the
name the table gives, or the table says why not (the drift test); and the disagreements the
front ends once had are decided once (a context message's limit, search's weak hits, k)."""
from __future__ import annotations

import inspect

import click
import pytest
from click.testing import CliRunner

pytest.importorskip("mcp", reason="the MCP server needs the MCP SDK: pip install 'mcp>=2'")
pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")

from test_http_api import Client, make_vault  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.base.limits import MAX_MESSAGE_CHARS, MAX_SEARCH_RESULTS, WEAK_HITS  # noqa: E402
from memkit.errors import MemkitError  # noqa: E402
from memkit.frontends.cli.group import main  # noqa: E402
from memkit.frontends.http.api import HTTPServer  # noqa: E402
from memkit.frontends.http.routes import Api  # noqa: E402
from memkit.frontends.http.spec import OPERATIONS as ROUTES  # noqa: E402
from memkit.frontends.mcp.server import TOOL_OPERATIONS, TOOLS, Memory, TypedTools  # noqa: E402
from memkit.frontends.operations import CLI_ONLY, FRONT_ENDS, OPERATIONS, operation, schema  # noqa: E402
from memkit.search import Searcher  # noqa: E402

#: the HTTP API's routes that are no operation of the others: the server's own state
HTTP_ONLY = {("GET", "/busy"), ("GET", "/index")}


def cli_command(path: tuple[str, ...]) -> click.Command:
    ctx = click.Context(main)
    command: click.Command = main
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None, f"no CLI command {' '.join(path)}"
        command = found
    return command


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    return TypedTools(Memory.open(make_vault(tmp_path_factory.mktemp("mcp"))))


# ---- the drift test -------------------------------------------------------------------------------

def test_every_front_end_offers_every_operation_or_the_table_says_why():
    for op in OPERATIONS:
        assert op.call is not None, f"{op.name}: no handler"
        for front in FRONT_ENDS:
            offered = {"cli": op.cli, "mcp": op.mcp, "http": op.http}[front]
            assert bool(offered) != (front in op.absent), f"{op.name}: {front} neither offers it nor says why not"
            assert all(why.strip() for why in op.absent.values())
        for p in op.params:
            assert set(p.absent) <= set(FRONT_ENDS) and all(why.strip() for why in p.absent.values()), p.name
            assert set(p.overrides) <= set(FRONT_ENDS), p.name


def test_the_cli_commands_take_the_tables_parameters_and_no_other():
    for op in OPERATIONS:
        if op.cli is None:
            continue
        command = cli_command(op.cli)
        declared = [p.name for p in command.params if p.name not in CLI_ONLY]
        assert declared == [p.name_in("cli") for p in op.offered("cli")], op.name
        for param, p in zip([p for p in command.params if p.name not in CLI_ONLY], op.offered("cli")):
            kind = param.type
            if isinstance(kind, click.IntRange | click.FloatRange):
                assert (kind.min, kind.max) == (p.low, p.high), p.name
            if p.choices is not None:
                assert isinstance(kind, click.Choice) and tuple(kind.choices) == p.choices, p.name


def test_the_mcp_tools_take_the_tables_parameters_and_no_other(tools):
    assert set(TOOLS) == set(TOOL_OPERATIONS)
    for name, op in TOOL_OPERATIONS.items():
        wanted = [p.name_in("mcp") for p in op.offered("mcp")]
        assert op.mcp is not None and op.mcp.name == name
        _takes(op, "mcp", op.mcp.extra)
        if name in tools.tools:  # digest_transcript: only with an LLM
            assert list(tools.schema(name)["properties"]) == wanted


def _takes(op, front, extra):
    """The operation's handler takes every parameter ``front`` gives it (by the table's names), and
    the front end's extra arguments."""
    given = {p.name: p.default for p in op.offered(front)}
    inspect.signature(op.call).bind(None, **given, **extra)  # raises TypeError when it does not


def test_the_http_routes_take_the_tables_parameters_and_no_other():
    routes = {(r.method, r.path): r for r in ROUTES}
    in_table = {(route.method, route.path) for op in OPERATIONS for route in op.http}
    assert set(routes) - in_table == HTTP_ONLY
    for route in HTTP_ONLY:
        assert routes[route].query is routes[route].body is routes[route].params is None
    for op in OPERATIONS:
        wanted = {p.name_in("http") for p in op.offered("http")}
        for route in op.http:
            r = routes[(route.method, route.path)]
            declared = [name for part in (r.params, r.query, r.body) if part is not None for name in part["properties"]]
            assert sorted(declared) == sorted(wanted), route
            assert r.operation is op, route
            if r.route.server is not None:  # POST /index: a job of the server's own, in a thread
                handler = list(inspect.signature(getattr(Api, r.route.server)).parameters)[1:]
                assert set(handler) == set(wanted), route
            else:
                _takes(op, "http", r.route.extra)


def test_a_parameter_added_to_one_front_end_only_fails_the_drift_test(monkeypatch):
    search = cli_command(("search",))
    monkeypatch.setattr(search, "params", search.params + [click.Option(["--colour"])])
    with pytest.raises(AssertionError, match="search"):
        test_the_cli_commands_take_the_tables_parameters_and_no_other()


# ---- the disagreements, decided once --------------------------------------------------------------

def test_k_goes_to_max_search_results_everywhere(tools):
    k = operation("search").params[1]
    assert (k.name, k.high) == ("k", MAX_SEARCH_RESULTS)
    assert cli_command(("search",)).params[1].type.max == MAX_SEARCH_RESULTS
    assert tools.schema("search_memories")["properties"]["k"]["maximum"] == MAX_SEARCH_RESULTS
    assert schema("search", "http")["properties"]["k"]["maximum"] == MAX_SEARCH_RESULTS


def test_mcp_search_has_mode_and_min_importance_and_add_has_due_and_until(tools):
    hits = tools.call("search_memories", {"query": "rice", "mode": "lexical", "min_importance": 0.1}).structured
    assert hits["hits"] and all("rice" in h["text"].lower() for h in hits["hits"])
    with pytest.raises(MemkitError, match="invalid value for mode: \"both\" is not one of hybrid, vector, lexical"):
        tools.call("search_memories", {"query": "rice", "mode": "both"})
    entry = tools.call("add_memory", {"text": "Renew the parking permit", "due": "2999-01-02",
                                      "until": "2999-02-01"}).structured
    assert "(due 2999-01-02)" in entry["text"] or entry["kind"] == "pending"


def test_a_context_message_has_one_limit_the_length_the_library_keeps(tools, tmp_path):
    import memkit.context.block as block

    assert block.MAX_MESSAGE_CHARS == MAX_MESSAGE_CHARS == 2000  # what the context keeps and searches
    assert tools.schema("get_context")["properties"]["message"]["maxLength"] == MAX_MESSAGE_CHARS
    assert tools.call("get_context", {"message": "x" * MAX_MESSAGE_CHARS}).structured is not None
    with pytest.raises(MemkitError, match="invalid value for message: 2,001 characters, the limit is 2,000"):
        tools.call("get_context", {"message": "x" * (MAX_MESSAGE_CHARS + 1)})
    with HTTPServer(make_vault(tmp_path), port=0) as server:
        status, answer = Client(server).call("POST", "/context", {"message": "x" * (MAX_MESSAGE_CHARS + 1)})
        assert status == 400 and answer["error"] == "invalid field message: 2,001 characters, the limit is 2,000"


def test_search_shows_the_same_weak_hits_from_the_library_and_the_searcher():
    assert inspect.signature(Vault.search).parameters["weak"].default == WEAK_HITS == 3
    assert inspect.signature(Searcher.search).parameters["weak"].default == WEAK_HITS


# ---- what one front end lacked, now offered by all ----------------------------------------------------

def test_the_parameters_the_mcp_server_and_the_cli_gained(tools, tmp_path):
    started = tools.call("start_session", {"session": "chat1", "user": "ana", "tags": ["trip"],
                                           "metadata": {"channel": "voice"}}).structured
    assert (started["user"], started["tags"], started["metadata"]) == ("ana", ["trip"], {"channel": "voice"})
    saved = tools.call("save_message", {"session": "chat1", "role": "tool", "content": "42 degrees",
                                        "name": "weather", "time": "2026-03-01T18:30:00Z"}).structured
    assert saved["name"] == "weather" and saved["time"].startswith("2026-03-01T18:30")
    tools.call("start_session", {"session": "chat2"})
    assert len(tools.call("list_sessions", {"limit": 1}).structured["sessions"]) == 1
    assert tools.call("search_sessions", {"query": "degrees", "role": "user"}).structured["hits"] == []
    assert tools.call("search_sessions", {"query": "degrees", "role": "tool"}).structured["hits"]
    assert tools.call("get_context", {"message": "rice", "session": "k", "reset": True}).structured is not None

    vault = make_vault(tmp_path)
    runner = CliRunner()
    entry = vault.add("Call the plumber", topic="home", due=None, kind="pending")
    vault.add("Call the plumber", topic="general", kind="pending")
    result = runner.invoke(main, ["--vault", str(vault.root), "done", "--match", "plumber", "--topic", "home"])
    assert result.exit_code == 0, result.output
    assert entry.id in result.output
    result = runner.invoke(main, ["--vault", str(vault.root), "context", "hi", "--budget", "100001"])
    assert result.exit_code == 2 and "100001" in result.output
