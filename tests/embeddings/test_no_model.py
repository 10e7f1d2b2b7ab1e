"""Without a model that can be found, everything that needs no vectors works (a warning, not an
error): lexical search, a search falling back to words, context, topics, add, stats, check."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memkit import Vault
from memkit.frontends.cli.group import main


@pytest.fixture()
def vault(tmp_path, monkeypatch):
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "topics" / "home-lab.md").write_text("- Router is a MikroTik hAP ax3 in the hallway\n- node-3 runs Grafana\n")
    monkeypatch.setenv("MEMKIT_MODEL", str(tmp_path / "no-such-model"))
    return root


def run(root, *args):
    return CliRunner().invoke(main, ["--vault", str(root), *args], prog_name="memkit")


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "vector"])
def test_search_finds_exact_words_with_a_warning(vault, mode):
    result = run(vault, "search", "hAP ax3", "--mode", mode, "--json")
    assert result.exit_code == 0, result.output
    assert [h["text"] for h in json.loads(result.stdout)][0].startswith("Router is a MikroTik hAP ax3")
    assert result.stderr.count("memkit: warning: ") == 1 and "searching by words only" in result.stderr


@pytest.mark.parametrize("args", [["topics"], ["add", "Bought a UPS", "--topic", "home-lab"], ["stats"], ["check"],
                                  ["context", "what runs on node-3"], ["show", "home-lab"], ["recent"]])
def test_commands_that_need_no_vectors_work(vault, args):
    result = run(vault, *args)
    assert result.exit_code == 0, result.output
    assert "memkit: error" not in result.stderr


def test_context_still_finds_memories_by_their_words(vault):
    result = run(vault, "context", "what runs on node-3", "--json")
    assert "node-3 runs Grafana" in json.loads(result.stdout)["text"]


def test_indexing_needs_the_model_and_says_why(vault):
    result = run(vault, "index")
    assert result.exit_code == 1 and "no-such-model" in result.stderr
