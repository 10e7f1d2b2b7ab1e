"""memkit.yaml's settings are declared once (memkit/config/table.py); the defaults, the checks, the
commented memkit.yaml that `memkit init` writes and docs/configuration.md all come from there."""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from memkit import Vault
from memkit.config import (
    DEFAULT_CONFIG_TEXT,
    SETTINGS,
    Config,
    EmbedderSettings,
    LLMSettings,
    RedactSettings,
    ServeSettings,
    docs_page,
    load_config,
    parse_config,
)
from memkit.errors import ConfigError, LLMConfigError
from memkit.formats.safeyaml import load_yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "configuration.md"
REGENERATE = ".venv/bin/python -m memkit.config.docs > docs/configuration.md"
SECTIONS = {"llm": LLMSettings, "embedder": EmbedderSettings, "serve": ServeSettings, "redact": RedactSettings}


def _names(cls: type, prefix: str = "") -> list[str]:
    return [prefix + f.name for f in fields(cls)]


def test_every_field_is_declared_exactly_once():
    names = [row.name for row in SETTINGS]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    expected = _names(Config) + [name for key, cls in SECTIONS.items() for name in _names(cls, key + ".")]
    assert sorted(names) == sorted(expected)
    assert [row.name for row in SETTINGS if row.section] == list(SECTIONS)
    for row in SETTINGS:
        assert row.help.strip() and row.kind.expected, row.name


def test_the_defaults_come_from_the_table():
    top = {row.name: row.default for row in SETTINGS if "." not in row.name}
    assert {f.name: getattr(Config(), f.name) for f in fields(Config)} == top
    for key, cls in SECTIONS.items():
        rows = {row.name[len(key) + 1:]: row.default for row in SETTINGS if row.name.startswith(key + ".")}
        assert {f.name: getattr(cls(), f.name) for f in fields(cls)} == rows
    assert Config().expire is not Config().expire and Config().serve is not Config().serve  # no shared defaults


def _comments(text: str) -> str:
    """The YAML's comments as one line of words."""
    return " ".join(part.split("#", 1)[1] for part in text.splitlines() if "#" in part).replace("#", " ")


def test_every_setting_is_in_the_default_yaml_with_its_help():
    """Each key has a line (commented out where it is unset by default) with its default, or with
    an example where it has none, and its help in the comments."""
    words = " ".join(_comments(DEFAULT_CONFIG_TEXT).split())
    for row in SETTINGS:
        key = row.name.rsplit(".", 1)[-1]
        value = row.example if row.default in (None, "") and row.example is not None else row.default
        shown = "" if row.section or isinstance(value, dict) else " " + re.escape(row.kind.yaml(value))
        assert re.search(rf"^[#\s]*{key}:{shown}(\s|$)", DEFAULT_CONFIG_TEXT, re.M), row.name
        assert " ".join(row.help.split()) in words, row.name
    assert "\nexpire:\n  context: 1d\n  conversation: 30d\n  pending: 7d\n" in DEFAULT_CONFIG_TEXT


def test_the_default_yaml_loads_back_to_the_defaults(tmp_path):
    assert parse_config(load_yaml(DEFAULT_CONFIG_TEXT)) == Config()
    root = Vault.init(tmp_path / "v", profile=False).root
    assert (root / "memkit.yaml").read_text(encoding="utf-8") == DEFAULT_CONFIG_TEXT
    assert load_config(root) == Config()


def _uncommented(section: str, leave_out: tuple[str, ...] = ()) -> str:
    """The default YAML with ``section``'s commented-out keys put in place of ``section: {}``."""
    lines = DEFAULT_CONFIG_TEXT.splitlines()
    start = lines.index(f"# {section}:")
    block = []
    for line in lines[start:]:
        if not line.startswith("#"):
            break
        if line.startswith("#   ") and line[4:5].isalpha() and not line[4:].startswith(leave_out):
            block.append(line[2:])
        elif line == f"# {section}:":
            block.append(line[2:])
    text = "\n".join(lines).replace(f"\n{section}: {{}}\n", "\n" + "\n".join(block) + "\n")
    return text


def test_the_commented_sections_work_once_uncommented():
    config = parse_config(load_yaml(_uncommented("embedder")))
    assert config.embedder == EmbedderSettings(base_url="http://127.0.0.1:11434/v1", model="nomic-embed-text",
                                               api_key_env="EMBED_API_KEY", dim=768)
    config = parse_config(load_yaml(_uncommented("llm", leave_out=("command",))))
    assert config.llm == LLMSettings(base_url="http://127.0.0.1:11434/v1", model="llama3.2",
                                     api_key_env="OPENAI_API_KEY")
    with pytest.raises(LLMConfigError, match="not both"):  # every key at once: the help says to choose
        parse_config(load_yaml(_uncommented("llm")))


@pytest.mark.parametrize("path", ["tests/config/init-0.1.yaml", "vault/memkit.yaml"])
def test_older_memkit_yaml_files_still_load(path, tmp_path):
    (tmp_path / "memkit.yaml").write_text((ROOT / path).read_text(encoding="utf-8"), encoding="utf-8")
    config = load_config(tmp_path)
    if "init-0.1" in path:  # what memkit 0.1's `memkit init` wrote: the defaults
        assert config == Config()


