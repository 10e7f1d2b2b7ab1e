"""`memkit serve`: the HTTP API on a real uvicorn server on 127.0.0.1 (a free port), driven over
the socket with http.client. Every answer is checked against the server's own OpenAPI document.

Most servers use the fake embedder (no model load); one runs `memkit serve` itself as a
subprocess on memkit's built-in model. Nothing waits on the wall clock except bounded polls.
"""
from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("starlette", reason="memkit serve needs Starlette: pip install 'mcp>=2'")
pytest.importorskip("uvicorn", reason="memkit serve needs uvicorn: pip install 'mcp>=2'")
jsonschema = pytest.importorskip("jsonschema")

from util import FakeEmbedder, wait_until, write  # noqa: E402

from memkit import Vault  # noqa: E402
from memkit.errors import MemkitError  # noqa: E402
from memkit.frontends.cli.group import main  # noqa: E402
from memkit.frontends.http.api import MAX_BODY_BYTES, PAGE_PATHS, HTTPServer, needs_token  # noqa: E402
from memkit.frontends.http.spec import OPERATIONS, openapi  # noqa: E402

TOPICS = {
    "cooking": "---\ntitle: Cooking\nsummary: rice and bread\nupdated: 2026-01-03T10:00:00\n---\n# Cooking\n\n"
               "- [preference] Prefers bomba rice for paella #rice (2026-01-01)\n"
               "- Bakes sourdough bread on sundays (2026-01-02)\n",
    "health": "- Allergic to tree nuts (2025-05-01)\n",
    "general": "- [pending] Ask how the knee physio went (due 2999-01-05) (2026-01-01)\n",
}
SPEC = openapi(token=True)
WAIT_S = 60.0  # bounded polls only: nothing asserts on speed


def make_vault(tmp_path: Path) -> Vault:
    vault = Vault.init(tmp_path / "v", profile=False)
    for name, text in TOPICS.items():
        write(vault.topics_dir / f"{name}.md", text)
    return Vault(vault.root, embedder=FakeEmbedder())


@pytest.fixture
def served(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0) as server:
        yield server


@pytest.fixture(scope="module")
def served_once(tmp_path_factory):
    """One server for tests that only send requests it refuses (stopping uvicorn takes 0.2 s)."""
    with HTTPServer(make_vault(tmp_path_factory.mktemp("served")), port=0) as server:
        yield server


class Client:
    """http.client on a server, checking every answer against the OpenAPI document."""

    def __init__(self, server: HTTPServer, token: str | None = None) -> None:
        self.host, self.port = server.socket.getsockname()[:2]
        self.token = token

    def call(self, method: str, path: str, body=None, *, raw: bytes | None = None, headers=None,
             chunked: bool = False) -> tuple[int, dict]:
        con = http.client.HTTPConnection(self.host, self.port, timeout=WAIT_S)
        head = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if body is not None:
            raw = json.dumps(body).encode()
            head["Content-Type"] = "application/json"
        head.update(headers or {})
        if chunked:
            con.request(method, path, body=iter([raw or b""]), headers=head, encode_chunked=True)
        else:
            con.request(method, path, body=raw, headers=head)
        resp = con.getresponse()
        data = resp.read()
        con.close()
        assert resp.getheader("Content-Type", "").startswith("application/json"), data[:200]
        answer = json.loads(data)
        check_against_spec(method, path, resp.status, answer)
        return resp.status, answer


def spec_route(path: str) -> dict:
    """The OpenAPI document's operations of a request path: its own entry, else the first template
    (``/sessions/{session}``) it fits ({} when none); a topic's name may hold folders."""
    path = path.split("?")[0]
    if path in SPEC["paths"]:
        return SPEC["paths"][path]
    for template, ops in SPEC["paths"].items():
        pattern = re.sub(r"\\{\w+\\}", "[^/]+", re.escape(template).replace(r"\{topic\}", ".+"))
        if re.fullmatch(pattern, path):
            return ops
    return {}


def check_against_spec(method: str, path: str, status: int, answer) -> None:
    """The answer is one the OpenAPI document lists for this route, in the schema it gives."""
    route = spec_route(path).get(method.lower())
    if route is None:  # an unknown route or method: the error shape still holds
        assert (status in (404, 405) or status == 400 and "%2f" in path.lower()) and set(answer) == {"error", "status"}
        return
    assert str(status) in route["responses"], f"{method} {path}: {status} is not in the spec ({answer})"
    schema = route["responses"][str(status)]["content"]["application/json"]["schema"]
    jsonschema.validate(answer, {**schema, "components": SPEC["components"]})
    if status >= 400:
        assert answer["status"] == status and "Traceback" not in answer["error"]


# ---- the description -------------------------------------------------------------------------------

def test_openapi_lists_exactly_the_routes(served):
    status, spec = Client(served).call("GET", "/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.1")
    documented = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
    app = served.app.app  # the Starlette app inside the Guard
    served_routes = {(m, r.path.replace("{topic:path}", "{topic}")) for r in app.routes for m in r.methods
                     if m != "HEAD" and r.path not in PAGE_PATHS}  # (a topic's name may hold folders)
    assert documented == served_routes
    assert {(op.method, op.path) for op in OPERATIONS} | {("GET", "/openapi.json"), ("GET", "/health")} == served_routes
    jsonschema.Draft202012Validator.check_schema({"$defs": spec["components"]["schemas"]})
    for ops in spec["paths"].values():
        for op in ops.values():
            for param in op.get("parameters", []):
                jsonschema.Draft202012Validator.check_schema(param["schema"])
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body:
                jsonschema.Draft202012Validator.check_schema(body)
    assert "security" not in spec and "security" in SPEC  # a token is documented only when one is set


