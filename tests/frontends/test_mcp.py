"""`memkit mcp` as a real subprocess, driven by the MCP SDK's own stdio client.

Each server loads memkit's built-in model (shipped in the package, on every platform).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

mcp = pytest.importorskip("mcp", reason="the MCP SDK is not installed: pip install 'mcp>=2'")
anyio = pytest.importorskip("anyio")

from fake_llm import FakeLLM  # noqa: E402
from util import FakeEmbedder, vault_with, write  # noqa: E402

from memkit import MemkitError, Vault  # noqa: E402
from memkit.frontends.cli.group import main  # noqa: E402

TOPICS = {
    "cooking": "---\ntitle: Cooking\nsummary: rice and bread\nupdated: 2026-01-03T10:00:00\n---\n# Cooking\n\n"
               "- [preference] Prefers bomba rice for paella #rice (2026-01-01)\n"
               "- Bakes sourdough bread on sundays (2026-01-02)\n",
    "home-lab": "---\ntitle: Home lab\nsummary: raspberry pi cluster\nupdated: 2026-01-02T10:00:00\n---\n"
                "- [fact] Router is a MikroTik hAP ax3 running RouterOS 7.16 #network (2025-09-03)\n",
    "health": "- Allergic to tree nuts (2025-05-01)\n",
}
ENV = {"MEMKIT_MODEL": "memkit-m2v", "HF_HUB_OFFLINE": "1"}


def make_vault(tmp_path: Path, config: str = "") -> Vault:
    vault = Vault.init(tmp_path / "v", profile=False)
    for name, text in TOPICS.items():
        write(vault.topics_dir / f"{name}.md", text)
    if config:
        (vault.root / "memkit.yaml").write_text(config)
    vault = Vault(vault.root)
    vault.recent(rebuild=True)
    return vault


@asynccontextmanager
async def connect(root: Path, errlog, env=None):
    """A ClientSession on `memkit --vault ROOT mcp`, initialised."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "memkit", "--vault", str(root), "mcp"],
                                   env={**ENV, **(env or {})})
    async with stdio_client(params, errlog=errlog) as (read, write_):
        async with ClientSession(read, write_) as session:
            session.init_result = await session.initialize()
            yield session


async def call(client, tool, **arguments):
    """(is_error, text, structured) of one tool call."""
    result = await client.call_tool(tool, arguments)
    return result.is_error, result.content[0].text, result.structured_content


def cli_output(root: Path, args: list[str]) -> str:
    result = CliRunner().invoke(main, ["--vault", str(root), *args])
    assert result.exit_code != 0
    return " ".join(result.output.split())


def digest_answer(request):
    if "outdated" in request["messages"][-1]["content"]:
        return json.dumps({"updates": []})
    return json.dumps({"conclusions": [{"kind": "decision", "text": "Signed up for the Porto half marathon in March",
                                        "topic": "running"}], "new_topic": None})


