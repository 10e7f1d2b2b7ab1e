"""The README and the sample vault stay true: every command documented, the sample vault loads clean."""
from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

import click

from memkit import Vault
from memkit.frontends.cli.group import main

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_command_is_in_the_readme():
    for name in main.list_commands(click.Context(main)):
        assert f"memkit {name}" in README, f"README does not document `memkit {name}`"


def test_readme_config_keys_match_the_defaults():
    from dataclasses import fields

    from memkit.config.settings import Config

    for f in fields(Config):
        assert f"`{f.name}`" in README, f.name


def test_readme_setup_commands():
    assert "make install" in README and "make test" in README and "make demo" in README


def test_sample_vault_loads_clean(tmp_path, caplog):
    copy = tmp_path / "vault"
    shutil.copytree(ROOT / "vault", copy, ignore=shutil.ignore_patterns(".memkit"))
    v = Vault(copy)
    with caplog.at_level(logging.WARNING, logger="memkit"):
        topics = v.topics()
    assert not caplog.records, caplog.text
    assert len(topics) >= 8
    assert sum(t.entries for t in topics) >= 150
    assert not any(t.entries > v.config.topic_split_threshold_lines for t in topics)  # README adds to them
    kinds = {e.kind for e in v.entries()}
    assert {"fact", "preference", "decision", "event"} <= kinds
    assert any(not e.is_list for e in v.entries())  # hand-written prose paragraphs
    lines = (copy / "index.txt").read_text().splitlines()
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\|[a-z0-9-]+\|.*", line) for line in lines)
    before = [(r.topic, r.updated) for r in v.recent()]
    assert [(r.topic, r.updated) for r in v.rebuild_recent()] == before