# ---- every route ---------------------------------------------------------------------------------------

def test_search_add_context_stats(served):
    c = Client(served)
    status, answer = c.call("GET", "/search?q=bomba+rice&k=3")
    assert status == 200 and answer["hits"][0]["topic"] == "cooking" and "bomba" in answer["hits"][0]["text"]
    status, entry = c.call("POST", "/add", {"text": "Drinks sencha green tea every morning", "topic": "food-drinks",
                                            "kind": "preference", "tags": ["tea"]})
    assert status == 201 and entry["topic"] == "food-drinks" and entry["kind"] == "preference"
    assert entry["tags"] == ["tea"] and entry["file"] == "topics/food-drinks.md"
    assert "Drinks sencha green tea every morning" in (served.api.vault.topics_dir / "food-drinks.md").read_text()
    _, answer = c.call("GET", "/search?q=sencha&mode=lexical")
    assert [h["id"] for h in answer["hits"]] == [entry["id"]]
    _, answer = c.call("GET", "/search?q=tea&topic=food-drinks&kind=preference&tag=tea&since=2020-01-01")
    assert [h["id"] for h in answer["hits"]] == [entry["id"]]
    _, important = c.call("POST", "/add", {"text": "Drinks matcha before races (importance 0.9)", "topic": "food-drinks"})
    _, answer = c.call("GET", "/search?q=drinks&mode=lexical&min_importance=0.8")
    assert [h["id"] for h in answer["hits"]] == [important["id"]]
    status, ctx = c.call("POST", "/context", {"message": "what tea do I drink?", "session": "s1"})
    assert status == 200 and "sencha" in ctx["text"] and ctx["session"] == "s1"
    status, ctx = c.call("POST", "/context", {"message": "", "session": "s1", "reset": True, "budget_tokens": 500})
    assert status == 200 and ctx["tokens"] <= 500
    status, stats = c.call("GET", "/stats")
    assert status == 200 and stats["entries"] == 6 and stats["per_topic"]["food-drinks"] == 2


def test_add_with_due_and_until(served):
    c = Client(served)
    status, entry = c.call("POST", "/add", {"text": "Call the plumber", "due": "2030-01-02"})
    assert status == 201 and entry["kind"] == "pending" and "(due 2030-01-02)" in entry["text"]
    status, entry = c.call("POST", "/add", {"text": "Parking spot is B14", "until": "2999-12-31"})
    assert status == 201 and "(until 2999-12-31)" in entry["text"] and entry["kind"] is None
    status, answer = c.call("POST", "/add", {"text": "Too late", "until": "2001-01-01"})
    assert status == 400 and "in the past" in answer["error"]


def test_add_twice_returns_the_entry_there(served):
    """Issue 26.1: the same text added again to its topic is not written twice; the answer says so."""
    c = Client(served)
    status, first = c.call("POST", "/add", {"text": "Keeps the spare key under the blue pot", "topic": "home"})
    assert status == 201 and "duplicate" not in first
    status, again = c.call("POST", "/add", {"text": "Keeps the spare key under the blue pot", "topic": "home"})
    assert again["duplicate"] is True and again["id"] == first["id"] and again["line"] == first["line"]


def test_pending_list_and_done(served):
    c = Client(served)
    status, answer = c.call("GET", "/pending")
    assert status == 200 and [p["text"] for p in answer["pending"]] == [
        "[pending] Ask how the knee physio went (due 2999-01-05) (2026-01-01)"]
    follow_up = answer["pending"][0]
    assert follow_up["due"] == "2999-01-05"
    status, answer = c.call("POST", "/pending/done", {"id": follow_up["id"]})
    assert status == 200 and answer["done"]["id"] == follow_up["id"]
    assert c.call("GET", "/pending")[1] == {"pending": []}
    assert "done" in (served.api.vault.root / "archive.md").read_text()
    status, answer = c.call("POST", "/pending/done", {"id": follow_up["id"]})
    assert status == 404 and follow_up["id"] in answer["error"]
    _, entry = c.call("POST", "/add", {"text": "Renew the passport", "kind": "pending"})
    status, answer = c.call("POST", "/pending/done", {"match": "passport"})
    assert status == 200 and answer["done"]["id"] == entry["id"]
    # a memory that is not a follow-up is not "done"
    status, answer = c.call("POST", "/pending/done", {"match": "tree nuts"})
    assert status == 400 and "not a follow-up" in answer["error"]
    status, answer = c.call("POST", "/pending/done", {})
    assert status == 400 and "'id' or a 'match'" in answer["error"]


def test_busy_and_index_job(served, monkeypatch):
    c = Client(served)
    assert c.call("GET", "/busy")[1] == {"busy": False, "jobs": [], "write_lock": False}
    status, state = c.call("GET", "/index")
    assert status == 200 and state["model"] == "fake-bow" and state["stale_files"] == 0
    assert state["job"]["running"] is False
    # an index job that waits for the test, so its "running" state can be looked at
    release = threading.Event()
    real = served.api.other_vault

    class Slow:
        def index(self, full: bool = False):
            release.wait(WAIT_S)
            return real().index(full=full)

    monkeypatch.setattr(served.api, "other_vault", lambda: Slow())
    (served.api.vault.topics_dir / "travel.md").write_text("- Flies TAP to Lisbon (2026-01-01)\n")
    status, answer = c.call("POST", "/index", {"full": False})
    assert status == 202 and answer["job"]["running"] is True
    assert c.call("GET", "/busy")[1] == {"busy": True, "jobs": ["index"], "write_lock": False}
    status, answer = c.call("POST", "/index", headers={"Content-Type": "application/json"})  # no body is fine
    assert status == 409 and "already running" in answer["error"]
    release.set()
    deadline = time.monotonic() + WAIT_S
    while c.call("GET", "/index")[1]["job"]["running"] and time.monotonic() < deadline:
        time.sleep(0.01)
    state = c.call("GET", "/index")[1]
    assert state["job"]["error"] is None and state["job"]["report"]["changed_files"] == 1
    assert state["stale_files"] == 0


