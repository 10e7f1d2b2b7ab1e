"""The conversation in the prompt (issue 30.5): `context --session ID` adds the conversation session's
last turns and its earlier relevant messages, within the budget; an unknown id starts a conversation;
`clear` ends its window without deleting anything; the CLI, MCP and HTTP give the same."""
from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from click.testing import CliRunner
from util import FakeEmbedder, write

from memkit import Vault
from memkit.context.block import reset_session, session_path
from memkit.frontends.cli.group import main

NOW = datetime(2026, 2, 14, 12, 0, 0)

TOPICS = {
    "cooking": ["Prefers bomba rice for paella", "Uses homemade chicken broth never stock cubes"],
    "pets": ["Dog Biscuit sees the vet in Arroios every spring"],
}


def make_vault(tmp_path, settings: str = "") -> Vault:
    root = Vault.init(tmp_path / "v", profile=False).root
    write(root / "memkit.yaml", "embedding_similarity_threshold: 0.4\nmax_memories_per_search: 3\n"
                                "session_timeout_minutes: 7\ncontext_turns: 3\n" + settings)
    for name, entries in TOPICS.items():
        head = f"---\ntitle: {name.capitalize()}\nsummary: all about {name}\nupdated: 2026-02-01T10:00:00\n---\n# {name}\n\n"
        write(root / "topics" / f"{name}.md", head + "".join(f"- {e}\n" for e in entries))
    return Vault(root, embedder=FakeEmbedder())


def talk(v: Vault, sid: str, lines: list[str], start: datetime = NOW) -> None:
    for i, line in enumerate(lines):
        role = "user" if i % 2 == 0 else "assistant"
        v.conversations.append(sid, role, line, now=start + timedelta(seconds=i), exact=True)


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


CHAT = ["I am planning a dinner party", "How many guests?", "Eight guests on Saturday",
        "Any dietary needs?", "One guest is vegetarian", "Noted: one vegetarian guest."]


@pytest.fixture
def vault(tmp_path) -> Vault:
    v = make_vault(tmp_path)
    v.conversations.new(session_id="dinner", now=NOW)
    talk(v, "dinner", CHAT)
    return v


def test_the_last_turns_in_order(vault):
    ctx = vault.context("what rice for the paella?", session="dinner", now=NOW + timedelta(minutes=1))
    conv = section(ctx.text, "Conversation")
    assert conv.index("- assistant: Any dietary needs?") < conv.index("- user: One guest is vegetarian") \
        < conv.index("- assistant: Noted: one vegetarian guest.")
    assert "Eight guests on Saturday" not in conv.split("The last messages")[1]  # only the last 3 (context_turns)
    assert [t["content"] for t in ctx.conversation["turns"]] == CHAT[3:]
    assert ctx.text.index("## Relevant memories") < ctx.text.index("## Conversation") \
        < ctx.text.index("## Memory instructions")
    assert "bomba rice" in section(ctx.text, "Relevant memories")  # the memories are kept
    assert ctx.omitted["turns"] == 0


def test_earlier_relevant_messages(vault):
    ctx = vault.context("how many guests are coming on Saturday?", session="dinner", now=NOW + timedelta(minutes=1))
    earlier = section(ctx.text, "Conversation").split("The last messages")[0]
    assert "- user: Eight guests on Saturday" in earlier
    assert "Eight guests on Saturday" in [m["content"] for m in ctx.conversation["earlier"]]
    assert len(ctx.conversation["earlier"]) <= 3


def test_the_turns_are_shed_before_the_messages_own_memories(tmp_path):
    v = make_vault(tmp_path, "context_turns: 6\n")
    v.conversations.new(session_id="long", now=NOW)
    talk(v, "long", [f"message number {i} " + "blah " * 40 for i in range(6)])
    roomy = v.context("bomba rice paella", session="long", budget_tokens=5000, now=NOW + timedelta(minutes=1))
    assert roomy.omitted["turns"] == 0 and len(roomy.conversation["turns"]) == 6
    tight = v.context("bomba rice paella", session="long", budget_tokens=roomy.tokens - 120,
                      now=NOW + timedelta(minutes=1))
    assert tight.tokens <= roomy.tokens - 120
    assert tight.omitted["turns"] > 0 and tight.omitted["memories"] == 0
    assert "bomba rice" in tight.text
    shown = [t["content"] for t in tight.conversation["turns"]]
    assert shown and shown[-1].startswith("message number 5")  # the oldest go first
    assert "more not shown)" in section(tight.text, "Conversation")


