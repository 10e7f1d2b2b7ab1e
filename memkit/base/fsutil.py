"""Atomic writes and the vault's write lock."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from ..errors import MemkitError, VaultLocked
from .lazy_re import lazy


def atomic_write(path: Path, data: bytes | str) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file, never half.

    Writes a temp file in the same folder, fsyncs it, renames it over ``path`` and fsyncs the folder.
    The file's permission bits are kept.

    :param path: the file to write.
    :param data: bytes, or text written as UTF-8 exactly as given (no newline translation).
    """
    if isinstance(data, str):
        data = data.encode("utf-8")
    path = Path(path)
    tmp = _write_temp(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


Stamp = tuple[int, int, int]  #: (size, mtime_ns, inode): changes when a file is edited or replaced


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class FileChanged(MemkitError):
    """A file changed on disk while memkit was rewriting it; memkit wrote nothing and kept the change."""


def append_bytes(path: Path, data: bytes | Callable[[bytes], bytes]) -> None:
    """Append to an existing regular file with one ``O_APPEND`` write, then fsync.

    Appends made at the same time by anyone else (an editor, ``>>`` in a shell, another memkit)
    are never lost: the kernel serialises ``O_APPEND`` writes. ``data`` may be a function of the
    file's last byte (``b""`` for an empty file), called just before the write, so a line can be
    prefixed with a newline when the file does not end with one.

    :raises NotRegularFile: the path is a FIFO, a device or a folder (checked without blocking).
    :raises OSError: the file cannot be opened or written.
    """
    with AppendFile(path) as f:
        f.append(data)



def append_guarded(path: Path, data: bytes | Callable[[bytes], bytes], timeout: float = 30.0) -> None:
    """:func:`append_bytes` for a file that :func:`replace_guarded` may rewrite: the append holds a
    shared lock on the file while it writes, and when the file was replaced while it waited for
    that lock it opens the new one, so an append made during a rewrite lands in the new file.

    :raises OSError, NotRegularFile: as :func:`append_bytes`.
    """
    deadline = time.monotonic() + timeout
    while True:
        with AppendFile(path) as f:
            _lock_fd(f.fileno(), path, shared=True, deadline=deadline)
            if os.fstat(f.fileno()).st_ino == os.stat(path).st_ino:  # still the file at ``path``
                f.append(data)
                return
        # replaced while we waited (our lock goes with the descriptor): append to the new file


def replace_guarded(path: Path, data: bytes, base: bytes, stamp: Stamp | None, timeout: float = 30.0) -> None:
    """:func:`replace_checked` holding an exclusive lock on the file: an :func:`append_guarded`
    made meanwhile either came before (and is carried into the new file) or waits and then goes
    to the new file; none is lost.

    :raises FileChanged: the file was edited (not only appended to) since it was read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise FileChanged(f"{path.name} was deleted while memkit was rewriting it; nothing was written") from None
    try:
        _lock_fd(fd, path, shared=False, deadline=time.monotonic() + timeout)
        replace_checked(path, data, base, stamp)
    finally:
        os.close(fd)  # releases the lock

class AppendFile:
    """A regular file opened once (``O_RDWR | O_APPEND``, never blocking) to read it and then append
    to it: what :meth:`memkit.store.store.Store.add` does with a topic, in one open.

    ``with AppendFile(path, limit) as f:`` reads the file whole into :attr:`data` (when ``limit``
    is given); :meth:`append` writes as :func:`append_bytes` does.

    :raises NotRegularFile: a FIFO, a device or a folder, or over ``limit`` bytes.
    :raises OSError: the file cannot be opened (``FileNotFoundError`` when it does not exist).
    """

    def __init__(self, path: Path, limit: int | None = None) -> None:
        self.data = b""  #: the file's bytes when opened (read only when a ``limit`` is given)
        self.stamp: Stamp | None = None  #: the file's stat after :meth:`append`
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            st = os.fstat(self._fd)
            if not stat.S_ISREG(st.st_mode):
                raise NotRegularFile(f"is {file_kind(st.st_mode)}, not a regular file")
            if limit is not None:
                if st.st_size > limit:
                    raise NotRegularFile(f"is {st.st_size / 1e6:.0f} MB, over the {limit / 1e6:.0f} MB limit")
                chunks, offset = [], 0
                while offset <= limit:
                    chunk = os.pread(self._fd, min(limit + 1 - offset, 1 << 20), offset)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    offset += len(chunk)
                self.data = b"".join(chunks)
                if len(self.data) > limit:
                    raise NotRegularFile(f"grew over the {limit / 1e6:.0f} MB limit while being read")
        except BaseException:
            os.close(self._fd)
            raise

    def append(self, data: bytes | Callable[[bytes], bytes]) -> bool:
        """One ``O_APPEND`` write, then fsync; ``data`` may be a function of the file's last byte
        as it is now (see :func:`append_bytes`). Whether the file is now exactly :attr:`data` (read
        with a ``limit``) and what was appended: nobody else appended since it was read (its stat
        then: :attr:`stamp`)."""
        if callable(data):
            size = os.fstat(self._fd).st_size
            data = data(os.pread(self._fd, 1, size - 1) if size else b"")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        os.fsync(self._fd)
        st = os.fstat(self._fd)
        self.stamp = stamp_of(st)
        return st.st_size == len(self.data) + len(data)

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> "AppendFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def replace_checked(path: Path, data: bytes, base: bytes, stamp: Stamp | None) -> None:
    """Replace ``path`` with ``data`` atomically, unless it changed since it was read as ``base``.

    The caller read the file (``base``, whose stat was ``stamp``; ``None``: it did not exist) and
    computed ``data`` from it, holding the vault's write lock, so only someone outside memkit (an
    editor, a shell) can have changed it since. ``data`` is written to a temp file and fsynced;
    then, immediately before the rename, the file is compared with what was read:

    - unchanged, or only appended to (``base`` is a prefix of it, same inode): the temp file is
      renamed into place, and every byte appended to the old file beyond ``base`` by the time the
      rename is done (read right after it) is appended to the new file;
    - changed otherwise (rewritten, truncated, replaced, deleted, created): :class:`FileChanged`
      is raised and nothing is written.

    The windows that remain: a rewrite (not an append) in the microseconds between that check and
    the rename is overwritten; and a writer that opened the old file before the rename and appends
    to it after the salvage (which reads the old file until it has been quiet for a few
    milliseconds, :func:`_salvage`) writes into the replaced file: a program keeping the file open
    for appending. Plain additions never take this path (:func:`append_bytes`).
    """
    tmp = _write_temp(path, data)
    renamed = False
    try:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        except FileNotFoundError:
            if stamp is not None:
                raise FileChanged(f"{path.name} was deleted while memkit was rewriting it; nothing was written") from None
            fd = -1
        try:
            if fd >= 0:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    raise NotRegularFile(f"is {file_kind(st.st_mode)}, not a regular file")
                if stamp is None or (stamp_of(st) != stamp and (
                        st.st_ino != stamp[2] or st.st_size < len(base) or os.pread(fd, len(base), 0) != base)):
                    raise FileChanged(f"{path.name} was changed by someone else while memkit was rewriting it; "
                                      f"nothing was written (their change is kept): try again")
            os.replace(tmp, path)
            renamed = True
            if fd >= 0:  # what was appended to the old file since it was read goes to the new one
                _salvage(fd, len(base), path, data)
        finally:
            if fd >= 0:
                os.close(fd)
    finally:
        if not renamed:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    fsync_dir(path.parent)


SALVAGE_POLL_S = 0.002  #: after a rewrite, the old file is read again this often …
SALVAGE_QUIET_READS = 3  #: … until this many reads in a row find nothing new …
SALVAGE_MAX_S = 0.1  #: … or this long has passed


def _salvage(fd: int, offset: int, path: Path, before: bytes) -> None:
    """Append to ``path`` what was appended to the old file (``fd``) beyond ``offset``, reading it
    until it has been quiet for a few polls: a writer that opened the old file just before the
    rename (a shell's ``>>``) may write a moment after it."""
    deadline = time.monotonic() + SALVAGE_MAX_S
    quiet = 0
    tail = before[-1:]
    while True:
        late = _read_fd(fd, offset)
        if late:
            join = b"" if not tail or tail in (b"\n", b"\r") or late.startswith((b"\n", b"\r")) else b"\n"
            append_bytes(path, join + late)
            offset += len(late)
            tail = late[-1:]
            quiet = 0
        else:
            quiet += 1
        if quiet >= SALVAGE_QUIET_READS or time.monotonic() >= deadline:
            return
        time.sleep(SALVAGE_POLL_S)


def _read_fd(fd: int, offset: int = 0) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


TEMP_RE = lazy(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")  #: the name of a temp file atomic writes make


def _write_temp(path: Path, data: bytes) -> str:
    """A fsynced temp file beside ``path`` holding ``data``, with ``path``'s permission bits."""
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def _open_regular_fd(path: Path, limit: int) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only without blocking and check it is a regular file of at most ``limit``
    bytes; returns the open descriptor and its stat."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                 | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"is {file_kind(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise NotRegularFile(f"is {st.st_size / 1e6:.0f} MB, over the {limit / 1e6:.0f} MB limit")
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: Path, limit: int) -> BinaryIO:
    """Open a regular file of at most ``limit`` bytes for reading (binary), never blocking on open:
    a FIFO, socket, device or folder is refused before anything is read (see :func:`read_regular`).
    For a file read piece by piece; the caller closes it.

    :raises OSError: the file cannot be opened.
    :raises NotRegularFile: not a regular file, or larger than ``limit`` (the message says which).
    """
    fd, _ = _open_regular_fd(path, limit)
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int) -> tuple[bytes, os.stat_result]:
    """Read a regular file of at most ``limit`` bytes without ever blocking on open.

    A FIFO, socket or device is refused before anything is read (opened non-blocking, checked
    with fstat), so a named pipe in a topics folder cannot hang memkit.

    :raises OSError: the file cannot be opened or read (a symlink loop is ``ELOOP``).
    :raises NotRegularFile: not a regular file, or larger than ``limit`` (the message says which).
    """
    fd, st = _open_regular_fd(path, limit)
    try:
        chunks = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise NotRegularFile(f"grew over the {limit / 1e6:.0f} MB limit while being read")
        return data, st
    finally:
        os.close(fd)


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of a regular file (never blocking on a FIFO)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"is {file_kind(st.st_mode)}, not a regular file")
        return os.pread(fd, size, 0)
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """A word for a file type: ``a FIFO``, ``a socket``, ``a device``, ``a folder``."""
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a special file"


class NotRegularFile(MemkitError):
    """A path that is not a regular file of acceptable size (FIFO, device, folder, too large)."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class VaultLock:
    """An exclusive lock across processes (a lock file) that is re-entrant within a process.

    ``with lock:`` may nest: the first entry takes the file lock, the last exit releases it.
    Other threads of the same process wait for the owning thread as another process would.

    :param path: the lock file.
    :param timeout: seconds to wait before raising :class:`VaultLocked`.
    """

    def __init__(self, path: Path, timeout: float = 30.0, on_acquire: Callable[[], None] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.on_acquire = on_acquire  #: run each time the lock is taken (not when re-entered)
        self._rlock = threading.RLock()
        self._depth = 0
        self._cm: contextlib.AbstractContextManager[None] | None = None

    def __enter__(self) -> None:
        if not self._rlock.acquire(timeout=self.timeout):
            raise VaultLocked(f"{self.path}: still locked by another thread after {self.timeout:.0f} s")
        try:
            if self._depth == 0:
                cm = file_lock(self.path, self.timeout)
                cm.__enter__()
                self._cm = cm
            self._depth += 1
            if self._depth == 1 and self.on_acquire is not None:
                self.on_acquire()
        except BaseException:
            if self._depth == 1 and self._cm is not None:  # on_acquire failed: give the lock back
                self._depth = 0
                held, self._cm = self._cm, None
                held.__exit__(None, None, None)
            self._rlock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self._depth -= 1
            if self._depth == 0 and self._cm is not None:
                cm, self._cm = self._cm, None
                cm.__exit__(None, None, None)
        finally:
            self._rlock.release()



@contextlib.contextmanager
def file_lock(path: Path, timeout: float = 30.0) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if needed) across processes.

    :param path: the lock file.
    :param timeout: seconds to wait before raising :class:`VaultLocked`.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise describe_os_error(exc, f"the lock file {path}") from exc
    try:
        _acquire(fd, path, timeout)
        try:
            yield
        finally:
            _release(fd)
    finally:
        os.close(fd)


def lock_held(path: Path) -> bool:
    """Whether some open file (another process's, or this one's) holds :func:`hold_lock` on
    ``path``; False where file locks are not known (not POSIX) or the file is missing."""
    if os.name != "posix":
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return not _try_lock(fd, shared=True, release=True)
    except OSError:  # a file system without flock (some FUSE, SMB mounts): nobody is known to hold it
        return False
    finally:
        os.close(fd)


class hold_lock:  # noqa: N801 (used like a function: ``mark = hold_lock(path)``)
    """An exclusive lock on ``path`` held for as long as this object lives (or until
    :meth:`release`), without waiting: :attr:`held` says whether it was free. For a long-running
    process to say it is there (:func:`lock_held`); the kernel lets it go when the process ends,
    whatever way it ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        if os.name != "posix":
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return
        for _attempt in range(5):  # a search's probe (lock_held) holds it shared for microseconds
            try:
                if _try_lock(fd, shared=False, release=False):
                    self._fd = fd
                    _HELD.add(self)
                    return
            except OSError:  # no flock on this file system: not held
                break
            time.sleep(0.002)
        os.close(fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the lock back (closing the file does)."""
        _HELD.discard(self)
        self.forget()

    def forget(self) -> None:
        """Close this copy of the file: in this process, the lock goes with it; in a child forked
        without exec, only the child's copy goes (the parent's :meth:`release` frees the lock)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


_HELD: "weakref.WeakSet[hold_lock]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for held in list(_HELD):
        held.forget()
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


if os.name == "posix":
    import fcntl

    def _try_lock(fd: int, *, shared: bool, release: bool) -> bool:
        """Take a lock on ``fd`` if free (and give it back at once with ``release``)."""
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if release:
            fcntl.flock(fd, fcntl.LOCK_UN)
        return True

    def _acquire(fd: int, path: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise VaultLocked(f"{path}: still locked by another memkit process after {timeout:.0f} s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)

    def _release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

    def _lock_fd(fd: int, path: Path, *, shared: bool, deadline: float) -> None:
        """A lock on an open file (released when it is closed), waiting until ``deadline``."""
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise VaultLocked(f"{path.name}: still locked by another memkit process") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)

else:  # pragma: no cover - Windows
    import msvcrt  # type: ignore[import-not-found,unused-ignore]

    def _try_lock(fd: int, *, shared: bool, release: bool) -> bool:
        return False

    def _acquire(fd: int, path: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise VaultLocked(f"{path}: still locked by another memkit process after {timeout:.0f} s") from None
                time.sleep(0.01)

    def _release(fd: int) -> None:
        os.lseek(fd, 0, 0)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]

    def _lock_fd(fd: int, path: Path, *, shared: bool, deadline: float) -> None:
        """No file locks here: a rewrite's salvage (replace_checked) carries what was appended."""


def describe_os_error(exc: OSError, what: str) -> MemkitError:
    """Turn an OSError from a write into a one-line MemkitError saying what to do."""
    reason = exc.strerror or str(exc)
    hint = ""
    if isinstance(exc, PermissionError):
        hint = " (is the vault read-only? check its permissions)"
    return MemkitError(f"cannot write {what}: {reason}{hint}")