def test_busy_sees_another_writer_holding_the_lock(served):
    other = Vault(served.api.vault.root, embedder=FakeEmbedder())
    with other.store.lock():
        assert Client(served).call("GET", "/busy")[1] == {"busy": True, "jobs": [], "write_lock": True}
    assert Client(served).call("GET", "/busy")[1]["write_lock"] is False


# ---- conversation sessions ---------------------------------------------------------------------------

def test_sessions_start_save_load_list_search(served):
    c = Client(served)
    root = served.api.vault.root
    status, conv = c.call("POST", "/sessions", {"session": "lisbon", "title": "Lisbon trip", "tags": ["travel"],
                                                "system_prompt": "You are Maya's travel assistant.", "user": "maya",
                                                "metadata": {"channel": "voice"}})
    assert status == 201 and conv["id"] == "lisbon" and conv["title"] == "Lisbon trip" and "messages" not in conv
    assert conv["tags"] == ["travel"] and conv["metadata"] == {"channel": "voice"}
    assert (root / conv["file"]).is_file() and conv["file"].startswith("sessions/")
    said = [("user", "I want to spend a week in Lisbon in March", False),
            ("assistant", "Booked: TAP flight TP 571 on March 3rd, back on the 10th", True),
            ("user", "Now find me a quiet hotel in Alfama", False)]
    for role, content, important in said:
        status, message = c.call("POST", "/sessions/lisbon/messages",
                                 {"role": role, "content": content, "important": important})
        assert status == 201 and message["session"] == "lisbon" and message["role"] == role
        assert message["content"] == content and message["time"].endswith("Z")
    status, message = c.call("POST", "/sessions/lisbon/messages", {"role": "Tool", "content": "3 hotels found",
                                                                   "name": "hotels"})
    assert status == 201 and message["role"] == "tool" and message["name"] == "hotels"
    assert "### assistant · " in (root / conv["file"]).read_text() and "· important" in (root / conv["file"]).read_text()

    status, window = c.call("GET", "/sessions/lisbon?max_tokens=40")
    assert status == 200 and window["strategy"] == "simple" and window["tokens"] <= 40
    assert window["messages"][0]["role"] == "system" and window["messages"][-1]["content"] == "3 hotels found"
    assert window["omitted"] >= 1 and window["omitted"] + len(window["messages"]) - 1 == window["total"] == 4
    _, window = c.call("GET", f"/sessions/{conv['file'].rsplit('/', 1)[-1]}?strategy=simple")  # or its file name
    assert [m["content"] for m in window["messages"][1:4]] == [content for _, content, _ in said]
    assert window["messages"][2]["important"] is True and window["total"] == 4

    _, other = c.call("POST", "/sessions", {})  # every field optional: a new random id
    assert re.fullmatch(r"[0-9a-f]{8}", other["id"])
    status, message = c.call("POST", f"/sessions/{other['id']}/messages",
                             {"role": "user", "content": "An old message", "time": "2026-01-02T10:05:00+01:00"})
    assert status == 201 and message["time"] == "2026-01-02T09:05:00Z"
    status, listing = c.call("GET", "/sessions")
    assert status == 200 and {s["id"] for s in listing["sessions"]} == {"lisbon", other["id"]}
    lisbon = next(s for s in listing["sessions"] if s["id"] == "lisbon")
    assert lisbon["messages"] == 4 and lisbon["title"] == "Lisbon trip"
    assert len(c.call("GET", "/sessions?limit=1")[1]["sessions"]) == 1
    assert c.call("GET", "/sessions?archived=true")[1] == {"sessions": []}

    status, found = c.call("GET", "/sessions/search?q=flight+TAP&k=3")
    assert status == 200 and found["hits"][0]["session"] == "lisbon" and found["hits"][0]["role"] == "assistant"
    assert "TP 571" in found["hits"][0]["text"] and len(found["hits"]) <= 3
    _, found = c.call("GET", "/sessions/search?q=flight+TAP&role=user")
    assert found["hits"] and {h["role"] for h in found["hits"]} == {"user"}
    _, found = c.call("GET", f"/sessions/search?q=flight+TAP&session={other['id']}")
    assert found == {"hits": []}

    status, answer = c.call("POST", "/sessions", {"session": "lisbon"})
    assert status == 409 and "exists already" in answer["error"]
    status, answer = c.call("POST", "/sessions/lisbon/messages", {"role": "robot", "content": "beep"})
    assert status == 400 and "invalid role 'robot'" in answer["error"]
    status, answer = c.call("POST", "/sessions/lisbon/messages", {"role": "user", "content": "x" * 1_000_001})
    assert status == 400 and "1,000,001 characters, the limit is 1,000,000" in answer["error"]
    status, answer = c.call("POST", "/sessions/lisbon/messages", {"role": "user", "content": "nul \x00 here"})
    assert status == 400 and "NUL" in answer["error"]
    status, answer = c.call("GET", "/sessions/gone")
    assert status == 404 and "no session 'gone'" in answer["error"]
    status, answer = c.call("POST", "/sessions/lis/messages", {"role": "user", "content": "my plan is Porto"})
    assert status == 201 and answer["created"] is True and answer["session"] == "lis", answer  # a session of its own
    assert "Porto" not in (root / conv["file"]).read_text(), "a prefix could be another client's conversation"
    assert c.call("GET", "/sessions/lis")[1]["messages"][-1]["content"] == "my plan is Porto"
    status, answer = c.call("POST", "/sessions/lis/messages", {"role": "user", "content": "and Braga"})
    assert status == 201 and "created" not in answer
    status, answer = c.call("POST", "/sessions/lisbon%2Fmessages", {"role": "user", "content": "x"})
    assert status == 400 and "an encoded '/'" in answer["error"]
    assert c.call("GET", "/sessions/lisb")[0] == 404  # reads name it exactly too: another client's history
    assert c.call("GET", "/sessions/search?q=flight&session=lisb")[0] == 404
    status, answer = c.call("GET", "/sessions/lisbon%2Fmessages")  # the decoded path's route takes POST only
    assert status == 400 and "an encoded '/'" in answer["error"]
    assert c.call("GET", "/sessions/lisbon")[1]["total"] == 4  # nothing refused was written

    status, report = c.call("POST", "/upkeep", {"at": "2026-11-23T12:00:00"})
    assert status == 200 and report["at"] == "2026-11-23T12:00:00"
    assert [j["job"] for j in report["jobs"]][:2] == ["tidy", "session-digest"]