def test_an_unknown_id_starts_a_conversation(tmp_path):
    v = make_vault(tmp_path)
    ctx = v.context("hello, bomba rice?", session="new-chat", now=NOW)
    assert ctx.conversation["started"] is True and ctx.conversation["turns"] == []
    assert "## Conversation" not in ctx.text  # nothing said yet
    assert v.conversations.show("new-chat").messages == []  # context does not save the message
    v.conversations.append("new-chat", "user", "hello, bomba rice?", exact=True)
    again = v.context("and the broth?", session="new-chat", now=NOW + timedelta(minutes=1))
    assert again.conversation["started"] is False
    assert "- user: hello, bomba rice?" in section(again.text, "Conversation")


def test_an_id_that_names_no_conversation_keeps_the_context_state_only(tmp_path):
    v = make_vault(tmp_path)
    ctx = v.context("bomba rice paella", session="chat 1", now=NOW)  # not a conversation id
    assert ctx.conversation is None and "turns" not in ctx.omitted and v.conversations.list() == []
    assert json.loads(session_path(v.store, "chat 1").read_text())["turns"] == 1


def test_clear_hides_the_earlier_turns_but_the_file_keeps_them(vault):
    first = vault.context("rice", session="dinner", now=NOW + timedelta(minutes=1))
    assert first.conversation["turns"]
    cleared = vault.context("rice", session="dinner", clear=True, now=NOW + timedelta(minutes=2))
    assert cleared.conversation["turns"] == [] and "## Conversation" not in cleared.text
    assert [m.content for m in vault.conversations.show("dinner").messages] == CHAT  # nothing deleted
    talk(vault, "dinner", ["Let us start over: a picnic"], start=NOW + timedelta(minutes=3))
    after = vault.context("how many guests on Saturday?", session="dinner", now=NOW + timedelta(minutes=4))
    assert [t["content"] for t in after.conversation["turns"]] == ["Let us start over: a picnic"]
    assert after.conversation["earlier"] == []  # nor are the cleared messages searched
    # reset forgets the memories, not the clear point; neither does the session timeout
    reset_session(vault.store, "dinner")
    later = vault.context("picnic", session="dinner", now=NOW + timedelta(hours=3))
    assert [t["content"] for t in later.conversation["turns"]] == ["Let us start over: a picnic"]


def test_the_context_state_is_kept_beside_the_conversation(vault):
    vault.context("bomba rice paella", session="dinner", now=NOW + timedelta(minutes=1))
    ctx = vault.context("dog Biscuit vet", session="dinner", now=NOW + timedelta(minutes=2))
    assert {h.topic for h in ctx.memories} == {"cooking", "pets"}  # memories accumulate as before


class Client:
    """JSON requests to a server on loopback."""

    def __init__(self, server) -> None:
        self.host, self.port = server.socket.getsockname()[:2]

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        import http.client

        con = http.client.HTTPConnection(self.host, self.port, timeout=60)
        con.request(method, path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        resp = con.getresponse()
        answer = json.loads(resp.read())
        con.close()
        return resp.status, answer


def test_the_front_ends_give_the_same(vault):
    pytest.importorskip("mcp")
    pytest.importorskip("starlette")
    from memkit.frontends.http.api import HTTPServer
    from memkit.frontends.mcp.server import Memory, TypedTools

    tools = TypedTools(Memory.open(vault))
    mcp = tools.call("get_context", {"message": "rice", "session": "dinner"}).structured
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "context", "rice", "--session", "dinner", "--json"],
                             obj={"vault_obj": vault})
    assert out.exit_code == 0, out.output
    cli = json.loads(out.output)
    with HTTPServer(vault, port=0) as server:
        status, http = Client(server).call("POST", "/context", {"message": "rice", "session": "dinner"})
        assert status == 200
        status, http_cleared = Client(server).call("POST", "/context",
                                                   {"message": "rice", "session": "dinner", "clear": True})
    assert mcp["conversation"]["turns"] == http["conversation"]["turns"] == cli["conversation"]["turns"]
    assert [t["content"] for t in cli["conversation"]["turns"]] == CHAT[3:]
    assert http_cleared["conversation"]["turns"] == []
    talk(vault, "dinner", ["A new message"], start=NOW + timedelta(minutes=5))
    assert [t["content"] for t in tools.call("get_context", {"message": "rice", "session": "dinner"})
            .structured["conversation"]["turns"]] == ["A new message"]
    mcp_cleared = tools.call("get_context", {"message": "rice", "session": "dinner", "clear": True}).structured
    assert mcp_cleared["conversation"]["turns"] == []
    talk(vault, "dinner", ["Another message"], start=NOW + timedelta(minutes=6))
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "context", "rice", "--session", "dinner", "--clear"],
                             obj={"vault_obj": vault})
    assert out.exit_code == 0 and "## Conversation" not in out.output
