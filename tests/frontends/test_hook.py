"""`memkit hook` (issue 44.4): Claude Code's hook puts the right memory into the prompt, run as
Claude Code runs it (a subprocess, its JSON on stdin, JSON on stdout), warm from a running
`memkit serve` on the vault's socket, cold without one (and then one is started), and never a
blocked prompt; `memkit hook install` / `uninstall` edit the settings without losing a key."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memkit import Vault
from memkit.frontends.cli import main
from memkit.frontends.hook import answer_claude_code, parse_hook_input, socket_path

WAIT_S = 60


def make_vault(tmp_path: Path) -> Vault:
    vault = Vault.init(tmp_path / "vault", profile=False)
    vault.add("Prefers bomba rice for paella", topic="cooking", kind="preference")
    vault.add("The harbor project deploys on Fridays after the standup", topic="work")
    vault.add("Allergic to tree nuts", topic="health")
    return vault


def hook_input(event: str = "UserPromptSubmit", prompt: str | None = "what rice should I buy for paella?",
               session: str = "9f1c2d3e-aaaa-bbbb-cccc-123456789abc", cwd: str = "/nowhere", **more: str) -> str:
    data = {"session_id": session, "transcript_path": f"/tmp/{session}.jsonl", "cwd": cwd,
            "permission_mode": "default", "hook_event_name": event, **more}
    if prompt is not None:
        data["prompt"] = prompt
    return json.dumps(data)


def installed_command(runner, tmp_path: Path, vault: Vault) -> str:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    result = runner.invoke(main, ["--vault", str(vault.root), "hook", "install", "claude-code", "--project",
                                  str(project)])
    assert result.exit_code == 0, result.output
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = {g["hooks"][0]["command"] for event in ("UserPromptSubmit", "SessionStart")
                for g in settings["hooks"][event]}
    assert len(commands) == 1
    return commands.pop()


def run_as_claude_code(command: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The hook as Claude Code runs it: the settings' command through a shell, JSON on stdin."""
    env = dict(os.environ, MEMKIT_HOOK_VERBOSE="1", HF_HUB_OFFLINE="1")
    env.pop("MEMKIT_VAULT", None)
    return subprocess.run(["sh", "-c", command], input=stdin, capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=WAIT_S)


def context_of(proc: subprocess.CompletedProcess[str], event: str = "UserPromptSubmit") -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return out["hookSpecificOutput"]["additionalContext"]


def stop_started_server(root: Path) -> None:
    pid_file = root / ".memkit" / "serve.pid"
    if pid_file.is_file():
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            try:  # our child when started in this process: reap it
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                pass
            time.sleep(0.05)


# ---- the input ---------------------------------------------------------------------------------------

def test_the_hook_input_is_read_as_claude_code_sends_it():
    r = parse_hook_input(hook_input(prompt="  what   rice?  "))
    assert (r.event, r.message, r.session, r.reset) == ("UserPromptSubmit", "what rice?",
                                                        "claude-code:9f1c2d3e-aaaa-bbbb-cccc-123456789abc", False)
    start = parse_hook_input(hook_input("SessionStart", prompt=None, source="startup"))
    assert (start.message, start.reset) == ("", False)
    assert parse_hook_input(hook_input("SessionStart", prompt=None, source="compact")).reset
    assert parse_hook_input(hook_input(session="a/../b c")).session.startswith("claude-code:")
    assert "/" not in parse_hook_input(hook_input(session="a/../b c")).session
    for bad in ("not json", "[]", json.dumps({"hook_event_name": "PreToolUse"}),
                json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": 3})):
        with pytest.raises(ValueError):
            parse_hook_input(bad)


# ---- the key test: the installed command, run as Claude Code runs it -----------------------------------

def test_the_installed_hook_puts_the_right_memory_into_the_prompt(runner, tmp_path):
    """No server yet: answered cold (correctly), and a server is started, so the next prompt is warm."""
    vault = make_vault(tmp_path)
    command = installed_command(runner, tmp_path, vault)
    try:
        first = run_as_claude_code(command, hook_input(), tmp_path / "project")
        text = context_of(first)
        relevant = text.split("## Relevant memories\n")[1].splitlines()
        assert "Prefers bomba rice for paella" in relevant[0]  # the memory that answers, first
        assert "answered cold" in first.stderr and "started memkit serve" in first.stderr
        sock = socket_path(vault.root)
        deadline = time.monotonic() + WAIT_S
        while True:
            second = run_as_claude_code(command, hook_input(prompt="which day does harbor deploy?"),
                                        tmp_path / "project")
            if "answered warm" in second.stderr or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert "answered warm" in second.stderr, second.stderr
        warm_text = context_of(second)
        assert "The harbor project deploys on Fridays" in warm_text
        assert "Prefers bomba rice" in warm_text  # the session's memories accumulate (same session id)
        assert sock is not None and sock.exists()
        # a session start: the block without a message (recent topics, instructions)
        start = run_as_claude_code(command, hook_input("SessionStart", prompt=None, source="startup"),
                                   tmp_path / "project")
        start_text = context_of(start, "SessionStart")
        assert "## Recent topics" in start_text and "## Memory instructions" in start_text
    finally:
        stop_started_server(vault.root)
    assert not (vault.root / "sessions").exists() or not list((vault.root / "sessions").glob("*.md"))


def test_the_hook_answers_warm_from_a_running_server(runner, tmp_path):
    from memkit.frontends.http import HTTPServer

    vault = make_vault(tmp_path)
    command = installed_command(runner, tmp_path, vault)
    sock = socket_path(vault.root)
    assert sock is not None
    with HTTPServer(Vault(vault.root), unix=str(sock)):
        proc = run_as_claude_code(command, hook_input(prompt="anything I cannot eat?"), tmp_path / "project")
        assert "answered warm" in proc.stderr, proc.stderr
        assert "Allergic to tree nuts" in context_of(proc)
        assert not (vault.root / ".memkit" / "serve.pid").exists()  # nothing was started


def test_the_hook_answers_cold_and_starts_nothing_when_asked(tmp_path):
    vault = make_vault(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "memkit.frontends.hook", "claude-code", "--vault", str(vault.root),
                           "--no-start", "--verbose"], input=hook_input(), capture_output=True, text=True,
                          timeout=WAIT_S)
    assert "Prefers bomba rice for paella" in context_of(proc)
    assert "answered cold" in proc.stderr
    assert not (vault.root / ".memkit" / "serve.pid").exists()


