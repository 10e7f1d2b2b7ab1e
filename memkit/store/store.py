"""Reading and writing a vault's topics and archive.md: the only code that writes them.

:class:`Store` builds on :class:`~memkit.store.layout.VaultFiles` (where the files are, the write lock)
and owns ``topics/*.md`` and ``archive.md``; its :attr:`Store.index_txt` keeps index.txt in step
(:mod:`memkit.store.recent_file`) and its :attr:`Store.inbox` holds the transcripts waiting for a digest
(:mod:`memkit.store.inbox`). Every write holds the vault's write lock (a lock file under ``.memkit/``,
re-entrant within a process) and replaces files atomically or appends in one ``O_APPEND`` write.
Services (digest, split, context…) never write these files themselves: they call the typed
methods here. Derived data under ``.memkit/`` (the index, session state) is written by its owner
with :mod:`memkit.base.fsutil`.
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple, Sequence

from ..base.fsutil import (
    AppendFile,
    FileChanged,
    NotRegularFile,
    append_bytes,
    atomic_write,
    describe_os_error,
    read_head,
    read_regular,
    replace_checked,
)
from ..base.lazy_re import lazy
from ..base.limits import MAX_ENTRY_CHARS
from ..config import Config
from ..errors import (
    AmbiguousEntry,
    EntryNotFound,
    InvalidValue,
    MemkitError,
    TopicNotFound,
    TopicNotWritable,
    TopicParseError,
)
from ..formats.archive import ARCHIVE, ARCHIVE_HEADER, ArchivedEntry, ArchiveItem, archive_line, parse_archive
from ..formats.lifecycle import core_text
from ..formats.links import Renamed, link_key
from ..formats.markdown import decode_topic, encode_topic, is_cr_only, split_lines
from ..formats.names import check_topic_name
from ..formats.topic import (
    KIND_RE,
    LIST_MARKER_RE,
    MAX_TOPIC_BYTES,
    Entry,
    Topic,
    append_line,
    format_entry,
    new_topic_text,
    newline_of,
    parse_topic_text,
    read_topic,
    remove_lines,
    text_hash,
    unified_diff,
)
from .inbox import Inbox
from .layout import INBOX_DIR, INDEX_TXT, STATE_DIR, TOPICS_DIR, TopicFile, VaultFiles, find_vault
from .links import LinkGraph, link_graph
from .newvault import adopt_folder, create_vault
from .recent_file import RecentFile
from .recovery import aside_path, write_split_journal
from .rename import rename_topic

__all__ = ["Added", "Store", "TopicInfo", "TopicFile", "ArchiveItem", "ArchivedEntry", "ExistingEntry", "find_vault", "check_word",
           "TOPICS_DIR", "INBOX_DIR", "STATE_DIR", "INDEX_TXT", "MAX_ENTRY_CHARS"]

_DAY_TAIL_RE = lazy(r"\s*\(\d{4}-\d{2}-\d{2}\)\s*$")


class Added(NamedTuple):
    """What :meth:`Store.add` wrote."""

    entry: Entry  #: the entry as its topic holds it (an :class:`ExistingEntry`: not written, the topic had it)
    size: int  #: the topic's entries now (-1: nothing written)
    topic: Topic | None  #: the topic as written, with the file's stat after the write; None when not known
    #: (a new file, or one appended to by someone else meanwhile): the index reads the file itself


@dataclass(frozen=True)
class ExistingEntry(Entry):
    """What an add returns when its topic holds the very same memory already (the same text but
    for the date): that entry, not written again."""

    duplicate = True  #: an entry an add found, not one it wrote

    def to_dict(self) -> dict[str, Any]:
        return dict(super().to_dict(), duplicate=True)


def _undated(text: str) -> str:
    """What an entry says, as the digest compares it (:func:`memkit.formats.lifecycle.core_text`:
    its kind, tags, date and markers aside, case, spacing and end punctuation folded):
    "prefers bomba rice for paella." is "Prefers bomba rice for paella"."""
    return core_text(" ".join(_DAY_TAIL_RE.sub("", text).split()))

MAX_ARCHIVE_BYTES = 64 * 1024 * 1024  #: archive.md is read up to this size (history, stats)


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



class Store(VaultFiles):
    """The topics and archive of one vault (see the module docstring).

    :param root: the vault folder (must exist).
    :param config: its settings (default: read memkit.yaml).
    """

    def __init__(self, root: str | os.PathLike[str], config: Config | None = None) -> None:
        super().__init__(root, config)
        self.index_txt = RecentFile(self)  #: index.txt, kept in step with the topic files
        self.inbox = Inbox(self)  #: inbox/: transcripts waiting for a digest

    def __repr__(self) -> str:
        return f"Store({str(self.root)!r})"

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, profile: bool = True) -> "Store":
        """Create a vault (:func:`memkit.store.newvault.create_vault`) and open it.

        :raises VaultExists: if ``path`` already holds a vault.
        """
        return cls(create_vault(path, profile=profile))

    def links(self) -> LinkGraph:
        """Every ``[[link]]`` of the vault (:func:`memkit.store.links.link_graph`)."""
        return link_graph(self)

    def rename_topic(self, old: str, new: str) -> Renamed:
        """Rename topic ``old`` to ``new``, the links to it rewritten (:mod:`memkit.store.rename`)."""
        return rename_topic(self, old, new)

    @classmethod
    def adopt(cls, path: str | os.PathLike[str]) -> "Store":
        """Make a folder of notes a vault as it is (:func:`memkit.store.newvault.adopt_folder`) and open it."""
        store = cls(adopt_folder(path))
        store.index_txt.rebuild(store.iter_topics())  # memkit's own file: in step from the start
        return store

    # ---- reading -------------------------------------------------------------------------------
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
        found = self.topic_file(path) if self.topics_dir_inside() else None
        if found is None:
            raise TopicNotFound(f"no topic {self.name_of(path)!r} in {self.topics_rel or '.'}/ (see `memkit topics`)")
        if not isinstance(found, TopicFile):
            raise TopicNotFound(f"{self.rel(path)}: {found}; not read")
        topic = read_topic(found.path, found.name, self.rel(found.path))
        self.warn_problems(topic)
        return topic

    def pinned_topics(self) -> list[str]:
        """The topics with ``pinned: true`` in their frontmatter (the profile), by name. Only files
        whose first 4 kB mention ``pinned`` are parsed."""
        return self.flagged("pinned")

    def private_topics(self) -> list[str]:
        """The topics with ``private: true`` in their frontmatter, by name: left out of the servers'
        search results and of the context unless asked for by name (docs/privacy.md)."""
        return self.flagged("private")

    def flagged(self, key: str) -> list[str]:
        """The topics whose frontmatter says ``KEY: true``, by name (only files whose first 4 kB
        mention ``KEY`` are parsed)."""
        out = []
        for tf in self.topic_files():
            try:
                if key.encode() not in read_head(tf.path, 4096):
                    continue
                topic = read_topic(tf.path, tf.name, self.rel(tf.path))
            except (OSError, MemkitError):
                continue
            if topic.meta.get(key) is True:
                out.append(tf.name)
        return out

    def subtopics(self, parent: str) -> list[str]:
        """The topics a split made of ``parent`` (``parent: NAME`` in their frontmatter), by name."""
        stem = check_topic_name(parent)
        out = []
        for tf in self.topic_files_named(stem + "-"):
            try:
                if str(read_topic(tf.path, tf.name, self.rel(tf.path)).meta.get("parent", "")) == stem:
                    out.append(tf.name)
            except TopicParseError:
                continue
        return out

    def show_topic(self, name: str) -> dict[str, Any]:
        """A topic as the front ends show it (name, title, summary, file, entries, ``split_into``);
        one split away: ``name`` and ``split_into`` only. :raises TopicNotFound: neither."""
        named: dict[str, Any] = {}
        try:
            t = self.topic(name)
        except TopicNotFound:
            if children := self.subtopics(name):
                return {"name": name, "split_into": children}
            resolved, also = self.resolve_topic(name)
            t = self.topic(resolved)
            named = {"named_as": name, "also_named_so": also} if also else {"named_as": name}
        shown = dict(t.to_dict(), file=self.rel(t.path), split_into=self.subtopics(t.name), **named)
        backlinks = link_graph(self).backlinks(t.name)
        if backlinks:  # the entries whose [[links]] name it
            shown["linked_from"] = [dict(e.to_dict(), link=link.target + (f"#{link.heading}" if link.heading else ""))
                                    for e, link in backlinks]
        return shown

    def resolve_topic(self, name: str) -> tuple[str, list[str]]:
        """The topic ``name`` names as a ``[[link]]`` does (:class:`memkit.formats.links.LinkResolver`):
        its path, else its file's name alone (``Budget`` is ``work/budget``; several in different
        folders: the shortest path), else an alias; and the other topics whose files have that
        name (the choice was not the only one).

        :raises TopicNotFound: no topic is named so."""
        resolver = link_graph(self).resolver
        found = resolver.resolve(name)
        if len(found) != 1:  # none, or a split topic's parts (``subtopics`` shows those)
            self.topic(name)  # raises the usual message
            raise TopicNotFound(f"no topic {name!r} (see `memkit topics`)")  # pragma: no cover - a race
        key = link_key(name)
        leaf = key.rpartition("/")[2]
        also = [n for n in resolver.by_leaf.get(leaf, []) if n != found[0]] if "/" not in key else []
        return found[0], also

    def topics(self) -> list[TopicInfo]:
        """Every topic with its entry count, last update (as index.txt has it, which follows every
        write and hand edit; else the topic's own dates) and summary."""
        when = {r.topic: r.updated for r in self.index_txt.read(write=False)}
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

    def _one(self, found: list[Entry], what: str) -> list[Entry]:
        """``found`` when it is one entry, possibly written several times (identical text, one
        topic); :raises EntryNotFound: none; :raises AmbiguousEntry: several different entries (listed)."""
        if not found:
            raise EntryNotFound(f"no entry with {what} (see `memkit show TOPIC` for ids)")
        if len({(e.hash, e.topic) for e in found}) > 1:
            listing = "; ".join(f"{e.id} {e.topic}: {_short(e.text)}" for e in found[:8])
            raise AmbiguousEntry(f"{len(found)} entries with {what}, be more specific (or give --topic): {listing}")
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
            raise MemkitError(self.symlink_refusal(path))
        topic = read_topic(path, self.name_of(path), self.rel(path))
        problem = topic.write_problem()
        if problem is not None:
            raise TopicNotWritable(f"{problem.message}. Nothing was written")
        return topic

    def write_topic(self, name: str, text: str, *, current: Topic | None, now: datetime,
                    touch_recent: bool = True, path: Path | None = None) -> Topic:
        """Replace (or create) topic ``name`` with ``text``; the caller holds the lock and read
        ``current`` under it. The file is replaced atomically and only if nobody changed it since
        ``current`` was read (:func:`memkit.base.fsutil.replace_checked`: lines appended meanwhile by an
        editor are kept; any other change raises :class:`FileChanged` and nothing is written). Its
        BOM and line endings are kept. Puts the topic at the top of index.txt unless
        ``touch_recent`` is False (``path``: the new topic's file, when the caller resolved it).
        Returns the topic as written."""
        if current is not None:
            path = current.path
        elif path is None:
            path = self.topic_path(name)
        target = self.write_target(path)
        data = current.data(text) if current is not None else encode_topic(text)
        try:
            self.topics_dir.mkdir(exist_ok=True)
            if path.parent != self.topics_dir:  # a topic in a folder: the folder is made as needed
                path.parent.mkdir(parents=True, exist_ok=True)
            replace_checked(target, data, current.data() if current is not None else b"",
                            current.stamp if current is not None else None)
        except FileChanged as exc:
            raise FileChanged(f"{self.rel(path)}: {exc}") from None
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc
        written = parse_topic_text(text, self.name_of(path), self.rel(path), path)
        if touch_recent:
            self.index_txt.touch(written.name, written.summary, now)
        return written

    def replace_topic(self, parent: Topic, parts: dict[str, str]) -> None:
        """Replace topic ``parent`` by new topics ``parts`` (name -> text), as a split does; the
        caller holds the lock and checked ``parent`` is current. Every part is written before the
        parent is removed, so a crash leaves duplicates, never a lost line; if writing a part
        fails, the parts already written are removed again and the parent is untouched."""
        datas = {name: parent.data(text) for name, text in parts.items()}
        # so a kill between the renames is undone by the next writer (memkit.store.recovery)
        journal = write_split_journal(self.state_dir, self.rel(parent.path), parent.data(),
                                      {self.rel(self.topic_path(n)): d for n, d in datas.items()})
        written: list[Path] = []
        try:
            for name, data in datas.items():
                path = self.topic_path(name)
                path.parent.mkdir(parents=True, exist_ok=True)
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
        aside = aside_path(self.state_dir, parent.path)
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
            when: datetime | None = None, path: Path | None = None, allow_duplicate: bool = False) -> Added:
        """Append ``- [kind] text #tags (date)`` to a topic (``general`` by default), creating it
        if needed; bumps ``updated`` and index.txt. Returns the new entry, how many entries its
        topic now has, and the topic as written (:class:`Added`).

        Under the lock (taken once) the topic file is opened once, read and appended to through
        the same descriptor (:class:`memkit.base.fsutil.AppendFile`), and parsed once: the text as it
        will be, which is also what refuses a file with a merge conflict or bad frontmatter.

        :param path: the topic's file when the caller resolved it already (:meth:`topic_path`).
        :param allow_duplicate: write the text even when the topic holds it already (the same text
            but for the date); otherwise that entry is returned, as an :class:`ExistingEntry`.
        :raises MemkitError: for empty text or a bad kind/tag; TopicNameError for a bad topic.
        """
        hidden = self.config.redact.apply(text)  # what is never stored (docs/privacy.md)
        text = " ".join(hidden.text.split())
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
        if path is None:
            path = self.topic_path(topic or "general")
        now = (when or datetime.now()).replace(microsecond=0)
        line = format_entry(text, kind, tags, now.date().isoformat())
        with self.lock():
            written = self._append(path, line, now, allow_duplicate)
            if isinstance(written, ExistingEntry):
                return Added(replace(written, redacted=hidden.count), -1, None)
            if written is None:  # no such topic yet: created with its frontmatter
                title = path.stem.replace("-", " ").capitalize()
                written = self.write_topic(self.name_of(path), new_topic_text(title, "", now) + line + "\n", current=None,
                                           now=now, path=path)
            else:
                self.index_txt.touch(written.name, written.summary, now)
        wanted = text_hash(line[2:])
        entry = next((e for e in reversed(written.entries) if e.hash == wanted), None)
        if entry is None:  # written, but the file reads it otherwise (a person's odd markup around it)
            entry = Entry(line[2:], written.name, self.rel(written.path), 0, 0, kind, tuple(tags), now.date().isoformat(),
                          True, wanted)
        return Added(replace(entry, redacted=hidden.count), len(written.entries),
                     written if written.stamp is not None else None)

    def _append(self, path: Path, line: str, now: datetime, allow_duplicate: bool = True
                ) -> Topic | ExistingEntry | None:
        """Append ``line`` to the topic file at ``path`` (the lock held): a plain append, no
        frontmatter rewrite, so lines an editor appends at the same time cannot be lost and two
        clones that both add merge in git without a conflict. Returns the topic as written, or
        None when there is no file yet, or (unless ``allow_duplicate``) the entry that says the
        same already, the file left as it was.

        :raises MemkitError: the file may not be written (a symlink out of the vault, a FIFO…).
        :raises TopicNotWritable: it has a merge conflict or bad frontmatter.
        """
        if not self.topics_dir_inside():
            raise MemkitError(f"{TOPICS_DIR}/ is a symlink to a folder outside the vault; refusing to write through it")
        rel = self.rel(path)
        try:
            f = AppendFile(self.write_target(path), MAX_TOPIC_BYTES)
        except FileNotFoundError:
            if path.is_symlink():  # a dangling link: not a topic to create behind a person's back
                raise TopicParseError(rel, "cannot read: a broken symlink") from None
            return None
        except NotRegularFile as exc:
            message = str(exc) + (" for a topic; split it into smaller topics" if "limit" in str(exc) else "")
            raise TopicParseError(rel, message) from None
        except OSError as exc:
            raise describe_os_error(exc, rel) from exc
        with f:
            old, bom = decode_topic(f.data, rel)
            cr = is_cr_only(f.data.decode("utf-8", errors="replace"))
            new = append_line(old, line)
            written = parse_topic_text(new, self.name_of(path), rel, path, bom)
            written.cr = cr
            problem = written.write_problem()  # a conflict or bad frontmatter was there before the line
            if problem is not None:
                raise TopicNotWritable(f"{problem.message}. Nothing was written")
            key = _undated(line[2:])
            same = [e for e in written.entries if e.is_list and _undated(e.text) == key]
            if not allow_duplicate and len(same) > 1:  # the new line and one already there
                return ExistingEntry(**{k: getattr(same[0], k) for k in same[0].__dataclass_fields__})
            suffix = encode_topic(new[len(old):], cr=cr)
            newline = encode_topic(newline_of(old), cr=cr)

            def fit(last: bytes) -> bytes:
                """The suffix, with a leading newline exactly when the file (as it is now) lacks one."""
                ends = last in ((b"", b"\n", b"\r") if cr else (b"", b"\n"))
                if ends and suffix.startswith(newline):
                    return suffix[len(newline):]
                return suffix if ends or suffix.startswith(newline) else newline + suffix

            try:
                if f.append(fit) and fit(f.data[-1:]) == suffix:  # the file is now the text parsed: its stat
                    written.stamp = f.stamp
            except OSError as exc:
                raise describe_os_error(exc, rel) from exc
        return written

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

        ``new_lines`` (memkit's, often an LLM's: a compaction, a distilled profile) are redacted
        first: a secret in them is never written (docs/privacy.md).

        :returns: (the unified diff of the topic and archive.md, the entries removed).
        :raises TopicNotWritable: the topic has a merge conflict or bad frontmatter.
        """
        new_lines = [self.config.redact.apply(line).text for line in new_lines]
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


def check_word(value: str, what: str) -> str:
    """A kind or tag as stored (lower-cased). :raises InvalidValue: not one word."""
    value = value.strip()
    if not re.fullmatch(r"[^\W\d_][\w-]{0,39}", value):
        raise InvalidValue(f"invalid {what} {value!r}: use one word of letters, digits, '-' or '_'")
    return value.lower()


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"
