"""``memkit check``: every problem in a vault, with file and line, and the safe automatic fixes.

Problems a person must look at (``check`` exits 1 while any is left):

- ``conflict``: unresolved git merge markers in a topic or session file;
- ``session``: a session file a merge left inconsistent (a header key written twice, two stage
  blocks);
- ``frontmatter``: frontmatter that is not valid YAML (the body is still read);
- ``skipped``: a file in topics/ memkit does not read (not UTF-8, binary, too large, a FIFO, a
  symlink leading out of the vault or looping);
- ``parent-recreated``: a topic file beside the subtopics a split made of it;
- ``inbox-error``: a transcript the watcher could not digest (``inbox/NAME.error``);
- ``emptied``: an empty topic file (0 bytes) whose last commit in git holds entries (a write or a
  merge cut short; the pre-commit hook would record the topic as empty);
- ``control``: a control character (NUL, ESC, BEL…; :mod:`memkit.formats.plain`) in a topic file,
  a session file, people.md, archive.md or index.txt, with its line: invisible in an editor, it
  recolours or rings a terminal the file is shown in (memkit writes none).

Notes (listed, exit 0, so the pre-commit hook never blocks on them): ``inbox-waiting``, a
transcript the watcher digests once it is idle; ``inbox-undigested``, one waiting while no LLM is
configured (nothing will digest it until ``llm:`` is set in memkit.yaml).

Problems ``--fix`` repairs (reported, but they need no person):

- ``duplicate``: the same entry written twice in one topic (a merge that kept both sides): the
  extra copies move to archive.md;
- ``duplicate-key``: a frontmatter key written twice: one line is kept (the newest ``updated``);
- ``recent``: index.txt out of step with the topic files: rewritten;
- ``index``: another model's search index is left: removed; or the index file is damaged (SQLite's
  quick check fails): made anew from the topic files (an index behind the files is not a
  problem: every search refreshes it; ``--fix`` refreshes it too).
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime

from ..base.fsutil import read_regular
from ..errors import MemkitError
from ..formats.archive import ArchiveItem
from ..formats.links import LinkResolver, aliases_of, find_links
from ..formats.markdown import split_lines
from ..formats.people import PEOPLE_FILE
from ..formats.plain import control_lines
from ..formats.recent import render_recent
from ..formats.session import ARCHIVE_DIR, MAX_SESSION_BYTES, RAW_DIR, SESSIONS_DIR, is_session_filename
from ..formats.topic import (
    Entry,
    Topic,
    as_datetime,
    frontmatter_key,
    frontmatter_value,
    parse_topic_text,
    read_topic,
    remove_lines,
)
from ..search import Searcher
from ..store import INBOX_DIR, Store

__all__ = ["Finding", "CheckReport", "check_vault", "PERSON_KINDS"]

PERSON_KINDS = ("conflict", "frontmatter", "skipped", "parent-recreated", "inbox-error", "session", "control",
                "emptied")
_MAX_READ = 64 * 1024 * 1024  #: people.md, archive.md and index.txt are read up to this size
NOTE_KINDS = ("inbox-waiting", "inbox-undigested", "broken-link")


@dataclass(frozen=True)
class Finding:
    """One problem: its kind, where, and what to do."""

    kind: str
    file: str
    line: int | None
    message: str
    fixable: bool = False

    @property
    def needs_person(self) -> bool:
        return self.kind in PERSON_KINDS

    @property
    def note(self) -> bool:
        """Only for information (nothing to fix, no one needs to act)."""
        return self.kind in NOTE_KINDS


@dataclass
class CheckReport:
    """What ``check`` found (and, with ``fix``, what it fixed)."""

    problems: list[Finding] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)

    @property
    def needs_person(self) -> bool:
        return any(p.needs_person for p in self.problems)

    @property
    def clean(self) -> bool:
        """Nothing but notes."""
        return all(p.note for p in self.problems)

    def to_dict(self) -> dict[str, object]:
        return {"problems": [dict(asdict(p), needs_person=p.needs_person, note=p.note) for p in self.problems],
                "fixed": self.fixed, "needs_person": self.needs_person, "clean": self.clean}


def _committed_entries(store: Store, rel: str) -> int:
    """How many entries git's last commit (HEAD) of the topic file ``rel`` holds (0: none, not
    tracked, no git, or git cannot say)."""
    try:
        shown = subprocess.run(["git", "show", f"HEAD:./{rel}"], cwd=store.root, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    if shown.returncode != 0:
        return 0
    try:
        return len(parse_topic_text(shown.stdout.decode("utf-8", errors="replace"), "committed", rel).entries)
    except MemkitError:
        return 0


def check_vault(store: Store, index: Searcher | None = None, *, fix: bool = False) -> CheckReport:
    """Find every problem in the vault; with ``fix``, repair what is safe first and report the rest.

    :param index: the vault's searcher, whose index files are checked (None: not checked).
    """
    report = CheckReport()
    if fix:
        report.fixed = _fix(store, index)
    files, skipped = store.scan_topic_files()
    for rel, why in skipped:
        if not why.startswith("same file as"):
            report.problems.append(Finding("skipped", rel, None, f"{rel}: {why}; memkit does not read it"))
    topics: dict[str, Topic] = {}
    for tf in files:
        rel = store.rel(tf.path)
        try:
            topic = read_topic(tf.path, tf.name, rel)
        except MemkitError as exc:
            report.problems.append(Finding("skipped", rel, getattr(exc, "line", None), f"{exc}; memkit does not read it"))
            continue
        topics[tf.name] = topic
        if not topic.raw.strip():  # 0 bytes: what a write cut short leaves (a forget keeps the frontmatter)
            committed = _committed_entries(store, rel)
            if committed:
                report.problems.append(Finding(
                    "emptied", rel, None,
                    f"{rel} is empty, but git's last commit of it holds {committed} entries: a write or a merge "
                    f"cut short? `git checkout -- {rel}` brings them back; if you emptied it on purpose, "
                    "delete the file"))
        report.problems += _control_findings(rel, topic.raw)
        for problem in topic.problems:
            report.problems.append(Finding(problem.kind, rel, problem.line, problem.message,
                                           fixable=problem.kind == "duplicate-key"))
        for entry, first in _duplicates(topic):
            report.problems.append(Finding("duplicate", rel, entry.line,
                                           f"{rel} line {entry.line}: the same entry as line {first} "
                                           f"({_short(entry.text)}); `memkit check --fix` archives the copy",
                                           fixable=True))
    for name, topic in topics.items():
        children = [t for n, t in topics.items() if n.startswith(name + "-") and str(t.meta.get("parent", "")) == name]
        if children:
            rel = store.rel(topic.path)
            report.problems.append(Finding(
                "parent-recreated", rel, None,
                f"{rel} exists beside the subtopics a split made of it ({', '.join(sorted(t.name for t in children))}): "
                f"move its {len(topic.entries)} entries into them (or `memkit split {name}` again), then delete it"))
    report.problems += _link_findings(topics)
    report.problems += _session_findings(store)
    for path in (store.root / PEOPLE_FILE, store.archive_path, store.recent_path):
        if path.is_file() and not path.is_symlink():
            try:
                data, _ = read_regular(path, _MAX_READ)
            except (OSError, MemkitError):
                continue
            report.problems += _control_findings(store.rel(path), data.decode("utf-8", errors="replace"))
    report.problems += _inbox_findings(store)
    listed = render_recent(store.index_txt.read(write=False), store.config.index_max_entries)
    try:
        current = store.recent_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        current = ""
    if listed != current:
        report.problems.append(Finding("recent", "index.txt", None,
                                       "index.txt is out of step with the topic files; `memkit check --fix` rewrites it",
                                       fixable=True))
    if index is not None:
        report.problems += _index_findings(index)
    return report


def _inbox_findings(store: Store) -> list[Finding]:
    """The transcripts of inbox/ that failed (their ``.error`` files) and those that wait."""
    found: list[Finding] = []
    try:
        errors = sorted(store.inbox_dir.glob("*.error")) if store.inbox_dir.is_dir() else []
    except OSError:
        errors = []
    for path in errors:
        rel = f"{INBOX_DIR}/{path.name}"
        try:
            why = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[0]
        except (OSError, IndexError):
            why = "(unreadable)"
        found.append(Finding("inbox-error", rel, None,
                             f"{rel}: {why} (fix the cause; delete this file or touch the transcript to retry)"))
    errored = {p.name[:-len(".error")] for p in errors}
    for path in store.inbox.waiting():
        rel = f"{INBOX_DIR}/{path.name}"
        if path.name in errored:
            continue  # reported with its error above
        if store.config.llm:
            found.append(Finding("inbox-waiting", rel, None,
                                 f"{rel} waits for `memkit watch` to digest it once it is idle"))
        else:
            found.append(Finding("inbox-undigested", rel, None,
                                 f"{rel} waits in inbox/ but no LLM is configured, so nothing digests it: "
                                 "set `llm:` in memkit.yaml, then run `memkit watch` (or `memkit digest "
                                 f"{rel}`)"))
    return found


def _index_findings(index: Searcher) -> list[Finding]:
    """A damaged index, and the indexes of other models."""
    found: list[Finding] = []
    broken = index.index_damage()
    if broken:
        rel, why = broken
        found.append(Finding("index", rel, None,
                             f"{rel} is damaged ({why}); `memkit check --fix` (or the next search) "
                             "makes it anew from the topic files", fixable=True))
    # an index behind the files is not reported: every search brings it up to date by itself
    for other in index.other_indexes():
        found.append(Finding("index", other, None,
                             f"{other} is the index of another model; `memkit index` (or --fix) "
                             "removes it", fixable=True))
    return found


def _link_findings(topics: dict[str, Topic]) -> list[Finding]:
    """A ``[[link]]`` that names no topic (no file, alias or split of that name): reported, for a
    person to write the note or mend the link; nothing needs fixing for memkit to work."""
    aliases = {name: found for name, t in topics.items() if (found := aliases_of(t))}
    parents: dict[str, list[str]] = {}
    for name, t in topics.items():
        if isinstance(t.meta.get("parent"), str):
            parents.setdefault(str(t.meta["parent"]), []).append(name)
    resolver = LinkResolver(topics, aliases, {p: c for p, c in parents.items() if p not in topics})
    out = []
    for topic in topics.values():
        if "[[" not in topic.raw:
            continue
        for entry in topic.entries:
            for link in find_links(entry.text):
                if not resolver.resolve(link.target):
                    out.append(Finding("broken-link", entry.file, entry.line,
                                       f"{entry.file} line {entry.line}: [[{link.target}]] names no topic (no file, "
                                       "alias or split of that name): write that note or mend the link"))
    return out


def _session_findings(store: Store) -> list[Finding]:
    """Merge markers, header keys written twice and more than one stage block in the session
    files (sessions/, its archive/ and archive/raw/; a folder leading out of the vault is not read)."""
    out: list[Finding] = []
    folder = store.root / SESSIONS_DIR
    for sub in (folder, folder / ARCHIVE_DIR, folder / ARCHIVE_DIR / RAW_DIR):
        if not sub.is_dir() or not store.is_inside(sub):
            continue
        try:
            names = sorted(e.name for e in os.scandir(sub) if is_session_filename(e.name)
                           and e.is_file(follow_symlinks=False))
        except OSError:
            continue
        for name in names:
            rel = store.rel(sub / name)
            try:
                data, _ = read_regular(sub / name, MAX_SESSION_BYTES)
            except (OSError, MemkitError) as exc:
                out.append(Finding("skipped", rel, None, f"{rel}: cannot read: {exc}"))
                continue
            text = data.decode("utf-8", errors="replace")
            out += _session_file_findings(rel, text) + _control_findings(rel, text)
    return out


def _control_findings(rel: str, text: str) -> list[Finding]:
    """A control character in a file a person reads: each line holding one (a few at most)."""
    found = control_lines(text)
    out = [Finding("control", rel, number, f"{rel} line {number}: a control character {what}: invisible in an "
                   "editor, it can recolour or ring a terminal; delete it (memkit writes none)")
           for number, what in found[:5]]
    if len(found) > 5:
        out.append(Finding("control", rel, found[5][0], f"{rel}: {len(found) - 5} more lines with control characters"))
    return out


def _session_file_findings(rel: str, text: str) -> list[Finding]:
    out: list[Finding] = []
    if "<<<<<<< " in text or ">>>>>>> " in text:
        for number, line in enumerate(text.splitlines(), 1):
            if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line in ("<<<<<<<", ">>>>>>>"):
                out.append(Finding("conflict", rel, number,
                                   f"{rel} line {number}: unresolved merge conflict (<<<<<<< … >>>>>>>): keep the "
                                   f"lines you want, delete the marker lines, then `git add {rel}`"))
                break
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        seen: dict[str, int] = {}
        for number, line in enumerate(lines[1:], 2):
            if line.strip() == "---":
                break
            if line[:1] in (" ", "\t", "#") or ":" not in line or line.startswith(("<<<<<<<", "=======", ">>>>>>>")):
                continue
            key = line.split(":", 1)[0].strip()
            if key in seen:
                out.append(Finding("session", rel, number,
                                   f"{rel} line {number}: header key {key!r} written twice (line {seen[key]} too): "
                                   f"keep one (for the stage keys, those of the stage block kept)"))
            seen.setdefault(key, number)
    stages = [n for n, line in enumerate(lines, 1) if line.startswith("### summary · ") and "· of=stage" in line]
    if len(stages) > 1:
        out.append(Finding("session", rel, stages[1],
                           f"{rel} line {stages[1]}: a second stage block (the first at line {stages[0]}): keep "
                           f"one (the raw conversation is in {SESSIONS_DIR}/{ARCHIVE_DIR}/{RAW_DIR}/)"))
    return out


def _duplicates(topic: Topic) -> list[tuple[Entry, int]]:
    """(each later copy of a list item, the line of its first copy) within one topic: the same
    text exactly (a paragraph or a code block a person repeated is theirs to keep)."""
    first: dict[str, int] = {}
    out = []
    for e in topic.entries:
        if not e.is_list:
            continue
        if e.text in first:
            out.append((e, first[e.text]))
        else:
            first[e.text] = e.line
    return out


def _fix(store: Store, index: Searcher | None) -> list[str]:
    fixed: list[str] = []
    now = datetime.now().replace(microsecond=0)
    with store.lock():
        for tf in store.topic_files():
            try:
                topic = store.read_for_write(tf.name)
            except MemkitError:
                continue  # a conflict or bad frontmatter: for a person
            if topic is None:
                continue
            text = topic.raw
            copies = [e for e, _ in _duplicates(topic)]
            for e in sorted(copies, key=lambda e: -e.line):
                text, _ = remove_lines(text, e.line, e.end_line)
            tidied = _tidy_keys(text)
            if text == topic.raw and tidied == text:
                continue
            lines = topic.raw.split("\n")
            store.archive([ArchiveItem(e, " ".join("\n".join(lines[e.line - 1:e.end_line]).split()), "duplicate")
                           for e in copies], now)
            store.write_topic(topic.name, tidied, current=topic, now=now, touch_recent=False)
            rel = store.rel(topic.path)
            if copies:
                fixed.append(f"{rel}: {len(copies)} duplicate entr{'y' if len(copies) == 1 else 'ies'} moved to archive.md")
            if tidied != text:
                fixed.append(f"{rel}: duplicate frontmatter keys tidied")
    before = store.recent_path.read_text(encoding="utf-8", errors="replace") if store.recent_path.is_file() else ""
    store.index_txt.read()
    if store.recent_path.is_file() and store.recent_path.read_text(encoding="utf-8", errors="replace") != before:
        fixed.append("index.txt rewritten")
    if index is not None:
        broken = index.index_damage()
        if broken:
            index.remake_index(broken[1])
            fixed.append(f"search index made anew from the topic files (it was damaged: {broken[1]})")
        report = index.reindex()
        if report.changed_files:
            fixed.append(f"search index: {report.changed_files} file(s) re-indexed")
        removed = index.removed_indexes
        if removed:
            fixed.append(f"removed the index files of other models: {', '.join(removed)}")
    return fixed


def _tidy_keys(text: str) -> str:
    """Keep one line per frontmatter key (the newest ``updated``, the oldest ``created``, else the
    last, which is what YAML reads); every other line stays."""
    lines = split_lines(text)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return text
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n").rstrip() in ("---", "...")), None)
    if end is None:
        return text
    rows: dict[str, list[int]] = {}
    for i in range(1, end):
        key = frontmatter_key(lines[i])
        if key is not None:
            rows.setdefault(key, []).append(i)
    drop: set[int] = set()
    for key, where in rows.items():
        if len(where) < 2:
            continue
        # only keys written on one line each: a value continued on the next lines is for a person
        if any(i + 1 < end and lines[i + 1][:1] in (" ", "\t", "-") for i in where) or \
                any(lines[i].split(":", 1)[1].strip()[:1] in ("|", ">", "") for i in where):
            continue
        keep = where[-1]
        if key in ("updated", "created"):
            dated = [(as_datetime(frontmatter_value(lines[i])), i) for i in where]
            valid = [(d, i) for d, i in dated if d is not None]
            if valid:
                keep = (max if key == "updated" else min)(valid)[1]
        drop.update(i for i in where if i != keep)
    tidied = "".join(line for i, line in enumerate(lines) if i not in drop)
    if drop:  # never write frontmatter that reads differently (but for the duplicate's value)
        try:
            before = parse_topic_text(text, "t", "t")
            after = parse_topic_text(tidied, "t", "t")
        except MemkitError:
            return text
        if after.write_problem() is not None or before.meta != after.meta:
            return text
    return tidied


def _short(text: str, width: int = 50) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