BAD_CALLS = [  # (tool, arguments, the one-line message, the CLI command giving the same message or None)
    ("search_memories", {"query": ""}, "the query is empty: say what to look for", ["search", ""]),
    ("search_memories", {"query": "   "}, "the query is empty", None),
    ("search_memories", {"query": "rice", "topic": "nosuch"},
     "no topic 'nosuch' (nor subtopics nosuch-*) in this vault", ["search", "rice", "--topic", "nosuch"]),
    ("search_memories", {"query": "rice", "topic": "../x"}, "invalid topic name '../x'", None),
    ("search_memories", {"query": "rice", "since": "yesterday"}, "since must be a date like 2026-03-01, got 'yesterday'",
     ["search", "rice", "--since", "yesterday"]),
    ("search_memories", {"query": "rice", "k": "ten"}, "invalid value for k: expected an integer, got \"ten\"", None),
    ("search_memories", {"query": "rice", "k": 0}, "invalid value for k: 0 is below the minimum 1", None),
    ("search_memories", {"query": "q" * 50_000}, "invalid value for query: 50,000 characters, the limit is 2,000",
     None),
    ("search_memories", {}, "missing required argument 'query'", None),
    ("search_memories", {"query": "rice", "limit": 3}, "unknown argument 'limit'", None),
    ("add_memory", {"text": ""}, "nothing to add: the text is empty", ["add", ""]),
    ("add_memory", {"text": "x", "topic": "../../etc/passwd"}, "invalid topic name '../../etc/passwd'",
     ["add", "x", "--topic", "../../etc/passwd"]),
    ("add_memory", {"text": "x", "topic": "CON"}, "reserved device name", ["add", "x", "--topic", "CON"]),
    ("add_memory", {"text": "x", "kind": "two words"}, "invalid kind 'two words'", ["add", "x", "--kind", "two words"]),
    ("add_memory", {"text": "x" * 1_000_000}, "invalid value for text: 1,000,000 characters, the limit is 4,000",
     None),
    ("add_memory", {"text": 5}, "invalid value for text: expected a string, got 5", None),
    ("add_memory", {"text": "x", "tags": "rice"}, "invalid value for tags: expected a list of strings", None),
    ("add_memory", {"text": "x", "tags": [1]}, "invalid value for tags: expected a list of strings, got 1", None),
    ("forget_memory", {"id": "zzzzzzzz"}, "no entry with id 'zzzzzzzz'", ["forget", "zzzzzzzz"]),
    ("forget_memory", {"id": "ab"}, "entry id 'ab' is too short", ["forget", "ab"]),
    ("why_memory", {"id": "zzzzzzzz"}, "no entry, current or in archive.md, with id 'zzzzzzzz'", ["why", "zzzzzzzz"]),
    ("read_topic", {"name": "nope"}, "no topic 'nope' in topics/", ["show", "nope"]),
    ("read_topic", {"name": "a//b"}, "invalid topic name 'a//b'", ["show", "a//b"]),
    ("get_context", {"message": "hi", "budget_tokens": -5}, "invalid value for budget_tokens: -5 is below", None),
    ("get_context", {"message": ["hi"]}, "invalid value for message: expected a string", None),
    ("no_such_tool", {}, "unknown tool 'no_such_tool'", None),
    ("save_message", {"session": "nope", "role": "user", "content": 5}, "invalid value for content: expected a string, got 5",
     None),
    ("save_message", {"session": "nope", "role": "user"}, "save_message: missing required argument 'content'", None),
    ("save_message", {"session": "nope", "role": "user", "content": "x\x07"}, "the message holds the control character U+0007",
     ["session", "add", "nope", "user", "x\x07"]),  # refused before its session is started
    ("load_session", {"session": "nope", "max_tokens": 0}, "invalid value for max_tokens: 0 is below the minimum 1",
     None),
    ("load_session", {"session": "../../etc", "max_tokens": 10}, "no session '../../etc'", None),
    ("list_sessions", {"archived": "yes"}, "invalid value for archived: expected true or false, got \"yes\"", None),
    ("start_session", {"session": "../x"}, "invalid session id '../x'", ["session", "new", "--id", "../x"]),
    ("start_session", {"session": "x.md"}, "invalid session id 'x.md': it must not end in '.md'",
     ["session", "new", "--id", "x.md"]),
    ("search_sessions", {"query": "   "}, "the query is empty", None),
]