def test_a_broken_server_falls_back_to_the_cold_answer(tmp_path):
    vault = make_vault(tmp_path)
    sock = socket_path(vault.root)
    assert sock is not None
    sock.parent.mkdir(exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock))
    listener.listen(4)

    def hang_up() -> None:  # accepts, reads the request, answers garbage
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 500 Oops\r\nContent-Length: 4\r\n\r\nnope")
        conn.close()

    t = threading.Thread(target=hang_up, daemon=True)
    t.start()
    try:
        answer = answer_claude_code(hook_input(), vault=str(vault.root), wait_s=10)
    finally:
        t.join(10)
        listener.close()
    assert answer.how == "cold"
    assert "answered cold" in " ".join(answer.notes)
    assert "bomba rice" in json.loads(answer.stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("stdin, args", [
    ("this is not json", []),
    (hook_input(), ["--vault", "/no/such/vault"]),
    (json.dumps({"hook_event_name": "Stop"}), []),
    (hook_input(), ["--budget", "abc"]),
])
def test_a_hook_failure_never_blocks_the_prompt(tmp_path, stdin, args):
    """Exit 0 (2 would block the prompt), nothing on stdout, one line on stderr."""
    make_vault(tmp_path)
    cmd = [sys.executable, "-m", "memkit.frontends.hook", "claude-code", "--no-start"]
    if "--vault" not in args:
        cmd += ["--vault", str(tmp_path / "vault")]
    proc = subprocess.run(cmd + args, input=stdin, capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 0
    assert proc.stdout == ""
    assert "memkit hook: " in proc.stderr


def test_a_library_error_gives_no_context_and_a_note(tmp_path):
    vault = make_vault(tmp_path)

    def broken(root, body):
        raise RuntimeError("disk on fire")

    answer = answer_claude_code(hook_input(), vault=str(vault.root), start=False, cold=broken)
    assert (answer.stdout, answer.how) == ("", "none")
    assert answer.notes == ["no memory context: disk on fire"]


def test_memkit_hook_run_answers_as_the_module_does(runner, tmp_path):
    vault = make_vault(tmp_path)
    result = runner.invoke(main, ["--vault", str(vault.root), "hook", "run", "claude-code", "--no-start"],
                           input=hook_input())
    assert result.exit_code == 0
    out = json.loads(result.stdout)
    assert "bomba rice" in out["hookSpecificOutput"]["additionalContext"]


# ---- install and uninstall -------------------------------------------------------------------------------

def test_install_merges_into_the_settings_and_uninstall_removes_only_its_own(runner, tmp_path):
    vault = make_vault(tmp_path)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    theirs = {
        "model": "opus", "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo hello"}]}],
                  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]},
    }
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps(theirs, indent=4))
    args = ["--vault", str(vault.root), "hook", "install", "claude-code", "--project", str(project)]
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    assert first.output.startswith("installed memkit's hook for UserPromptSubmit, SessionStart in ")
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["permissions"] == theirs["permissions"]
    assert data["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    ups = data["hooks"]["UserPromptSubmit"]
    assert ups[0] == theirs["hooks"]["UserPromptSubmit"][0] and len(ups) == 2
    ours = ups[1]["hooks"][0]
    assert ours["type"] == "command" and ours["timeout"] == 30
    assert "-m memkit.frontends.hook claude-code --vault" in ours["command"]
    assert str(vault.root) in ours["command"]
    assert data["hooks"]["SessionStart"] == [{"matcher": "startup|resume|clear|compact", "hooks": [ours]}]

    written = settings.read_bytes()
    again = runner.invoke(main, args)  # idempotent: nothing doubled, the file not rewritten
    assert again.exit_code == 0 and again.output.startswith("already installed:")
    assert settings.read_bytes() == written

    status = runner.invoke(main, ["hook", "status", "claude-code", "--project", str(project)])
    assert status.output.count(": ") == 2 and "UserPromptSubmit: " in status.output

    removed = runner.invoke(main, ["hook", "uninstall", "claude-code", "--project", str(project)])
    assert removed.exit_code == 0 and removed.output.startswith("removed 2 memkit hooks from ")
    assert json.loads(settings.read_text()) == theirs
    none = runner.invoke(main, ["hook", "uninstall", "claude-code", "--project", str(project)])
    assert none.output.startswith("no memkit hook in ")


def test_install_for_the_user_and_a_settings_file_it_must_not_touch(runner, tmp_path, monkeypatch):
    vault = make_vault(tmp_path)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    result = runner.invoke(main, ["--vault", str(vault.root), "hook", "install", "claude-code", "--user",
                                  "--budget", "800"])
    assert result.exit_code == 0, result.output
    data = json.loads((home / ".claude" / "settings.json").read_text())
    assert data["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"].endswith("--budget 800")
    assert runner.invoke(main, ["hook", "uninstall", "claude-code", "--user"]).exit_code == 0
    assert json.loads((home / ".claude" / "settings.json").read_text()) == {}

    bad = tmp_path / "p" / ".claude" / "settings.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    result = runner.invoke(main, ["--vault", str(vault.root), "hook", "install", "claude-code", "--project",
                                  str(tmp_path / "p")])
    assert result.exit_code == 1 and "is not valid JSON" in result.output
    assert bad.read_text() == "{not json"


