"""Sessions that import, save, search and age without copies, silent drops or leftovers."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from util import FakeEmbedder

from memkit import Vault
from memkit.frontends.http.api import HTTPServer

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


@pytest.fixture
def v(tmp_path: Path) -> Vault:
    return Vault(Vault.init(tmp_path / "v", profile=False).root, embedder=FakeEmbedder())


# ---- item 9: session search after a session's first message ----------------------------------------

def test_searching_sessions_before_and_after_the_first_message(v: Vault) -> None:
    v.conversations.new(session_id="a")
    assert v.conversations.search("hello") == []
    v.conversations.append("a", "user", "hello world")
    assert [h.text for h in v.conversations.search("hello")] == ["hello world"]
    v.conversations.append("a", "assistant", "hello again")
    assert {h.text for h in v.conversations.search("hello")} == {"hello world", "hello again"}


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

    from memkit.frontends.cli.group import main
    return CliRunner().invoke(main, ["--vault", str(v.root), *args], obj={"vault_obj": v})


def test_an_id_another_id_starts_with_is_free(v: Vault) -> None:
    v.conversations.new(session_id="imp2", now=T0)
    assert v.conversations.new(session_id="imp", now=T0).id == "imp"  # library
    for sid in ("cli2", "web2", "doc2"):
        v.conversations.new(session_id=sid, now=T0)
    result = cli(v, "session", "new", "--id", "cli")
    assert result.exit_code == 0, result.output
    result = cli(v, "session", "new", "--id", "cli")
    assert result.exit_code == 1 and "exists already" in result.output  # the same id is still taken
    data = json.dumps([{"role": "user", "content": "imported", "time": "2026-03-01T09:05:00Z"}]).encode()
    (imported,) = v.conversations.import_(data, session_id="doc")
    assert imported.created and imported.session.id == "doc" and v.conversations.show("doc2").messages == []
    with HTTPServer(v, port=0) as server:
        status, answer = http_call(server, "POST", "/sessions", {"session": "web"})
        assert status == 201 and answer["id"] == "web", answer
        assert http_call(server, "POST", "/sessions", {"session": "web"})[0] == 409


def test_an_id_ending_in_md_is_refused_everywhere(v: Vault) -> None:
    from memkit import InvalidValue

    with pytest.raises(InvalidValue, match="must not end in '.md'"):
        v.conversations.new(session_id="x.md")
    result = cli(v, "session", "new", "--id", "x.md")
    assert result.exit_code != 0 and "must not end in '.md'" in result.output
    with pytest.raises(InvalidValue, match="must not end in '.md'"):
        v.conversations.import_(b'[{"role": "user", "content": "hi"}]', session_id="x.md")
    with HTTPServer(v, port=0) as server:
        status, answer = http_call(server, "POST", "/sessions", {"session": "x.md"})
        assert status == 400 and "must not end in '.md'" in answer["error"]
    assert not (v.root / "sessions").exists() or list((v.root / "sessions").glob("*.md")) == []
    v.conversations.new(session_id="v1.0", now=T0)  # a dot elsewhere is fine, and reachable
    v.conversations.append("v1.0", "user", "hi", now=at(1))
    assert [m.content for m in v.conversations.show("v1.0").messages] == ["hi"]


# ---- item 8: re-import adds only the messages the session lacks -------------------------------------

def timed(n: int, start: int = 0, prefix: str = "message") -> list[dict]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"{prefix} {i}: " + "words " * 5,
             "time": (T0 + timedelta(minutes=i)).isoformat()} for i in range(start, n)]


def contents(v: Vault, sid: str) -> list[str]:
    return [m.content for m in v.conversations.show(sid).messages]


def test_reimport_after_the_session_gained_a_message(v: Vault) -> None:
    v.conversations.import_(json.dumps(timed(3)).encode(), session_id="s")
    v.conversations.append("s", "assistant", "a message saved since", now=at(2.5))
    (again,) = v.conversations.import_(json.dumps(timed(5)).encode(), session_id="s")
    assert again.added == 2
    got = contents(v, "s")
    assert len(got) == 6 and len(set(got)) == 6 and got[3] == "a message saved since"
    v.conversations.append("s", "user", "ok", now=at(10))  # the same words at another time are another message
    (again,) = v.conversations.import_(json.dumps(timed(5) + [{"role": "user", "content": "ok", "time": at(11).isoformat()}]
                                            ).encode(), session_id="s")
    assert again.added == 1 and contents(v, "s").count("ok") == 2


def test_capture_save_after_the_session_gained_a_message(tmp_path: Path, v: Vault) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "I moved to Porto"},
                                {"role": "assistant", "content": "Noted!"}]))
    v.capture(path=chat, session="porto", save=True)
    v.conversations.append("porto", "user", "a note typed in between")
    chat.write_text(json.dumps([{"role": "user", "content": "I moved to Porto"},
                                {"role": "assistant", "content": "Noted!"},
                                {"role": "user", "content": "and I started a new job"}]))
    again = v.capture(path=chat, session="porto", save=True)
    assert again.saved["added"] == 1
    assert sorted(contents(v, "porto")) == sorted(["I moved to Porto", "Noted!", "a note typed in between",
                                                   "and I started a new job"])


def test_reimport_of_an_aged_session_adds_only_what_is_new(tmp_path: Path) -> None:
    from fake_llm import FakeLLM

    summary = {"summary": "They talked about messages.", "key_points": ["many words"], "emotional_highlights": []}
    with FakeLLM(lambda request: json.dumps(summary)) as fake:
        root = Vault.init(tmp_path / "aged", profile=False).root
        (root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n")
        v = Vault(root, embedder=FakeEmbedder())
        long = [dict(m, content=m["content"] * 4) for m in timed(6)]
        v.conversations.import_(json.dumps(long).encode(), session_id="old", now=T0)
        next(j for j in v.upkeep.run(now=T0 + timedelta(days=4)).jobs if j.name == "session-aging")
        assert v.conversations.show("old").stage == "summary" and v.conversations.show("old").messages == []
        newer = long + [{"role": "user", "content": "one more thing", "time": at(60).isoformat()}]
        (again,) = v.conversations.import_(json.dumps(newer).encode(), session_id="old")
        assert again.added == 1 and contents(v, "old") == ["one more thing"]
        assert len(v.conversations.show_raw("old").messages) == 7


def test_a_file_cut_short_by_a_kill_is_completed_not_duplicated(v: Vault) -> None:
    from memkit.formats.session import render_message
    from memkit.sessions.folder import Sessions

    v.conversations.import_(json.dumps(timed(10)).encode(), session_id="big")
    path = v.root / v.conversations.show("big").file
    whole = timed(40)
    # the next import's append, killed part way: every cut point (inside a heading, inside a content)
    blocks = "".join(render_message(Sessions.message(m["role"], m["content"], time=m["time"])) for m in whole[10:])
    before = path.read_bytes()
    for cut in (1, 5, 40, len(blocks) // 2, len(blocks) - 3):
        path.write_bytes(before + blocks[:cut].encode())
        (again,) = v.conversations.import_(json.dumps(whole).encode(), session_id="big")
        got = contents(v, "big")
        assert got == [m["content"] for m in whole], cut
        (none,) = v.conversations.import_(json.dumps(whole).encode(), session_id="big")
        assert none.added == 0 and contents(v, "big") == got


def test_a_claude_code_turn_that_grew_is_completed(tmp_path: Path, v: Vault) -> None:
    transcript = tmp_path / "cc.jsonl"
    lines = [{"type": "user", "sessionId": "cc-9", "timestamp": "2026-03-01T10:00:00Z",
              "message": {"role": "user", "content": "rename the module"}},
             {"type": "assistant", "sessionId": "cc-9", "timestamp": "2026-03-01T10:00:09Z",
              "message": {"role": "assistant", "content": [{"type": "text", "text": "Renamed."}]}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    v.capture(path=transcript, save=True)
    lines.append({"type": "assistant", "sessionId": "cc-9", "timestamp": "2026-03-01T10:00:20Z",
                  "message": {"role": "assistant", "content": [{"type": "text", "text": "Tests pass too."}]}})
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    v.capture(path=transcript, save=True)
    assert contents(v, "cc-9") == ["rename the module", "Renamed.\n\nTests pass too."]


# ---- item 11: nothing silently dropped ---------------------------------------------------------------

def test_malformed_headings_stay_readable_and_are_named(v: Vault, caplog) -> None:
    import logging

    s = v.conversations.new(session_id="edited", now=T0)
    v.conversations.append("edited", "user", "a first real message", now=at(1))
    path = v.root / s.file
    with open(path, "a") as fh:
        fh.write("\n### user · not-a-time\nhand typed reminder about the boiler\n"
                 "\n### robot · 2026-03-01T09:05:00Z\nbeep from the thermostat\n"
                 "\n### Assistant · 2026-03-01T09:06:00Z\ncapitalised role\n")
    lines = path.read_text().splitlines()
    with caplog.at_level(logging.WARNING, logger="memkit"):
        got = [(m.role, m.name, m.content) for m in v.conversations.show("edited").messages]
    assert got == [("user", None, "a first real message"),
                   ("user", None, "hand typed reminder about the boiler"),
                   ("user", "robot", "beep from the thermostat"),
                   ("assistant", None, "capitalised role")]
    said = " | ".join(r.getMessage() for r in caplog.records)
    bad_time = lines.index("### user · not-a-time") + 1
    robot = lines.index("### robot · 2026-03-01T09:05:00Z") + 1
    assert f"{s.file} line {bad_time}: 'not-a-time' is not a time" in said
    assert f"{s.file} line {robot}: unknown role 'robot'" in said
    exported = v.conversations.export("edited")
    assert "boiler" in exported and "thermostat" in exported
    assert "boiler" in " ".join(m.content for m in v.conversations.window("edited", 1000).messages)
    assert [h.text for h in v.conversations.search("boiler reminder", k=1)] == ["hand typed reminder about the boiler"]
    shown = cli(v, "session", "show", "edited")
    assert shown.exit_code == 0 and "boiler" in shown.output and "thermostat" in shown.output


def test_a_message_that_reads_as_a_malformed_heading_round_trips(v: Vault) -> None:
    v.conversations.new(session_id="rt", now=T0)
    text = "### user · see below\n### Robot · 2026-01-01T00:00:00Z\n### Step 1 · unpack"
    v.conversations.append("rt", "user", text, now=at(1))
    assert [m.content for m in v.conversations.show("rt").messages] == [text]


def cc_line(role: str, text: str, stamp: str) -> bytes:
    return json.dumps({"type": role, "sessionId": "cc-bad", "timestamp": stamp,
                       "message": {"role": role, "content": text}}).encode() + b"\n"


def test_capture_names_a_line_it_cannot_read(tmp_path: Path, v: Vault, caplog) -> None:
    import logging

    transcript = tmp_path / "cc.jsonl"
    transcript.write_bytes(cc_line("user", "first", "2026-03-01T10:00:00Z")
                           + b'{"type": "assistant", "message": {"role": "assistant", "content": "caf\xe9"}}\n'
                           + cc_line("assistant", "third", "2026-03-01T10:00:09Z"))
    with caplog.at_level(logging.WARNING, logger="memkit"):
        result = v.capture(path=transcript, save=True)
    assert result.skipped == [f"{transcript} line 2: not valid UTF-8 (byte 71)"]
    said = " | ".join(r.getMessage() for r in caplog.records)
    assert f"{transcript} line 2: not valid UTF-8" in said
    assert result.to_dict()["skipped"] == result.skipped
    assert [m.content for m in v.conversations.show("cc-bad").messages] == ["first", "third"]  # --save reads it the same way
    out = cli(v, "capture", str(transcript))
    assert out.exit_code == 0 and f"{transcript} line 2: not valid UTF-8" in out.output


@pytest.mark.parametrize("command", ["session import", "capture", "digest"])
def test_deeply_nested_json_is_a_one_line_error_naming_the_file(tmp_path: Path, v: Vault, command: str) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = cli(v, *command.split(), str(deep))
    assert result.exit_code != 0
    assert "RecursionError" not in result.output and "unexpected error" not in result.output, result.output
    assert "deep.json" in result.output and "nested too deeply" in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output


# ---- item 12: leftovers ---------------------------------------------------------------------------------

def test_temp_files_a_kill_left_are_swept_and_ignored_by_git(tmp_path: Path) -> None:
    import shutil
    import subprocess

    root = Vault.init(tmp_path / "v", profile=False).root
    raw = root / "sessions" / "archive" / "raw"
    raw.mkdir(parents=True)
    left = [root / "sessions" / ".2026-03-01-a.md.k3j_x9zq.tmp", raw / ".2026-03-01-a.md.0f3a9c2e.tmp",
            root / "sessions" / "archive" / ".2026-02-01-b.md.a1b2c3d4.tmp"]
    for path in left:
        path.write_text("---\nid: a\n---\nhalf a rewrite")
    mine = root / "sessions" / ".notes.tmp"  # not memkit's: kept
    mine.write_text("a person's")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        ignored = subprocess.run(["git", "check-ignore", *map(str, left)], cwd=root, capture_output=True, text=True)
        assert ignored.stdout.split() == [str(p) for p in left]
    Vault(root, embedder=FakeEmbedder()).conversations.new(session_id="next", now=T0)  # the next write
    assert not any(p.exists() for p in left) and mine.exists()


KILLED_IMPORT = """
import os, signal, sys
import memkit.sessions.folder
from memkit import Vault
def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
memkit.sessions.folder.append_guarded = killed  # a kill after the session file was made, before its messages
Vault(sys.argv[1]).conversations.import_(open(sys.argv[2], "rb").read(), session_id="imp")
"""


def test_a_killed_import_leaves_no_orphan_session(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    root = Vault.init(tmp_path / "v", profile=False).root
    data = tmp_path / "chat.json"
    data.write_text(json.dumps(timed(20)))
    run = subprocess.run([sys.executable, "-c", KILLED_IMPORT, str(root), str(data)], capture_output=True, text=True)
    assert run.returncode in (0, -signal.SIGKILL), run.stderr
    v = Vault(root, embedder=FakeEmbedder())
    assert [len(v.conversations.show(s.id).messages) for s in v.conversations.list()] in ([], [20])  # nothing or everything
    (imported,) = v.conversations.import_(data.read_bytes(), session_id="imp")
    assert len(imported.session.messages) == 20 and v.conversations.list()[0].messages == 20


# ---- item 13: an archive that leads outside the vault ---------------------------------------------------

SUMMARY = {"summary": "They talked about messages.", "key_points": ["many words"], "emotional_highlights": []}


def aged_vault(tmp_path: Path, fake) -> Vault:
    root = Vault.init(tmp_path / "v13", profile=False).root
    (root / "memkit.yaml").write_text(f"llm: {{base_url: '{fake.base_url}', model: m, timeout_s: 10}}\n")
    v = Vault(root, embedder=FakeEmbedder())
    long = [dict(m, content=m["content"] * 4) for m in timed(6)]
    v.conversations.import_(json.dumps(long).encode(), session_id="old", now=T0)
    return v


@pytest.mark.parametrize("link", ["sessions/archive", "sessions/archive/raw"])
def test_aging_never_writes_through_a_link_out_of_the_vault(tmp_path: Path, link: str) -> None:
    from fake_llm import FakeLLM

    with FakeLLM(lambda request: json.dumps(SUMMARY)) as fake:
        v = aged_vault(tmp_path, fake)
        outside = tmp_path / "outside"
        outside.mkdir()
        (v.root / link).parent.mkdir(parents=True, exist_ok=True)
        (v.root / link).symlink_to(outside)
        before = (v.root / v.conversations.show("old").file).read_bytes()
        job = next(j for j in v.upkeep.run(now=T0 + timedelta(days=4)).jobs if j.name == "session-aging")
        assert "failed" in job.did and f"{link}/ is a symlink to a folder outside the vault" in job.did, job.did
        assert list(outside.rglob("*")) == []  # nothing written outside
        assert (v.root / v.conversations.show("old").file).read_bytes() == before  # the session is as it was
        assert len(v.conversations.show("old").messages) == 6 and len(v.conversations.show_raw("old").messages) == 6
        assert cli(v, "session", "list").exit_code == 0  # every other session command still works
        v.conversations.append("old", "user", "still here", now=at(30))


def test_prune_never_moves_sessions_through_a_link_out_of_the_vault(tmp_path: Path, v: Vault) -> None:
    from memkit import MemkitError

    v.conversations.new(session_id="stale", now=T0)
    outside = tmp_path / "outside"
    outside.mkdir()
    (v.root / "sessions" / "archive").symlink_to(outside)
    with pytest.raises(MemkitError, match="sessions/archive/ is a symlink to a folder outside the vault"):
        v.conversations.prune(now=T0 + timedelta(days=999))
    assert list(outside.iterdir()) == [] and [s.id for s in v.conversations.list()] == ["stale"]
    result = cli(v, "session", "list", "--archived")
    assert result.exit_code == 0 and "outside the vault" in result.output
    assert cli(v, "session", "show", "stale").exit_code == 0


def test_a_session_made_with_an_md_id_before_they_were_refused_is_reachable(v: Vault) -> None:
    (v.root / "sessions").mkdir()
    (v.root / "sessions" / "2026-03-01-x.md.md").write_text("---\nid: x.md\ncreated: 2026-03-01T09:00:00Z\n---\n")
    v.conversations.append("x.md", "user", "still reachable", now=at(1), exact=True)
    assert [m.content for m in v.conversations.show("x.md").messages] == ["still reachable"]
    assert v.conversations.show("2026-03-01-x.md.md").id == "x.md"


# ---- issue 41 item 17: a session file cut short in a heading ---------------------------------------

@pytest.mark.parametrize("cut", [0, 1, 4, 12, 19, 20])
def test_a_file_cut_short_in_a_heading_has_no_phantom_message(v: Vault, cut: int) -> None:
    """A write cut short in its heading (`### assistant · 2026-03-0`) read as an empty message of
    its own (or its start as the text of the message before); now it is left out, and said."""
    s = v.conversations.new(session_id="cut", now=T0)
    v.conversations.append("cut", "user", "first message here", now=at(1))
    path = v.root / s.file
    whole = path.read_text()
    heading = "\n### assistant · 2026-03-01T09:02:00Z"
    path.write_text(whole + heading[:len(heading) - cut])
    session = v.conversations.show("cut")
    assert [(m.role, m.content) for m in session.messages] == [("user", "first message here")]
    assert any("heading cut short" in p for p in session.problems)
    v.conversations.append("cut", "user", "third", now=at(3))  # appended after the cut heading
    assert [(m.role, m.content) for m in v.conversations.show("cut").messages] == [
        ("user", "first message here"), ("user", "third")]
