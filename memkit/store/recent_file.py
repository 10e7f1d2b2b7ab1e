"""index.txt kept in step with the topic files: one line per topic, newest first.

Every write memkit makes to a topic puts it at the top (:meth:`RecentFile.touch`); hand edits,
new files, a ``git pull`` and what a union merge leaves are folded in when it is read
(:meth:`RecentFile.read`), with ``.memkit/recent-seen.json`` (:mod:`memkit.store.seen`) remembering what
memkit last saw of each file. The line format is :mod:`memkit.formats.recent`'s.
"""
from __future__ import annotations

import hashlib
import logging
from datetime import datetime
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..base.fsutil import FileChanged, NotRegularFile, describe_os_error, read_regular, replace_checked, stamp_of
from ..errors import MemkitError, TopicParseError
from ..formats.recent import RecentTopic, parse_recent, render_recent
from ..formats.topic import Topic, read_topic
from .layout import INDEX_TXT, TopicFile, VaultFiles
from .seen import HAND_EDIT_SLACK_S, SEEN_FILE, Seen, load_seen, save_seen

log = logging.getLogger("memkit")

__all__ = ["RecentFile", "MAX_RECENT_BYTES"]

MAX_RECENT_BYTES = 1 << 20  #: index.txt is read up to this size (it holds a few dozen lines)


