"""memkit.yaml: the vault's settings, each declared once (table.py) with its default, its check and
its help, from which come the loader (settings.py), the commented memkit.yaml and the docs (render.py)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .kinds import parse_quiet_hours
    from .render import DEFAULT_CONFIG_TEXT, default_yaml, docs_page
    from .settings import CONFIG_NAME, DEFAULT_MODEL, load_config, parse_config, resolve_model
    from .table import SETTINGS, Config, EmbedderSettings, LLMSettings, RedactSettings, ServeSettings, check_url
    from .validate import Setting

__all__ = ["CONFIG_NAME", "Config", "DEFAULT_CONFIG_TEXT", "DEFAULT_MODEL", "EmbedderSettings", "LLMSettings",
           "RedactSettings", "ServeSettings", "Setting", "check_url", "default_yaml", "docs_page", "load_config", "parse_config",
           "parse_quiet_hours", "resolve_model", "SETTINGS"]

__getattr__, __dir__ = face(__name__, {
    ".settings": "CONFIG_NAME DEFAULT_MODEL load_config parse_config resolve_model",
    ".table": "SETTINGS Config EmbedderSettings LLMSettings RedactSettings ServeSettings check_url",
    ".kinds": "parse_quiet_hours",
    ".render": "DEFAULT_CONFIG_TEXT default_yaml docs_page",
    ".validate": "Setting",
})