def test_tools_resources_and_errors_over_stdio(tmp_path):
    stderr_path = tmp_path / "stderr.txt"

    async def scenario(fake) -> None:
        vault = make_vault(tmp_path, f"llm: {{base_url: \"{fake.base_url}\", model: m, timeout_s: 5}}\n")
        root = vault.root
        with open(stderr_path, "w") as errlog:
            async with connect(root, errlog) as session:
                assert session.init_result.server_info.name == "memkit"
                assert session.init_result.protocol_version == "2025-11-25"
                assert "search_memories" in (session.init_result.instructions or "")

                # ---- the tools and their input schemas
                tools = {t.name: t for t in (await session.list_tools()).tools}
                assert list(tools) == ["search_memories", "add_memory", "edit_memory", "forget_memory",
                                       "related_memories", "why_memory", "memory_history", "get_context", "list_topics", "read_topic", "recent_topics",
                                       "pending_follow_ups", "mark_done", "set_fact", "get_fact", "list_people",
                                       "add_person", "list_sessions", "start_session",
                                       "save_message", "load_session", "search_sessions", "proactive", "run_upkeep",
                                       "digest_transcript"]
                for tool in tools.values():
                    schema = tool.input_schema
                    assert schema["type"] == "object" and schema["additionalProperties"] is False
                    assert len(tool.description) > 80
                    assert all(p.get("description") for p in schema["properties"].values()) or not schema["properties"]
                search = tools["search_memories"].input_schema
                assert search["required"] == ["query"]
                assert {k: v["type"] for k, v in search["properties"].items()} == {
                    "query": "string", "k": "integer", "topic": "string", "kind": "string", "tag": "string",
                    "since": "string", "person": "string", "relation": "string", "where": "array", "linked": "string",
                    "mode": "string",
                    "min_importance": "number", "fast": "boolean"}
                assert search["properties"]["k"]["default"] == 10
                add = tools["add_memory"].input_schema
                assert add["required"] == ["text"] and add["properties"]["tags"]["items"]["type"] == "string"
                assert tools["forget_memory"].input_schema["required"] == ["id"]
                assert tools["get_context"].input_schema["properties"]["budget_tokens"]["default"] == 2000
                assert tools["search_memories"].annotations.read_only_hint is True
                assert tools["forget_memory"].annotations.destructive_hint is True

                # ---- add, search, a hand edit, forget
                error, _, entry = await call(session, "add_memory", text="Keeps a spare Zigbee dongle in the drawer",
                                             topic="home-lab", kind="fact", tags=["zigbee"])
                assert not error and entry["topic"] == "home-lab" and entry["kind"] == "fact"
                lines = (root / "topics" / "home-lab.md").read_text().splitlines()
                assert lines[entry["line"] - 1] == f"- [fact] Keeps a spare Zigbee dongle in the drawer #zigbee ({entry['date']})"
                error, text, found = await call(session, "search_memories", query="Zigbee dongle", k=3)
                assert not error and found["hits"][0]["id"] == entry["id"]
                assert json.loads(text) == found["hits"]
                assert set(found["hits"][0]) - {"judge", "relevance"} == {"id", "text", "topic", "kind", "tags", "date", "file",
                                                             "line", "score", "cosine", "lexical", "confident"}

                with open(root / "topics" / "cooking.md", "a") as fh:  # a hand edit while the server runs
                    fh.write("- Ferments kimchi in a two litre onggi jar (2026-01-05)\n")
                time.sleep(1.1)  # the in-process index re-checks the files at most once a second
                error, _, found = await call(session, "search_memories", query="kimchi onggi jar", k=3, topic="cooking")
                assert not error and found["hits"][0]["text"].startswith("Ferments kimchi")

                error, _, gone = await call(session, "forget_memory", id=entry["id"])
                assert not error and gone["id"] == entry["id"] and gone["archive"] == "archive.md"
                assert "Zigbee dongle" in (root / "archive.md").read_text()
                assert "Zigbee dongle" not in (root / "topics" / "home-lab.md").read_text()
                error, _, found = await call(session, "search_memories", query="Zigbee dongle")
                assert not error and all("Zigbee" not in h["text"] for h in found["hits"])

                # ---- context, topics, recent
                error, text, ctx = await call(session, "get_context", message="what bread do I bake?", session="c1")
                assert not error and text == ctx["text"] and ctx["session"] == "c1"
                recent = [r.topic for r in Vault(root).recent()]
                assert {r["topic"] for r in ctx["recent"]} == set(recent)
                assert all(f"- {name} (" in text for name in recent)
                error, _, listing = await call(session, "list_topics")
                assert not error and {t["name"] for t in listing["topics"]} == {"cooking", "home-lab", "health"}
                error, _, topic = await call(session, "read_topic", name="cooking")
                assert not error and [e["id"] for e in topic["entries"]] == [e.id for e in Vault(root).topic("cooking").entries]
                error, _, recent_items = await call(session, "recent_topics")
                assert not error and [r["topic"] for r in recent_items["recent"]] == recent

                # ---- resources
                resources = {str(r.uri): r for r in (await session.list_resources()).resources}
                assert set(resources) == {"memkit://context", "memkit://topics/cooking", "memkit://topics/home-lab",
                                          "memkit://topics/health"}
                block = (await session.read_resource("memkit://context")).contents[0].text
                assert "## Recent topics" in block and "## Memory instructions" in block
                # ---- the memory prompt (issue 44.4): the block for a message
                prompts = (await session.list_prompts()).prompts
                assert [p.name for p in prompts] == ["memory"]
                got = await session.get_prompt("memory", {"message": "what bread do I bake?"})
                assert "Bakes sourdough bread" in got.messages[0].content.text
                with pytest.raises(mcp.MCPError, match="unknown prompt"):
                    await session.get_prompt("nosuch", {})
                read = await session.read_resource("memkit://topics/cooking")
                assert read.contents[0].text == (root / "topics" / "cooking.md").read_text()
                templates = (await session.list_resource_templates()).resource_templates
                assert templates[0].uri_template == "memkit://topics/{name}"
                with pytest.raises(mcp.MCPError, match="no topic 'nosuch'"):
                    await session.read_resource("memkit://topics/nosuch")

                # ---- bad arguments: tool errors with the CLI's message; the next call still works
                for tool, arguments, message, cli_args in BAD_CALLS:
                    error, text, _ = await call(session, tool, **arguments)
                    assert error and message in text and "\n" not in text, (tool, arguments, text)
                    assert "--" not in text, text  # MCP errors name the tool's arguments, not the CLI's flags
                    if cli_args:
                        assert text in cli_output(root, cli_args), (text, cli_args)
                    error, _, found = await call(session, "search_memories", query="bomba rice", k=1)
                    assert not error and found["hits"], (tool, arguments)
                assert not (tmp_path / "etc").exists() and not (root / "etc").exists()

                # ---- digest, with the configured (loopback) LLM
                chat = "Maya: I signed up for the Porto half marathon in March!\nAssistant: Great!\n"
                error, _, dry = await call(session, "digest_transcript", text=chat, dry_run=True)
                assert not error and dry["dry_run"] and "+- [decision] Signed up" in dry["diff"]
                assert not (root / "topics" / "running.md").exists()
                error, _, report = await call(session, "digest_transcript", text=chat)
                assert not error and report["written"][0]["topic"] in ("running", "general")
                error, _, again = await call(session, "digest_transcript", text=chat)
                assert not error and again["already_digested"]
                error, _, found = await call(session, "search_memories", query="Porto half marathon", k=1)
                assert not error and "Porto half marathon" in found["hits"][0]["text"]
                error, text, _ = await call(session, "digest_transcript", text="\x00binary")
                assert error and "binary" in text and "/tmp" not in text

    with FakeLLM(digest_answer) as fake:
        anyio.run(scenario, fake)
    log = stderr_path.read_text()
    assert "Traceback" not in log and "memkit mcp: serving" in log


