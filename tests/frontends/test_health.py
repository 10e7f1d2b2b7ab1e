"""`memkit serve`'s GET /health (issue 44.5): for a supervisor, under the API's Host, token and Origin rules."""
from __future__ import annotations

import http.client
import json

from memkit import Vault
from memkit.frontends.http import HTTPServer

WAIT_S = 60


def get(server: HTTPServer, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    con = http.client.HTTPConnection(*server.socket.getsockname()[:2], timeout=WAIT_S)
    con.request("GET", path, headers=headers or {})
    resp = con.getresponse()
    answer = json.loads(resp.read())
    con.close()
    return resp.status, answer


def test_health_says_ok_the_vault_and_the_index(tmp_path):
    vault = Vault.init(tmp_path / "v", profile=False)
    vault.add("Prefers bomba rice for paella", topic="cooking")
    with HTTPServer(Vault(vault.root), port=0) as server:
        status, answer = get(server, "/health")
        assert status == 200
        assert answer["ok"] is True and answer["vault"] == str(vault.root)
        assert answer["index"]["stale_files"] == 0 and answer["index"]["job"]["running"] is False
        assert get(server, "/health", {"Origin": "http://evil.example"})[0] == 403
        assert get(server, "/health", {"Host": "evil.example"})[0] == 400
    with HTTPServer(Vault(vault.root), port=0, token="s3cret") as server:
        assert get(server, "/health")[0] == 401
        assert get(server, "/health", {"Authorization": "Bearer s3cret"})[0] == 200
