"""The vault: a folder of topic files. Open, discover, list, add, forget, and the recent index."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from . import recent as recent_mod
from .config import CONFIG_NAME, DEFAULT_CONFIG_TEXT, Config, load_config
from .errors import (
    EntryNotFound,
    InvalidValue,
    MemkitError,
    TopicNotFound,
    TopicParseError,
    VaultExists,
    VaultNotFound,
)
from .fsutil import atomic_write, describe_os_error, file_lock
from .names import check_topic_name
from .topic import (
    Entry,
    Topic,
    append_line,
    decode_topic,
    format_entry,
    new_topic_text,
    parse_topic_text,
    read_topic,
    remove_lines,
    set_frontmatter,
)

if TYPE_CHECKING:
    from .context import Context
    from .search import Hit

log = logging.getLogger("memkit")

TOPICS_DIR = "topics"
INBOX_DIR = "inbox"
STATE_DIR = ".memkit"
INDEX_TXT = "index.txt"
ARCHIVE = "archive.md"
ARCHIVE_HEADER = (
    "# Archive\n\nEntries removed by `memkit forget` or superseded by a digest. "
    "Move a line back to its topic to undo.\n\n"
)


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


class Vault:
    """A memkit vault on disk. Library entry point: ``Vault(path).search("query")``.

    :param path: the vault folder (must exist; see :meth:`init` to create one).
    :param config: settings to use instead of reading memkit.yaml.
    """

    def __init__(self, path: str | os.PathLike[str], config: Config | None = None, model: str | None = None,
                 embedder: Any = None) -> None:
        root = Path(path).expanduser()
        if not root.is_dir():
            raise VaultNotFound(f"vault {root} does not exist: create it with `memkit init {root}`")
        self.root = root.resolve()
        self.config = config if config is not None else load_config(self.root)
        self.model = model or self.config.model  #: model id or folder (``--model`` > memkit.yaml)
        self._embedder: Any = embedder  # loaded on first use
        self._index: Any = None  # memkit.index.Index, loaded on first search
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

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

    def topic_path(self, name: str) -> Path:
        """The file of topic ``name`` (validated; can never leave topics/). A file a person named
        differently (``My Notes.md``) is found by its exact stem."""
        canonical = check_topic_name(name)
        raw = name.strip()[:-3] if name.strip().endswith(".md") else name.strip()
        if raw != canonical and (self.topics_dir / f"{raw}.md").is_file():
            return self.topics_dir / f"{raw}.md"
        return self.topics_dir / f"{canonical}.md"

    def topics_dir_inside(self) -> bool:
        """False when topics/ itself is a symlink leading out of the vault (then it is not used)."""
        if not self.topics_dir.is_symlink():
            return True
        if self.is_inside(self.topics_dir):
            return True
        self.warn_once(f"{TOPICS_DIR}/ is a symlink to a folder outside the vault; not followed")
        return False

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
        except (ValueError, OSError):
            return False

    # ---- creating ------------------------------------------------------------------------------
    @classmethod
    def init(cls, path: str | os.PathLike[str]) -> "Vault":
        """Create a vault: memkit.yaml (commented defaults), topics/, inbox/, index.txt, .gitignore.

        :raises VaultExists: if ``path`` already holds a vault.
        """
        root = Path(path).expanduser()
        if (root / CONFIG_NAME).exists():
            raise VaultExists(f"{root} already holds a vault ({CONFIG_NAME} exists); nothing changed")
        try:
            root.mkdir(parents=True, exist_ok=True)
            (root / TOPICS_DIR).mkdir(exist_ok=True)
            (root / INBOX_DIR).mkdir(exist_ok=True)
            if not (root / INDEX_TXT).exists():
                atomic_write(root / INDEX_TXT, b"")
            gitignore = root / ".gitignore"
            if not gitignore.exists():
                atomic_write(gitignore, f"{STATE_DIR}/\n")
            elif f"{STATE_DIR}/" not in gitignore.read_text(encoding="utf-8", errors="replace").split():
                atomic_write(gitignore, gitignore.read_bytes().rstrip(b"\n") + f"\n{STATE_DIR}/\n".encode())
            atomic_write(root / CONFIG_NAME, DEFAULT_CONFIG_TEXT)
        except OSError as exc:
            raise describe_os_error(exc, f"the vault at {root}") from exc
        return cls(root)

    # ---- locking -------------------------------------------------------------------------------
    def lock(self, timeout: float = 30.0) -> Any:
        """The vault's write lock: every read-modify-write of a topic file, index.txt or archive.md
        holds it, across processes (CLI, watcher, MCP server)."""
        try:
            self.state_dir.mkdir(exist_ok=True)
        except OSError as exc:
            raise describe_os_error(exc, f"{self.rel(self.state_dir)}/") from exc
        return file_lock(self.state_dir / "write.lock", timeout)

    # ---- reading -------------------------------------------------------------------------------
    def topic_files(self) -> list[tuple[str, Path]]:
        """(name, path) of every topic file, sorted; symlinks leaving the vault are skipped with a warning."""
        if not self.topics_dir_inside():
            return []
        try:
            candidates = sorted(self.topics_dir.iterdir())
        except FileNotFoundError:
            return []
        out = []
        for path in candidates:
            if path.suffix != ".md" or path.name.startswith("."):
                continue
            if path.is_symlink() and not self.is_inside(path):
                self.warn_once(f"{self.rel(path)}: symlink to a file outside the vault; skipped")
                continue
            if not path.is_file():
                continue
            out.append((path.stem, path))
        return out

    def warn_once(self, message: str) -> None:
        """Log a warning once per Vault object (a malformed file is reported, not on every read)."""
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)

    def iter_topics(self) -> Iterator[Topic]:
        """Parse every topic; a malformed one is skipped with a warning naming file and line."""
        for name, path in self.topic_files():
            try:
                yield read_topic(path, name, self.rel(path))
            except TopicParseError as exc:
                self.warn_once(f"{exc}; skipped")

    def topic(self, name: str) -> Topic:
        """Parse one topic. :raises TopicNotFound: if there is no such topic."""
        path = self.topic_path(name)
        if not path.is_file():
            raise TopicNotFound(f"no topic {path.stem!r} in {self.rel(self.topics_dir)}/ (see `memkit topics`)")
        if path.is_symlink() and not self.is_inside(path):
            raise TopicNotFound(f"{self.rel(path)} is a symlink to a file outside the vault; not followed")
        return read_topic(path, path.stem, self.rel(path))

    def topics(self) -> list[TopicInfo]:
        """Every topic with its entry count, updated time and summary."""
        return [
            TopicInfo(t.name, len(t.entries), t.updated(), t.summary, self.rel(t.path))
            for t in self.iter_topics()
        ]

    def entries(self, topic: str | None = None) -> list[Entry]:
        """Every entry of the vault, or of one topic."""
        if topic is not None:
            return list(self.topic(topic).entries)
        return [e for t in self.iter_topics() for e in t.entries]

    # ---- writing -------------------------------------------------------------------------------
    def _read_for_write(self, path: Path) -> Topic | None:
        if not self.topics_dir_inside():
            raise MemkitError(f"{TOPICS_DIR}/ is a symlink to a folder outside the vault; refusing to write through it")
        if not path.exists() and not path.is_symlink():
            return None
        if path.is_symlink() and not self.is_inside(path):
            raise MemkitError(f"{self.rel(path)} is a symlink to a file outside the vault; refusing to write through it")
        return read_topic(path, path.stem, self.rel(path))

    def write_topic_text(self, topic: Topic, text: str) -> None:
        """Atomically replace a topic file's text (its BOM, if it had one, is kept)."""
        data = ("\ufeff" if topic.bom else "") + text
        target = topic.path
        if target.is_symlink() and self.is_inside(target):
            target = target.resolve()  # keep the person's link: write the file it points to
        try:
            atomic_write(target, data)
        except OSError as exc:
            raise describe_os_error(exc, topic.path.name) from exc

    def add(self, text: str, topic: str | None = None, kind: str | None = None,
            tags: Sequence[str] = (), when: datetime | None = None, *, split: bool = True) -> Entry:
        """Append ``- [kind] text #tags (date)`` to a topic (``general`` by default), creating it
        if needed; bumps ``updated`` and index.txt. Returns the new entry.

        :raises MemkitError: for empty text or a bad kind/tag; TopicNameError for a bad topic.
        """
        text = " ".join(text.split())
        if not text:
            raise MemkitError("nothing to add: the text is empty")
        if kind is not None:
            kind = _check_word(kind, "kind")
        tags = [_check_word(t.lstrip("#"), "tag") for t in tags]
        path = self.topic_path(topic or "general")
        name = path.stem
        now = (when or datetime.now()).replace(microsecond=0)
        line = format_entry(text, kind, tags, now.date().isoformat())
        with self.lock():
            self.topics_dir.mkdir(exist_ok=True)
            current = self._read_for_write(path)
            if current is None:
                title = name.replace("-", " ").capitalize()
                new_text = new_topic_text(title, "", now) + line + "\n"
                current = parse_topic_text("", name, self.rel(path), path)
            else:
                new_text = set_frontmatter(append_line(current.raw, line), {"updated": now})
            self.write_topic_text(current, new_text)
            written = parse_topic_text(new_text, name, self.rel(path), path)
            self._touch_recent(written, now)
        entry = next(e for e in reversed(written.entries) if e.line == written_line(new_text))
        if split and len(written.entries) > self.config.topic_split_threshold_lines:
            plan = self.maybe_split(name)
            if plan is not None:  # the entry now lives in one of the subtopics: return where
                log.info("topic %s had %d entries (over topic_split_threshold_lines): split into %s",
                         name, len(written.entries), ", ".join(plan.names))
                for part in plan.names:
                    moved = next((e for e in self.topic(part).entries if e.hash == entry.hash), None)
                    if moved is not None:
                        return moved
        return entry

    def maybe_split(self, topic: str, llm: Any = None) -> Any:
        """Split ``topic`` if it grew past topic_split_threshold_lines (see :mod:`memkit.split`);
        a failure is a warning, never a failure of the write that triggered it."""
        from .split import maybe_split

        try:
            return maybe_split(self, topic, llm=llm)
        except MemkitError as exc:
            log.warning("could not split %s: %s", topic, exc)
            return None

    def find(self, ref: str | None = None, match: str | None = None, topic: str | None = None) -> Entry:
        """The one entry whose id starts with ``ref`` or whose text contains ``match``.

        :raises EntryNotFound: when none or several match (the message lists them).
        """
        if not ref and not match:
            raise EntryNotFound("give an entry id or a text to match")
        entries = self.entries(topic) if topic else self.entries()
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
        if not found:
            raise EntryNotFound(f"no entry with {what} (see `memkit show TOPIC` for ids)")
        distinct = {(e.file, e.line) for e in found}
        if len(distinct) > 1:
            listing = "; ".join(f"{e.id} {e.topic}: {_short(e.text)}" for e in found[:8])
            raise EntryNotFound(f"{len(found)} entries with {what}, be more specific (or give --topic): {listing}")
        return found[0]

    def forget(self, ref: str | None = None, match: str | None = None, reason: str = "forgotten",
               topic: str | None = None) -> Entry:
        """Remove one entry from its topic and append it to archive.md (tracked, so git keeps it).

        The archive is written before the topic, so a crash in between duplicates, never loses.
        """
        target = self.find(ref, match, topic)
        now = datetime.now().replace(microsecond=0)
        with self.lock():
            topic = self.topic(target.topic)  # re-read under the lock: lines may have moved
            entry = next((e for e in topic.entries if e.hash == target.hash), None)
            if entry is None:
                raise EntryNotFound(f"entry {target.id} changed while forgetting it; try again")
            new_text, removed = remove_lines(topic.raw, entry.line, entry.end_line)
            self.archive([(entry, " ".join(removed.split()), reason)], now)
            new_text = set_frontmatter(new_text, {"updated": now})
            self.write_topic_text(topic, new_text)
            self._touch_recent(parse_topic_text(new_text, topic.name, topic.path.name, topic.path), now)
        return entry

    def archive(self, items: Sequence[tuple[Entry, str, str]], now: datetime) -> None:
        """Append lines to archive.md: ``- DATE from TOPIC (REASON): ORIGINAL LINE``. Caller holds the lock."""
        path = self.root / ARCHIVE
        try:
            old = path.read_bytes().decode("utf-8", errors="surrogateescape") if path.exists() else ARCHIVE_HEADER
        except OSError as exc:
            raise describe_os_error(exc, ARCHIVE) from exc
        text = old
        for entry, original, reason in items:
            text = append_line(text, f"- {now.date().isoformat()} from {entry.topic} ({reason}): {original}")
        try:
            atomic_write(path, text.encode("utf-8", errors="surrogateescape"))
        except OSError as exc:
            raise describe_os_error(exc, ARCHIVE) from exc

    # ---- recent index --------------------------------------------------------------------------
    def recent(self) -> list[recent_mod.RecentTopic]:
        """The lines of index.txt, newest first."""
        try:
            text = (self.root / INDEX_TXT).read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        return parse_recent_sorted(text)

    def rebuild_recent(self) -> list[recent_mod.RecentTopic]:
        """Regenerate index.txt from the topic files' ``updated`` (mtime if absent) and summaries."""
        with self.lock():
            items = [recent_mod.RecentTopic(t.updated(), t.name, t.summary) for t in self.iter_topics()]
            self._write_recent(items)
        return self.recent()

    def _touch_recent(self, topic: Topic, now: datetime) -> None:
        """Put ``topic`` at the top of index.txt (caller holds the lock); vanished topics drop out."""

        def is_topic(name: str) -> bool:  # what topic_files() would list, checked for one name
            if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
                return False
            path = self.topics_dir / f"{name}.md"
            try:
                if path.is_symlink() and not self.is_inside(path):
                    return False
                return path.is_file()
            except (OSError, ValueError):
                return False

        # only the topics index.txt names are checked, not a listing of every topic file
        items = [r for r in self.recent() if r.topic != topic.name and is_topic(r.topic)]
        if topic.path.exists():
            items.append(recent_mod.RecentTopic(now, topic.name, topic.summary))
        self._write_recent(items)

    def _write_recent(self, items: list[recent_mod.RecentTopic]) -> None:
        text = recent_mod.render_recent(items, self.config.index_max_entries)
        path = self.root / INDEX_TXT
        try:
            if path.exists() and path.read_text(encoding="utf-8", errors="replace") == text:
                return
            atomic_write(path, text)
        except OSError as exc:
            raise describe_os_error(exc, INDEX_TXT) from exc

    # ---- index and search (the heavy parts load lazily) --------------------------------------
    @property
    def embedder(self) -> Any:
        """The embedding model, loaded once (see :func:`memkit.embed.load_embedder`)."""
        if self._embedder is None:
            from .embed import load_embedder

            self._embedder = load_embedder(self.model)
        return self._embedder

    def index_obj(self) -> Any:
        """The :class:`memkit.index.Index` of this vault for its model."""
        if self._index is None:
            from .index import Index

            self._index = Index(self, self.embedder)
        return self._index

    def index(self, full: bool = False, progress: Any = None) -> Any:
        """Bring the embedding sidecar up to date; returns an :class:`memkit.index.IndexReport`.

        :param full: re-embed everything, ignoring the existing sidecar.
        :param progress: called with (done, total) while embedding.
        """
        index = self.index_obj()
        report = index.refresh(full=full, progress=progress, write=True)
        if full or report.rebuilt_model:
            index.prune_other_models()
        return report

    def llm(self) -> Any:
        """The LLM configured under ``llm:`` in memkit.yaml, or None (see :mod:`memkit.llm`)."""
        from .llm import LLMSettings, make_llm

        return make_llm(LLMSettings.from_config(self.config.llm))

    def digest(self, transcript: str | os.PathLike[str], *, llm: Any = None, dry_run: bool = False) -> Any:
        """Digest a transcript file into memory entries; returns a :class:`memkit.digest.DigestReport`.

        :param transcript: ``Speaker: text`` lines, a JSON list of ``{role, content}``, or JSONL.
        :param llm: an LLM client (default: the one configured in memkit.yaml).
        :param dry_run: only compute the change (``report.diff``).
        """
        from .digest import digest_file

        return digest_file(self, transcript, llm if llm is not None else self.llm(), dry_run=dry_run)

    def context(self, message: str, session: str | None = None, budget_tokens: int = 2000,
                now: datetime | None = None) -> "Context":
        """The memory block for an assistant's system prompt, for the user's ``message``.

        See :func:`memkit.context.build_context`: recent topics, then the memories relevant to the
        session so far (or the detected topic's file), then the memory instructions.

        :param message: the user's latest message (may be empty).
        :param session: a conversation id; memories accumulate across calls that share it.
        :param budget_tokens: the most the block may take (~4 characters a token).
        :param now: the current time (default: now).
        """
        from .context import build_context

        return build_context(self, message, session=session, budget_tokens=budget_tokens, now=now)

    def search(self, query: str, k: int | None = None, **options: Any) -> list["Hit"]:
        """Hybrid lexical + vector search. See :func:`memkit.search.search` for the options."""
        from .search import search

        return search(self, query, k=k, **options)


def parse_recent_sorted(text: str) -> list[recent_mod.RecentTopic]:
    items = recent_mod.parse_recent(text)
    return sorted(items, key=lambda r: r.updated, reverse=True)


def written_line(text: str) -> int:
    """The 1-based number of the last non-empty line of ``text`` (where an append landed)."""
    lines = text.rstrip("\r\n").split("\n")
    return len(lines)


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _check_word(value: str, what: str) -> str:
    import re

    value = value.strip()
    if not re.fullmatch(r"[^\W\d_][\w-]{0,39}", value):
        raise InvalidValue(f"invalid {what} {value!r}: use one word of letters, digits, '-' or '_'")
    return value.lower()


__all__ = ["Vault", "find_vault", "TopicInfo", "decode_topic"]