CLIENTS, CLI_WRITERS = 2, 5


def test_concurrent_clients_and_cli_writers_lose_nothing(tmp_path):
    """2 MCP clients (2 server processes) x 20 concurrent add_memory calls, while 5 `memkit add`
    processes write to the same topic: every line ends up in the file exactly once (each process
    costs a second of CPU, the lock's contention is the same with 2 servers as with 4)."""
    vault = make_vault(tmp_path, "topic_split_threshold_lines: 100000\n")  # this test is about the lock
    root = vault.root
    writers: list[subprocess.Popen] = []

    async def clients() -> None:
        ready, go = [], anyio.Event()

        async def client(n: int, errlog) -> None:
            async with connect(root, errlog) as session:
                names = [t.name for t in (await session.list_tools()).tools]
                assert "digest_transcript" not in names  # no LLM configured
                await call(session, "search_memories", query="warm", k=1)  # the model is loaded
                ready.append(n)
                await go.wait()

                async def add(i: int) -> None:
                    error, text, _ = await call(session, "add_memory", text=f"mcp note {n}-{i}", topic="shared")
                    assert not error, text

                async with anyio.create_task_group() as group:
                    for i in range(20):
                        group.start_soon(add, i)

        with open(tmp_path / "stderr.txt", "w") as errlog:
            async with anyio.create_task_group() as group:
                for n in range(CLIENTS):
                    group.start_soon(client, n, errlog)
                with anyio.fail_after(120):
                    while len(ready) < CLIENTS:
                        await anyio.sleep(0.05)
                writers.extend(
                    subprocess.Popen([sys.executable, "-m", "memkit", "--vault", str(root), "add", f"cli note {i}",
                                      "--topic", "shared"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                    for i in range(CLI_WRITERS))
                go.set()

    try:
        anyio.run(clients)
    finally:
        for proc in writers:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err.decode()
    texts = [e.text for e in Vault(root).topic("shared").entries]
    expected = ({f"mcp note {n}-{i}" for n in range(CLIENTS) for i in range(20)}
                | {f"cli note {i}" for i in range(CLI_WRITERS)})
    assert sorted(t.rsplit(" (", 1)[0] for t in texts) == sorted(expected)  # every line exactly once
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def test_stdout_carries_only_protocol(tmp_path):
    """Raw JSON-RPC over the pipes: every stdout line is a JSON-RPC message, even while the model
    falls back with a warning (the vault names a model that is not cached) and calls fail."""
    vault = make_vault(tmp_path)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search_memories",
                                                                        "arguments": {"query": "bomba rice"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add_memory",
                                                                        "arguments": {"text": "x", "topic": "../x"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "add_memory",
                                                                        "arguments": {"text": "Likes green tea"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "resources/read", "params": {"uri": "memkit://topics/nope"}},
    ]
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "memkit", "--vault", str(vault.root), "mcp"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answers = {}
    try:
        for request in requests:
            proc.stdin.write((json.dumps(request) + "\n").encode())
            proc.stdin.flush()
            if "id" in request:
                while True:  # read up to this request's answer (nothing else may appear)
                    line = proc.stdout.readline()
                    assert line, proc.stderr.read().decode()
                    message = json.loads(line)
                    assert message["jsonrpc"] == "2.0"
                    if message.get("id") == request["id"]:
                        answers[request["id"]] = message
                        break
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    for line in rest.splitlines():
        json.loads(line)
    assert answers[2]["result"]["isError"] is False
    assert answers[3]["result"]["isError"] is True
    assert answers[4]["result"]["structuredContent"]["topic"] == "general"
    assert answers[5]["error"]["code"] == -32602
    stderr = proc.stderr.read().decode()
    assert "Traceback" not in stderr


def test_missing_sdk_is_one_line_and_exit_1(tmp_path):
    vault = make_vault(tmp_path)
    blocker = tmp_path / "block"
    write(blocker / "mcp" / "__init__.py", "raise ImportError('blocked for the test')\n")
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(blocker)!r}); "
                           "from memkit.frontends.cli.group import main; main()", "--vault", str(vault.root), "mcp"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "memkit: error: memkit mcp needs the MCP Python SDK, which is not installed: pip install 'mcp>=2'"]


