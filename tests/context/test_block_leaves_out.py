"""What the block must not say. A secret a person typed into a topic file by hand is never redacted on its way in (only what memkit
writes is): the memory block, which goes to an assistant and often to a remote LLM, hides it, in
its text and in --json's memories (no secret leaves the process)."""
from __future__ import annotations

import json

from click.testing import CliRunner
from util import FakeEmbedder, vault_with

from memkit.context.render import estimate_tokens
from memkit.frontends.cli.group import main

KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"


def test_a_hand_typed_secret_is_redacted_in_the_block(tmp_path):
    vault = vault_with(tmp_path, {"home": f"- Router admin password is Hunter2Router! (2026-11-02)\n"
                                          f"- OpenAI key for the home bot: {KEY} (2026-11-02)\n"
                                          "- Router is a Fritzbox 7590 in the hallway (2026-11-02)\n"},
                       FakeEmbedder())
    assert KEY in (vault.root / "topics" / "home.md").read_text()  # the file keeps what the person wrote
    block = vault.context("what is the router password and the bot key?")
    assert "Fritzbox 7590" in block.text or "home" in block.text
    assert KEY not in block.text and "Hunter2Router" not in block.text
    assert block.tokens == estimate_tokens(block.text)  # the size of what is sent, not of what was redacted
    result = CliRunner().invoke(main, ["--vault", str(vault.root), "context", "router password and bot key", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert KEY not in result.output and "Hunter2Router" not in result.output
    assert "[redacted]" in data["text"]


def test_a_block_without_secrets_is_unchanged(tmp_path):
    vault = vault_with(tmp_path, {"home": "- Router is a Fritzbox 7590 in the hallway (2026-11-02)\n"}, FakeEmbedder())
    assert "Fritzbox 7590 in the hallway" in vault.context("where is the router?").text


def test_a_topic_whose_entries_were_all_forgotten_is_not_named_in_the_block(tmp_path):
    """What a person forgot stays forgotten: once every entry of a topic is forgotten, the block's
    recent topics no longer name it (its file and index.txt's line stay, as after any forget)."""
    vault = vault_with(tmp_path, {"lawyer": "- Seeing divorce lawyer Priya Shah about custody (2026-11-02)\n",
                                  "food": "- Likes bomba rice (2026-11-02)\n"}, FakeEmbedder())
    assert "- lawyer" in vault.context("hello").text
    vault.forget(vault.entries("lawyer")[0].id)
    block = vault.context("hello")
    assert "lawyer" not in block.text and "- food" in block.text
    assert [r.topic for r in block.recent] == ["food"]
    assert (vault.root / "topics" / "lawyer.md").exists()
