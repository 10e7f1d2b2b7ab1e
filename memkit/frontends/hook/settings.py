"""``memkit hook install claude-code`` / ``uninstall``: memkit's entries in Claude Code's settings.

Claude Code reads hooks from ``.claude/settings.json`` in a project (shared with the team, when
committed) or ``~/.claude/settings.json`` (every project of the user)::

    {"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "...", "timeout": 30}]}],
               "SessionStart": [{"matcher": "startup|resume|clear|compact", "hooks": [...]}]}}

Install merges memkit's two entries into whatever the file holds (every other key, event and hook
kept as it is, in its order) and is idempotent: an entry of memkit's already there is replaced,
not doubled, and a file that would not change is not written. Uninstall removes memkit's entries
only (a hook is memkit's when its command runs :data:`HOOK_MODULE`), and the groups and events it
leaves empty. A file that is not a JSON object is never overwritten: it is an error naming it.
The file is replaced atomically (a crash leaves the old or the new one).
"""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from ...base.fsutil import atomic_write
from ...errors import MemkitError

__all__ = ["HOOK_EVENTS", "HOOK_MODULE", "HOOK_TIMEOUT_S", "hook_command", "install_claude_code",
           "is_memkit_hook", "settings_path", "uninstall_claude_code", "memkit_hooks"]

HOOK_MODULE = "memkit.frontends.hook"  #: the module the hook's command runs (how memkit knows its own entries)
#: the events memkit answers, and each one's matcher (None: the event takes none)
HOOK_EVENTS: dict[str, str | None] = {"UserPromptSubmit": None, "SessionStart": "startup|resume|clear|compact"}
HOOK_TIMEOUT_S = 30  #: Claude Code's limit on one call (a cold answer on a large vault takes seconds)


def settings_path(*, user: bool, project: Path | None = None, home: Path | None = None) -> Path:
    """``~/.claude/settings.json`` (``user``) or ``PROJECT/.claude/settings.json``."""
    if user:
        return (home or Path.home()) / ".claude" / "settings.json"
    return (project or Path.cwd()) / ".claude" / "settings.json"


def hook_command(root: Path, *, python: str | None = None, budget: int | None = None) -> str:
    """The shell command Claude Code runs: this Python, the hook's module, the vault's absolute path."""
    words = [python or sys.executable, "-m", HOOK_MODULE, "claude-code", "--vault", str(Path(root).resolve())]
    if budget is not None:
        words += ["--budget", str(budget)]
    return shlex.join(words)


def is_memkit_hook(hook: Any) -> bool:
    """Whether a hook entry of the settings is one memkit installed."""
    if not isinstance(hook, dict) or not isinstance(hook.get("command"), str):
        return False
    try:
        words = shlex.split(hook["command"])
    except ValueError:
        return False
    return any(a == "-m" and b == HOOK_MODULE for a, b in zip(words, words[1:]))


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise MemkitError(f"cannot read {path}: {exc}") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise MemkitError(f"{path} is not valid JSON ({exc}); fix it first, memkit leaves it as it is") from None
    if not isinstance(data, dict):
        raise MemkitError(f"{path} is not a JSON object; memkit leaves it as it is")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise MemkitError(f"{path}: 'hooks' is not an object; memkit leaves it as it is")
    return data


def _without_memkit(data: dict[str, Any]) -> int:
    """Remove memkit's hooks from ``data`` (in place) and what that leaves empty; how many were removed."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not is_memkit_hook(h)]
            removed += len(inner) - len(kept)
            if kept or not inner:
                kept_groups.append(dict(group, hooks=kept) if len(kept) != len(inner) else group)
        if kept_groups:
            hooks[event] = kept_groups
        elif groups:  # memkit's entries were all it had
            del hooks[event]
    if not hooks and removed:
        del data["hooks"]
    return removed


def _write(path: Path, before: dict[str, Any] | None, data: dict[str, Any]) -> bool:
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if before is not None and path.is_file() and json.dumps(before, sort_keys=False) == json.dumps(data):
        return False  # nothing changes: the file (and its formatting) stays as it is
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text)
    except OSError as exc:
        raise MemkitError(f"cannot write {path}: {exc.strerror or exc}") from None
    return True


def install_claude_code(path: Path, command: str, *, timeout: int = HOOK_TIMEOUT_S) -> bool:
    """Put memkit's hook (running ``command``) for :data:`HOOK_EVENTS` into the settings file
    ``path``, keeping everything else. :returns: whether the file changed. :raises MemkitError:
    the file is not a JSON object, or cannot be written."""
    data = _read(path)
    before = json.loads(json.dumps(data))
    _without_memkit(data)
    hooks = data.setdefault("hooks", {})
    for event, matcher in HOOK_EVENTS.items():
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [{"type": "command", "command": command, "timeout": timeout}]
        groups = hooks.get(event)
        hooks[event] = (groups if isinstance(groups, list) else []) + [group]
    return _write(path, before, data)


def uninstall_claude_code(path: Path) -> int:
    """Remove memkit's hooks from the settings file ``path`` (nothing else). :returns: how many
    hook entries were removed (0: the file is left untouched)."""
    data = _read(path)
    removed = _without_memkit(data)
    if removed:
        _write(path, None, data)
    return removed


def memkit_hooks(path: Path) -> list[tuple[str, str]]:
    """(event, command) of each memkit hook in the settings file ``path``."""
    data = _read(path)
    found = []
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if is_memkit_hook(hook):
                    found.append((event, hook["command"]))
    return found