def test_in_process_client_unexpected_error_is_a_tool_error(tmp_path, caplog, monkeypatch):
    """The SDK's in-memory Client on the same Server object (no model download: a fake embedder):
    a crash inside a tool is a tool error naming it, logged with its traceback; the next call works."""
    from mcp import Client

    from memkit.frontends.mcp.server import Memory, build_server

    memory = Memory.open(vault_with(tmp_path, TOPICS, FakeEmbedder()))
    server = build_server(memory)

    def broken() -> None:
        raise RuntimeError("disk on fire")

    async def scenario() -> None:
        async with Client(server) as client:
            memory.vault.topics = broken  # type: ignore[method-assign]  # list_topics calls it
            result = await client.call_tool("list_topics", {})
            assert result.is_error
            assert result.content[0].text == ("unexpected error: RuntimeError: disk on fire "
                                              "(the traceback is in the server's stderr log)")
            result = await client.call_tool("search_memories", {"query": "bomba rice", "k": 1})
            assert not result.is_error and result.structured_content["hits"][0]["topic"] == "cooking"

    import logging

    monkeypatch.setattr(logging.getLogger("memkit"), "propagate", True)  # the CLI's tests turn it off
    with caplog.at_level("INFO", logger="memkit"):
        anyio.run(scenario)
    assert "Traceback" in caplog.text and "disk on fire" in caplog.text


def test_the_schemas_use_the_librarys_own_limits(tmp_path):
    """The typed tools' schemas come from the methods' signatures, with the library's own limits."""
    from memkit.base.limits import MAX_ENTRY_CHARS, MAX_QUERY_CHARS, MAX_SESSION_MESSAGE_CHARS
    from memkit.frontends.mcp.server import Memory, TypedTools

    typed = TypedTools(Memory.open(vault_with(tmp_path, TOPICS, FakeEmbedder())))
    assert typed.schema("add_memory")["properties"]["text"]["maxLength"] == MAX_ENTRY_CHARS
    assert typed.schema("search_memories")["properties"]["query"]["maxLength"] == MAX_QUERY_CHARS
    assert typed.schema("save_message")["properties"]["content"]["maxLength"] == MAX_SESSION_MESSAGE_CHARS
    assert typed.schema("search_memories")["properties"]["topic"] == {
        "type": "string", "maxLength": 200, "default": None,
        "description": "Only this topic and its subtopics (topic-*). Topic name: lowercase words joined by '-', "
                       "e.g. 'cooking' or 'home-lab' (list_topics shows the existing ones)."}
    assert typed.schema("forget_memory") == {
        "type": "object", "required": ["id"], "additionalProperties": False,
        "properties": {"id": {"type": "string", "maxLength": 200, "minLength": 1,
                              "description": "The entry id, e.g. '3f2a9c1e'."}}}