def test_what_may_wait_for_the_llm_runs_aside(tmp_path):
    """A summary, upkeep and proactive run on the aside Vault, so searches go on; a message is saved
    at once (its automatic digest runs after, see the next test)."""
    from memkit.frontends.http.routes import Api

    vault = make_vault(tmp_path)
    api = Api(vault)
    assert not api.asks_llm("load_session", {"strategy": None}) and not api.asks_llm("save_message", {})
    assert api.asks_llm("load_session", {"strategy": "summary"}) and api.asks_llm("run_upkeep", {})
    assert not api.asks_llm("search_sessions", {}) and api.asks_llm("proactive", {})
    (vault.root / "memkit.yaml").write_text("session_strategy: hybrid\ndigest_every_messages: 5\n"
                                            "llm: {base_url: \"http://127.0.0.1:9/v1\", model: fake}\n")
    api = Api(Vault(vault.root, embedder=FakeEmbedder()))
    assert api.asks_llm("load_session", {"strategy": None}) and not api.asks_llm("save_message", {})
    assert not api.asks_llm("load_session", {"strategy": "simple"})


# ---- bad requests ----------------------------------------------------------------------------------------

BAD = [
    ("GET", "/search", None, {}, 400, "missing required query parameter 'q'"),
    ("GET", "/search?q=", None, {}, 400, "invalid query parameter q: it is empty"),
    ("GET", "/search?q=rice&k=0", None, {}, 400, "invalid query parameter k: 0 is below the minimum 1 (allowed: 1..1000)"),
    ("GET", "/search?q=rice&k=ten", None, {}, 400, "expected an integer"),
    ("GET", "/search?q=rice&q=bread", None, {}, 400, "given 2 times"),
    ("GET", "/search?q=rice&top=3", None, {}, 400, "unknown query parameter 'top'"),
    ("GET", "/search?q=rice&mode=fuzzy", None, {}, 400, "not one of hybrid, vector, lexical"),
    ("GET", "/search?q=rice&since=yesterday", None, {}, 400, "expected a date like 2026-03-01"),
    ("GET", "/search?q=rice&min_importance=high", None, {}, 400, "expected a number"),
    ("GET", "/search?q=rice&min_importance=1.5", None, {}, 400, "1.5 is above the maximum 1 (allowed: 0..1)"),
    ("GET", "/search?q=rice&min_importance=nan", None, {}, 400, "expected a number"),
    ("GET", "/search?q=rice&topic=nowhere", None, {}, 404, "no topic 'nowhere'"),
    ("GET", "/search?q=rice&topic=..%2F..%2Fetc", None, {}, 400, "invalid topic name"),
    ("GET", "/stats?verbose=1", None, {}, 400, "unknown query parameter 'verbose'"),
    ("POST", "/add", {}, {}, 400, "missing required field 'text'"),
    ("POST", "/add", {"text": "   "}, {}, 400, "invalid field text: it is empty"),
    ("POST", "/add", {"text": "x", "colour": "red"}, {}, 400, "unknown field 'colour'"),
    ("POST", "/add", {"text": 42}, {}, 400, "invalid field text: expected a string, got 42"),
    ("POST", "/add", {"text": "x", "tags": "tea"}, {}, 400, "expected a list of strings"),
    ("POST", "/add", {"text": "x", "tags": [1]}, {}, 400, "each item must be a string"),
    ("POST", "/add", {"text": "x" * 4001}, {}, 400, "4,001 characters, the limit is 4,000"),
    ("POST", "/add", {"text": "x", "topic": "../../etc/passwd"}, {}, 400, "invalid topic name"),
    ("POST", "/add", {"text": "x", "kind": "two words"}, {}, 400, "invalid kind"),
    ("POST", "/add", [1, 2], {}, 400, "the body must be a JSON object"),
    ("POST", "/add", None, {"Content-Type": "application/json"}, 400, "needs a JSON object body"),
    ("POST", "/add", None, {}, 415, "POST needs Content-Type: application/json (an empty body too)"),
    ("POST", "/add", {"text": "a \ud800 b"}, {}, 400, "plain UTF-8 text only"),
    ("POST", "/add", {"text": "nul \x00 here"}, {}, 400, "control character U+0000"),
    ("POST", "/add", {"text": "x", "tags": ["\ud800"]}, {}, 400, "invalid tag"),
    ("POST", "/context", {"message": "hi", "budget_tokens": True}, {}, 400, "expected an integer, got true"),
    ("POST", "/context", {"message": "hi", "session": "../../x"}, {}, 200, None),  # a session id is only hashed
    ("POST", "/pending/done", {"id": "ab"}, {}, 404, None),
    ("POST", "/index", {"full": "yes"}, {}, 400, "invalid field full: expected true or false"),
    ("DELETE", "/add", None, {}, 405, "DELETE is not allowed on /add"),
    ("GET", "/etc/passwd", None, {}, 404, "no route /etc/passwd"),
    ("GET", "/sessions/", None, {}, 404, "no route /sessions/"),  # no redirect with an empty body
    ("PUT", "/search", None, {}, 405, "PUT is not allowed on /search (allowed: GET"),
    ("POST", "/upkeep", {"at": "9999-12-31T23:59:59-14:00"}, {}, 400, "years 1900 to 9000"),
    ("GET", "/proactive?now=0001-01-01T00:00:00%2B14:00", None, {}, 400, "years 1900 to 9000"),
    ("GET", "/../../etc/passwd", None, {}, 404, "no route"),
    ("GET", "/sessions?limit=0", None, {}, 400, "invalid query parameter limit: 0 is below the minimum 1"),
    ("POST", "/sessions", {"session": "../../etc"}, {}, 400, "invalid field session: \"../../etc\" is not a session id"),
    ("POST", "/sessions", {"title": "x", "colour": "red"}, {}, 400, "unknown field 'colour'"),
    ("POST", "/sessions", {"metadata": {"a": 1}}, {}, 400, "invalid field metadata"),
    ("GET", "/sessions/nope", None, {}, 404, "no session 'nope'"),
    ("GET", "/sessions/..", None, {}, 400, "invalid path parameter session: \"..\" is not a session id"),
    ("GET", "/sessions/..%2F..%2Fetc", None, {}, 400, "an encoded '/'"),
    ("GET", "/sessions/nope?strategy=best", None, {}, 400, "not one of simple, summary, hybrid"),
    ("GET", "/sessions/nope?max_tokens=0", None, {}, 400, "invalid query parameter max_tokens"),
    ("POST", "/sessions/nope/messages", {"role": "user"}, {}, 400, "missing required field 'content'"),
    ("POST", "/sessions/..%2F..%2Fetc/messages", {"role": "user", "content": "hi"}, {}, 400, "an encoded '/'"),
    ("POST", "/sessions/a..b/messages", {"role": "user", "content": "hi"}, {}, 400, "not a session id"),
    ("DELETE", "/sessions/nope", None, {}, 405, "DELETE is not allowed"),
    ("GET", "/sessions/search", None, {}, 400, "missing required query parameter 'q'"),
    ("GET", "/sessions/search?q=x&role=robot", None, {}, 400, "not one of user, assistant, system, tool"),
    ("GET", "/sessions/search?q=x&session=..%2F..%2Fetc", None, {}, 400, "is not a session id"),
    ("GET", "/sessions/search?q=x&session=nope", None, {}, 404, "no session 'nope'"),
    ("POST", "/upkeep", {"at": "tomorrow"}, {}, 400, "expected a time like"),
]


