"""Where a vault's files are, and what counts as one of them.

:class:`VaultFiles` knows the vault's layout (topics/, inbox/, .memkit/, index.txt, archive.md),
holds its write lock (whose taking runs :mod:`memkit.store.recovery`), resolves topic names to files
without ever leaving topics/, and lists the topic files (symlinks out of the vault, FIFOs and
folders skipped with a warning). It reads and writes no file's content: :class:`memkit.store.store.Store`
builds on it.
"""
from __future__ import annotations

import errno
import logging
import os
import stat
import time
from pathlib import Path

from ..base.fsutil import VaultLock, describe_os_error, file_kind
from ..config import CONFIG_NAME, Config, load_config
from ..errors import MemkitError, VaultNotFound
from ..formats.archive import ARCHIVE
from ..formats.globs import Globs
from ..formats.names import (
    TOPICS_DIR,
    canonical_name,
    check_topic_name,
    is_canonical,
    is_canonical_path,
    is_topic_filename,
    session_file_name,
    topic_stem,
)
from ..formats.session import ARCHIVE_DIR, RAW_DIR, SESSIONS_DIR
from .recovery import sweep_temp_files, undo_interrupted_split

log = logging.getLogger("memkit")

__all__ = ["VaultFiles", "TopicFile", "find_vault", "TOPICS_DIR", "INBOX_DIR", "STATE_DIR", "INDEX_TXT"]


INBOX_DIR = "inbox"
STATE_DIR = ".memkit"
INDEX_TXT = "index.txt"
LOCK_TIMEOUT_S = 30.0
#: memkit's own files and folders, never topics when the topics folder is the vault's own (``topics_folder: .``)
OWN_PATHS = ("archive.md", "people.md", "index.txt", "inbox", "sessions", "memkit.yaml")
ROOT_FILES = ("archive.md", "index.txt", ".gitignore", ".gitattributes", "memkit.yaml")  #: what memkit writes at the root
TEMP_SWEEP_INTERVAL_S = 60.0  #: how often the write lock sweeps away temp files of dead writers


def find_vault(explicit: str | os.PathLike[str] | None = None, env: str | None = None,
               cwd: str | os.PathLike[str] | None = None) -> Path:
    """Locate a vault: ``explicit`` path, then ``env`` (MEMKIT_VAULT), then the nearest parent of
    ``cwd`` holding memkit.yaml (as git finds .git).

    :raises VaultNotFound: saying what was tried and how to create one.
    """
    for given, source in ((explicit, "--vault"), (env, "MEMKIT_VAULT")):
        if given:
            path = Path(given).expanduser()
            if not path.is_dir():
                raise VaultNotFound(f"vault {path} ({source}) does not exist: create it with `memkit init {path}`")
            if not (path / CONFIG_NAME).is_file() and not (path / TOPICS_DIR).is_dir():
                raise VaultNotFound(f"{path} ({source}) is not a memkit vault (no {CONFIG_NAME}): run `memkit init {path}`")
            return path.resolve()
    here = Path(cwd or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    raise VaultNotFound(
        f"no vault found in {here} or its parents: pass --vault PATH, set MEMKIT_VAULT, or run `memkit init`"
    )



class TopicFile:
    """A topic file found in topics/, with the stat of the file it is (a symlink's target).

    ``path`` may be given as a string (a directory listing's): it becomes a :class:`Path` when
    first asked for (a listing of 20,000 files checked for changes never builds one)."""

    __slots__ = ("name", "_path", "stat")

    def __init__(self, name: str, path: Path | str, stat: os.stat_result) -> None:
        self.name = name
        self._path = path
        self.stat = stat

    @property
    def path(self) -> Path:
        if isinstance(self._path, str):
            self._path = Path(self._path)
        return self._path

    @property
    def location(self) -> str:
        """The path as a string (no :class:`Path` made when the listing gave one)."""
        return self._path if isinstance(self._path, str) else str(self._path)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicFile) and (self.name, self.path, self.stat) == (other.name, other.path, other.stat)

    def __hash__(self) -> int:
        return hash((self.name, str(self._path)))

    def __repr__(self) -> str:
        return f"TopicFile(name={self.name!r}, path={self.path!r})"

    @property
    def stamp(self) -> tuple[int, int, int]:
        """(size, mtime_ns, inode): changes when the file is edited or replaced."""
        return (self.stat.st_size, self.stat.st_mtime_ns, self.stat.st_ino)



