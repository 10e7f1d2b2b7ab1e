"""The vault's files: where they are, how they are read, and the only code that writes them.

:class:`Store` owns ``topics/*.md``, ``archive.md`` and ``index.txt``. Every write holds the
vault's write lock (a lock file under ``.memkit/``, re-entrant within a process) and replaces
files atomically. Services (digest, split, context…) never write these files themselves: they
call the typed methods here. Derived data under ``.memkit/`` (the index, session state) is
written by its owner with :mod:`memkit.fsutil`.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import stat
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from .config import CONFIG_NAME, DEFAULT_CONFIG_TEXT, Config, load_config
from .errors import (
    EntryNotFound,
    InvalidValue,
    MemkitError,
    TopicNotFound,
    TopicNotWritable,
    TopicParseError,
    VaultExists,
    VaultNotFound,
)
from .fsutil import (
    TEMP_RE,
    FileChanged,
    NotRegularFile,
    VaultLock,
    append_bytes,
    atomic_write,
    describe_os_error,
    file_kind,
    read_head,
    read_regular,
    replace_checked,
    stamp_of,
)
from .archive import ARCHIVE, ARCHIVE_HEADER, ArchivedEntry, ArchiveItem, archive_line, parse_archive
from .limits import MAX_ENTRY_CHARS
from .names import TOPICS_DIR, check_topic_name, is_topic_filename, topic_relpath, topic_stem
from .recent import RecentTopic, parse_recent, render_recent
from .seen import HAND_EDIT_SLACK_S, SEEN_FILE, Seen, load_seen, save_seen
from .topic import (
    KIND_RE,
    LIST_MARKER_RE,
    Entry,
    Topic,
    append_line,
    encode_topic,
    format_entry,
    new_topic_text,
    newline_of,
    parse_topic_text,
    read_topic,
    remove_lines,
    split_lines,
    text_hash,
    unified_diff,
)

log = logging.getLogger("memkit")

__all__ = ["Store", "TopicInfo", "TopicFile", "ArchiveItem", "ArchivedEntry", "find_vault", "TOPICS_DIR"]

INBOX_DIR = "inbox"
STATE_DIR = ".memkit"
INDEX_TXT = "index.txt"
LOCK_TIMEOUT_S = 30.0
PROFILE_TOPIC = "profile"  #: the pinned topic `memkit init` creates
PROFILE_SUMMARY = "who the user is, standing preferences, ongoing projects"
ROOT_FILES = ("archive.md", "index.txt", ".gitignore", ".gitattributes", "memkit.yaml")  #: what memkit writes at the root
TEMP_SWEEP_INTERVAL_S = 60.0  #: how often the write lock sweeps away temp files of dead writers
SPLIT_JOURNAL = "split-journal.json"  #: under .memkit/: the split being written, until it is done
MAX_RECENT_BYTES = 1 << 20
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024  #: archive.md is read up to this size (history, stats)  #: index.txt holds a few dozen lines


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


@dataclass(frozen=True)
class TopicInfo:
    """A topic's listing line: name, entries, updated, summary."""

    name: str
    entries: int
    updated: datetime
    summary: str
    file: str

    def to_dict(self) -> dict[str, object]:
        """As ``memkit topics --json`` prints it."""
        return {"name": self.name, "entries": self.entries, "updated": self.updated.isoformat(),
                "summary": self.summary, "file": self.file}


@dataclass(frozen=True)
class TopicFile:
    """A topic file found in topics/, with the stat of the file it is (a symlink's target)."""

    name: str
    path: Path
    stat: os.stat_result

    @property
    def stamp(self) -> tuple[int, int, int]:
        """(size, mtime_ns, inode): changes when the file is edited or replaced."""
        return (self.stat.st_size, self.stat.st_mtime_ns, self.stat.st_ino)