def test_head_answers_as_get_without_a_body(served_once):
    """HEAD (curl -I, a health check) on a GET route: its status and headers (it was a 500)."""
    con = http.client.HTTPConnection(*served_once.socket.getsockname()[:2], timeout=WAIT_S)
    con.request("HEAD", "/stats")
    resp = con.getresponse()
    assert resp.status == 200 and resp.getheader("content-type") == "application/json" and resp.read() == b""


@pytest.mark.parametrize("method, path, body, headers, status, message", BAD, ids=[f"{b[0]} {b[1]}" for b in BAD])
def test_bad_requests_get_a_json_4xx(served_once, method, path, body, headers, status, message):
    got, answer = Client(served_once).call(method, path, body, headers=headers)
    assert got == status, answer
    if message:
        assert message in answer["error"]


def test_wrong_content_type_bad_json_and_large_bodies(served, tmp_path):
    c = Client(served)
    got, answer = c.call("POST", "/add", raw=b"text=hello",
                         headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert got == 415 and "application/json" in answer["error"]
    got, answer = c.call("POST", "/add", raw=b'{"text": "hi"}')  # no Content-Type
    assert got == 415
    got, answer = c.call("POST", "/add", raw=b'{"text": ', headers={"Content-Type": "application/json"})
    assert got == 400 and "not valid JSON" in answer["error"]
    got, answer = c.call("POST", "/add", raw=b'\xff\xfe{"', headers={"Content-Type": "application/json"})
    assert got == 400 and "not valid JSON" in answer["error"]
    got, answer = c.call("POST", "/add", raw=b"[" * 100_000, headers={"Content-Type": "application/json"})
    assert got == 400 and "nested too deeply" in answer["error"]
    big = json.dumps({"text": "x" * MAX_BODY_BYTES}).encode()
    got, answer = c.call("POST", "/add", raw=big, headers={"Content-Type": "application/json"})
    assert got == 413 and "limit" in answer["error"]
    got, answer = c.call("POST", "/add", raw=big, headers={"Content-Type": "application/json"}, chunked=True)
    assert got == 413 and "limit" in answer["error"]  # no Content-Length: counted as it arrives
    got, answer = c.call("POST", "/add", raw=b'{"text": "chunked works"}', headers={"Content-Type": "application/json"},
                         chunked=True)
    assert got == 201
    # nothing was written outside the vault, nothing but the two entries inside
    assert sorted(p.name for p in served.api.vault.topics_dir.iterdir()) == ["cooking.md", "general.md", "health.md"]
    assert not (tmp_path / "etc").exists()


def test_library_errors_map_to_status_codes(served, monkeypatch):
    c = Client(served)
    conflicted = served.api.vault.topics_dir / "health.md"
    conflicted.write_text("<<<<<<< HEAD\n- Allergic to tree nuts\n=======\n- Allergic to peanuts\n>>>>>>> other\n")
    got, answer = c.call("POST", "/add", {"text": "Sees a physio", "topic": "health"})
    assert got == 409 and "health.md" in answer["error"]

    def boom():
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(served.api.vault.upkeep, "stats", boom)
    got, answer = c.call("GET", "/stats")
    assert got == 500 and answer["error"].startswith("unexpected error: RuntimeError: disk on fire")
    assert c.call("GET", "/pending")[0] == 200  # the server goes on


def test_host_header_must_be_loopback(served):
    c = Client(served)
    for host in ("localhost:1", "127.0.0.1", f"[::1]:{c.port}", "LOCALHOST", f"127.0.0.2:{c.port}", "[::1]",
                 f"app.localhost:{c.port}", f"localhost.:{c.port}"):
        assert c.call("GET", "/busy", headers={"Host": host})[0] == 200, host
    for host in ("attacker.example:8765", "localhost.attacker.example", "127.0.0.1.nip.io", "[::2]", "0.0.0.0"):
        got, answer = c.call("GET", "/busy", headers={"Host": host})
        assert got == 400 and "not a loopback name" in answer["error"], host


def test_the_server_has_the_one_loopback_rule():
    """The Host check, the token rule and the Origin check use memkit.base.http.is_loopback, as the
    LLM client and the embedding server's client do: one rule for what is this machine."""
    from memkit.base import http as shared
    from memkit.frontends.http import api

    assert api.is_loopback is shared.is_loopback
    assert not [name for name in vars(api) if "loopback" in name and name != "is_loopback"]


# ---- the token rule --------------------------------------------------------------------------------------

def test_needs_token():
    assert not any(needs_token(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]", "app.localhost",
                                             "localhost."))
    assert all(needs_token(h) for h in ("0.0.0.0", "::", "192.168.1.10", "example.com", "", "localhost.example"))


