"""`memkit serve` against hostile peers: a web page of another site the person visits, clients too
slow or idle, settings that cannot work. A real uvicorn server on 127.0.0.1, raw sockets and
http.client; the vault's files are compared byte for byte and the fake LLM counts its calls.

Nothing asserts on speed: a slow peer must be cut within its configured bound (1 s here) plus a
generous slack, and a socket read that waits longer fails the test instead of hanging it.
"""
from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")
pytest.importorskip("uvicorn", reason="memkit serve needs uvicorn: pip install 'mcp>=2'")

from fake_llm import FakeLLM  # noqa: E402
from util import FakeEmbedder, wait_until, write  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.errors import MemkitError  # noqa: E402
from memkit.frontends.cli.group import main  # noqa: E402
from memkit.frontends.http.api import HTTPServer, origin_allowed  # noqa: E402
from memkit.frontends.http.spec import OPERATIONS  # noqa: E402

SLACK_S = 15.0  #: a cut due after 1 s must have come by then (a loaded machine included)
WAIT_S = 60.0

TOPICS = {
    "cooking": "- [preference] Prefers bomba rice for paella #rice (2026-01-01)\n",
    "general": "- [pending] Ask how the knee physio went (due 2026-01-05) (2026-01-01)\n",
}

#: one request per route, as a program would send it: (path and query, JSON body)
SAMPLES: dict[tuple[str, str], tuple[str, dict | None]] = {
    ("GET", "/search"): ("/search?q=rice", None),
    ("POST", "/add"): ("/add", {"text": "A page wrote this"}),
    ("POST", "/context"): ("/context", {"message": "rice?", "session": "page"}),
    ("POST", "/forget"): ("/forget", {"match": "bomba"}),
    ("POST", "/edit"): ("/edit", {"match": "bomba", "text": "A page changed this"}),
    ("GET", "/topics"): ("/topics", None),
    ("GET", "/topics/{topic}"): ("/topics/cooking", None),
    ("GET", "/why/{id}"): ("/why/abcd1234", None),
    ("GET", "/history/{id}"): ("/history/abcd1234", None),
    ("GET", "/related"): ("/related?ref=cooking", None),
    ("GET", "/recent"): ("/recent", None),
    ("GET", "/pending"): ("/pending", None),
    ("POST", "/pending/done"): ("/pending/done", {"match": "knee"}),
    ("GET", "/proactive"): ("/proactive?now=2026-01-06T12:00:00", None),
    ("GET", "/stats"): ("/stats", None),
    ("GET", "/busy"): ("/busy", None),
    ("GET", "/index"): ("/index", None),
    ("POST", "/index"): ("/index", {"full": True}),
    ("GET", "/sessions"): ("/sessions", None),
    ("POST", "/sessions"): ("/sessions", {"session": "page"}),
    ("GET", "/sessions/search"): ("/sessions/search?q=rice", None),
    ("GET", "/sessions/{session}"): ("/sessions/chat?strategy=summary&max_tokens=100", None),
    ("POST", "/sessions/{session}/window"): ("/sessions/chat/window", {"strategy": "summary", "max_tokens": 100}),
    ("POST", "/sessions/{session}/messages"): ("/sessions/chat/messages", {"role": "user", "content": "from a page"}),
    ("POST", "/upkeep"): ("/upkeep", {}),
    ("POST", "/facts"): ("/facts", {"key": "city", "value": "Evil"}),
    ("GET", "/facts"): ("/facts", None),
    ("GET", "/people"): ("/people", None),
    ("POST", "/people"): ("/people", {"name": "Mallory", "relation": "friend"}),
}
#: what a form or a page's fetch() can send to another site without the browser asking first
SIMPLE_TYPES = [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]


