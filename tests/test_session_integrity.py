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