class VaultFiles:
    """The layout of one vault (see the module docstring).

    :param root: the vault folder (must exist).
    :param config: its settings (default: read memkit.yaml).
    """

    def __init__(self, root: str | os.PathLike[str], config: Config | None = None) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise VaultNotFound(f"vault {path} does not exist: create it with `memkit init {path}`")
        self.root = path.resolve()
        self.config = config if config is not None else load_config(self.root)
        self._lock = VaultLock(self.root / STATE_DIR / "write.lock", LOCK_TIMEOUT_S, on_acquire=self._recover)
        self._warned: set[str] = set()
        self._next_sweep = 0.0  #: time.monotonic() of the next sweep of dead writers' temp files
        self.globs = Globs(self.config.include, self.config.exclude)
        folder = self.config.topics_folder
        self.topics_rel = "" if folder == "." else folder  #: the topics folder, relative to the vault ('' for itself)
        self._topics_dir = self.root / self.topics_rel if self.topics_rel else self.root

    def __repr__(self) -> str:
        return f"VaultFiles({str(self.root)!r})"

    # ---- paths ---------------------------------------------------------------------------------
    @property
    def topics_dir(self) -> Path:
        return self._topics_dir

    def topic_rel(self, name: str) -> str:
        """The vault-relative path of topic ``name``'s file (``topics/work/harbor.md``)."""
        return f"{self.topics_rel}/{name}.md" if self.topics_rel else f"{name}.md"

    def name_of(self, path: str | os.PathLike[str]) -> str:
        """The topic name of a file under the topics folder: its path there without ``.md``
        (``work/harbor``); a path outside it gives its stem."""
        text = os.fspath(path)
        if not os.path.isabs(text):  # a vault-relative path (topics/work/harbor.md)
            text = os.path.join(self.root, text)
        base = os.fspath(self._topics_dir) + os.sep
        if text.startswith(base):
            rel = text[len(base):]
            if os.sep != "/":
                rel = rel.replace(os.sep, "/")
            return rel[:-3] if rel.endswith(".md") else rel
        return Path(text).stem

    def is_topic_rel(self, rel: str) -> bool:
        """Whether the file at ``rel`` (its path under the topics folder) is a topic: the globs of
        memkit.yaml, and never memkit's own files when the topics folder is the vault's."""
        if not self.topics_rel and rel.split("/", 1)[0] in OWN_PATHS:
            return False
        return self.globs.is_topic(rel)

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

    def context_state_path(self, session: str) -> Path:
        """The state file of a context session: ``.memkit/sessions/<slug>-<hash>.json``.

        Any id is accepted: the slug keeps it readable, the hash keeps distinct ids apart, and
        neither can contain a path separator, so the file never leaves ``.memkit/sessions/``
        (:func:`memkit.formats.names.session_file_name`, which names ``memkit capture``'s inbox files too).
        """
        return self.state_dir / "sessions" / session_file_name(session, session, ".json")

    @property
    def inbox_dir(self) -> Path:
        return self.root / INBOX_DIR

    @property
    def archive_path(self) -> Path:
        return self.root / ARCHIVE

    @property
    def recent_path(self) -> Path:
        return self.root / INDEX_TXT

    def topic_path(self, name: str) -> Path:
        """The file of topic ``name`` (validated; can never leave topics/). A file a person named
        differently (``My Notes.md``) is found by its exact stem."""
        canonical = check_topic_name(name)
        raw = topic_stem(name)
        if raw != canonical and (self.topics_dir / f"{raw}.md").is_file():
            return self.topics_dir / f"{raw}.md"
        path = self.topics_dir / f"{canonical}.md"
        if "/" in canonical:  # in a folder: a person's names ("Work/Harbor Project") found by their canonical one
            if not path.exists():
                found = [tf for tf in self.topic_files() if "/" in tf.name and not is_canonical_path(tf.name)
                         and canonical_name(tf.name) == canonical]
                if len(found) == 1:
                    return found[0].path
                folder, _, leaf = canonical.rpartition("/")
                return self._folder_for(folder) / f"{leaf}.md"  # a new topic: in the folder there is
            return path
        if not path.exists():  # a file a person named differently ("Books.md"): found by its canonical name
            try:
                same = [e.name for e in os.scandir(self.topics_dir) if e.name.endswith(".md")
                        and e.name != path.name and not is_canonical(e.name[:-3])
                        and _canonical_or_none(e.name[:-3]) == canonical]
            except OSError:
                same = []
            if len(same) == 1:
                return self.topics_dir / same[0]
        return path

    def _folder_for(self, folder: str) -> Path:
        """The folder under topics/ whose canonical path is ``folder`` (``Work/Projects`` for
        ``work/projects``), as far as one exists; the rest as given."""
        where = self.topics_dir
        for part in folder.split("/"):
            if not (where / part).is_dir():
                try:
                    same = sorted(e.name for e in os.scandir(where) if e.is_dir(follow_symlinks=False)
                                  and not e.name.startswith(".") and canonical_name(e.name) == part)
                except OSError:
                    same = []
                if same:
                    part = same[0]
            where = where / part
        return where

    def rel(self, path: Path) -> str:
        """A path relative to the vault, with '/' separators, for messages and the index."""
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def is_inside(self, path: Path) -> bool:
        """Whether ``path`` (after resolving symlinks) lies inside the vault."""
        try:
            path.resolve().relative_to(self.root)
            return True
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return False

    def topics_dir_inside(self) -> bool:
        """False when topics/ itself is a symlink leading out of the vault (then it is not used)."""
        if not self.topics_dir.is_symlink():
            return True
        if self.is_inside(self.topics_dir):
            return True
        self.warn_once(f"{TOPICS_DIR}/ is a symlink to a folder outside the vault; not followed")
        return False

    def ensure_topics_dir(self) -> Path:
        """Create topics/ if it is missing (as the first write would); returns it.

        :raises MemkitError: it cannot be created (saying why).
        """
        try:
            self.topics_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise describe_os_error(exc, f"{TOPICS_DIR}/") from exc
        return self.topics_dir

    # ---- locking -------------------------------------------------------------------------------
    def lock(self) -> VaultLock:
        """The vault's write lock (``with store.lock():``): every read-modify-write of a topic file,
        index.txt or archive.md holds it, across processes (CLI, watcher, MCP server). Re-entrant
        within a process, so a service may hold it around several store calls."""
        self.check_state_dir()
        try:
            self.state_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise describe_os_error(exc, f"{self.rel(self.state_dir)}/") from exc
        return self._lock

    def check_state_dir(self) -> None:
        """``.memkit`` must be a real folder inside the vault (or not exist yet): memkit never
        writes derived data, locks included, anywhere else.

        :raises MemkitError: it is a symlink or a file, saying what to do.
        """
        state = self.state_dir
        if state.is_symlink():
            raise MemkitError(f"{STATE_DIR} is a symlink (to {os.readlink(state)}); memkit keeps derived data only "
                              f"inside the vault: remove the link (everything in it is rebuilt)")
        if state.exists() and not state.is_dir():
            raise MemkitError(f"{STATE_DIR} is a file, not a folder; memkit keeps its derived data there: remove it "
                              f"(everything in it is rebuilt)")

    # ---- locking and recovery ------------------------------------------------------------------
    def _recover(self) -> None:
        """Run when the write lock is taken: finish or undo what a writer killed mid-way left (an
        interrupted split), and remove the temp files of dead writers (:mod:`memkit.store.recovery`).
        Never fails the write that took the lock."""
        try:
            undo_interrupted_split(self.root, self.state_dir, self.is_inside)
        except Exception as exc:  # noqa: BLE001 - recovery must not stop the write: say so and go on
            self.warn_once(f"could not check for an interrupted split: {exc}")
        if time.monotonic() < self._next_sweep:
            return  # dead writers' temp files are swept at most once a minute (it lists topics/)
        self._next_sweep = time.monotonic() + TEMP_SWEEP_INTERVAL_S
        sessions = self.root / SESSIONS_DIR  # and a session's, once aging or an import was killed
        folders = [sessions, sessions / ARCHIVE_DIR, sessions / ARCHIVE_DIR / RAW_DIR]
        sweep_temp_files([(self.root, ROOT_FILES)] + [(f, None) for f in self.topic_folders()]
                         + [(f, None) for f in folders if f.is_dir() and self.is_inside(f)])

    def warn_once(self, message: str) -> None:
        """Log a warning once per vault object (a malformed file is reported, not on every read)."""
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)

    # ---- topic files ---------------------------------------------------------------------------
    def topic_files(self) -> list[TopicFile]:
        """Every topic file in topics/, sorted by name, with its stat. Symlinks leading out of the
        vault, symlink loops, dangling links and anything that is not a regular file (a FIFO, a
        folder) are skipped with one warning each; a file reachable under two names (a symlink
        to another topic file) is listed once, under its own name."""
        files, skipped = self.scan_topic_files()
        for rel, why in skipped:
            if not why.startswith("same file as"):
                self.warn_once(f"{rel}: {why}; skipped")
        return files

    def topic_files_named(self, prefix: str) -> list[TopicFile]:
        """:meth:`topic_files` whose name starts with ``prefix`` (the others not looked at; a
        prefix in a folder, ``work/harbor-``, looks in that folder only)."""
        if not self.topics_dir_inside():
            return []
        folder, _, leaf = prefix.rpartition("/")
        where = self.topics_dir / folder if folder else self.topics_dir
        if folder and (".." in folder.split("/") or "\\" in folder or "\0" in folder or not self.is_inside(where)):
            return []
        try:
            names = sorted(e.name for e in os.scandir(where) if e.name.startswith(leaf))
        except OSError:
            return []
        found = [self.topic_file(where / name) for name in names]
        return [tf for tf in found if isinstance(tf, TopicFile)]

    def scan_topic_files(self) -> tuple[list[TopicFile], list[tuple[str, str]]]:
        """(the topic files at any depth under the topics folder, sorted by name; the files there
        that are not read, with why). Hidden and excluded folders are not gone into, nor symlinks
        to folders (a link can loop, or lead out of the vault)."""
        top = self.topics_rel or "."
        if not self.topics_dir_inside():
            return [], [(f"{top}/", "a symlink to a folder outside the vault")]
        found: list[TopicFile] = []
        skipped: list[tuple[str, str]] = []
        links: set[str] = set()
        folders = [(os.fspath(self.topics_dir), "")]
        while folders:
            where, prefix = folders.pop()
            try:
                items = sorted(os.scandir(where), key=lambda d: d.name)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                skipped.append((f"{top}/{prefix}", f"cannot be listed: {exc.strerror or exc}"))
                continue
            for item in items:
                name = item.name
                rel = prefix + name
                if not name.endswith(".md"):
                    if self._goes_into(item, prefix):
                        folders.append((item.path, rel + "/"))
                    continue
                if not is_topic_filename(name) or not self.is_topic_rel(rel):
                    continue
                if not item.is_symlink():  # the common case, from the listing alone (no Path built)
                    try:
                        st = item.stat()
                    except OSError:
                        st = None
                    if st is not None and stat.S_ISREG(st.st_mode):
                        found.append(TopicFile(rel[:-3], item.path, st))
                        continue
                else:
                    links.add(rel[:-3])
                got = self.topic_file(Path(item.path), item)
                if isinstance(got, TopicFile):
                    found.append(got)
                elif got is not None:
                    skipped.append((self.topic_rel(rel[:-3]), got))
        by_inode: dict[tuple[int, int], TopicFile] = {}
        out: list[TopicFile] = []
        for tf in sorted(found, key=lambda tf: (tf.name in links, tf.name)):  # real files first
            key = (tf.stat.st_dev, tf.stat.st_ino)
            if key in by_inode:
                skipped.append((self.topic_rel(tf.name), f"same file as {self.rel(by_inode[key].path)}"))
                continue
            by_inode[key] = tf
            out.append(tf)
        return sorted(out, key=lambda tf: tf.name), skipped

    def _goes_into(self, item: os.DirEntry[str], prefix: str) -> bool:
        """Whether the topics' scan goes into folder ``item`` (under ``prefix``): a real folder, not
        hidden or excluded, not memkit's own."""
        try:
            is_dir = item.is_dir(follow_symlinks=False)
        except OSError:
            return False
        return is_dir and not self.globs.skips_folder(prefix + item.name) and (bool(prefix) or not self._own(item.name))

    def topic_folders(self) -> list[Path]:
        """The topics folder and every folder under it the topics' scan goes into (where a topic's
        temp files may be left: :meth:`_recover`)."""
        if not self.topics_dir_inside():
            return []
        out: list[Path] = []
        folders = [(os.fspath(self.topics_dir), "")]
        while folders:
            where, prefix = folders.pop()
            out.append(Path(where))
            try:
                items = list(os.scandir(where))
            except OSError:
                continue
            folders += [(item.path, prefix + item.name + "/") for item in items
                        if not item.name.endswith(".md") and self._goes_into(item, prefix)]
        return out

    def _own(self, name: str) -> bool:
        """Whether ``name`` at the top of the topics folder is memkit's own (the vault's folder only)."""
        return not self.topics_rel and name in OWN_PATHS

    def topic_file(self, path: Path, item: os.DirEntry[str] | Path | None = None) -> TopicFile | str | None:
        """What is a topic file, decided in one place (for :meth:`topic_files`, :meth:`topic` and
        index.txt's upkeep): ``path`` under the topics folder (``item``: its directory entry, when
        listing) as a :class:`TopicFile`; else why memkit does not read it (a symlink leading out
        of the vault, a FIFO…), or None when there is no file to speak of (none, a folder, or a
        file the include/exclude globs leave out)."""
        if not is_topic_filename(path.name):
            return None
        name = self.name_of(path)
        if not self.is_topic_rel(name + ".md"):
            return None
        entry = item if item is not None else path
        link = False
        try:
            link = entry.is_symlink()
            st = entry.stat()  # follows a symlink
        except FileNotFoundError:
            return "broken symlink" if link else None
        except OSError as exc:
            if link and exc.errno == errno.ELOOP:
                return "a symlink loop (it leads back to itself)"
            return f"{'broken symlink' if link else 'cannot be read'} ({exc.strerror or exc})"
        if link and not self.is_inside(path):
            return "symlink to a file outside the vault"
        if "/" in name and not self.is_inside(path.parent):
            return "in a folder linked from outside the vault"
        if not stat.S_ISREG(st.st_mode):
            return None if stat.S_ISDIR(st.st_mode) else f"is {file_kind(st.st_mode)}, not a topic file"
        return TopicFile(name, path, st)

    def is_topic(self, name: str) -> bool:
        """Whether ``name`` (a line of index.txt) is the name of a file :meth:`topic_files` lists."""
        if "\\" in name or "\0" in name or ".." in name.split("/") or not self.topics_dir_inside():
            return False
        return isinstance(self.topic_file(self.topics_dir / f"{name}.md"), TopicFile)

    def write_target(self, path: Path) -> Path:
        """The file to write for ``path``: a symlink inside the vault is written through (a person's
        link is kept); one leading out of the vault is refused, as is a file in a folder that does."""
        if path.parent != self.topics_dir and path.parent.exists() and not self.is_inside(path.parent):
            raise MemkitError(f"{self.rel(path.parent)} is a symlink to a folder outside the vault; refusing to write in it")
        if not path.is_symlink():
            return path
        if not self.is_inside(path):
            raise MemkitError(self.symlink_refusal(path))
        return path.resolve()

    def symlink_refusal(self, path: Path) -> str:
        """Why memkit will not write through the symlink ``path`` that does not lead to a file
        inside the vault: a loop (named, with the links it goes round), a link to nothing, or a
        file outside the vault (each said as it is, naming the path)."""
        rel = self.rel(path)
        chain, here = [rel], path
        for _ in range(40):
            try:
                target = os.readlink(here)
            except OSError:
                break
            here = here.parent / target
            shown = self.rel(here) if self.is_inside(here.parent) else str(here)
            if shown in chain:
                return (f"{rel} is a symlink loop ({' -> '.join([*chain, shown])}); "
                        f"refusing to write through it: point it at a file or remove it")
            chain.append(shown)
            if not here.is_symlink():
                break
        if not here.exists():
            return f"{rel} is a broken symlink (to {chain[-1]}, which does not exist); refusing to write through it"
        return f"{rel} is a symlink to a file outside the vault ({here.resolve()}); refusing to write through it"


def _canonical_or_none(stem: str) -> str | None:
    """The canonical name of a file's stem a person chose; None where it has none (``сooking``,
    with a Cyrillic letter: never taken for ``cooking``)."""
    try:
        return check_topic_name(stem)
    except MemkitError:
        return None