class RecentFile:
    """index.txt of one vault."""

    def __init__(self, files: VaultFiles) -> None:
        self._files = files

    def read(self, *, write: bool = True) -> list[RecentTopic]:
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
        return self._fold(None, write)

    def update(self, names: Iterable[str]) -> list[RecentTopic]:
        """:meth:`read` for the topics ``names`` alone (file stems: what a watcher saw change),
        without listing topics/: each named file is folded in as :meth:`read` would (a hand
        edit, a new file, a file gone), its line of ``.memkit/recent-seen.json`` updated, and
        every other topic taken as index.txt and that record have it.

        Does what :meth:`read` does, a listing of topics/, when the named files alone cannot tell:
        memkit never looked, index.txt changed elsewhere (a ``git pull``), a listed topic went
        and another may take its place, a name is a symlink (it may be another topic's file).
        """
        return self._fold(frozenset(names), True)

    def _fold(self, names: frozenset[str] | None, write: bool) -> list[RecentTopic]:
        """:meth:`read` (``names`` None: every topic file) or :meth:`update` (only ``names``)."""
        items, index_sha = self._read_sha()
        seen = load_seen(self._files.state_dir / SEEN_FILE)
        # index.txt changed since memkit last looked (a git pull brought it with the topics): it says
        # when they changed, and file times (the pull's) are not used
        pulled = seen is not None and seen.index is not None and seen.index != index_sha
        files = self._named(names, items) if names is not None and seen is not None and not pulled else None
        if files is None:
            names = None
            files = {tf.name: tf for tf in self._files.topic_files()}
        if seen is None:  # never looked: a file written clearly after the rest of the vault was edited by hand
            times = [tf.stat.st_mtime for tf in files.values()]
            baseline = max(min(times, default=0.0), self._mtime(self._files.recent_path))
        best: dict[str, RecentTopic] = {}
        fresh: set[str] = set()
        for item in items:
            # a topic not named is taken to be there (update: only the named files were looked at)
            there = item.topic in files or (names is not None and item.topic not in names)
            if there and (item.topic not in best or item.updated > best[item.topic].updated):
                best[item.topic] = item
        # a file index.txt leaves out, unchanged since memkit last looked, was older than every
        # topic it lists: it stays out (not read: a vault of 20,000 topics reads the few that
        # changed), unless index.txt now lists fewer topics than it holds (one went)
        full = seen is None or len(best) < self._files.config.index_max_entries
        for name, tf in files.items():
            listed = best.get(name)
            if seen is not None:
                changed = seen.changed(name, tf.stat.st_mtime_ns, tf.location)
            else:
                changed = tf.stat.st_mtime - baseline > HAND_EDIT_SLACK_S
            if not changed and (listed is not None or not full):
                continue
            mtime = datetime.fromtimestamp(tf.stat.st_mtime).replace(microsecond=0)
            try:
                topic = read_topic(tf.path, tf.name, self._files.rel(tf.path))
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
        result = result[: self._files.config.index_max_entries]
        if not write:
            return result
        rendered = render_recent(result, self._files.config.index_max_entries)
        if rendered != render_recent(items, 1 << 30) or len(items) != len(result):
            try:
                with self._files.lock():
                    self._write(result, remember=False)  # the record is saved below, with this sha
                index_sha = hashlib.sha1(rendered.encode("utf-8")).hexdigest()
            except MemkitError as exc:  # a read-only vault: the repair is shown, not written
                log.debug("index.txt not repaired: %s", exc)
        self._remember_seen(files, index_sha, seen, names)
        return result

    def _named(self, names: frozenset[str], items: Sequence[RecentTopic]) -> dict[str, TopicFile] | None:
        """The topic files among ``names`` (those that are one), or None when a listing is needed
        (see :meth:`update`)."""
        if not self._files.topics_dir_inside():
            return None
        out: dict[str, TopicFile] = {}
        for name in names:
            path = self._files.topics_dir / f"{name}.md"
            got = self._files.topic_file(path)
            if isinstance(got, TopicFile):
                if path.is_symlink():
                    return None
                out[name] = got
        gone = names - out.keys()
        listed = {item.topic for item in items}
        if gone & listed and len(listed - gone) < self._files.config.index_max_entries <= len(listed):
            return None  # a listed topic went from a full index.txt: the newest of the others takes its place
        return out

    @staticmethod
    def _mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    def _remember_seen(self, files: Mapping[str, TopicFile], index_sha: str | None, seen: Seen | None,
                       among: frozenset[str] | None = None) -> None:
        save_seen(self._files.state_dir / SEEN_FILE, (seen or Seen()).updated(
            {name: (tf.stat.st_mtime_ns, tf.location) for name, tf in files.items()}, index_sha, among))

    def _read_sha(self) -> tuple[list[RecentTopic], str | None]:
        """index.txt's lines as they are, and the sha1 of its bytes."""
        try:
            data = read_regular(self._files.recent_path, MAX_RECENT_BYTES)[0]
        except FileNotFoundError:
            return [], None
        except (OSError, NotRegularFile) as exc:  # a FIFO, a folder, too large: rebuilt from the topics
            self._files.warn_once(f"{INDEX_TXT}: {exc}; ignored (`memkit recent --rebuild` rewrites it)")
            return [], None
        return parse_recent(data.decode("utf-8", errors="replace")), hashlib.sha1(data).hexdigest()

    def rebuild(self, topics: Iterable[Topic]) -> list[RecentTopic]:
        """Regenerate index.txt from the topic files' dates (:meth:`Topic.updated`) and summaries."""
        with self._files.lock():
            # the files' own dates only (frontmatter, entries): file times mean nothing after a git checkout
            items = [RecentTopic(t.updated(), t.name, t.summary) for t in topics]
            self._write(items)
            recent, index_sha = self._read_sha()
            self._remember_seen({tf.name: tf for tf in self._files.topic_files()}, index_sha, None)
        return recent

    def touch(self, topic: str, summary: str, now: datetime) -> None:
        """Put ``topic`` at the top of index.txt; topics that vanished drop out. The caller holds
        the write lock (a topic was just written under it)."""
        items = [r for r in self._read_sha()[0] if r.topic != topic and self._files.is_topic(r.topic)]
        if self._files.is_topic(topic):
            items.insert(0, RecentTopic(now, topic, summary))  # first among topics of the same second
        self._write(items)

    def write(self, items: Sequence[RecentTopic]) -> None:
        """Write index.txt: one line per topic, newest first, at most ``index_max_entries``."""
        with self._files.lock():
            self._write(items)

    def _write(self, items: Sequence[RecentTopic], remember: bool = True) -> None:
        """:meth:`write`, the lock held (``remember=False``: the caller saves the seen record)."""
        text = render_recent(items, self._files.config.index_max_entries).encode("utf-8")
        path = self._files.recent_path
        try:
            target = self._files.write_target(path)
            try:
                old, st = read_regular(target, MAX_RECENT_BYTES)
            except FileNotFoundError:
                old, st = b"", None
            if old == text:
                return
            replace_checked(target, text, old, stamp_of(st) if st is not None else None)
            seen = load_seen(self._files.state_dir / SEEN_FILE) if remember else None
            if seen is not None:  # memkit's own write: not a change that came from elsewhere (a pull)
                seen.index = hashlib.sha1(text).hexdigest()
                save_seen(self._files.state_dir / SEEN_FILE, seen)
        except FileChanged as exc:
            raise FileChanged(f"{INDEX_TXT}: {exc}") from None
        except NotRegularFile as exc:
            raise MemkitError(f"{INDEX_TXT} {exc}; memkit will not write to it") from None
        except OSError as exc:
            raise describe_os_error(exc, INDEX_TXT) from exc