def test_other_addresses_refuse_to_start_without_a_token(tmp_path):
    vault = make_vault(tmp_path)
    with pytest.raises(MemkitError, match="needs a token"):
        HTTPServer(vault, host="0.0.0.0", port=0)
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve", "--host", "0.0.0.0", "--port", "0"],
                                env={"MEMKIT_TOKEN": ""})
    assert result.exit_code == 1
    assert "binding 0.0.0.0 (not a loopback address) needs a token" in result.output


def test_with_a_token_every_request_needs_it(tmp_path):
    with HTTPServer(make_vault(tmp_path), port=0, token="s3cret-token") as server:
        anonymous, right = Client(server), Client(server, token="s3cret-token")
        for path in ("/busy", "/openapi.json", "/search?q=rice"):
            got, answer = anonymous.call("GET", path)
            assert got == 401 and "Bearer" in answer["error"], path
        assert Client(server, token="s3cret-tokeN").call("GET", "/busy")[0] == 401
        assert Client(server, token="s3cret-token-and-more").call("GET", "/busy")[0] == 401
        assert anonymous.call("GET", "/busy", headers={"Authorization": "Basic czNjcmV0LXRva2Vu"})[0] == 401
        assert right.call("GET", "/busy")[0] == 200
        assert right.call("POST", "/add", {"text": "With a token"})[0] == 201
        status, spec = right.call("GET", "/openapi.json")
        assert spec["security"] == [{"bearer": []}]
        # with a token the Host header is not restricted (the server may sit behind a name)
        assert right.call("GET", "/busy", headers={"Host": "memory.lan"})[0] == 200


def test_token_from_the_variable_memkit_yaml_names(tmp_path):
    vault = make_vault(tmp_path)
    (vault.root / "memkit.yaml").write_text("serve: {host: 0.0.0.0, token_env: MY_MEMKIT_TOKEN}\n")
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve", "--port", "0"], env={"MEMKIT_TOKEN": ""})
    assert result.exit_code == 1 and "serve.token_env names MY_MEMKIT_TOKEN, which is not set" in result.output
    (vault.root / "memkit.yaml").write_text("serve: {token: abc}\n")
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve"])
    assert result.exit_code == 1 and "serve: unknown key 'token'" in result.output


# ---- concurrency ---------------------------------------------------------------------------------------

