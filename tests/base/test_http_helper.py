"""One HTTP helper (memkit.base.http) for the LLM client and the embedding server's client: the
same proxy rule for every loopback address (issue 28: 127.0.0.2 went through a proxy for
embeddings but not for the LLM), and one is_loopback for the HTTP API's checks too."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memkit.base.http import handlers_for, is_loopback
from memkit.config import EmbedderSettings, LLMSettings
from memkit.embeddings import HTTPEmbedder
from memkit.llm.client import HTTPChatLLM


@pytest.mark.parametrize("host, loopback", [
    ("localhost", True), ("LOCALHOST", True), ("api.localhost", True), ("127.0.0.1", True), ("127.0.0.2", True),
    ("127.255.255.254", True), ("::1", True), ("[::1]", True), ("10.0.0.1", False), ("example.com", False),
    ("localhost.example.com", False), ("", False), ("128.0.0.1", False),
])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


def test_a_loopback_url_gets_no_proxy_and_another_the_environment_s():
    assert handlers_for("http://127.0.0.2:9/v1") and handlers_for("http://[::1]:9/v1")
    assert handlers_for("https://api.example.com/v1") == []


class _Server:
    """A loopback HTTP server on ``host`` answering every POST with ``answer`` (200), recording paths."""

    def __init__(self, host: str, answer: dict | None, status: int = 200) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.paths.append(self.path)
                raw = json.dumps(answer or {"error": "proxy"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def proxied(monkeypatch):
    """A proxy in the environment (it answers 502 to whatever reaches it) and no no_proxy."""
    proxy = _Server("127.0.0.1", None, status=502)
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, proxy.url)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    yield proxy
    proxy.close()


def test_127_0_0_2_is_reached_directly_by_both_clients_with_a_proxy_set(proxied):
    try:
        target = _Server("127.0.0.2", {"choices": [{"message": {"content": "hi"}}],
                                       "data": [{"index": 0, "embedding": [0.6, 0.8]}]})
    except OSError:
        pytest.skip("127.0.0.2 cannot be bound here")
    try:
        llm = HTTPChatLLM(LLMSettings(base_url=target.url + "/v1", model="m", timeout_s=5))
        assert llm.chat([{"role": "user", "content": "hello"}]) == "hi"
        embedder = HTTPEmbedder(EmbedderSettings(base_url=target.url + "/v1", model="e", timeout_s=5))
        assert embedder.embed(["hello"]).shape == (1, 2)
        assert target.paths == ["/v1/chat/completions", "/v1/embeddings"]
        assert proxied.paths == []  # neither went through the proxy
    finally:
        target.close()
