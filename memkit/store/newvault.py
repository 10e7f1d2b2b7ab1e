"""Making a vault: its folders, memkit.yaml, the pinned profile, index.txt, and the lines memkit
needs in the vault's ``.gitignore`` and ``.gitattributes``."""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Sequence

from ..base.fsutil import atomic_write, describe_os_error
from ..config import CONFIG_NAME, DEFAULT_CONFIG_TEXT
from ..errors import MemkitError, VaultExists
from ..formats.names import TOPICS_DIR
from ..formats.recent import RecentTopic, render_recent
from ..formats.topic import new_topic_text
from .layout import INBOX_DIR, INDEX_TXT, OWN_PATHS, STATE_DIR, VaultFiles

__all__ = ["create_vault", "adopt_folder", "ensure_git_files", "PROFILE_TOPIC", "PROFILE_SUMMARY", "GITIGNORE_LINES",
           "GITATTRIBUTES_LINES"]

PROFILE_TOPIC = "profile"  #: the pinned topic `memkit init` creates
PROFILE_SUMMARY = "who the user is, standing preferences, ongoing projects"
GITIGNORE_LINES = (f"{STATE_DIR}/", f"{INBOX_DIR}/done/", "*.error", ".*.tmp")  #: .*.tmp: atomic writes' temp files
GITATTRIBUTES_LINES = (
    "# memkit: merge-friendly vault (`memkit git-setup` registers the memkit merge driver in each clone)",
    "topics/*.md merge=memkit",
    "topics/**/*.md merge=memkit",  # topics in folders (topics/work/harbor.md): '*' stops at a '/'
    "archive.md merge=union",
    "index.txt merge=union",
    "sessions/*.md merge=union",
    "sessions/archive/*.md merge=union",
    "sessions/archive/raw/*.md merge=union",
)


def create_vault(path: str | os.PathLike[str], *, profile: bool = True) -> Path:
    """Create a vault: memkit.yaml (commented defaults), topics/ with an empty pinned profile.md
    (unless ``profile`` is False), inbox/, index.txt, .gitignore, .gitattributes; returns its folder.

    :raises VaultExists: if ``path`` already holds a vault.
    """
    root = Path(path).expanduser()
    if (root / CONFIG_NAME).exists():
        raise VaultExists(f"{root} already holds a vault ({CONFIG_NAME} exists); nothing changed")
    try:
        root.mkdir(parents=True, exist_ok=True)
        (root / TOPICS_DIR).mkdir(exist_ok=True)
        (root / INBOX_DIR).mkdir(exist_ok=True)
        profile_path = root / TOPICS_DIR / f"{PROFILE_TOPIC}.md"
        listed: list[RecentTopic] = []
        if profile and not profile_path.exists():  # the pinned profile: always the first layer of the context
            now = datetime.now().replace(microsecond=0)
            atomic_write(profile_path, new_topic_text("Profile", PROFILE_SUMMARY, now, {"pinned": True}))
            listed.append(RecentTopic(now, PROFILE_TOPIC, PROFILE_SUMMARY))
        if not (root / INDEX_TXT).exists():  # in step with topics/ from the start: `check` finds nothing
            atomic_write(root / INDEX_TXT, render_recent(listed, 1 << 30) if listed else b"")
        _add_lines(root / ".gitignore", GITIGNORE_LINES)
        _add_lines(root / ".gitattributes", GITATTRIBUTES_LINES)
        atomic_write(root / CONFIG_NAME, DEFAULT_CONFIG_TEXT)
    except OSError as exc:
        raise describe_os_error(exc, f"the vault at {root}") from exc
    return root


def adopt_folder(path: str | os.PathLike[str]) -> Path:
    """Make an existing folder of markdown notes (an Obsidian vault, a notes repo) a vault, as it
    is: its notes become the topics (``topics_folder: .``, at any depth, memkit.yaml's
    ``include``/``exclude`` globs deciding), and no file already there is written, renamed or
    removed. Only new files are made: memkit.yaml, index.txt, and a .gitignore naming .memkit/
    when the folder has none (one it has is left as it is). Returns the folder.

    :raises VaultExists: if the folder already holds a vault; :raises MemkitError: it is no folder.
    """
    root = Path(path).expanduser()
    if not root.is_dir():
        raise MemkitError(f"{root} is not a folder: `memkit init --existing DIR` adopts a folder of notes as it is")
    if (root / CONFIG_NAME).exists():
        raise VaultExists(f"{root} already holds a vault ({CONFIG_NAME} exists); nothing changed")
    clash = [name for name in OWN_PATHS if name != CONFIG_NAME and (root / name).exists()]
    if clash:  # memkit would take a person's file for its own (people.md, archive.md…)
        raise MemkitError(f"{root} has {', '.join(clash)} at its top, which memkit keeps for itself; rename "
                          f"{'it' if len(clash) == 1 else 'them'} or keep the notes in a vault's topics/ folder "
                          "(docs/folders.md); nothing changed")
    text = DEFAULT_CONFIG_TEXT.replace("\ntopics_folder: topics\n", "\ntopics_folder: .\n")
    try:
        atomic_write(root / INDEX_TXT, b"")  # Store.adopt fills it from the notes
        if not (root / ".gitignore").exists():
            _add_lines(root / ".gitignore", GITIGNORE_LINES)
        atomic_write(root / CONFIG_NAME, text)  # last: a vault only once it is whole
    except OSError as exc:
        raise describe_os_error(exc, f"the vault at {root}") from exc
    return root


def ensure_git_files(files: VaultFiles) -> list[str]:
    """Add memkit's lines to the vault's ``.gitignore`` and ``.gitattributes`` where missing
    (idempotent; every other line is kept); returns the files changed."""
    changed = []
    with files.lock():
        for name, lines in ((".gitignore", GITIGNORE_LINES), (".gitattributes", _attribute_lines(files.topics_rel))):
            try:
                if _add_lines(files.write_target(files.root / name), lines):
                    changed.append(name)
            except OSError as exc:
                raise describe_os_error(exc, name) from exc
    return changed


def _attribute_lines(topics_rel: str) -> tuple[str, ...]:
    """:data:`GITATTRIBUTES_LINES` for a vault whose topics folder is ``topics_rel`` (``''``: the
    vault itself, an adopted folder of notes, where every ``.md`` file is a topic)."""
    if topics_rel == TOPICS_DIR:
        return GITATTRIBUTES_LINES
    where = f"{topics_rel}/**/*.md" if topics_rel else "*.md"
    return tuple(f"{where} merge=memkit" if line.startswith(f"{TOPICS_DIR}/") else line for line in GITATTRIBUTES_LINES
                 if line != f"{TOPICS_DIR}/*.md merge=memkit")


def _add_lines(path: Path, lines: Sequence[str]) -> bool:
    """Append the ``lines`` missing from ``path`` (created if absent); True if it changed."""
    try:
        old = path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        old = ""
    present = {line.strip() for line in old.splitlines()}
    missing = [line for line in lines if line.strip() not in present]
    if not missing:
        return False
    text = old + ("" if not old or old.endswith("\n") else "\n") + "".join(line + "\n" for line in missing)
    atomic_write(path, text.encode("utf-8", errors="surrogateescape"))
    return True