def test_a_compacted_session_gets_its_memories_again(tmp_path):
    """SessionStart after compact: the session's accumulated memories are forgotten first (cold path)."""
    vault = make_vault(tmp_path)
    first = answer_claude_code(hook_input(), vault=str(vault.root), start=False)
    assert first.how == "cold" and "bomba rice" in first.stdout
    state = list((vault.root / ".memkit" / "sessions").glob("claude-code*.json"))
    assert len(state) == 1 and "bomba" in state[0].read_text()
    again = answer_claude_code(hook_input("SessionStart", prompt=None, source="compact"), vault=str(vault.root),
                               start=False)
    assert again.how == "cold" and json.loads(again.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "bomba" not in state[0].read_text()  # forgotten: the next prompts give them again


# ---- the started server ends when idle -------------------------------------------------------------

class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_idle_timer_counts_from_the_last_request_and_never_cuts_one():
    from memkit.frontends.http.idle import IdleTimer

    clock = FakeClock()
    timer = IdleTimer(60, clock)
    clock.now += 59
    assert not timer.expired()
    clock.now += 1
    assert timer.expired()
    timer.begin()  # a long request: never idle while it runs
    clock.now += 600
    assert not timer.expired()
    timer.end()
    clock.now += 59
    assert not timer.expired()
    clock.now += 1
    assert timer.expired()


def test_a_server_the_hook_starts_stops_after_its_idle_time(tmp_path):
    """Issue 44: a `memkit serve` the hook started ran forever; now it stops after 30 minutes with
    no request (the clock moved by the test, never waited for)."""
    from memkit.frontends.hook.warm import IDLE_EXIT_MINUTES, serve_command
    from memkit.frontends.http import HTTPServer

    vault = make_vault(tmp_path)
    sock = socket_path(vault.root)
    assert sock is not None
    command = serve_command(vault.root, sock)
    assert command[-2:] == ["--idle-exit", "30"] and IDLE_EXIT_MINUTES == 30
    clock = FakeClock()
    server = HTTPServer(Vault(vault.root), unix=str(sock), idle_exit_s=IDLE_EXIT_MINUTES * 60, clock=clock).start()
    try:
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(WAIT_S)
        conn.connect(str(sock))
        conn.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert conn.recv(100).startswith(b"HTTP/1.1 200")
        conn.close()
        deadline = time.monotonic() + WAIT_S
        while server.idle is not None and server.idle.busy and time.monotonic() < deadline:
            time.sleep(0.01)  # the request's end is counted once its answer is sent
        clock.now += IDLE_EXIT_MINUTES * 60 - 1
        assert server._thread is not None
        server._thread.join(0.3)
        assert server._thread.is_alive() and not server.idled  # a second short of it: still serving
        clock.now += 1
        server._thread.join(WAIT_S)  # the next tick sees it: no waiting on the clock itself
        assert not server._thread.is_alive() and server.idled
        assert not sock.exists()  # the socket is gone: the next prompt starts a server again
    finally:
        server.stop()