def test_concurrent_adds_and_searches_lose_nothing(served):
    threads, per_thread = 6, 8
    errors: list[str] = []
    added: list[str] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        c = Client(served)
        try:
            for i in range(per_thread):
                status, entry = c.call("POST", "/add", {"text": f"Memory w{n}x{i} from client {n}",
                                                        "topic": f"load-{n % 3}"})
                if status != 201:
                    errors.append(str(entry))
                    continue
                with lock:
                    added.append(entry["id"])
                status, answer = c.call("GET", f"/search?q=w{n}x{i}&mode=lexical")
                if status != 200 or entry["id"] not in [h["id"] for h in answer["hits"]]:
                    errors.append(f"w{n}x{i} not found at once: {answer}")
                if c.call("GET", "/busy")[0] != 200:
                    errors.append("busy failed")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    workers = [threading.Thread(target=client, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(WAIT_S * 4)
    assert not errors, errors[:5]
    assert len(added) == threads * per_thread
    texts = {e.text for e in Vault(served.api.vault.root, embedder=FakeEmbedder()).entries()}
    assert all(f"Memory w{n}x{i} from client {n}" in t for n in range(threads) for i in range(per_thread)
               for t in [next(x for x in texts if f"w{n}x{i} " in x)])
    assert sum(1 for t in texts if t.startswith("Memory w")) == threads * per_thread


# ---- the watcher, a Unix socket, the command itself -------------------------------------------------------

def test_watch_follows_hand_edits(tmp_path):
    before = set(threading.enumerate())
    with HTTPServer(make_vault(tmp_path), port=0, watch=True) as server:
        c = Client(server)
        write(server.api.vault.topics_dir / "garden.md", "- Grows San Marzano tomatoes on the balcony (2026-01-01)\n")
        deadline = time.monotonic() + WAIT_S
        hits: list = []
        while not hits and time.monotonic() < deadline:
            hits = c.call("GET", "/search?q=marzano&mode=lexical")[1]["hits"]
            time.sleep(0.02)
        assert hits and hits[0]["topic"] == "garden"
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()
            and (t.name.startswith("memkit-serve") or t.name == "memkit-watch")]
    assert not left  # the server, its watcher and the watcher's thread all stopped


def test_unix_socket(tmp_path):
    path = tmp_path / "memkit.sock"
    with HTTPServer(make_vault(tmp_path), unix=str(path)) as server:
        assert oct(path.stat().st_mode & 0o777) == "0o600"

        class UnixConnection(http.client.HTTPConnection):
            def connect(self) -> None:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(str(path))

        con = UnixConnection("localhost", timeout=WAIT_S)
        con.request("GET", "/search?q=bomba")
        resp = con.getresponse()
        answer = json.loads(resp.read())
        assert resp.status == 200 and "bomba" in answer["hits"][0]["text"]
        assert server.url == "http://localhost"


def test_missing_server_libraries_is_one_line(tmp_path):
    vault = make_vault(tmp_path)
    blocker = tmp_path / "block"
    write(blocker / "uvicorn" / "__init__.py", "raise ImportError('blocked for the test')\n")
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(blocker)!r}); "
                           "from memkit.frontends.cli.group import main; main()", "--vault", str(vault.root), "serve"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "memkit: error: memkit serve needs Starlette and uvicorn, which the MCP extra installs "
        "(blocked for the test): pip install 'mcp>=2'"]


