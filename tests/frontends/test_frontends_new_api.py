"""Issue 28 (the house): the front ends call ``vault.conversations.<verb>`` and the long-running
front ends' hooks through ``vault.frontend_internals``: the CLI's, the MCP tools' and the HTTP
routes' session operations run with DeprecationWarning an error."""
from __future__ import annotations

import warnings

import pytest
from util import FakeEmbedder, vault_with

from memkit.frontends.cli.group import main

TOPICS = {"cooking": "- [preference] Prefers bomba rice for paella #rice (2026-01-01)\n"}


@pytest.fixture
def strict():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        yield


def test_the_cli_session_commands_warn_nothing(tmp_path, runner, strict, monkeypatch):
    root = vault_with(tmp_path, TOPICS).root
    monkeypatch.setenv("MEMKIT_VAULT", str(root))
    (tmp_path / "chat.jsonl").write_text('{"role": "user", "content": "Book the tram to Belem"}\n')
    for args in (["session", "new", "--id", "trip", "--title", "Lisbon"],
                 ["session", "add", "trip", "user", "Book the tram to Belem"],
                 ["session", "list"], ["session", "show", "trip"], ["session", "show", "trip", "--raw"],
                 ["session", "load", "trip", "--tokens", "100"],
                 ["session", "search", "tram"], ["search", "--sessions", "tram"],
                 ["session", "export", "trip"], ["session", "import", "chat.jsonl", "--id", "copy"],
                 ["session", "prune", "--dry-run"], ["session", "delete", "copy"], ["stats"]):
        result = runner.invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
    result = runner.invoke(main, ["session", "digest", "trip"], catch_exceptions=False)
    assert result.exit_code == 1 and "digest needs an LLM" in result.output  # no DeprecationWarning raised


def test_the_mcp_session_tools_warn_nothing(tmp_path, strict):
    pytest.importorskip("mcp")
    from memkit.frontends.mcp.server import Memory, TypedTools

    tools = TypedTools(Memory.open(vault_with(tmp_path, TOPICS)))
    for tool, arguments in (("start_session", {"session": "trip", "title": "Lisbon"}),
                            ("save_message", {"session": "trip", "role": "user", "content": "Book the tram"}),
                            ("list_sessions", {}), ("load_session", {"session": "trip"}),
                            ("search_sessions", {"query": "tram"})):
        assert tools.call(tool, arguments).text, tool


def test_the_http_routes_warn_nothing(tmp_path, strict):
    pytest.importorskip("starlette")
    from memkit.frontends.http.routes import Api
    from memkit.frontends.http.spec import OPERATIONS, check

    api = Api(vault_with(tmp_path, TOPICS, FakeEmbedder()))
    routes = {r.handler: r for r in OPERATIONS}

    def do(handler, session=None, **fields):
        route = routes[handler]
        args = check(route.params, {"session": session}) if route.params is not None else {}
        if route.params is None and session is not None:
            fields["session"] = session  # POST /sessions: a field of its body
        return api.do(route, args | check(route.query or route.body, fields))

    do("start_session", session="trip", title="Lisbon")
    do("save_message", "trip", role="user", content="Book the tram to Belem")
    assert [s["id"] for s in do("list_sessions")["sessions"]] == ["trip"]
    assert do("load_session", "trip", max_tokens=100)["messages"][-1]["content"] == "Book the tram to Belem"
    assert do("keep_window", "trip", max_tokens=100)["session"] == "trip"
    assert do("search_sessions", q="tram", k=3)["hits"][0]["session"] == "trip"
    assert api.index_status()["model"] == "fake-bow" and api.busy()["write_lock"] is False
    api.warm_up()
    if api._judge_thread is not None:
        api._judge_thread.join(30)
