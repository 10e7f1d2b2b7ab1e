"""Sessions that import, save, search and age without copies, silent drops or leftovers."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from memkit import Vault
from memkit.http_api import HTTPServer
from util import FakeEmbedder

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def v(tmp_path: Path) -> Vault:
    return Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())


# ---- item 9: session search after a session's first message ----------------------------------------

def test_searching_sessions_before_and_after_the_first_message(v: Vault) -> None:
    v.create_session(session_id="a")
    assert v.search_sessions("hello") == []
    v.save_message("a", "user", "hello world")
    assert [h.text for h in v.search_sessions("hello")] == ["hello world"]
    v.save_message("a", "assistant", "hello again")
    assert {h.text for h in v.search_sessions("hello")} == {"hello world", "hello again"}


def test_the_http_search_route_survives_the_first_message(v: Vault) -> None:
    import http.client

    with HTTPServer(v, port=0) as server:
        host, port = server.socket.getsockname()[:2]

        def call(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
            con = http.client.HTTPConnection(host, port, timeout=60)
            con.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                        headers={"Content-Type": "application/json"} if body is not None else {})
            resp = con.getresponse()
            answer = json.loads(resp.read())
            con.close()
            return resp.status, answer

        assert call("POST", "/sessions", {"session": "a"})[0] == 201
        assert call("GET", "/sessions/search?q=hello") == (200, {"hits": []})
        assert call("POST", "/sessions/a/messages", {"role": "user", "content": "hello world"})[0] == 201
        for _ in range(2):  # and again: the process is not left broken
            status, found = call("GET", "/sessions/search?q=hello")
            assert status == 200 and [h["text"] for h in found["hits"]] == ["hello world"]


# ---- item 10: ids ------------------------------------------------------------------------------------

def http_call(server: HTTPServer, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    import http.client

    host, port = server.socket.getsockname()[:2]
    con = http.client.HTTPConnection(host, port, timeout=60)
    con.request(method, path, body=json.dumps(body).encode() if body is not None else None,
                headers={"Content-Type": "application/json"} if body is not None else {})
    resp = con.getresponse()
    answer = json.loads(resp.read())
    con.close()
    return resp.status, answer


def cli(v: Vault, *args: str):
    from click.testing import CliRunner

    from memkit.cli import main
    return CliRunner().invoke(main, ["--vault", str(v.root), *args], obj={"vault_obj": v})


def test_an_id_another_id_starts_with_is_free(v: Vault) -> None:
    v.create_session(session_id="imp2", now=T0)
    assert v.create_session(session_id="imp", now=T0).id == "imp"  # library
    for sid in ("cli2", "web2", "doc2"):
        v.create_session(session_id=sid, now=T0)
    result = cli(v, "session", "new", "--id", "cli")
    assert result.exit_code == 0, result.output
    result = cli(v, "session", "new", "--id", "cli")
    assert result.exit_code == 1 and "exists already" in result.output  # the same id is still taken
    data = json.dumps([{"role": "user", "content": "imported", "time": "2026-03-01T09:05:00Z"}]).encode()
    (imported,) = v.import_sessions(data, session_id="doc")
    assert imported.created and imported.session.id == "doc" and v.session("doc2").messages == []
    with HTTPServer(v, port=0) as server:
        status, answer = http_call(server, "POST", "/sessions", {"session": "web"})
        assert status == 201 and answer["id"] == "web", answer
        assert http_call(server, "POST", "/sessions", {"session": "web"})[0] == 409


def test_an_id_ending_in_md_is_refused_everywhere(v: Vault) -> None:
    from memkit import InvalidValue

    with pytest.raises(InvalidValue, match="must not end in '.md'"):
        v.create_session(session_id="x.md")
    result = cli(v, "session", "new", "--id", "x.md")
    assert result.exit_code != 0 and "must not end in '.md'" in result.output
    with pytest.raises(InvalidValue, match="must not end in '.md'"):
        v.import_sessions(b'[{"role": "user", "content": "hi"}]', session_id="x.md")
    with HTTPServer(v, port=0) as server:
        status, answer = http_call(server, "POST", "/sessions", {"session": "x.md"})
        assert status == 400 and "must not end in '.md'" in answer["error"]
    assert not (v.root / "sessions").exists() or list((v.root / "sessions").glob("*.md")) == []
    v.create_session(session_id="v1.0", now=T0)  # a dot elsewhere is fine, and reachable
    v.save_message("v1.0", "user", "hi", now=at(1))
    assert [m.content for m in v.session("v1.0").messages] == ["hi"]
