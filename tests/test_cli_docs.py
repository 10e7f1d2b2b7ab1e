"""docs/cli.md is the `--help` of every command as bench/gen_cli_docs.py renders it now."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from memkit.frontends.cli import main

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"


def generator():
    spec = importlib.util.spec_from_file_location("gen_cli_docs", ROOT / "bench" / "gen_cli_docs.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_what_the_help_says_now():
    expected = generator().render()
    assert PAGE.read_text(encoding="utf-8") == expected, \
        "docs/cli.md differs from the commands' --help: run `.venv/bin/python bench/gen_cli_docs.py` and commit it"


def test_the_reference_has_every_command_and_subcommand():
    text = PAGE.read_text(encoding="utf-8")
    ctx = click.Context(main, info_name="memkit")
    for name in main.list_commands(ctx):
        assert f"\n## memkit {name}\n" in text, name
        command = main.get_command(ctx, name)
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command, info_name=name, parent=ctx)):
                assert f"\n## memkit {name} {sub}\n" in text, f"{name} {sub}"


def test_the_page_does_not_depend_on_the_terminal(monkeypatch):
    first = generator().render()
    monkeypatch.setenv("COLUMNS", "40")
    assert generator().render() == first


def test_check_mode_says_how_to_regenerate(tmp_path, monkeypatch, capsys):
    gen = generator()
    monkeypatch.setattr(gen, "OUT", tmp_path / "docs" / "cli.md")
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    gen.OUT.write_text("# stale\n", encoding="utf-8")
    assert gen.main(["--check"]) == 1
    assert "run .venv/bin/python bench/gen_cli_docs.py" in capsys.readouterr().err
    assert gen.main([]) == 0 and gen.main(["--check"]) == 0


def test_the_page_does_not_depend_on_what_ran_before():
    """click keeps a command's help option once made: the page rendered in a fresh process (as
    `bench/gen_cli_docs.py` runs) and after the commands ran in this one are the same."""
    import subprocess
    import sys

    from click.testing import CliRunner

    assert CliRunner().invoke(main, ["add", "--help"]).exit_code == 0
    assert CliRunner().invoke(main, ["session", "add", "-h"]).exit_code == 0
    fresh = subprocess.run([sys.executable, "-c", "import runpy, sys; gen = runpy.run_path(sys.argv[1]); "
                            "sys.stdout.write(gen['render']())", str(ROOT / "bench" / "gen_cli_docs.py")],
                           capture_output=True, text=True, check=True).stdout
    assert fresh == generator().render()
    assert "  -h, --help" in fresh and "\n  --help" not in fresh
