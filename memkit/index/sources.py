"""What an index indexes: the vault's topic files, or its conversation sessions.

An :class:`memkit.index.index.Index` reads its files through a source: which files there are (with the
stat that tells a refresh they changed), the vault-relative path of each, and each file parsed
into entries. :class:`TopicSource` is the topics' (``topics/*.md``: one entry per memory);
:class:`SessionSource` is the conversations' (``sessions/*.md``: one entry per message, its
heading's line; summaries and empty messages left out), so ``memkit search --sessions`` searches
with the same index, matrix and ranker as the topics, in a sidecar of its own
(``<model>-<dim>-sessions.*``).
"""
from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..base.fsutil import read_regular
from ..errors import MemkitError, TopicNotFound, TopicParseError
from ..formats.session import MAX_SESSION_BYTES, NAME_RE, SESSIONS_DIR, SUMMARY, is_session_filename, parse_session
from ..formats.topic import Entry, Topic, read_topic, text_hash
from ..store import Store, TopicFile

__all__ = ["Source", "TopicSource", "SessionSource"]


class Source(Protocol):
    """The files an index keeps in step with."""

    suffix: str  #: appended to the sidecar's file names ("" for the topics)

    def files(self) -> list[TopicFile]:
        """Every file there is now (one listing of the folder, a stat each)."""
        ...

    def relpath(self, name: str) -> str:
        """The vault-relative path of file ``name``."""
        ...

    def read(self, path: Path, name: str, rel: str) -> Topic:
        """The file parsed (:raises TopicParseError: naming the file, when it cannot be read)."""
        ...

    def name_of(self, given: str | os.PathLike[str]) -> str:
        """The name of the file a writer names (its path, or ``folder/NAME.md``).
        :raises MemkitError: for a name that is no file of this source."""
        ...

    def path_of(self, name: str) -> Path:
        """Where file ``name`` is."""
        ...

    def lookup(self, name: str) -> Topic | None:
        """File ``name`` parsed; None when it is gone."""
        ...

    def file_at(self, name: str) -> TopicFile | None:
        """File ``name`` with its stat, as :meth:`files` would list it; None when it has none
        (gone, or not a file of this source). A stat, no listing."""
        ...


class TopicSource:
    """``topics/*.md``: what :class:`memkit.store.store.Store` says is a topic file."""

    suffix = ""

    def __init__(self, store: Store) -> None:
        self.store = store

    def files(self) -> list[TopicFile]:
        return self.store.topic_files()

    def relpath(self, name: str) -> str:
        return self.store.topic_rel(name)  # what Store.rel gives for topics/NAME.md, ~50x cheaper

    def read(self, path: Path, name: str, rel: str) -> Topic:
        try:
            topic = read_topic(path, name, rel)
        except TopicParseError as exc:
            self.store.warn_once(f"{exc}; skipped")
            raise
        self.store.warn_problems(topic)
        return with_headings(topic)

    def name_of(self, given: str | os.PathLike[str]) -> str:
        return self.store.name_of(given)

    def path_of(self, name: str) -> Path:
        return self.store.topic_path(name)

    def lookup(self, name: str) -> Topic | None:
        try:
            return with_headings(self.store.topic(name))  # the store decides what is a topic file
        except TopicNotFound:
            return None

    def file_at(self, name: str) -> TopicFile | None:
        if not self.store.topics_dir_inside():
            return None
        got = self.store.topic_file(self.store.topics_dir / f"{name}.md")
        return got if isinstance(got, TopicFile) else None


def with_headings(topic: Topic) -> Topic:
    """A prose note (no list item: a person's note, as in an Obsidian vault) is indexed by
    paragraph, each with the heading it is under (``Heading: paragraph``), so a search finds a
    paragraph by its section's words too. Ids are kept (the paragraph's own), so an id a search
    gives is the one ``memkit show`` gives; the file is not touched."""
    if not topic.entries or any(e.is_list for e in topic.entries) or not any(e.heading for e in topic.entries):
        return topic
    topic.entries = [replace(e, text=f"{e.heading}: {e.text}") if e.heading and e.heading != e.text else e
                     for e in topic.entries]
    return topic


class SessionSource:
    """``sessions/*.md``: each message of each saved conversation is an entry."""

    suffix = "-sessions"

    def __init__(self, store: Store) -> None:
        self.store = store
        self.folder = store.root / SESSIONS_DIR

    def files(self) -> list[TopicFile]:
        if self.folder.is_symlink():  # never read conversations from outside the vault
            return []
        try:
            entries = list(os.scandir(self.folder))
        except OSError:
            return []
        out = []
        for entry in entries:
            if not is_session_filename(entry.name):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat_mod.S_ISREG(st.st_mode):
                out.append(TopicFile(entry.name[:-3], Path(entry.path), st))
        return sorted(out, key=lambda f: f.name)

    def relpath(self, name: str) -> str:
        return f"{SESSIONS_DIR}/{name}.md"

    def read(self, path: Path, name: str, rel: str) -> Topic:
        try:
            data, st = read_regular(path, MAX_SESSION_BYTES)  # as memkit.sessions.folder reads them
            text = data.decode("utf-8")
        except (OSError, MemkitError, UnicodeDecodeError) as exc:
            raise TopicParseError(rel, f"cannot be read ({exc})") from exc
        m = NAME_RE.match(path.name)
        session = m.group(2) if m else name
        try:
            conversation = parse_session(text, rel, session)
        except MemkitError as exc:
            raise TopicParseError(rel, str(exc)) from exc
        # "role: text", as conversations are ranked (speakers); the role is the entry's kind, the
        # message's day its date (filters by role and day). An aged conversation's stage text
        # (its summary or core memory) is a row too, of role "summary"
        rows = [(m.role, m.content, m.time, m.line) for m in conversation.messages]
        stage = conversation.stage_block
        if stage is not None:
            rows.append((SUMMARY, stage.text, stage.time, stage.line))
        entries = []
        for role, content, time, line in sorted(rows, key=lambda r: r[3]):
            if content.strip():
                body = f"{role}: {content}"
                entries.append(Entry(body, session, rel, line, line, role, (), time[:10], hash=text_hash(body)))
        day = m.group(1) if m else datetime.fromtimestamp(st.st_mtime).date().isoformat()
        return Topic(name, path, "", {"updated": day}, entries, 0, False,
                     stamp=(st.st_size, st.st_mtime_ns, st.st_ino))

    def name_of(self, given: str | os.PathLike[str]) -> str:
        name = Path(given).name
        if not is_session_filename(name):
            raise MemkitError(f"{given}: not a session file")
        return name[:-3]

    def path_of(self, name: str) -> Path:
        return self.folder / f"{name}.md"

    def lookup(self, name: str) -> Topic | None:
        path = self.path_of(name)
        if self.folder.is_symlink() or path.is_symlink() or not path.is_file():
            return None
        return self.read(path, name, self.relpath(name))

    def file_at(self, name: str) -> TopicFile | None:
        path = self.path_of(name)
        if self.folder.is_symlink() or not is_session_filename(path.name):
            return None
        try:
            st = path.stat(follow_symlinks=False)
        except OSError:
            return None
        return TopicFile(name, path, st) if stat_mod.S_ISREG(st.st_mode) else None