class Store:
    """The files of one vault (see the module docstring).

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

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    # ---- paths ---------------------------------------------------------------------------------
    @property
    def topics_dir(self) -> Path:
        return self.root / TOPICS_DIR

    @property
    def state_dir(self) -> Path:
        return self.root / STATE_DIR

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
        if not path.exists():  # a file a person named differently ("Books.md"): found by its canonical name
            try:
                same = [e.name for e in os.scandir(self.topics_dir) if e.name.endswith(".md")
                        and e.name != path.name and check_topic_name(e.name[:-3]) == canonical]
            except (OSError, MemkitError):
                same = []
            if len(same) == 1:
                return self.topics_dir / same[0]
        return path

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

    # ---- creating ------------------------------------------------------------------------------
    init_profile = True  #: whether :meth:`init` creates the pinned topics/profile.md by default

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, profile: bool | None = None) -> "Store":
        """Create a vault: memkit.yaml (commented defaults), topics/ with an empty pinned
        profile.md (unless ``profile`` is False), inbox/, index.txt, .gitignore, .gitattributes.

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
            if (cls.init_profile if profile is None else profile) and not profile_path.exists():  # the pinned profile: always the first layer of the context
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
        return cls(root)

    def ensure_git_files(self) -> list[str]:
        """Add memkit's lines to the vault's ``.gitignore`` and ``.gitattributes`` where missing
        (idempotent; every other line is kept); returns the files changed."""
        changed = []
        with self.lock():
            for name, lines in ((".gitignore", GITIGNORE_LINES), (".gitattributes", GITATTRIBUTES_LINES)):
                try:
                    if _add_lines(self.write_target(self.root / name), lines):
                        changed.append(name)
                except OSError as exc:
                    raise describe_os_error(exc, name) from exc
        return changed

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

    def _recover(self) -> None:
        """Run when the write lock is taken: finish or undo what a writer killed mid-way left (an
        interrupted split), and remove the temp files of dead writers (nobody else writes these
        folders while the lock is held). Never fails the write that took the lock."""
        try:
            self._undo_interrupted_split()
        except Exception as exc:  # noqa: BLE001 - recovery must not stop the write: say so and go on
            self.warn_once(f"could not check for an interrupted split: {exc}")
        if time.monotonic() < self._next_sweep:
            return  # dead writers' temp files are swept at most once a minute (it lists topics/)
        self._next_sweep = time.monotonic() + TEMP_SWEEP_INTERVAL_S
        folders = [(self.root, ROOT_FILES)] + ([(self.topics_dir, None)] if self.topics_dir_inside() else [])
        for folder, owned in folders:
            try:
                names = [e.name for e in os.scandir(folder) if e.name.startswith(".") and e.is_file(follow_symlinks=False)]
            except OSError:
                continue
            for name in names:
                m = TEMP_RE.match(name)  # only the temp files memkit's own writes make, for files it writes
                if m and (m.group(1) in owned if owned is not None else m.group(1).endswith(".md")):
                    with contextlib.suppress(OSError):
                        os.unlink(folder / name)

    def _undo_interrupted_split(self) -> None:
        journal = self.state_dir / SPLIT_JOURNAL
        try:
            data = json.loads(read_regular(journal, 1 << 20)[0])
        except FileNotFoundError:
            return
        except (OSError, MemkitError, ValueError):
            journal.unlink(missing_ok=True)
            return
        parent = self.root / str(data.get("parent", ""))
        parts = data.get("parts") if isinstance(data.get("parts"), dict) else {}
        try:
            parent_now = hashlib.sha256(parent.read_bytes()).hexdigest() if parent.is_file() else None
        except OSError:
            parent_now = None
        if parent_now is not None and parent_now == data.get("parent_sha"):
            # the parent is still there, unchanged: the split did not finish; remove its parts
            kept = []
            for rel, sha in parts.items():
                path = self.root / str(rel)
                if not self.is_inside(path) or not path.is_file():
                    continue
                if hashlib.sha256(path.read_bytes()).hexdigest() == sha:
                    path.unlink()
                else:
                    kept.append(str(rel))
            log.warning("a split of %s was interrupted: undone (the topic is as it was)%s", data.get("parent"),
                        f"; {', '.join(kept)} changed since and were kept: check them for duplicates" if kept else "")
        elif parent_now is None:  # every part was written and the parent moved aside: the split is done
            (self.state_dir / f"split-parent-{parent.name}").unlink(missing_ok=True)
        journal.unlink(missing_ok=True)

    def warn_once(self, message: str) -> None:
        """Log a warning once per Store (a malformed file is reported, not on every read)."""
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)

    # ---- reading -------------------------------------------------------------------------------
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

    def scan_topic_files(self) -> tuple[list[TopicFile], list[tuple[str, str]]]:
        """(the topic files, sorted by name; the files in topics/ that are not read, with why)."""
        if not self.topics_dir_inside():
            return [], [(f"{TOPICS_DIR}/", "a symlink to a folder outside the vault")]
        try:
            items = sorted(os.scandir(self.topics_dir), key=lambda d: d.name)
        except (FileNotFoundError, NotADirectoryError):
            return [], []
        except OSError as exc:
            return [], [(f"{TOPICS_DIR}/", f"cannot be listed: {exc.strerror or exc}")]
        found: list[TopicFile] = []
        skipped: list[tuple[str, str]] = []
        for item in items:
            got = self._topic_file(Path(item.path), item)
            if isinstance(got, TopicFile):
                found.append(got)
            elif got is not None:
                skipped.append((f"{TOPICS_DIR}/{item.name}", got))
        by_inode: dict[tuple[int, int], TopicFile] = {}
        out: list[TopicFile] = []
        for tf in sorted(found, key=lambda tf: (tf.path.is_symlink(), tf.name)):  # real files first
            key = (tf.stat.st_dev, tf.stat.st_ino)
            if key in by_inode:
                skipped.append((f"{TOPICS_DIR}/{tf.path.name}", f"same file as {self.rel(by_inode[key].path)}"))
                continue
            by_inode[key] = tf
            out.append(tf)
        return sorted(out, key=lambda tf: tf.name), skipped

    def _topic_file(self, path: Path, item: os.DirEntry[str] | Path | None = None) -> TopicFile | str | None:
        """What is a topic file, decided in one place (for :meth:`topic_files`, :meth:`topic` and
        index.txt's upkeep): ``path`` in topics/ (``item``: its directory entry, when listing) as a
        :class:`TopicFile`; else why memkit does not read it (a symlink leading out of the vault, a
        FIFO…), or None when there is no file to speak of (none, or a folder)."""
        if not is_topic_filename(path.name):
            return None
        entry = item if item is not None else path
        link = False
        try:
            link = entry.is_symlink()
            st = entry.stat()  # follows a symlink
        except FileNotFoundError:
            return "broken symlink" if link else None
        except OSError as exc:
            return f"{'broken or looping symlink' if link else 'cannot be read'} ({exc.strerror or exc})"
        if link and not self.is_inside(path):
            return "symlink to a file outside the vault"
        if not stat.S_ISREG(st.st_mode):
            return None if stat.S_ISDIR(st.st_mode) else f"is {file_kind(st.st_mode)}, not a topic file"
        return TopicFile(path.stem, path, st)

    def iter_topics(self) -> Iterator[Topic]:
        """Parse every topic; a malformed one is skipped with a warning naming file and line."""
        for tf in self.topic_files():
            try:
                topic = read_topic(tf.path, tf.name, self.rel(tf.path))
            except TopicParseError as exc:
                self.warn_once(f"{exc}; skipped")
                continue
            self.warn_problems(topic)
            yield topic

    def warn_problems(self, topic: Topic) -> None:
        """Warn (once per Store) about what in ``topic`` needs a person: a merge conflict, bad frontmatter."""
        for problem in topic.problems:
            if problem.blocks_writes:
                self.warn_once(problem.message)

    def topic(self, name: str) -> Topic:
        """Parse one topic. :raises TopicNotFound: if there is no such topic (or memkit does not read its file)."""
        path = self.topic_path(name)
        found = self._topic_file(path) if self.topics_dir_inside() else None
        if found is None:
            raise TopicNotFound(f"no topic {path.stem!r} in {TOPICS_DIR}/ (see `memkit topics`)")
        if not isinstance(found, TopicFile):
            raise TopicNotFound(f"{topic_relpath(path.stem)}: {found}; not read")
        topic = read_topic(found.path, found.name, self.rel(found.path))
        self.warn_problems(topic)
        return topic

    def pinned_topics(self) -> list[str]:
        """The topics with ``pinned: true`` in their frontmatter (the profile), by name. Only files
        whose first 4 kB mention ``pinned`` are parsed."""
        out = []
        for tf in self.topic_files():
            try:
                if b"pinned" not in read_head(tf.path, 4096):
                    continue
                topic = read_topic(tf.path, tf.name, self.rel(tf.path))
            except (OSError, MemkitError):
                continue
            if topic.meta.get("pinned") is True:
                out.append(tf.name)
        return out

    def subtopics(self, parent: str) -> list[str]:
        """The topics a split made of ``parent`` (``parent: NAME`` in their frontmatter), by name."""
        stem = check_topic_name(parent)
        out = []
        for tf in self.topic_files():
            if not tf.name.startswith(stem + "-"):
                continue
            try:
                if str(read_topic(tf.path, tf.name, self.rel(tf.path)).meta.get("parent", "")) == stem:
                    out.append(tf.name)
            except TopicParseError:
                continue
        return out

    def topics(self) -> list[TopicInfo]:
        """Every topic with its entry count, last update (as index.txt has it, which follows every
        write and hand edit; else the topic's own dates) and summary."""
        when = {r.topic: r.updated for r in self.recent(write=False)}
        return [TopicInfo(t.name, len(t.entries), max(t.updated(), when.get(t.name, t.updated())), t.summary,
                          self.rel(t.path)) for t in self.iter_topics()]

    def entries(self, topic: str | None = None) -> list[Entry]:
        """Every entry of the vault, or of one topic."""
        if topic is not None:
            return list(self.topic(topic).entries)
        return [e for t in self.iter_topics() for e in t.entries]

    def find(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None) -> Entry:
        """The one entry whose id starts with ``ref`` or whose text contains ``match``.

        :raises EntryNotFound: when none or several match (the message lists them).
        """
        if not ref and not match:
            raise EntryNotFound("give an entry id or a text to match")
        entries = self.entries(topic)
        if ref:
            ref = ref.strip().lower()
            if len(ref) < 4:
                raise EntryNotFound(f"entry id {ref!r} is too short: give at least 4 characters")
            found = [e for e in entries if e.hash.startswith(ref)]
            what = f"id {ref!r}"
        else:
            needle = " ".join(str(match).split()).casefold()
            found = [e for e in entries if needle in " ".join(e.text.split()).casefold()]
            what = f"text matching {match!r}"
        return self._one(found, what)[-1]

    def find_all(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None) -> list[Entry]:
        """Every occurrence of the entry :meth:`find` finds (the same text written more than once,
        e.g. after a merge that kept both sides), in file order."""
        found = self.find(ref, match=match, topic=topic)
        return [e for e in self.entries(found.topic) if e.hash == found.hash]

    def _one(self, found: list[Entry], what: str) -> list[Entry]:
        """``found`` when it is one entry, possibly written several times (identical text, one
        topic); :raises EntryNotFound: none, or several different entries (listed)."""
        if not found:
            raise EntryNotFound(f"no entry with {what} (see `memkit show TOPIC` for ids)")
        if len({(e.hash, e.topic) for e in found}) > 1:
            listing = "; ".join(f"{e.id} {e.topic}: {_short(e.text)}" for e in found[:8])
            raise EntryNotFound(f"{len(found)} entries with {what}, be more specific (or give --topic): {listing}")
        return found

    # ---- writing topics ------------------------------------------------------------------------
    def read_for_write(self, name: str) -> Topic | None:
        """Topic ``name`` as it is now, for a change the caller makes under :meth:`lock`; None when
        it does not exist yet.

        :raises MemkitError: when the file may not be written (a symlink out of the vault).
        """
        path = self.topic_path(name)
        if not self.topics_dir_inside():
            raise MemkitError(f"{TOPICS_DIR}/ is a symlink to a folder outside the vault; refusing to write through it")
        if not path.exists() and not path.is_symlink():
            return None
        if path.is_symlink() and not self.is_inside(path):
            raise MemkitError(f"{self.rel(path)} is a symlink to a file outside the vault; refusing to write through it")
        topic = read_topic(path, path.stem, self.rel(path))
        problem = topic.write_problem()
        if problem is not None:
            raise TopicNotWritable(f"{problem.message}. Nothing was written")
        return topic

    def write_topic(self, name: str, text: str, *, current: Topic | None, now: datetime,
                    touch_recent: bool = True) -> Topic:
        """Replace (or create) topic ``name`` with ``text``; the caller holds the lock and read
        ``current`` under it. The file is replaced atomically and only if nobody changed it since
        ``current`` was read (:func:`memkit.fsutil.replace_checked`: lines appended meanwhile by an
        editor are kept; any other change raises :class:`FileChanged` and nothing is written). Its
        BOM and line endings are kept. Puts the topic at the top of index.txt unless
        ``touch_recent`` is False. Returns the topic as written."""
        path = current.path if current is not None else self.topic_path(name)
        target = self.write_target(path)
        data = current.data(text) if current is not None else encode_topic(text)
        try:
            self.topics_dir.mkdir(exist_ok=True)
            replace_checked(target, data, current.data() if current is not None else b"",
                            current.stamp if current is not None else None)
        except FileChanged as exc:
            raise FileChanged(f"{self.rel(path)}: {exc}") from None
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc
        written = parse_topic_text(text, path.stem, self.rel(path), path)
        if touch_recent:
            self.touch_recent(written.name, written.summary, now)
        return written

    def write_target(self, path: Path) -> Path:
        """The file to write for ``path``: a symlink inside the vault is written through (a person's
        link is kept); one leading out of the vault is refused."""
        if not path.is_symlink():
            return path
        if not self.is_inside(path):
            raise MemkitError(f"{self.rel(path)} is a symlink to a file outside the vault; refusing to write through it")
        return path.resolve()

    def replace_topic(self, parent: Topic, parts: dict[str, str]) -> None:
        """Replace topic ``parent`` by new topics ``parts`` (name -> text), as a split does; the
        caller holds the lock and checked ``parent`` is current. Every part is written before the
        parent is removed, so a crash leaves duplicates, never a lost line; if writing a part
        fails, the parts already written are removed again and the parent is untouched."""
        datas = {name: parent.data(text) for name, text in parts.items()}
        journal = self.state_dir / SPLIT_JOURNAL  # so a kill between the renames is undone by the next writer
        atomic_write(journal, json.dumps({
            "parent": self.rel(parent.path), "parent_sha": hashlib.sha256(parent.data()).hexdigest(),
            "parts": {self.rel(self.topic_path(n)): hashlib.sha256(d).hexdigest() for n, d in datas.items()}}))
        written: list[Path] = []
        try:
            for name, data in datas.items():
                path = self.topic_path(name)
                atomic_write(path, data)
                written.append(path)
        except BaseException as exc:
            for path in written:  # new files nobody else could have touched: we hold the lock
                try:
                    os.unlink(path)
                except OSError:
                    pass
            if isinstance(exc, OSError):
                raise describe_os_error(exc, f"the parts of {parent.name}") from exc
            raise
        # the parent goes only if it is still what was split: moved aside first (no one can write
        # to it under its name any more), compared, then deleted, or put back with the parts removed
        aside = self.state_dir / f"split-parent-{parent.path.name}"
        try:
            os.replace(parent.path, aside)
        except FileNotFoundError:
            aside = None  # type: ignore[assignment]
        except OSError as exc:
            raise describe_os_error(exc, f"{self.rel(parent.path)} (its parts are written; remove it by hand)") from exc
        if aside is not None:
            if aside.read_bytes() != parent.data():
                os.replace(aside, parent.path)
                for path in written:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
                journal.unlink(missing_ok=True)
                raise FileChanged(f"{self.rel(parent.path)} was changed by someone else during the split; it is as they "
                                  "left it and nothing else was written: split again")
            aside.unlink()
        journal.unlink(missing_ok=True)

    def add(self, text: str, *, topic: str | None = None, kind: str | None = None, tags: Sequence[str] = (),
            when: datetime | None = None) -> tuple[Entry, int]:
        """Append ``- [kind] text #tags (date)`` to a topic (``general`` by default), creating it
        if needed; bumps ``updated`` and index.txt. Returns the new entry and how many entries
        its topic now has.

        :raises MemkitError: for empty text or a bad kind/tag; TopicNameError for a bad topic.
        """
        text = " ".join(text.split())
        pasted = LIST_MARKER_RE.match(text)  # "- [decision] Chose oak (2026-02-01)" pasted from a topic
        if pasted:
            text = text[pasted.end():]
        if kind is not None and KIND_RE.match(text):
            text = KIND_RE.sub("", text, count=1)  # --kind wins over a [kind] in the text
        if not text:
            raise InvalidValue("nothing to add: the text is empty")
        if len(text) > MAX_ENTRY_CHARS:
            raise InvalidValue(f"the text is {len(text):,} characters long; one memory is at most "
                               f"{MAX_ENTRY_CHARS:,} (split it, or keep the document elsewhere and remember where)")
        if kind is not None:
            kind = check_word(kind, "kind")
        tags = [check_word(t.lstrip("#"), "tag") for t in tags]
        name = self.topic_path(topic or "general").stem
        now = (when or datetime.now()).replace(microsecond=0)
        line = format_entry(text, kind, tags, now.date().isoformat())
        with self.lock():
            current = self.read_for_write(name)
            if current is None:
                title = name.replace("-", " ").capitalize()
                written = self.write_topic(name, new_topic_text(title, "", now) + line + "\n", current=None, now=now)
            else:
                # A plain append (no frontmatter rewrite): lines an editor appends at the same time
                # cannot be lost, and two clones that both add merge in git without a conflict.
                suffix = encode_topic(current.append_suffix(line), cr=current.cr)
                newline = encode_topic(newline_of(current.raw), cr=current.cr)

                def fit(last: bytes) -> bytes:
                    """The suffix, with a leading newline exactly when the file (as it is now) lacks one."""
                    ends = last in ((b"", b"\n", b"\r") if current.cr else (b"", b"\n"))
                    if ends and suffix.startswith(newline):
                        return suffix[len(newline):]
                    return suffix if ends or suffix.startswith(newline) else newline + suffix

                try:
                    append_bytes(self.write_target(current.path), fit)
                except NotRegularFile as exc:
                    raise MemkitError(f"{self.rel(current.path)} {exc}; memkit will not write to it") from None
                except OSError as exc:
                    raise describe_os_error(exc, self.rel(current.path)) from exc
                written = self.topic(name)
                self.touch_recent(written.name, written.summary, now)
        wanted = text_hash(line[2:])
        entry = next((e for e in reversed(written.entries) if e.hash == wanted), None)
        if entry is None:  # written, but the file reads it otherwise (a person's odd markup around it)
            entry = Entry(line[2:], written.name, self.rel(written.path), 0, 0, kind, tuple(tags), now.date().isoformat(),
                          True, wanted)
        return entry, len(written.entries)

    def forget(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None,
               reason: str = "forgotten", every: bool = False) -> list[Entry]:
        """Remove an entry from its topic and append it to archive.md (tracked, so git keeps it).
        An entry written more than once (a merge can leave that) loses its last occurrence, or
        every one with ``every``. Returns the entries removed (with the lines they had).

        The archive is written before the topic, so a crash in between duplicates, never loses.
        """
        target = self.find(ref, match=match, topic=topic)
        now = datetime.now().replace(microsecond=0)
        with self.lock():
            current = self.read_for_write(target.topic)  # re-read under the lock: lines may have moved
            same = [e for e in current.entries if e.hash == target.hash] if current else []
            if current is None or not same:
                raise EntryNotFound(f"entry {target.id} changed while forgetting it; try again")
            gone = same if every else same[-1:]
            text = current.raw
            for entry in sorted(gone, key=lambda e: -e.line):  # bottom up: line numbers stay valid
                text, _ = remove_lines(text, entry.line, entry.end_line)
            lines = current.raw.split("\n")
            self.archive([ArchiveItem(e, " ".join("\n".join(lines[e.line - 1:e.end_line]).split()), reason)
                          for e in gone], now)
            self.write_topic(current.name, text, current=current, now=now)
        return gone

    def replace_entries(self, topic: str, old: Sequence[Entry], new_lines: Sequence[str], reasons: Mapping[str, str],
                        now: datetime, *, in_place: bool = False, dry_run: bool = False) -> tuple[str, list[Entry]]:
        """Remove entries ``old`` from ``topic`` (each to archive.md with ``reasons[entry.hash]``)
        and add ``new_lines``: where the first of ``old`` was (``in_place``, an edit) or at the
        end. The entries are found again under the lock by their text (an entry that vanished
        meanwhile is left out); archive.md is written before the topic.

        :returns: (the unified diff of the topic and archive.md, the entries removed).
        :raises TopicNotWritable: the topic has a merge conflict or bad frontmatter.
        """
        with contextlib.nullcontext() if dry_run else self.lock():
            current = self.topic(topic) if dry_run else self.read_for_write(topic)
            if current is None:
                raise TopicNotFound(f"no topic {topic!r} (see `memkit topics`)")
            if current.write_problem() is not None:
                raise TopicNotWritable(f"{current.write_problem().message}. Nothing was written")  # type: ignore[union-attr]
            taken: set[int] = set()
            live: list[Entry] = []
            for want in old:  # the same line if it is still there, else the first copy of its text
                match = next((e for e in current.entries if e.hash == want.hash and e.line == want.line
                              and e.line not in taken), None) or \
                    next((e for e in current.entries if e.hash == want.hash and e.line not in taken), None)
                if match is not None:
                    taken.add(match.line)
                    live.append(match)
            lines = split_lines(current.raw)
            drop = {i for e in live for i in range(e.line - 1, e.end_line)}
            nl = newline_of(current.raw)
            kept: list[str] = []
            first = min((e.line - 1 for e in live), default=None)
            for i, line in enumerate(lines):
                if i == first and in_place:
                    kept += [text + nl for text in new_lines]
                if i not in drop:
                    kept.append(line)
            text = "".join(kept)
            if not in_place or first is None:
                for line_text in new_lines:
                    text = append_line(text, line_text)
            diff = unified_diff(current.raw, text, self.rel(current.path))
            items = [ArchiveItem(e, " ".join("".join(lines[e.line - 1:e.end_line]).split()), reasons.get(e.hash, "replaced"))
                     for e in live]
            if items:
                diff += "--- a/archive.md\n+++ b/archive.md\n@@ archive.md: lines added at the end @@\n"
                diff += "".join(f"+{archive_line(item, now)}\n" for item in items)
            if dry_run:
                return diff, live
            self.archive(items, now)
            self.write_topic(current.name, text, current=current, now=now)
        return diff, live

    # ---- inbox/ ---------------------------------------------------------------------------------
    def queue_transcript(self, name: str, data: bytes) -> Path:
        """Write a transcript to ``inbox/NAME`` atomically (replacing one of that name), for the
        watcher's digest; returns its path.

        :raises MemkitError: a name that is not a plain file name, or inbox/ leading out of the vault.
        """
        if not name or name != os.path.basename(name) or name.startswith(".") or "\0" in name or "\\" in name:
            raise InvalidValue(f"invalid inbox file name {name!r}: use a plain file name")
        inbox = self.inbox_dir
        if inbox.is_symlink() and not self.is_inside(inbox):
            raise MemkitError(f"{INBOX_DIR}/ is a symlink to a folder outside the vault; refusing to write through it")
        target = inbox / name
        if target.is_symlink():
            raise MemkitError(f"{self.rel(target)} is a symlink; refusing to write through it")
        try:
            inbox.mkdir(exist_ok=True)
            atomic_write(target, data)
        except OSError as exc:
            raise describe_os_error(exc, self.rel(target)) from exc
        return target

    def waiting_transcripts(self) -> list[Path]:
        """The transcripts in inbox/ waiting for a digest (not ``.error`` notes, hidden or backup
        files, nor a symlink leading out of the vault), by name."""
        try:
            paths = sorted(self.inbox_dir.iterdir()) if self.inbox_dir.is_dir() else []
        except OSError:
            return []
        return [p for p in paths
                if p.is_file() and not p.name.startswith(".") and p.suffix not in (".error", ".md")
                and not p.name.endswith("~") and (not p.is_symlink() or self.is_inside(p))]

    def inbox_done(self, path: Path, read: os.stat_result) -> bool:
        """Move a digested transcript to ``inbox/done/`` (a free name, never replacing one), unless
        it changed since it was read (``read``: its stat then); returns whether it moved. Its
        ``.error`` file, if any, goes."""
        with self.lock():
            try:
                now = path.stat()
            except FileNotFoundError:
                return False
            if (now.st_ino, now.st_size, now.st_mtime_ns) != (read.st_ino, read.st_size, read.st_mtime_ns):
                return False
            done = self.inbox_dir / "done"
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
                raise describe_os_error(exc, f"{self.rel(path)} (moving it to {INBOX_DIR}/done/)") from exc
        return True

    def inbox_error(self, path: Path, message: str) -> None:
        """Write ``inbox/NAME.error`` beside a transcript that could not be digested."""
        try:
            atomic_write(Path(str(path) + ".error"), message.rstrip("\n") + "\n")
        except OSError as exc:
            raise describe_os_error(exc, self.rel(Path(str(path) + ".error"))) from exc

    # ---- archive.md ----------------------------------------------------------------------------
    def archive(self, items: Sequence[ArchiveItem], now: datetime) -> None:
        """Append ``- DATE from TOPIC (REASON): ORIGINAL LINE`` lines to archive.md (the caller
        holds the lock, and calls this before removing the lines from their topics). A plain
        append: nothing anyone else appends at the same time is lost."""
        if not items:
            return
        path = self.archive_path
        with self.lock():
            try:
                target = self.write_target(path)
                if not target.exists():
                    text = ARCHIVE_HEADER + "".join(archive_line(item, now) + "\n" for item in items)
                    replace_checked(target, text.encode("utf-8", errors="surrogateescape"), b"", None)
                    return
                nl = "\r\n" if b"\r\n" in read_head(target, 4096) else "\n"
                data = "".join(archive_line(item, now) + nl for item in items).encode("utf-8", errors="surrogateescape")
                append_bytes(target, lambda last: data if last in (b"", b"\n") else nl.encode() + data)
            except FileChanged as exc:
                raise FileChanged(f"{ARCHIVE}: {exc}") from None
            except NotRegularFile as exc:
                raise MemkitError(f"{ARCHIVE} {exc}; memkit will not write to it") from None
            except OSError as exc:
                raise describe_os_error(exc, ARCHIVE) from exc

    def archived(self) -> list[ArchivedEntry]:
        """The entries archive.md holds, oldest first."""
        try:
            data, _ = read_regular(self.archive_path, MAX_ARCHIVE_BYTES)
        except FileNotFoundError:
            return []
        except (OSError, NotRegularFile) as exc:
            self.warn_once(f"{ARCHIVE}: {exc}; not read")
            return []
        return parse_archive(data.decode("utf-8", errors="replace"))

    # ---- index.txt -----------------------------------------------------------------------------
    def recent(self, *, write: bool = True) -> list[RecentTopic]:
        """The recent topics, newest first, one per topic: index.txt, repaired and kept in step
        with the files (``write=False``: computed but not written, for a dry run).

        - What a union merge of index.txt leaves (a topic twice, out of order, too many lines,
          conflict markers) is read as one line per topic, the newest; topics whose file is gone
          drop out.
        - A topic file that index.txt does not list (created by hand) is added at its own date
          (its frontmatter and entries, else the file's time).
        - A topic file changed since memkit last looked, and later than its index.txt time, was
          edited outside memkit (an editor, a ``git pull``): it counts as updated then.

        index.txt is rewritten when any of this changed it (not in a read-only vault).
        """
        items, index_sha = self._read_recent_sha()
        files = {tf.name: tf for tf in self.topic_files()}
        seen = load_seen(self.state_dir / SEEN_FILE)
        # index.txt changed since memkit last looked (a git pull brought it with the topics): it says
        # when they changed, and file times (the pull's) are not used
        pulled = seen is not None and seen.index is not None and seen.index != index_sha
        if seen is None:  # never looked: a file written clearly after the rest of the vault was edited by hand
            times = [tf.stat.st_mtime for tf in files.values()]
            baseline = max(min(times, default=0.0), self._mtime(self.recent_path))
        best: dict[str, RecentTopic] = {}
        fresh: set[str] = set()
        for item in items:
            if item.topic in files and (item.topic not in best or item.updated > best[item.topic].updated):
                best[item.topic] = item
        for name, tf in files.items():
            listed = best.get(name)
            if seen is not None:
                changed = seen.changed(name, tf.stat.st_mtime_ns, tf.path)
            else:
                changed = tf.stat.st_mtime - baseline > HAND_EDIT_SLACK_S
            if listed is not None and not changed:
                continue
            mtime = datetime.fromtimestamp(tf.stat.st_mtime).replace(microsecond=0)
            try:
                topic = read_topic(tf.path, tf.name, self.rel(tf.path))
                when, summary = topic.updated(), topic.summary
            except TopicParseError:
                when, summary = mtime, ""
            if listed is not None:  # listed, and changed since memkit last looked
                when = max(when, listed.updated)
                if not pulled and (mtime - listed.updated).total_seconds() > HAND_EDIT_SLACK_S:
                    when = max(when, mtime)  # written outside memkit (an editor): now
            elif changed and not pulled:
                when = max(when, mtime)  # a topic file that appeared since memkit last looked
            best[name] = RecentTopic(when, name, summary)
            if changed:  # (a topic left out by index_max_entries, unchanged, is no news: no churn)
                fresh.add(name)
        # newest first; in a tie, what changed just now first, then index.txt's order
        result = sorted(best.values(), key=lambda r: (r.updated, r.topic in fresh), reverse=True)
        result = result[: self.config.index_max_entries]
        if not write:
            return result
        rendered = render_recent(result, self.config.index_max_entries)
        if rendered != render_recent(items, 1 << 30) or len(items) != len(result):
            try:
                self.write_recent(result)
                index_sha = hashlib.sha1(rendered.encode("utf-8")).hexdigest()
            except MemkitError as exc:  # a read-only vault: the repair is shown, not written
                log.debug("index.txt not repaired: %s", exc)
        self._remember_seen(files, index_sha, seen)
        return result

    @staticmethod
    def _mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    def _remember_seen(self, files: Mapping[str, TopicFile], index_sha: str | None, seen: Seen | None) -> None:
        save_seen(self.state_dir / SEEN_FILE, (seen or Seen()).updated(
            {name: (tf.stat.st_mtime_ns, tf.path) for name, tf in files.items()}, index_sha))

    def _read_recent(self) -> list[RecentTopic]:
        """index.txt's lines as they are (see :meth:`recent` for the repaired list)."""
        return self._read_recent_sha()[0]

    def _read_recent_sha(self) -> tuple[list[RecentTopic], str | None]:
        """index.txt's lines as they are, and the sha1 of its bytes."""
        try:
            data = read_regular(self.recent_path, MAX_RECENT_BYTES)[0]
        except FileNotFoundError:
            return [], None
        except (OSError, NotRegularFile) as exc:  # a FIFO, a folder, too large: rebuilt from the topics
            self.warn_once(f"{INDEX_TXT}: {exc}; ignored (`memkit recent --rebuild` rewrites it)")
            return [], None
        return parse_recent(data.decode("utf-8", errors="replace")), hashlib.sha1(data).hexdigest()

    def rebuild_recent(self) -> list[RecentTopic]:
        """Regenerate index.txt from the topic files' dates (:meth:`Topic.updated`) and summaries."""
        with self.lock():
            # the files' own dates only (frontmatter, entries): file times mean nothing after a git checkout
            items = [RecentTopic(t.updated(), t.name, t.summary) for t in self.iter_topics()]
            self.write_recent(items)
            recent, index_sha = self._read_recent_sha()
            self._remember_seen({tf.name: tf for tf in self.topic_files()}, index_sha, None)
        return recent

    def touch_recent(self, topic: str, summary: str, now: datetime) -> None:
        """Put ``topic`` at the top of index.txt; topics that vanished drop out."""
        with self.lock():
            items = [r for r in self._read_recent() if r.topic != topic and self._is_topic(r.topic)]
            if self._is_topic(topic):
                items.insert(0, RecentTopic(now, topic, summary))  # first among topics of the same second
            self.write_recent(items)

    def write_recent(self, items: Sequence[RecentTopic]) -> None:
        """Write index.txt: one line per topic, newest first, at most ``index_max_entries``."""
        text = render_recent(items, self.config.index_max_entries).encode("utf-8")
        path = self.recent_path
        with self.lock():
            try:
                target = self.write_target(path)
                try:
                    old, st = read_regular(target, MAX_RECENT_BYTES)
                except FileNotFoundError:
                    old, st = b"", None
                if old == text:
                    return
                replace_checked(target, text, old, stamp_of(st) if st is not None else None)
                seen = load_seen(self.state_dir / SEEN_FILE)
                if seen is not None:  # memkit's own write: not a change that came from elsewhere (a pull)
                    seen.index = hashlib.sha1(text).hexdigest()
                    save_seen(self.state_dir / SEEN_FILE, seen)
            except FileChanged as exc:
                raise FileChanged(f"{INDEX_TXT}: {exc}") from None
            except NotRegularFile as exc:
                raise MemkitError(f"{INDEX_TXT} {exc}; memkit will not write to it") from None
            except OSError as exc:
                raise describe_os_error(exc, INDEX_TXT) from exc

    def _is_topic(self, name: str) -> bool:
        """Whether ``name`` (a line of index.txt) is the stem of a file :meth:`topic_files` lists."""
        if "/" in name or "\\" in name or "\0" in name or not self.topics_dir_inside():
            return False
        return isinstance(self._topic_file(self.topics_dir / f"{name}.md"), TopicFile)


GITIGNORE_LINES = (f"{STATE_DIR}/", f"{INBOX_DIR}/done/", "*.error")
GITATTRIBUTES_LINES = (
    "# memkit: merge-friendly vault (`memkit git-setup` registers the memkit merge driver in each clone)",
    "topics/*.md merge=memkit",
    "archive.md merge=union",
    "index.txt merge=union",
    "sessions/*.md merge=union",
    "sessions/archive/*.md merge=union",
)


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


def check_word(value: str, what: str) -> str:
    """A kind or tag as stored (lower-cased). :raises InvalidValue: not one word."""
    value = value.strip()
    if not re.fullmatch(r"[^\W\d_][\w-]{0,39}", value):
        raise InvalidValue(f"invalid {what} {value!r}: use one word of letters, digits, '-' or '_'")
    return value.lower()


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
