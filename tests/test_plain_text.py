"""No control characters in a person's files (issue 41.12): HTTP ``POST /people`` and MCP
``add_person`` wrote NUL, ESC and BEL into people.md; a session's title, system prompt, user, tags,
metadata and tool names went raw into its header and headings, ESC and BEL into its messages. Each
is refused with an error naming the character (an imported file's are shown as control pictures),
and ``memkit check`` names the file and line of any already there.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from util import FakeEmbedder, write

from memkit import Vault
from memkit.errors import InvalidValue
from memkit.formats.plain import check_plain, control_lines, escape_controls
from memkit.frontends.cli.group import main

CONTROLS = {"NUL": "\x00", "ESC": "\x1b", "BEL": "\x07"}


def no_controls(root: Path) -> list[str]:
    """Every file under the vault (but .memkit/) holding a control character, with its line."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and ".memkit" not in path.parts and ".git" not in path.parts:
            text = path.read_bytes().decode("utf-8", errors="replace")
            found += [f"{path.relative_to(root)}:{line} {what}" for line, what in control_lines(text)]
    return found


def make(tmp_path: Path) -> Vault:
    return Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())


def test_the_helper_refuses_escapes_and_finds():
    with pytest.raises(InvalidValue, match=r"a person's name holds the control character U\+001B \(ESC\) at position 4"):
        check_plain("Ana\x1b[31m", "a person's name")
    assert check_plain("tab\tand\nnewline\r\n", "x") == "tab\tand\nnewline\r\n"
    assert escape_controls("red \x1b[31m bell \x07 nul \x00 del \x7f c1 \x85") == "red ␛[31m bell ␇ nul ␀ del ␡ c1 \ufffd"
    assert control_lines("ok\nbad \x07\nok\n\x1b") == [(2, "U+0007 (BEL)"), (4, "U+001B (ESC)")]


@pytest.mark.parametrize("name", CONTROLS)
def test_http_post_people_refuses_a_control_character(tmp_path, name):
    from test_privacy import Client

    from memkit.frontends.http.api import HTTPServer

    vault = make(tmp_path)
    with HTTPServer(vault, port=0) as server:
        c = Client(server)
        for body in ({"name": f"Ana{CONTROLS[name]}"}, {"name": "Ana", "about": f"climbs {CONTROLS[name]} on weekends"},
                     {"name": "Ana", "relation": "family", "detail": f"sister{CONTROLS[name]}"}):
            status, answer = c.call("POST", "/people", body)
            assert status == 400 and f"({name})" in answer["error"] and "plain text only" in answer["error"], answer
        status, answer = c.call("POST", "/people", {"name": "Ana", "about": "climbs on weekends"})
        assert status == 201, answer
    assert no_controls(vault.root) == []
    assert "- Ana: climbs on weekends" in (vault.root / "people.md").read_text()


def test_mcp_add_person_refuses_a_control_character(tmp_path):
    from memkit.frontends.mcp.server import Memory, TypedTools

    vault = make(tmp_path)
    tools = TypedTools(Memory.open(vault))
    for value in CONTROLS.values():
        with pytest.raises(InvalidValue, match="control character"):
            tools.call("add_person", {"name": "Tom", "about": f"runs billing{value}"})
    assert not (vault.root / "people.md").exists() or no_controls(vault.root) == []


@pytest.mark.parametrize("field, value", [
    ("title", "Trip\x1b[2J"), ("system_prompt", "You are helpful.\x07"), ("user", "maya\x00"),
    ("tags", ["travel", "\x1b[31mred"]), ("metadata", {"client": "web\x07"}), ("metadata", {"k\x1b": "v"}),
])
def test_a_session_header_refuses_a_control_character(tmp_path, field, value):
    vault = make(tmp_path)
    with pytest.raises(InvalidValue, match="control character"):
        vault.conversations.new(session_id="s1", **{field: value})
    assert not list((vault.root / "sessions").glob("*.md")) if (vault.root / "sessions").is_dir() else True


def test_a_message_and_its_tool_name_refuse_a_control_character(tmp_path):
    vault = make(tmp_path)
    vault.conversations.new(session_id="s1", title="Weather")
    for content in ("it is \x1b[1msunny\x1b[0m", "ding \x07", "nul \x00"):
        with pytest.raises(InvalidValue, match="the message holds the control character"):
            vault.conversations.append("s1", "user", content)
    with pytest.raises(InvalidValue, match="a message's name holds the control character U\\+001B"):
        vault.conversations.append("s1", "tool", "18 C", name="weather\x1b]0;pwned\x07")
    vault.conversations.append("s1", "tool", "18 C and sunny", name="weather")
    out = CliRunner().invoke(main, ["--vault", str(vault.root), "session", "add", "s1", "user", "bell \x07"])
    assert out.exit_code != 0 and "control character U+0007 (BEL)" in out.output
    assert no_controls(vault.root) == []


def test_an_imported_conversation_shows_its_control_characters(tmp_path):
    vault = make(tmp_path)
    lines = [json.dumps({"role": "user", "content": "run the tests"}),
             json.dumps({"role": "tool", "name": "pytest\x07", "content": "\x1b[32m3 passed\x1b[0m"}),
             json.dumps({"role": "assistant", "content": "all green"})]
    data = "\n".join(lines).encode()
    (first,) = vault.conversations.import_(data, name="chat.jsonl", session_id="imp")
    assert first.added == 3
    text = (vault.root / first.session.file).read_text()
    assert "␛[32m3 passed␛[0m" in text and "name=pytest␇" in text
    (again,) = vault.conversations.import_(data, name="chat.jsonl", session_id="imp")
    assert again.added == 0  # the same messages, shown the same way
    assert no_controls(vault.root) == []


def test_memkit_check_names_the_file_and_line_of_a_control_character(tmp_path):
    vault = make(tmp_path)
    write(vault.root / "topics" / "home.md", "# Home\n\n- Plain line (2026-01-02)\n- Bell \x07 here (2026-01-02)\n")
    write(vault.root / "people.md", "# People\n\n- Ana (family: sister)\n- Tom\x1b[31m (colleague)\n")
    vault.conversations.new(session_id="s1", title="Plain")
    session = next((vault.root / "sessions").glob("*-s1.md"))
    session.write_text(session.read_text() + "\n### user · 2026-01-02T10:00:00Z\nhi \x1b[2J\n")
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "check", "--json"])
    assert result.exit_code == 1, result.output
    found = {(p["file"], p["line"]) for p in json.loads(result.output)["problems"] if p["kind"] == "control"}
    assert found == {("topics/home.md", 4), ("people.md", 4), (f"sessions/{session.name}", 9)}, result.output
    text = CliRunner().invoke(main, ["--vault", str(vault.root), "check"]).output
    assert "people.md line 4: a control character U+001B (ESC)" in text