def test_memkit_serve_command_on_the_builtin_model(tmp_path):
    """The real command in a subprocess: it prints where it listens, answers, stops on SIGINT."""
    vault = Vault.init(tmp_path / "v")
    for name, text in TOPICS.items():
        write(vault.topics_dir / f"{name}.md", text)
    env = {**os.environ, "MEMKIT_MODEL": "memkit-m2v", "HF_HUB_OFFLINE": "1"}
    env.pop("MEMKIT_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "memkit", "--vault", str(vault.root), "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.match(r"serving (.+) on (http://127\.0\.0\.1:(\d+)) \(API: .*/openapi\.json\); Ctrl-C to stop$", line)
        assert m, line
        port = int(m[3])
        answer = None
        deadline = time.monotonic() + WAIT_S * 2
        while answer is None and time.monotonic() < deadline:  # the model loads before the first answer
            try:
                con = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
                con.request("GET", "/search?q=paella+rice&k=1")
                answer = json.loads(con.getresponse().read())
            except OSError:
                time.sleep(0.05)
        assert answer is not None and "bomba" in answer["hits"][0]["text"]
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert out.strip() == "stopped" and "Traceback" not in err


def test_mcp_over_streamable_http(tmp_path):
    """--mcp: the SDK's own streamable HTTP client lists memkit's tools and calls one."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed")
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with HTTPServer(make_vault(tmp_path), port=0, mcp=True) as server:
        status, spec = Client(server).call("GET", "/openapi.json")
        assert set(spec["paths"]["/mcp"]) == {"get", "post", "delete"}

        async def session() -> tuple[list[str], dict, dict]:
            async with streamable_http_client(f"{server.url}/mcp/") as streams:  # the trailing '/' too
                async with ClientSession(streams[0], streams[1]) as s:
                    await s.initialize()
                    tools = [t.name for t in (await s.list_tools()).tools]
                    added = await s.call_tool("add_memory", {"text": "Added over MCP on HTTP", "topic": "health"})
                    found = await s.call_tool("search_memories", {"query": "MCP on HTTP"})
                    return tools, added.structured_content, found.structured_content

        tools, added, found = anyio.run(session)
        assert {"search_memories", "add_memory", "get_context"} <= set(tools)
        assert added["topic"] == "health" and found["hits"][0]["id"] == added["id"]
        # the REST side sees what MCP wrote
        _, answer = Client(server).call("GET", "/search?q=MCP+HTTP&mode=lexical")
        assert answer["hits"][0]["id"] == added["id"]
        anonymous = http.client.HTTPConnection(*server.socket.getsockname()[:2], timeout=WAIT_S)
        anonymous.request("POST", "/mcp", body=b"{}",
                          headers={"Host": "attacker.example", "Content-Type": "application/json"})
        assert anonymous.getresponse().status == 400  # the Host rule holds on /mcp too


def test_a_port_in_use_is_one_line(tmp_path):
    vault = make_vault(tmp_path)
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["--vault", str(vault.root), "serve", "--port", str(port)],
                                    env={"MEMKIT_TOKEN": ""})
    finally:
        taken.close()
    assert result.exit_code == 1
    assert result.output.strip() == (f"memkit: error: cannot listen on 127.0.0.1:{port}: Address already in use; "
                                     "another server (a `memkit serve` already running?) holds that port: stop it, "
                                     "or pick another (--port N, 0: any free one)")


def held_digest(fact: str):
    """A fake LLM's answer function for a digest concluding ``fact``, held until ``release`` is
    set (``asked`` says it was asked): (answer, asked, release)."""
    asked, release = threading.Event(), threading.Event()

    def answer(request):
        if "outdated" in request["messages"][-1]["content"]:
            return json.dumps({"updates": []})
        asked.set()
        release.wait(WAIT_S)
        return json.dumps({"conclusions": [{"kind": "fact", "text": fact}], "new_topic": None})

    return answer, asked, release


def test_watch_digests_the_inbox_and_busy_says_so(tmp_path):
    """--watch with an LLM: an idle inbox/ transcript is digested (the `digest` job of /busy meanwhile)."""
    from fake_llm import FakeLLM

    answer, asked, release = held_digest("Has a cat named Miso")

    with FakeLLM(answer) as fake:
        vault = make_vault(tmp_path)
        (vault.root / "memkit.yaml").write_text(f"session_timeout_minutes: 0\nllm: {{base_url: \"{fake.base_url}\", "
                                                "model: fake}\n")
        vault = Vault(vault.root, embedder=FakeEmbedder())
        old = time.time() - 3600
        transcript = write(vault.store.inbox_dir / "chat.txt", "Maya: I have a cat named Miso\n")
        os.utime(transcript, (old, old))
        with HTTPServer(vault, port=0, watch=True) as server:
            c = Client(server)
            assert asked.wait(WAIT_S)
            assert c.call("GET", "/busy")[1]["jobs"] == ["digest"]
            release.set()
            deadline = time.monotonic() + WAIT_S
            hits: list = []
            while not hits and time.monotonic() < deadline:
                hits = c.call("GET", "/search?q=Miso&mode=lexical")[1]["hits"]
                time.sleep(0.02)
            assert hits and hits[0]["text"].startswith("[fact] Has a cat named Miso")
            assert (vault.store.inbox_dir / "done" / "chat.txt").exists()
            while c.call("GET", "/busy")[1]["jobs"] and time.monotonic() < deadline:
                time.sleep(0.02)
            assert c.call("GET", "/busy")[1] == {"busy": False, "jobs": [], "write_lock": False}


def test_a_saved_message_never_waits_for_the_digest_it_starts(tmp_path):
    """With digest_every_messages and an LLM, the N-th message's answer comes while the LLM is still
    digesting (held here until the test lets it go); searches and more saves go on meanwhile."""
    from fake_llm import FakeLLM

    answer, asked, release = held_digest("Rides a green Brompton")

    with FakeLLM(answer) as fake:
        vault = make_vault(tmp_path)
        (vault.root / "memkit.yaml").write_text(f"digest_every_messages: 2\nllm: {{base_url: \"{fake.base_url}\", "
                                                "model: fake}\n")
        with HTTPServer(Vault(vault.root, embedder=FakeEmbedder()), port=0) as server:
            c = Client(server)
            assert c.call("POST", "/sessions", {"session": "voice"})[0] == 201
            for text in ("my bike is a green Brompton", "I ride it to work"):
                assert c.call("POST", "/sessions/voice/messages", {"role": "user", "content": text})[0] == 201
            assert asked.wait(WAIT_S)  # the digest is waiting for the LLM, the save has answered
            assert c.call("POST", "/sessions/voice/messages", {"role": "user", "content": "and on Sundays"})[0] == 201
            assert c.call("GET", "/search?q=rice&mode=lexical")[0] == 200
            assert c.call("GET", "/busy")[1]["jobs"] == ["digest"]
            release.set()
            assert wait_until(lambda: c.call("GET", "/search?q=Brompton&mode=lexical")[1]["hits"], WAIT_S)
            assert wait_until(lambda: not c.call("GET", "/busy")[1]["jobs"], WAIT_S)


def test_proactive(tmp_path):
    """GET /proactive at a given moment (never the wall clock): the moment, quiet hours, the LLM's line."""
    from fake_llm import FakeLLM

    vault = make_vault(tmp_path)
    write(vault.topics_dir / "health.md", "- [pending] Knee physio appointment (urgency high) "
                                          "(ask: How did the physio go?) (due 2026-01-05) (2026-01-04)\n")
    with FakeLLM(["How was the physio on Monday, is the knee any better?"]) as fake:
        (vault.root / "memkit.yaml").write_text(f"quiet_hours: \"22:00-07:30\"\nllm: {{base_url: \"{fake.base_url}\", "
                                                "model: fake}\n")
        with HTTPServer(Vault(vault.root, embedder=FakeEmbedder()), port=0) as server:
            c = Client(server)
            base = "/proactive?last_conversation=2026-01-05T09:00:00"
            status, nudge = c.call("GET", base + "&now=2026-01-06T12:00:00&draft=false")
            assert status == 200 and nudge["now"] is True and nudge["reason"].startswith("overdue")
            assert nudge["question"] == "How did the physio go?" and nudge["opening"] is None
            assert nudge["follow_up"]["urgency"] == "high" and not fake.requests  # draft=false: no LLM
            _, nudge = c.call("GET", base + "&now=2026-01-06T23:00:00")
            assert nudge["now"] is False and nudge["reason"].startswith("quiet hours") and not fake.requests
            _, nudge = c.call("GET", base + "&now=2026-01-06T12:00:00")
            assert nudge["now"] is True and nudge["opening"] == "How was the physio on Monday, is the knee any better?"
            _, nudge = c.call("GET", "/proactive?now=2026-01-05T10:00:00&last_conversation=2026-01-05T09:00:00")
            assert nudge["now"] is False and "last conversation" in nudge["reason"]
            for bad, message in (("now=monday", "expected a time like"), ("draft=maybe", "expected true or false"),
                                 ("when=now", "unknown query parameter 'when'")):
                status, answer = c.call("GET", f"/proactive?{bad}")
                assert status == 400 and message in answer["error"], bad
