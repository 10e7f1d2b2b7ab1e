"""How every command reports an error: one line with one prefix, exit 1 (a problem) or 2 (a bad
value or usage), and with --json a JSON object on stdout with the same exit code."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memkit.frontends.cli.group import main


@pytest.fixture()
def vault(tmp_path):
    v = tmp_path / "mem"
    assert CliRunner().invoke(main, ["init", str(v)]).exit_code == 0
    (v / "memkit.yaml").write_text("model: memkit-m2v\n")
    return v


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), prog_name="memkit")


# one failing call per command that takes --json: (arguments, exit code, words of the message)
CASES = [
    (["add", "x", "--topic", "../../etc/passwd"], 2, "invalid topic name"),
    (["add", ""], 2, "the text is empty"),
    (["add", "x", "--until", "2020-01-01"], 2, "in the past"),
    (["show", "nope"], 1, "no topic 'nope'"),
    (["forget", "zzzzzzzz"], 1, "no entry with id"),
    (["search", ""], 2, "the query is empty"),
    (["search", "x", "-k", "abc"], 2, "invalid value for '-k'"),
    (["search", "x", "--since", "yesterday"], 2, "--since"),
    (["search", "x", "--topic", "nosuch"], 1, "no topic 'nosuch'"),
    (["digest", "no-such-file.txt"], 1, "no-such-file.txt"),
    (["context", "hello", "--budget", "-3"], 2, "--budget"),
    (["split", "nope"], 1, "no topic 'nope'"),
    (["edit", "zzzzzzzz", "new text"], 1, "no entry"),
    (["history", "zzzzzzzz"], 1, "no entry"),
    (["done", "zzzzzzzz"], 1, "no entry"),
    (["compact", "nope", "--before", "2026-01-01"], 1, "needs an LLM"),
    (["distill"], 1, "needs an LLM"),
    (["capture", "no-such-file.jsonl"], 1, "no-such-file.jsonl"),
]


@pytest.mark.parametrize("args, code, words", CASES, ids=[" ".join(c[0][:2]) for c in CASES])
def test_json_errors_are_json_on_stdout_with_the_usual_exit_code(vault, args, code, words):
    plain = invoke("--vault", str(vault), *args)
    assert plain.exit_code == code, plain.output
    assert plain.stdout == "" and "Usage:" not in plain.stderr
    errors = [line for line in plain.stderr.splitlines() if not line.startswith("memkit: warning: ")]
    assert len(errors) == 1 and errors[0].startswith("memkit: error: "), plain.stderr
    assert words.lower() in errors[0].lower()
    result = invoke("--vault", str(vault), *args, "--json")
    assert result.exit_code == code
    data = json.loads(result.stdout)
    assert data == {"error": errors[0].removeprefix("memkit: error: "), "code": code}


@pytest.mark.parametrize("command", ["topics", "recent", "index", "tidy", "pending", "stats", "check", "git-setup"])
def test_a_missing_vault_is_a_json_error_for_every_listing_command(tmp_path, command):
    result = invoke("--vault", str(tmp_path / "nope"), command, "--json")
    assert result.exit_code == 1
    assert "does not exist" in json.loads(result.stdout)["error"]


def test_global_options_are_accepted_after_the_command(vault):
    result = invoke("topics", "--vault", str(vault), "--json")
    assert result.exit_code == 0 and isinstance(json.loads(result.stdout), list)
    result = invoke("add", "Ana lives in Porto", "--topic", "family", f"--vault={vault}")
    assert result.exit_code == 0 and (vault / "topics" / "family.md").exists()
    # after --, everything is text
    result = invoke("--vault", str(vault), "add", "--", "--vault is a flag of memkit")
    assert result.exit_code == 0 and "--vault is a flag of memkit" in result.stdout


def test_text_starting_with_a_dash_gets_a_hint(vault):
    result = invoke("--vault", str(vault), "add", "-5 degrees tonight")
    assert result.exit_code == 2
    assert result.stderr == ("memkit: error: no such option '-5': text that starts with '-' goes after '--' "
                             "(memkit add -- \"-5 degrees tonight\")\n")


def test_a_refused_write_to_a_conflicted_file_says_so_once(vault):
    (vault / "topics" / "family.md").write_text("- a\n<<<<<<< ours\n- b\n=======\n- c\n>>>>>>> theirs\n")
    before = (vault / "topics" / "family.md").read_bytes()
    result = invoke("--vault", str(vault), "add", "Ana moved to Porto", "--topic", "family")
    assert result.exit_code == 1
    assert result.stderr.count("unresolved merge conflict") == 1, result.stderr
    assert (vault / "topics" / "family.md").read_bytes() == before


@pytest.mark.parametrize("command", ["install", "uninstall", "status", "run"])
def test_an_unknown_hook_client_is_named_as_the_client(vault, command):
    result = invoke("--vault", str(vault), "hook", command, "cursor")
    assert result.exit_code == 2
    assert result.stderr.startswith("memkit: error: invalid value for 'CLIENT': 'cursor' is not 'claude-code'"), \
        result.stderr
