"""memkit.yaml: the vault's settings, their defaults and their validation."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.face import face

if TYPE_CHECKING:
    from .settings import CONFIG_NAME, Config, DEFAULT_CONFIG_TEXT, DEFAULT_MODEL, EmbedderSettings, LLMSettings, check_url, load_config, parse_quiet_hours, resolve_model

__all__ = ["CONFIG_NAME", "Config", "DEFAULT_CONFIG_TEXT", "DEFAULT_MODEL", "EmbedderSettings", "LLMSettings", "check_url", "load_config", "parse_quiet_hours", "resolve_model"]

__getattr__, __dir__ = face(__name__, {
    ".settings": "CONFIG_NAME Config LLMSettings check_url DEFAULT_CONFIG_TEXT DEFAULT_MODEL EmbedderSettings load_config parse_quiet_hours resolve_model",
})
