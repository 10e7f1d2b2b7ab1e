"""inbox/: transcripts waiting for a digest, and where they go once digested.

``capture`` (or a person) drops transcripts into ``inbox/``; the digest reads them, moves each
one it digested to ``inbox/done/`` (never replacing one there) and writes ``NAME.error`` beside
one it could not digest.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..base.fsutil import atomic_write, describe_os_error
from ..errors import InvalidValue, MemkitError
from .layout import INBOX_DIR, VaultFiles

__all__ = ["Inbox"]


class Inbox:
    """The inbox of one vault."""

    def __init__(self, files: VaultFiles) -> None:
        self._files = files

    def queue(self, name: str, data: bytes) -> Path:
        """Write a transcript to ``inbox/NAME`` atomically (replacing one of that name), for the
        watcher's digest; returns its path.

        :raises MemkitError: a name that is not a plain file name, or inbox/ leading out of the vault.
        """
        if not name or name != os.path.basename(name) or name.startswith(".") or "\0" in name or "\\" in name:
            raise InvalidValue(f"invalid inbox file name {name!r}: use a plain file name")
        inbox = self._files.inbox_dir
        if inbox.is_symlink() and not self._files.is_inside(inbox):
            raise MemkitError(f"{INBOX_DIR}/ is a symlink to a folder outside the vault; refusing to write through it")
        target = inbox / name
        if target.is_symlink():
            raise MemkitError(f"{self._files.rel(target)} is a symlink; refusing to write through it")
        try:
            inbox.mkdir(exist_ok=True)
            atomic_write(target, data)
        except OSError as exc:
            raise describe_os_error(exc, self._files.rel(target)) from exc
        return target

    def waiting(self) -> list[Path]:
        """The transcripts in inbox/ waiting for a digest (not ``.error`` notes, hidden or backup
        files, nor a symlink leading out of the vault), by name."""
        try:
            paths = sorted(self._files.inbox_dir.iterdir()) if self._files.inbox_dir.is_dir() else []
        except OSError:
            return []
        return [p for p in paths
                if p.is_file() and not p.name.startswith(".") and p.suffix not in (".error", ".md")
                and not p.name.endswith("~") and (not p.is_symlink() or self._files.is_inside(p))]

    def done(self, path: Path, read: os.stat_result) -> bool:
        """Move a digested transcript to ``inbox/done/`` (a free name, never replacing one), unless
        it changed since it was read (``read``: its stat then); returns whether it moved. Its
        ``.error`` file, if any, goes."""
        with self._files.lock():
            try:
                now = path.stat()
            except FileNotFoundError:
                return False
            if (now.st_ino, now.st_size, now.st_mtime_ns) != (read.st_ino, read.st_size, read.st_mtime_ns):
                return False
            done = self._files.inbox_dir / "done"
            target = done / path.name
            n = 2
            while target.exists():
                target = done / f"{path.stem}-{n}{path.suffix}"
                n += 1
            try:
                done.mkdir(exist_ok=True)
                os.replace(path, target)
                Path(str(path) + ".error").unlink(missing_ok=True)
            except OSError as exc:
                raise describe_os_error(exc, f"{self._files.rel(path)} (moving it to {INBOX_DIR}/done/)") from exc
        return True

    def error(self, path: Path, message: str) -> None:
        """Write ``inbox/NAME.error`` beside a transcript that could not be digested."""
        try:
            atomic_write(Path(str(path) + ".error"), message.rstrip("\n") + "\n")
        except OSError as exc:
            raise describe_os_error(exc, self._files.rel(Path(str(path) + ".error"))) from exc

