"""Recall by itself: the hook an assistant runs before each prompt (Claude Code's ``UserPromptSubmit``
and ``SessionStart``), answered from a warm ``memkit serve`` (docs/hooks.md)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...base.face import face

if TYPE_CHECKING:
    from .claude import DEFAULT_BUDGET, HookAnswer, answer_claude_code, parse_hook_input
    from .entry import main
    from .settings import (
        HOOK_EVENTS,
        hook_command,
        install_claude_code,
        memkit_hooks,
        settings_path,
        uninstall_claude_code,
    )
    from .warm import socket_path

__all__ = ["DEFAULT_BUDGET", "HookAnswer", "answer_claude_code", "parse_hook_input", "main", "HOOK_EVENTS",
           "hook_command", "install_claude_code", "memkit_hooks", "settings_path", "uninstall_claude_code",
           "socket_path"]

__getattr__, __dir__ = face(__name__, {
    ".claude": "DEFAULT_BUDGET HookAnswer answer_claude_code parse_hook_input",
    ".entry": "main",
    ".settings": "HOOK_EVENTS hook_command install_claude_code memkit_hooks settings_path uninstall_claude_code",
    ".warm": "socket_path",
})