def test_the_docs_page_is_generated_from_the_table():
    assert DOCS.exists(), f"docs/configuration.md is missing: run `{REGENERATE}`"
    assert DOCS.read_text(encoding="utf-8") == docs_page(), (
        f"docs/configuration.md differs from the table of settings: run `{REGENERATE}`")
    page = DOCS.read_text(encoding="utf-8")
    for row in SETTINGS:
        assert f"| `{row.name}` |" in page, row.name
    assert "(settings-notes.md)" in page


def test_the_generator_prints_the_page():
    out = subprocess.run([sys.executable, "-m", "memkit.config.docs"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout == docs_page()


@pytest.mark.parametrize("row", [row for row in SETTINGS if not row.section], ids=lambda row: row.name)
def test_a_wrong_value_names_the_file_the_key_and_what_it_takes(row):
    """One validator: every setting's error says FILE: KEY must be WHAT-IT-TAKES, not WHAT-WAS-FOUND."""
    data: dict = {}
    node = data
    *sections, key = row.name.split(".")
    for name in sections:
        node = node.setdefault(name, {"command": "x"} if name == "llm" else
                               {"base_url": "http://h/v1", "model": "m"} if name == "embedder" else {})
    node[key] = [1, 2]
    error = LLMConfigError if sections == ["llm"] else ConfigError
    with pytest.raises(error) as caught:
        parse_config(data, "v/memkit.yaml")
    assert str(caught.value).startswith(f"v/memkit.yaml: {row.name} must be {row.kind.expected}, not "), caught.value


@pytest.mark.parametrize("data, message", [
    ({"colour": "blue"}, "v/memkit.yaml: unknown key 'colour' (allowed: context_turns, digest_every_messages,"),
    ({"judge_treshold": 0.3}, "unknown key 'judge_treshold' (did you mean 'judge_threshold'?"),
    ({"max_memories_per_search": 0}, "max_memories_per_search must be a whole number, 1 or more, not 0 (int)"),
    ({"upkeep_hour": 24}, "upkeep_hour must be an hour from 0 to 23, not 24"),
    ({"session_timeout_minutes": -1}, "session_timeout_minutes must be a number of minutes, 0 or more, not -1"),
    ({"judge_threshold": 2}, "judge_threshold must be a number between -1 and 1 or 'auto', not 2"),
    ({"quiet_hours": "late"}, "quiet_hours must be a span of time like \"22:00-07:30\""),
    ({"session_strategy": "fast"}, "session_strategy must be simple, summary or hybrid, not 'fast'"),
    ({"expire": {"fact": "soon"}}, "expire.fact must be like 1d, 2w, 6m, 1y or never, not 'soon'"),
    ({"expire": {"two words": "1d"}}, "expire: 'two words' is not a kind (one word)"),
    ({"serve": {"port": 70000}}, "serve.port must be a port number from 0 to 65535, not 70000"),
    ({"serve": {"token_env": "s3cr3t-t0ken"}}, "serve.token_env must be the NAME of an environment variable "
                                                 "holding the token (letters, digits and _), not the token itself"),
    ({"embedder": {"model": "m"}}, "v/memkit.yaml: embedder.base_url is missing"),
    ({"llm": {"model": "m"}}, "v/memkit.yaml: llm: set llm.base_url and llm.model"),
])
def test_messages(data, message):
    with pytest.raises(ConfigError) as caught:
        parse_config(data, "v/memkit.yaml")
    assert message in str(caught.value)
    assert "s3cr3t" not in str(caught.value)


def test_values_are_normalised_as_before():
    config = parse_config({"session_strategy": " Hybrid ", "judge_threshold": "AUTO", "embedding_similarity_threshold": 0,
                           "expire": {"Fact": "1y", "context": "never"}, "serve": {"port": 0, "host": " ::1 "},
                           "llm": {"command": " cat ", "model": " "}})
    assert config.session_strategy == "hybrid" and config.judge_threshold == "auto"
    assert config.embedding_similarity_threshold == 0
    assert config.expire == {"context": None, "conversation": 30, "pending": 7, "fact": 365}
    assert config.serve == ServeSettings(host="::1", port=0)
    assert config.llm == LLMSettings(command="cat")


def test_a_key_left_empty_means_its_default():
    assert parse_config({"model": None, "max_memories_per_search": None, "llm": None, "serve": None}) == Config()


@pytest.mark.parametrize("text, message", [
    ("model: x\nmax_memories_per_search: 0\n", "memkit.yaml line 2: max_memories_per_search must be"),
    ("serve:\n  host: a\n  # a comment\n\n  port: 70000\n", "memkit.yaml line 5: serve.port must be"),
    ("serve: {port: 70000}\n", "memkit.yaml line 1: serve.port must be"),
    ("expire:\n  context: 1d\n  fact: soon\n", "memkit.yaml line 3: expire.fact must be"),
    ("index_max_entries: 3\nllm:\n  model: m\n", "memkit.yaml line 2: llm: set llm.base_url and llm.model"),
    ("serve:\n  host: h\nport: 3\n", "memkit.yaml line 3: unknown key 'port'"),
    ("'judge': 3\n", "memkit.yaml line 1: judge must be true, false or auto, not 3 (int)"),
])
def test_a_wrong_key_in_a_file_is_named_with_its_line(tmp_path, text, message):
    (tmp_path / "memkit.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert f"{tmp_path / message}" in str(caught.value)
