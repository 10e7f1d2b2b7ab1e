"""`memkit check`: what it reports after ordinary use (nothing), what waits in inbox/, and other
models' indexes (which `memkit index` removes, as check says)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from util import FakeEmbedder, write

from memkit import Vault
from memkit.frontends.cli.group import main


def run(root, *args, input=None):
    return CliRunner().invoke(main, ["--vault", str(root), *args], input=input, prog_name="memkit",
                              obj={"vault_obj": Vault(root, embedder=FakeEmbedder())})


def test_check_after_init_and_adds_finds_nothing(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    assert run(root, "check").stdout == "no problems found\n"
    for text in ("Prefers bomba rice", "Allergic to tree nuts"):
        assert run(root, "add", text, "--topic", "cooking").exit_code == 0
        result = run(root, "check")
        assert result.exit_code == 0 and result.stdout == "no problems found\n", result.stdout


def test_a_transcript_no_llm_will_digest_is_listed_without_blocking_a_commit(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    captured = run(root, "capture", "--session", "chat-1", input="Maya: I moved to Porto\nAssistant: nice\n")
    assert captured.exit_code == 0 and "no LLM is configured, so nothing digests it yet" in captured.stdout
    result = run(root, "check", "--json")
    assert result.exit_code == 0  # a note: the documented pre-commit hook must not block on it
    report = json.loads(result.stdout)
    (finding,) = report["problems"]
    assert finding["kind"] == "inbox-undigested" and finding["file"].startswith("inbox/chat-1")
    assert finding["note"] is True and finding["needs_person"] is False and report["clean"] is True
    assert "nothing digests it" in run(root, "check").stdout


def test_a_transcript_the_watcher_will_digest_is_a_note(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    (root / "memkit.yaml").write_text("llm: {base_url: 'http://127.0.0.1:9/v1', model: m}\n")
    captured = run(root, "capture", "--session", "chat-1", "--json", input="Maya: I moved to Porto\n")
    assert json.loads(captured.stdout)["llm_configured"] is True
    result = run(root, "check")
    assert result.exit_code == 0
    assert result.stdout.startswith("note: inbox/chat-1") and result.stdout.endswith("no problems found\n")


def test_memkit_index_removes_other_models_indexes(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    run(root, "add", "Prefers bomba rice", "--topic", "cooking")
    other = root / ".memkit" / "index" / "some-other-model-256.sqlite3"
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_bytes(b"")
    assert "is the index of another model" in run(root, "check").stdout
    assert run(root, "index").exit_code == 0
    assert not other.exists()
    assert run(root, "check").stdout == "no problems found\n"


def test_check_fix_never_breaks_frontmatter_or_repeated_code(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from util import FakeEmbedder

    from memkit.frontends.cli.group import main

    root = Vault.init(tmp_path / "v", profile=False).root
    text = ("---\ntitle: Setup\ntags:\n  - linux\n  - shell\ntags:\n  - ops\n---\n"
            "## A\n```\nmake install\n```\n\n## B\n```\nmake install\n```\n\n- same line\n- same line\n")
    path = write(root / "topics" / "setup.md", text)
    vault = Vault(root, embedder=FakeEmbedder())
    CliRunner().invoke(main, ["--vault", str(root), "check", "--fix"], obj={"vault_obj": vault})
    after = path.read_text()
    assert after == text.replace("- same line\n- same line\n", "- same line\n")  # only the exact list duplicate
    assert Vault(root).topic("setup").write_problem() is None


def test_the_conversations_index_is_not_another_models(tmp_path):
    root = Vault.init(tmp_path / "v", profile=False).root
    run(root, "add", "Prefers bomba rice", "--topic", "cooking")
    assert run(root, "session", "new", "--id", "chat").exit_code == 0
    assert run(root, "session", "add", "chat", "user", "which rice for paella?").exit_code == 0
    assert run(root, "search", "--sessions", "paella rice").exit_code == 0
    assert sorted(p.name for p in (root / ".memkit" / "index").glob("*sessions.sqlite3"))  # it exists
    assert run(root, "check").stdout == "no problems found\n"