def make_vault(tmp_path: Path, llm_url: str | None = None) -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    for name, text in TOPICS.items():
        write(root / "topics" / f"{name}.md", text)
    if llm_url:
        (root / "memkit.yaml").write_text(f"llm: {{base_url: '{llm_url}', model: fake}}\n")
    vault = Vault(root, embedder=FakeEmbedder())
    vault.conversations.new(session_id="chat", title="Chat")
    for i in range(12):
        vault.conversations.append("chat", "user" if i % 2 == 0 else "assistant",
                           f"Message {i} about rice, paella and the best pans for it, at some length.")
    return vault


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the vault (derived data included) and its bytes."""
    # the judge's vectors are a cache the server fills in a thread of its own after its start
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith(".memkit/judge/")}


def call(server: HTTPServer, method: str, path: str, raw: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict]:
    con = http.client.HTTPConnection(*server.socket.getsockname()[:2], timeout=WAIT_S)
    con.request(method, path, body=raw, headers=headers or {})
    resp = con.getresponse()
    data = resp.read()
    con.close()
    return resp.status, json.loads(data) if data else {}


def json_call(server: HTTPServer, method: str, path: str, body: dict | None = None, **headers: str) -> tuple[int, dict]:
    return call(server, method, path, json.dumps(body).encode() if body is not None else None,
                {"Content-Type": "application/json", **headers})


@pytest.fixture(scope="module")
def llm():
    with FakeLLM(lambda request: "They talked about rice and pans.") as fake:
        yield fake


@pytest.fixture
def hostile(tmp_path, llm):
    with HTTPServer(make_vault(tmp_path, llm.base_url), port=0) as server:
        llm.requests.clear()
        yield server


def test_every_route_is_in_the_samples():
    assert set(SAMPLES) == {(op.method, op.path) for op in OPERATIONS}


# ---- 1. a web page of another site changes nothing and calls no LLM ---------------------------------------

def test_a_foreign_origin_changes_nothing_on_any_route_with_any_content_type(hostile, llm):
    port = hostile.socket.getsockname()[1]
    foreign = ["http://evil.example", "null", f"http://127.0.0.1:{port + 1 if port < 65535 else 1}",
               f"https://localhost:{port}"]
    before = snapshot(hostile.api.vault.root)
    for (method, _), (path, body) in SAMPLES.items():
        raw = json.dumps(body).encode() if body is not None else None
        for ctype in SIMPLE_TYPES + ["application/json"]:
            for origin in foreign:
                headers = {"Origin": origin, **({"Content-Type": ctype} if ctype else {})}
                status, answer = call(hostile, method, path, raw, headers)
                assert status == 403, (method, path, ctype, origin, answer)
                assert answer["status"] == 403 and "another site" in answer["error"]
        # an <img> or a link: no Origin, but the browser says where the request comes from
        for site in ("cross-site", "same-site"):
            status, answer = call(hostile, method, path, raw, {"Sec-Fetch-Site": site})
            assert status == 403 and "another site" in answer["error"], (method, path, site)
    assert snapshot(hostile.api.vault.root) == before
    assert llm.requests == [] and hostile.api.busy()["jobs"] == []


def test_every_state_changing_route_needs_the_json_content_type(hostile, llm):
    """Without an Origin (an old browser, a form): the types a form can send, or none, are refused
    (415) on every route that is not a GET, an empty body included (POST /upkeep, POST /index)."""
    before = snapshot(hostile.api.vault.root)
    for (method, _), (path, body) in SAMPLES.items():
        if method == "GET":
            continue
        for raw in (json.dumps(body).encode(), b""):
            for ctype in SIMPLE_TYPES:
                status, answer = call(hostile, method, path, raw, {"Content-Type": ctype} if ctype else {})
                assert status == 415 and "application/json" in answer["error"], (method, path, ctype, answer)
    assert snapshot(hostile.api.vault.root) == before
    assert llm.requests == []
    assert json_call(hostile, "POST", "/upkeep")[0] == 200  # the JSON type with no body at all is fine


def test_the_servers_own_origin_and_a_program_are_served(hostile):
    port = hostile.socket.getsockname()[1]
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"):
        status, entry = json_call(hostile, "POST", "/add", {"text": f"From {origin}"}, Origin=origin)
        assert status == 201, entry
    assert json_call(hostile, "GET", "/stats", **{"Sec-Fetch-Site": "same-origin"})[0] == 200
    assert json_call(hostile, "GET", "/stats", **{"Sec-Fetch-Site": "none"})[0] == 200  # typed in the address bar
    assert origin_allowed("http://127.0.0.1:8765", None) and not origin_allowed("http://evil.example:8765", None)
    assert all(origin_allowed(f"http://{host}:8765", 8765) for host in ("127.0.0.2", "[::1]", "app.localhost"))
    assert not any(origin_allowed(f"http://{host}:8765", 8765) for host in ("localhost.evil.example", "[::2]"))
    assert not origin_allowed("http://127.0.0.1:8766", 8765) and not origin_allowed("http://127.0.0.1:x", 8765)


def test_a_get_computes_a_summary_but_writes_nothing_a_post_caches_it(hostile, llm):
    session_file = next((hostile.api.vault.root / "sessions").glob("*chat*.md"))
    before = session_file.read_bytes()
    status, window = json_call(hostile, "GET", "/sessions/chat?strategy=summary&max_tokens=100")
    assert status == 200 and window["summarised"] > 0 and not window["summary_cached"]
    assert len(llm.requests) == 1 and session_file.read_bytes() == before
    status, window = json_call(hostile, "POST", "/sessions/chat/window", {"strategy": "summary", "max_tokens": 100})
    assert status == 200 and window["summarised"] > 0 and len(llm.requests) == 2
    assert session_file.read_bytes() != before  # the summary is cached in the file
    status, window = json_call(hostile, "GET", "/sessions/chat?strategy=summary&max_tokens=100")
    assert status == 200 and window["summary_cached"] and len(llm.requests) == 2  # no LLM call


def test_mcp_on_http_refuses_a_foreign_origin_too(tmp_path):
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    with HTTPServer(make_vault(tmp_path), port=0, mcp=True) as server:
        before = snapshot(server.api.vault.root)
        call_ = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                 "params": {"name": "add_memory", "arguments": {"text": "A page wrote this over MCP"}}}
        for ctype in SIMPLE_TYPES + ["application/json"]:
            status, answer = call(server, "POST", "/mcp", json.dumps(call_).encode(),
                                  {"Origin": "http://evil.example", "Accept": "application/json, text/event-stream",
                                   **({"Content-Type": ctype} if ctype else {})})
            assert status == 403 and "another site" in answer["error"], (ctype, answer)
        assert snapshot(server.api.vault.root) == before


# ---- 2. slow and idle peers are cut within the configured bounds ----------------------------------------

def connect(server: HTTPServer) -> socket.socket:
    host, port = server.socket.getsockname()[:2]
    sock = socket.create_connection(("127.0.0.1" if host == "0.0.0.0" else host, port), timeout=SLACK_S)
    return sock


def cut(sock: socket.socket) -> bytes:
    """Read until the server closes the connection (what it sent first, if anything); a read that
    waits SLACK_S fails the test."""
    data = b""
    with sock:
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
        except TimeoutError:
            pytest.fail(f"the connection was still open after {SLACK_S} s (got {data[:80]!r})")
    return data


@pytest.fixture
def bounded(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0, header_timeout_s=1, body_timeout_s=1, max_connections=50) as server:
        yield server


def test_an_idle_connection_is_cut(bounded):
    assert cut(connect(bounded)) == b""


def test_half_a_header_is_cut(bounded):
    sock = connect(bounded)
    sock.sendall(b"GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert cut(sock) == b""


def test_a_header_sent_a_byte_at_a_time_is_cut(bounded):
    """The bound is on the whole header, not on each piece of it."""
    sock = connect(bounded)
    sock.settimeout(0.1)
    sock.sendall(b"GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ")
    for _ in range(int(SLACK_S / 0.1)):
        try:
            sock.sendall(b"a")
            if sock.recv(1) == b"":
                break
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
    else:
        pytest.fail(f"a header dripping for {SLACK_S} s was not cut")
    sock.close()


def test_a_slow_body_is_cut(bounded):
    sock = connect(bounded)
    sock.sendall(b"POST /add HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"text\": ")
    assert b"201" not in cut(sock)
    assert "A page wrote this" not in (bounded.api.vault.topics_dir / "general.md").read_text()


def test_a_kept_alive_connection_that_goes_idle_is_cut(bounded):
    sock = connect(bounded)
    sock.sendall(b"GET /busy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert cut(sock).startswith(b"HTTP/1.1 200")


def test_off_loopback_the_same_bounds_hold(tmp_path):
    with HTTPServer(make_vault(tmp_path), host="0.0.0.0", port=0, token="s3cret", header_timeout_s=1) as server:
        assert cut(connect(server)) == b""
        sock = connect(server)
        sock.sendall(b"GET /busy HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        assert cut(sock) == b""


def test_connections_over_the_cap_are_refused_at_once(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0, header_timeout_s=1, max_connections=3) as server:
        idle = [connect(server) for _ in range(3)]
        assert wait_until(lambda: len(server.server.server_state.connections) == 3, WAIT_S)
        answer = cut(connect(server))
        assert answer.startswith(b"HTTP/1.1 503") and b"limit" in answer
        for sock in idle:  # the idle ones are cut by the header timeout, and room comes back
            assert cut(sock) == b""
        assert wait_until(lambda: json_call(server, "GET", "/busy")[0] == 200, WAIT_S)


def test_a_slow_large_body_holds_no_other_client(tmp_path):
    """A client sending a session message of megabytes slowly does not make another client's large
    message wait (they took turns: the second waited for the first to finish or be cut)."""
    with HTTPServer(make_vault(tmp_path), port=0, header_timeout_s=30, body_timeout_s=30) as server:
        slow = connect(server)
        slow.sendall(b"POST /sessions/chat/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 900000\r\n\r\n{\"role\": \"user\", \"content\": \"" + b"x" * 1000)
        con = http.client.HTTPConnection(*server.socket.getsockname()[:2], timeout=20)
        body = json.dumps({"role": "user", "content": "y" * 600_000}).encode()
        con.request("POST", "/sessions/chat/messages", body=body, headers={"Content-Type": "application/json"})
        resp = con.getresponse()
        assert resp.status == 201, resp.read()[:200]
        con.close()
        slow.setblocking(False)
        with pytest.raises(BlockingIOError):  # the slow one is still being received: neither cut nor answered
            slow.recv(1)
        slow.close()


# ---- 4. a token no client can send ---------------------------------------------------------------------

@pytest.mark.parametrize("token", ["   ", "\t", " \n "])
def test_a_whitespace_token_is_refused_at_start(tmp_path, token):
    vault = make_vault(tmp_path)
    for host in ("127.0.0.1", "0.0.0.0"):
        with pytest.raises(MemkitError, match="only whitespace"):
            HTTPServer(vault, host=host, port=0, token=token)
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve", "--port", "0", "--token", token])
    assert result.exit_code == 1 and "only whitespace" in result.output
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve", "--port", "0"], env={"MEMKIT_TOKEN": token})
    assert result.exit_code == 1 and "only whitespace" in result.output


def test_a_token_with_blanks_around_it_works_without_them(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0, token=" s3cret \n") as server:
        assert call(server, "GET", "/busy", headers={"Authorization": "Bearer s3cret"})[0] == 200
        assert call(server, "GET", "/busy")[0] == 401


def test_the_bounds_come_from_memkit_yaml_and_bad_ones_are_named(tmp_path):
    vault = make_vault(tmp_path)
    (vault.root / "memkit.yaml").write_text("serve: {header_timeout_s: 2, body_timeout_s: 3.5, max_connections: 7}\n")
    server = HTTPServer(Vault(vault.root, embedder=FakeEmbedder()), port=0)
    try:
        assert (server.bounds.header_timeout_s, server.bounds.body_timeout_s, server.bounds.max_connections) == (2, 3.5, 7)
    finally:
        server.close()
    for bad, message in (("header_timeout_s: 0", "serve.header_timeout_s must be a number of seconds"),
                         ("body_timeout_s: soon", "serve.body_timeout_s must be a number of seconds"),
                         ("max_connections: 0", "serve.max_connections must be a whole number")):
        (vault.root / "memkit.yaml").write_text(f"serve: {{{bad}}}\n")
        result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve", "--port", "0"])
        assert result.exit_code == 1 and message in result.output, result.output