def test_session_tools_continue_yesterdays_conversation(tmp_path):
    """An assistant lists sessions, loads one's recent history, appends to it and searches past ones."""
    vault = make_vault(tmp_path)
    vault.conversations.new(session_id="yesterday", title="Lisbon trip", system_prompt="You are a travel assistant.")
    vault.conversations.append("yesterday", "user", "I fly to Lisbon on March 3rd")
    vault.conversations.append("yesterday", "assistant", "Noted: TAP, March 3rd.", important=True)

    async def scenario() -> None:
        with open(tmp_path / "stderr.txt", "w") as errlog:
            async with connect(vault.root, errlog) as session:
                error, _, listing = await call(session, "list_sessions")
                assert not error and [(s["id"], s["title"], s["messages"]) for s in listing["sessions"]] == [
                    ("yesterday", "Lisbon trip", 2)]
                error, text, loaded = await call(session, "load_session", session="yesterday", max_tokens=100)
                assert not error and text.splitlines()[0] == "system: You are a travel assistant."
                assert [m["role"] for m in loaded["messages"]] == ["system", "user", "assistant"]
                error, _, saved = await call(session, "save_message", session="yesterday", role="user",
                                             content="Which hotel did we pick?")
                assert not error and saved["role"] == "user" and saved["session"] == "yesterday"
                error, _, started = await call(session, "start_session", title="New chat")
                assert not error and len(started["id"]) == 8
                error, _, found = await call(session, "search_sessions", query="when do I fly to Lisbon")
                assert not error and found["hits"][0]["session"] == "yesterday"
                error, _, saved = await call(session, "save_message", session="nope", role="user", content="x")
                assert not error and saved["created"] is True  # an id with no session starts one
                error, _, saved = await call(session, "save_message", session="nope", role="user", content="y")
                assert not error and "created" not in saved
                error, text, _ = await call(session, "save_message", session="yesterday", role="robot", content="x")
                assert error and text.startswith("invalid role 'robot'")

    anyio.run(scenario)
    assert [m.content for m in Vault(vault.root).conversations.show("yesterday").messages][-1] == "Which hotel did we pick?"


def test_proactive_and_upkeep_tools(tmp_path):
    """The proactive tool answers like `memkit proactive --json` for the moment given; run_upkeep
    runs the scheduled jobs; a bad moment is one line."""
    from memkit.frontends.mcp.server import ArgumentError, Memory, TypedTools

    v = vault_with(tmp_path, {"life": "- [pending] Job interview at Acme (due 2026-11-27) "
                                      "(ask: How did the Acme interview go?) (2026-11-24)\n"}, FakeEmbedder())
    typed = TypedTools(Memory.open(v))
    assert typed.schema("proactive")["properties"]["at"]["maxLength"] == 40
    outcome = typed.call("proactive", {"at": "2026-11-28 10:00"})
    assert outcome.text == "now: overdue: {} in life\nsay: How did the Acme interview go?".format(
        outcome.structured["follow_up"]["id"])
    assert outcome.structured["now"] is True and outcome.structured["opening"] is None
    early = typed.call("proactive", {"at": "2026-11-20 10:00"})
    assert early.structured["now"] is False and early.text.startswith("not now: nothing to follow up on")
    with pytest.raises(MemkitError, match="at must be like '2026-11-28 09:00', got 'soon'"):
        typed.call("proactive", {"at": "soon"})
    with pytest.raises(ArgumentError):
        typed.call("proactive", {"at": 5})
    upkeep = typed.call("run_upkeep", {"at": "2026-11-28 10:00"})
    assert [j["job"] for j in upkeep.structured["jobs"]] == ["tidy", "session-digest", "session-aging",
                                                             "session-prune", "distill"]
    assert "session-aging: no conversation is due" in upkeep.text.splitlines()
