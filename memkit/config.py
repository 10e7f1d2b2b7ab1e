"""memkit.yaml: the vault's settings, their defaults and validation."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError

CONFIG_NAME = "memkit.yaml"
DEFAULT_MODEL = "minishlab/potion-base-8M"

# The file `memkit init` writes: every key with its default, commented so a person can tune it.
DEFAULT_CONFIG_TEXT = """\
# memkit settings. Every key is optional; the values below are the defaults.

# Minutes without new lines before an inbox/ transcript is digested by `memkit watch`.
session_timeout_minutes: 7

# A topic with more entry lines than this is split into subtopics.
topic_split_threshold_lines: 50

# Conclusions that match no topic start a new topic only when there are at least this many.
min_conclusions_for_new_topic: 3

# Minimum cosine similarity for a memory to count as relevant. The right value depends on the
# model: "auto" uses the value calibrated for it (see "Choosing the threshold" in the README).
embedding_similarity_threshold: auto

# How many memories a search or a context returns by default.
max_memories_per_search: 5

# Lines kept in index.txt (recent topics, newest first).
index_max_entries: 20

# A model2vec model id (fetched once into the Hugging Face cache) or a local folder.
model: minishlab/potion-base-8M

# LLM for digest and split naming; empty = none. Examples:
#   llm: {base_url: "http://127.0.0.1:11434/v1", model: "llama3.2"}          # Ollama
#   llm: {base_url: "https://api.openai.com/v1", model: "gpt-4o-mini", api_key_env: OPENAI_API_KEY}
#   llm: {command: "llm -m mistral"}                                            # any shell command
llm: {}
"""


@dataclass
class Config:
    """The settings of one vault (see DESIGN.md for what each key does)."""

    session_timeout_minutes: float = 7
    topic_split_threshold_lines: int = 50
    min_conclusions_for_new_topic: int = 3
    embedding_similarity_threshold: float | str = "auto"  #: a cosine, or "auto" (calibrated per model)
    max_memories_per_search: int = 5
    index_max_entries: int = 20
    model: str = DEFAULT_MODEL
    llm: dict[str, Any] = field(default_factory=dict)

    #: keys a person did not set, so a model-specific default may apply
    explicit: frozenset[str] = frozenset()


_TYPES: dict[str, tuple[type, ...]] = {
    "session_timeout_minutes": (int, float),
    "topic_split_threshold_lines": (int,),
    "min_conclusions_for_new_topic": (int,),
    "embedding_similarity_threshold": (int, float, str),
    "max_memories_per_search": (int,),
    "index_max_entries": (int,),
    "model": (str,),
    "llm": (dict,),
}


def parse_config(data: Any, source: str = CONFIG_NAME) -> Config:
    """Validate a loaded memkit.yaml mapping and return a :class:`Config`.

    :param data: what YAML loaded (``None`` for an empty file).
    :param source: the file name used in error messages.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings, got {type(data).__name__}")
    known = {f.name for f in fields(Config) if f.name != "explicit"}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(
                f"{source}: unknown key {key!r}; allowed keys: {', '.join(sorted(known))}"
            )
        types = _TYPES[key]
        if value is None and key == "llm":
            value = {}
        if isinstance(value, bool) or not isinstance(value, types):
            want = " or ".join(t.__name__ for t in types)
            raise ConfigError(f"{source}: {key} must be {want}, got {value!r}")
        if key in ("topic_split_threshold_lines", "max_memories_per_search", "index_max_entries",
                   "min_conclusions_for_new_topic") and value < 1:
            raise ConfigError(f"{source}: {key} must be at least 1, got {value}")
        if key == "session_timeout_minutes" and value < 0:
            raise ConfigError(f"{source}: {key} must be 0 or more, got {value}")
        if key == "embedding_similarity_threshold":
            if isinstance(value, str) and value.strip().lower() != "auto":
                raise ConfigError(f"{source}: {key} must be a number between -1 and 1 or 'auto', got {value!r}")
            if not isinstance(value, str) and not -1.0 <= value <= 1.0:
                raise ConfigError(f"{source}: {key} must be between -1 and 1, got {value}")
        values[key] = value
    return Config(**values, explicit=frozenset(values))


def load_config(root: Path) -> Config:
    """Read ``root/memkit.yaml``; a missing file means all defaults.

    :param root: the vault folder.
    """
    import yaml

    path = root / CONFIG_NAME
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}{line}: not valid YAML: {problem}") from exc
    return parse_config(data, str(path))
