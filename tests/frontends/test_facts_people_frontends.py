"""Keyed facts (`memkit set/get`, set_fact/get_fact, POST/GET /facts), people.md (`memkit people`,
list_people/add_person, /people) and the search filters person (--with), relation and where, on
every front end (issue 30, items 1 and 2)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytest.importorskip("mcp", reason="the MCP server needs the MCP SDK: pip install 'mcp>=2'")
pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")

from test_http_api import Client  # noqa: E402
from util import FakeEmbedder, write  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.errors import MemkitError  # noqa: E402
from memkit.frontends.cli.group import main  # noqa: E402
from memkit.frontends.http.api import HTTPServer  # noqa: E402
from memkit.frontends.mcp.server import Memory, TypedTools  # noqa: E402

PEOPLE = "# People\n\n- Maya (self)\n- Ana (family: sister): lives in Porto\n- Tom Reyes (colleague)\n"
TOPICS = {
    "weekend": "- Climbing with @Ana on saturday mornings (2026-03-01)\n"
               "- Planning the Porto trip together (people: Maya, Ana) (city: Porto) (2026-03-02)\n"
               "- Code review of the billing service with @TomReyes (2026-03-03)\n"
               "- Prefers climbing indoors when it rains (2026-03-04)\n",
}


def make_vault(tmp_path) -> Vault:
    vault = Vault.init(tmp_path / "v", profile=False)
    write(vault.root / "people.md", PEOPLE)
    for name, text in TOPICS.items():
        write(vault.topics_dir / f"{name}.md", text)
    return Vault(vault.root, embedder=FakeEmbedder())


def texts(hits) -> set[str]:
    return {h["text"].split(" (")[0] for h in hits}


ANA = {"Climbing with @Ana on saturday mornings", "Planning the Porto trip together"}
MAYA = {"Planning the Porto trip together", "Prefers climbing indoors when it rains"}


def run(vault: Vault, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), obj={"vault_obj": vault})
    return result.exit_code, result.output


def test_cli_set_get_history_and_json(tmp_path):
    vault = make_vault(tmp_path)
    assert run(vault, "set", "city", "Lisbon") == (0, "city: Lisbon\n")
    assert run(vault, "set", "city", "Porto") == (0, "city: Porto (was Lisbon; kept in archive.md)\n")
    assert run(vault, "set", "city", "Porto") == (0, "city is Porto already\n")
    assert run(vault, "get", "city") == (0, "Porto\n")
    code, out = run(vault, "get", "city", "--history", "--json")
    data = json.loads(out)
    assert code == 0 and (data["value"], [h["value"] for h in data["history"]]) == ("Porto", ["Lisbon", "Porto"])
    code, out = run(vault, "get", "--json")
    assert [f["key"] for f in json.loads(out)["facts"]] == ["city"]
    code, out = run(vault, "get", "wifi")
    assert code == 1 and "no value is set for 'wifi'" in out
    code, out = run(vault, "set", "due", "x")
    assert code == 2 and "one of memkit's own markers" in out
    assert "city: Lisbon" in (vault.root / "archive.md").read_text()
    code, out = run(vault, "set", "wifi", "password: ghp_" + "a1B2c3D4e5" * 4)
    assert (code, out) == (0, "wifi: password: [redacted] (1 secret redacted)\n")


def test_cli_people_list_add_and_search_filters(tmp_path):
    vault = make_vault(tmp_path)
    code, out = run(vault, "people")
    assert code == 0 and out.splitlines() == ["Maya (self)", "Ana (family: sister): lives in Porto",
                                              "Tom Reyes (colleague)"]
    code, out = run(vault, "people", "add", "Bea", "--relation", "Friend", "--about", "neighbour")
    assert code == 0 and out == "added to people.md: Bea (friend): neighbour\n"
    assert (vault.root / "people.md").read_text() == PEOPLE + "- Bea (friend): neighbour\n"
    assert json.loads(run(vault, "people", "--json")[1])["people"][3]["relation"] == "friend"
    code, out = run(vault, "people", "add", "ana")
    assert code == 2 and "in people.md already" in out

    def found(*args: str) -> set[str]:
        code, out = run(vault, "search", "climbing trip review rain", "--all", "-k", "10", "--json", *args)
        assert code == 0, out
        return texts(json.loads(out))

    assert found("--with", "Ana") == ANA == found("--with", "@ana")
    assert found("--with", "Maya") == MAYA == found("--with", "me")  # bidirectional: the trip from both sides
    assert found("--relation", "family") == ANA
    assert found("--relation", "colleague") == {"Code review of the billing service with @TomReyes"}
    assert found("--where", "city=porto") == {"Planning the Porto trip together"}
    assert found("--where", "city=Porto", "--with", "Tom Reyes") == set()
    code, out = run(vault, "search", "x", "--where", "city")
    assert code == 2 and "KEY=VALUE" in out


def test_mcp_tools_set_get_people_and_filters(tmp_path):
    tools = TypedTools(Memory.open(make_vault(tmp_path)))
    assert tools.call("set_fact", {"key": "wifi", "value": "CasaMaya"}).structured["old"] is None
    assert tools.call("set_fact", {"key": "wifi", "value": "Casa 5G"}).structured["old"] == "CasaMaya"
    got = tools.call("get_fact", {"key": "wifi", "history": True}).structured
    assert got["value"] == "Casa 5G" and [h["live"] for h in got["history"]] == [False, True]
    assert tools.call("get_fact", {}).structured["facts"][0]["key"] == "wifi"
    with pytest.raises(MemkitError, match="no value is set for 'city'"):
        tools.call("get_fact", {"key": "city"})
    assert [p["name"] for p in tools.call("list_people", {}).structured["people"]] == ["Maya", "Ana", "Tom Reyes"]
    assert tools.call("add_person", {"name": "Bea", "relation": "friend"}).structured["line"] == 6
    hits = tools.call("search_memories", {"query": "climbing trip review rain", "person": "Ana", "k": 10}).structured
    assert texts(hits["hits"]) <= ANA and hits["hits"]
    hits = tools.call("search_memories", {"query": "trip", "where": ["city=Porto"], "k": 10}).structured["hits"]
    assert texts(hits) == {"Planning the Porto trip together"}


def test_http_routes_facts_people_and_filters(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0) as server:
        client = Client(server)
        status, answer = client.call("POST", "/facts", {"key": "city", "value": "Lisbon"})
        assert status == 200 and answer["changed"] is True
        client.call("POST", "/facts", {"key": "city", "value": "Porto"})
        status, answer = client.call("GET", "/facts?key=city&history=true")
        assert status == 200 and [h["value"] for h in answer["history"]] == ["Lisbon", "Porto"]
        status, answer = client.call("GET", "/facts")
        assert status == 200 and answer["facts"] == [{"key": "city", "value": "Porto", "day": answer["facts"][0]["day"]}]
        status, answer = client.call("GET", "/facts?key=wifi")
        assert status == 404 and "no value is set for 'wifi'" in answer["error"]
        status, answer = client.call("POST", "/facts", {"key": "City!", "value": "x"})
        assert status == 400 and "invalid key" in answer["error"]
        status, answer = client.call("GET", "/people")
        assert status == 200 and answer["people"][1] == {"name": "Ana", "relation": "family", "detail": "sister",
                                                         "about": "lives in Porto", "line": 4}
        status, answer = client.call("POST", "/people", {"name": "Bea", "relation": "friend"})
        assert status == 201 and answer["name"] == "Bea"
        status, answer = client.call("GET", "/search?q=climbing+trip+review+rain&k=10&relation=family")
        assert status == 200 and texts(answer["hits"]) <= ANA and answer["hits"]
        status, answer = client.call("GET", "/search?q=trip&k=10&where=city%3DPorto&where=city%3Dporto")
        assert status == 200 and texts(answer["hits"]) == {"Planning the Porto trip together"}
