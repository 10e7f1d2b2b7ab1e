"""memkit.yaml: reading a vault's settings (:func:`load_config`); what each setting is, its default
and its check are declared once, in :mod:`memkit.config.table`."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from ..base.fsutil import read_regular
from ..errors import ConfigError, LLMConfigError, MemkitError
from ..formats.safeyaml import MAX_YAML_BYTES, YamlError, load_yaml
from .kinds import describe_value, parse_quiet_hours
from .table import DEFAULT_EXPIRE, Config, EmbedderSettings, LLMSettings, ServeSettings, check_url
from .validate import Locate, build

__all__ = ["CONFIG_NAME", "DEFAULT_MODEL", "MODEL_ENV", "DEFAULT_EXPIRE", "Config",
           "ConfigError", "EmbedderSettings", "LLMConfigError", "LLMSettings", "ServeSettings", "check_url",
           "describe_value", "load_config", "parse_config", "parse_quiet_hours", "resolve_model"]

CONFIG_NAME = "memkit.yaml"
DEFAULT_MODEL = "minishlab/potion-base-8M"  #: the embedding model when nothing names one and it is cached
MODEL_ENV = "MEMKIT_MODEL"


def parse_config(data: Any, source: str = CONFIG_NAME, text: str | None = None) -> Config:
    """Validate a loaded memkit.yaml mapping and return a :class:`Config`.

    :param data: what YAML loaded (``None`` for an empty file).
    :param source: the file name used in error messages.
    :param text: the file's text, to name the line of a key that is wrong.
    :raises ConfigError: naming the file, the key, what was expected and what was found.
    """
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of settings (key: value lines), got {type(data).__name__}")
    return build(Config, data, source, locate=key_lines(text) if text is not None else None)


def key_lines(text: str) -> Locate:
    """Where a key is in ``text``: ``serve.port`` -> the line of ``port:`` under ``serve:`` (or of
    ``serve:`` itself, for a mapping written on one line), 1-based; None where it is not found."""
    lines = text.splitlines()

    def locate(dotted: str) -> int | None:
        found, start, parent = None, 0, -1  # parent: the indentation of the section's line (-1: the top)
        for part in dotted.split("."):
            key = re.compile(rf"(['\"]?){re.escape(part)}\1\s*:(\s|$)")
            for number in range(start, len(lines)):
                line = lines[number]
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                depth = len(line) - len(line.lstrip())
                if parent >= 0 and depth <= parent:
                    return found  # past the section: the key is in its one-line mapping, or not there
                if key.match(line, depth) and (parent >= 0 or depth == 0):
                    found, start, parent = number + 1, number + 1, depth
                    break
            else:
                return found
        return found

    return locate


def load_config(root: Path) -> Config:
    """Read ``root/memkit.yaml``; a missing file means all defaults.

    :param root: the vault folder.
    """
    path = root / CONFIG_NAME
    try:
        raw, _ = read_regular(path, MAX_YAML_BYTES)
        text = raw.decode("utf-8-sig")
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError, MemkitError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    try:
        data = load_yaml(text)
    except YamlError as exc:
        line = f" line {exc.line}" if exc.line else ""
        raise ConfigError(f"{path}{line}: not valid YAML: {exc.problem_at()}") from None
    return parse_config(data, str(path), text)


def resolve_model(explicit: str | None, config: Config, env: Mapping[str, str]) -> str | None:
    """The embedding model to use: ``explicit`` (``--model``), then ``MEMKIT_MODEL``, then memkit.yaml
    (None: none named, the default applies).

    :param explicit: a model given by the caller, or None.
    :param config: the vault's settings.
    :param env: the environment to read ``MEMKIT_MODEL`` from (the caller passes it: see :class:`memkit.Vault`).
    """
    return explicit or env.get(MODEL_ENV) or config.model
