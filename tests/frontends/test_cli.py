"""The CLI: each command's happy path, JSON output, errors and exit codes."""
from __future__ import annotations

import json
import os
import re
import time

import click
import pytest
from click.testing import CliRunner

from memkit.frontends.cli.group import main


def run(args, input=None, ok=True):
    result = CliRunner().invoke(main, args, input=input, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_init_add_show_topics_recent_forget(tmp_path):
    v = str(tmp_path / "mem")
    assert "created vault" in run(["init", v]).output
    out = run(["--vault", v, "add", "Prefers bomba rice", "--topic", "cooking", "--kind", "preference", "--tag", "rice"]).output
    assert out.startswith("added ") and "to cooking: [preference] Prefers bomba rice #rice (" in out
    run(["--vault", v, "add", "-", "--topic", "health"], input="Allergic to tree nuts\n")
    data = json.loads(run(["--vault", v, "topics", "--json"]).output)
    assert {t["name"]: t["entries"] for t in data} == {"cooking": 1, "health": 1, "profile": 0}  # init's pinned profile
    shown = json.loads(run(["--vault", v, "show", "cooking", "--json"]).output)
    entry = shown["entries"][0]
    assert entry["kind"] == "preference" and entry["tags"] == ["rice"] and entry["line"] == 8
    plain = run(["--vault", v, "show", "cooking"]).output
    assert f"{entry['id']}  [preference] Prefers bomba rice" in plain
    assert re.search(r"just now +health", run(["--vault", v, "recent"]).output)
    out = run(["--vault", v, "forget", entry["id"]]).output
    assert "forgot" in out and "archive.md" in out
    assert json.loads(run(["--vault", v, "show", "cooking", "--json"]).output)["entries"] == []
    rebuilt = json.loads(run(["--vault", v, "recent", "--rebuild", "--json"]).output)
    assert {r["topic"] for r in rebuilt} == {"cooking", "health", "profile"}


def test_vault_from_env_and_parent_dirs(tmp_path, monkeypatch):
    v = tmp_path / "mem"
    run(["init", str(v)])
    monkeypatch.setenv("MEMKIT_VAULT", str(v))
    run(["add", "from env"])
    monkeypatch.delenv("MEMKIT_VAULT")
    monkeypatch.chdir(v / "topics")
    assert "from env" in run(["show", "general"]).output


@pytest.mark.parametrize(
    "args, message, code",
    [
        (["add", ""], "nothing to add: the text is empty", 2),
        (["add", "x", "--topic", "../../etc/passwd"], "invalid topic name", 2),
        (["add", "x", "--topic", "a//b"], "invalid topic name", 2),  # a/b is a topic in a folder (issue 44)
        (["add", "x", "--topic", "CON"], "reserved device name", 2),
        (["add", "x", "--topic", "y" * 300], "the limit is 64", 2),
        (["add", "x", "--kind", "two words"], "invalid kind", 2),
        (["search", "x", "--topic", "nosuch"], "no topic 'nosuch'", 1),
        (["show", "nope"], "no topic 'nope'", 1),
        (["forget"], "give either an entry ID or --match TEXT", 2),
        (["forget", "zzzzzzzz"], "no entry with id", 1),
    ],
)
def test_errors(tmp_path, args, message, code):
    v = str(tmp_path / "mem")
    run(["init", v])
    result = CliRunner().invoke(main, ["--vault", v, *args])
    assert result.exit_code == code, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "etc").exists()


def test_missing_vault_and_init_twice(tmp_path):
    result = CliRunner().invoke(main, ["--vault", str(tmp_path / "nope"), "topics"])
    assert result.exit_code == 1 and "does not exist: create it with `memkit init" in result.output
    result = CliRunner().invoke(main, ["topics"])
    assert result.exit_code == 1 and "no vault found" in result.output
    run(["init", str(tmp_path / "v")])
    result = CliRunner().invoke(main, ["init", str(tmp_path / "v")])
    assert result.exit_code == 1 and "already holds a vault" in result.output


def test_every_command_has_help_with_example():
    ctx = click.Context(main)
    names = main.list_commands(ctx)
    assert len(names) >= 29 and names == sorted(names)
    for name in names:
        command = main.get_command(ctx, name)
        result = run([name, "--help"])
        assert command is not None and command.help and "Example" in result.output, name


def test_topics_list_latest_first_and_alike_times_by_name(tmp_path):
    """Topics updated seconds apart both read "just now": they are listed by name, not by which
    second each landed in (a README example reordered on a busy machine)."""
    v = tmp_path / "mem"
    run(["init", str(v)])
    (v / "topics" / "zebra.md").write_text("---\ntitle: Zebra\nupdated: 2020-01-01T10:00:00\n---\n- old\n")
    for name, second in (("beta", 5), ("alpha", 1)):
        (v / "topics" / f"{name}.md").write_text("- x\n")
        t = time.time() - 10 + second
        os.utime(v / "topics" / f"{name}.md", (t, t))
    names = [t["name"] for t in json.loads(run(["--vault", str(v), "topics", "--json"]).output)]
    assert names[:2] == ["alpha", "beta"] and names[-1] == "zebra", names
