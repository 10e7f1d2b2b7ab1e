"""The digest's writes: its conclusions into the topic files, the outdated entries into
archive.md first (a crash in between duplicates, never loses), all under the vault's lock, or their
diff for a dry run; and a transcript digested from outside the vault kept in ``inbox/done/``."""
from __future__ import annotations

import contextlib
import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

from ..base.fsutil import atomic_write, file_lock
from ..formats.archive import ArchiveItem, archive_line
from ..formats.fields import provenance, provenance_marker
from ..formats.lifecycle import core_text
from ..formats.topic import (
    Entry,
    Topic,
    append_line,
    format_entry,
    new_topic_text,
    remove_lines,
    text_hash,
    unified_diff,
)
from ..store import Store
from .extract import Conclusion
from .report import DigestReport, digested_path, load_digested, remember
from .routing import proposed_name, summary_of

log = logging.getLogger("memkit")

__all__ = ["keep_copy", "write_conclusions"]


#: name -> (the topic as read under the lock or None for a new one, its text before, its text after)
Texts = dict[str, tuple[Topic | None, str, str]]


def write_conclusions(store: Store, conclusions: list[Conclusion], new_topic: dict[str, Any] | None,
                      report: DigestReport, now: datetime, dry_run: bool, force: bool = False,
                      opened: str | None = None) -> None:
    """Under the vault's lock (none for a dry run): archive the entries the conclusions outdate,
    remove them from their files, append the conclusions to their topics (a new topic made from
    ``new_topic``'s title and summary), and record the transcript as digested; ``report`` says what
    was written where, and its ``diff`` what changed (all a dry run does)."""
    if not conclusions:
        return
    day = now.date().isoformat()
    by_topic: dict[str, list[Conclusion]] = {}
    for c in conclusions:
        by_topic.setdefault(c.topic or "general", []).append(c)
    with (contextlib.nullcontext() if dry_run else store.lock()):
        # another digest of it just finished (--force reads it again on purpose: what is there is skipped below)
        if not dry_run and not force and report.sha in load_digested(store):
            report.already_digested = True
            return
        _drop_written_meanwhile(store, by_topic, report)
        texts = _drafts(store, by_topic, new_topic or {}, opened, report, now)
        written_as = {c.text: format_entry(c.entry_text, c.kind, c.tags, day) for c in conclusions}
        archive_items = _remove_outdated(store, conclusions, texts, written_as, report)
        for name, items in by_topic.items():
            current, old, text = texts[name]
            for c in items:
                line = written_as[c.text]
                text = append_line(text, line)
                report.written.append((name, line))
                if c.why:
                    report.judged.append((line, c.why))
            texts[name] = (current, old, text)
        report.diff = _diff(store, texts, archive_items, now)
        if dry_run:
            return
        store.archive(archive_items, now)
        for name, (current, _old, text) in texts.items():
            store.write_topic(name, text, current=current, now=now)
        remember(store, report, now)


def _drop_written_meanwhile(store: Store, by_topic: dict[str, list[Conclusion]], report: DigestReport) -> None:
    """Leave out the exact duplicates written by another writer since we looked (a concurrent digest)."""
    present = {core_text(e.text) for e in store.entries()}
    for name in list(by_topic):
        keep = [c for c in by_topic[name] if core_text(c.text) not in present]
        report.skipped += [(c.text, "written meanwhile by another writer") for c in by_topic[name] if c not in keep]
        by_topic[name] = keep
        if not keep:
            del by_topic[name]


def _drafts(store: Store, by_topic: dict[str, list[Conclusion]], proposed: dict[str, Any], opened: str | None,
            report: DigestReport, now: datetime) -> Texts:
    """Each topic's text as read under the lock, or a new topic's header (its title and summary)."""
    texts: Texts = {}
    named = bool(proposed_name(proposed))  # the topic routing opened was named as proposed
    for name, items in by_topic.items():
        current = store.read_for_write(name)
        if current is None:  # the proposal's title and summary head only the topic it opened
            own = proposed if named and name == opened else {}
            title = str(own.get("title") or name.replace("-", " ").capitalize())
            summary = " ".join(str(own.get("summary") or "").split())[:120] if name not in ("general",) else ""
            if not summary and name != "general":  # a new topic always says what it holds
                summary = summary_of(items)
            old, text = "", new_topic_text(" ".join(title.split())[:80], summary, now)
            report.new_topics.append(name)
        else:
            old = text = current.raw
        texts[name] = (current, old, text)
    return texts


def _remove_outdated(store: Store, conclusions: list[Conclusion], texts: Texts, written_as: dict[str, str],
                     report: DigestReport) -> list[ArchiveItem]:
    """Remove the outdated entries from their topics' texts (bottom up, each once); what to archive."""
    archive_items: list[ArchiveItem] = []
    removals: dict[str, dict[str, tuple[Entry, str]]] = {}  # topic -> hash -> (entry, by)
    for c in conclusions:
        for e in c.supersedes:
            removals.setdefault(e.topic, {}).setdefault(e.hash, (e, c.text))
    for topic_name, wanted in removals.items():
        if topic_name not in texts:
            current = store.read_for_write(topic_name)
            if current is None:
                continue
            texts[topic_name] = (current, current.raw, current.raw)
        current, old, text = texts[topic_name]
        # the file as it is now, under the lock: remove by live line numbers, bottom up, each once
        live = [e for e in (current.entries if current else []) if e.hash in wanted]
        live = list({e.hash: e for e in live}.values())
        for e in sorted(live, key=lambda e: -e.line):
            text, _ = remove_lines(text, e.line, e.end_line)
            by = wanted[e.hash][1]
            by_id = text_hash(written_as[by][2:])[:8]  # history follows the id
            archive_items.append(ArchiveItem(e, ("- " if e.is_list else "") + e.text, f"superseded by {by_id}: {by}"))
            report.superseded.append((e.topic, e.text, by))
        texts[topic_name] = (current, old, text)
    return archive_items


def _diff(store: Store, texts: Texts, archive_items: list[ArchiveItem], now: datetime) -> str:
    """The unified diff of the topics' texts and of the lines archive.md gets."""
    diff = "".join(
        unified_diff(old if current is not None else None, new, store.topic_rel(name))
        for name, (current, old, new) in sorted(texts.items())
    )
    if archive_items:
        archive_path = store.archive_path
        old_lines = len(archive_path.read_text(encoding="utf-8", errors="replace").splitlines()) if archive_path.exists() else 0
        diff += (f"--- a/archive.md\n+++ b/archive.md\n"
                 f"@@ -{old_lines},0 +{old_lines + 1},{len(archive_items)} @@\n") + "".join(
            f"+{archive_line(item, now)}\n" for item in archive_items)
    return diff


def keep_copy(store: Store, path: Path, data: bytes, report: DigestReport) -> None:
    """Keep a transcript digested from outside the vault in ``inbox/done/`` (where ``memkit why``
    looks), under the name its entries' ``(from …)`` marker gives it (``NAME-2.txt``… when another
    transcript holds that name; the same bytes are not kept twice), its secrets redacted
    (docs/privacy.md), written atomically; ``.memkit/digested.json`` records where."""
    try:
        if store.is_inside(path.resolve()):
            return  # `memkit why` reads it where it lies (digested.json says where)
    except OSError:
        return
    marked = provenance(provenance_marker(path.name))
    name = marked[0] if marked else "transcript.txt"
    text = data.decode("utf-8", errors="replace")
    kept = store.config.redact.apply(text).text.encode("utf-8")
    done = store.inbox_dir / "done"
    stem, suffix = os.path.splitext(name)
    try:
        with store.lock():
            done.mkdir(parents=True, exist_ok=True)
            target, n = done / name, 2
            while target.exists() or target.is_symlink():
                if target.is_file() and not target.is_symlink() and target.read_bytes() == kept:
                    break
                target, n = done / f"{stem}-{n}{suffix}", n + 1
            else:
                atomic_write(target, kept)
        with file_lock(store.state_dir / "digested.lock"):
            digested = load_digested(store)
            if isinstance(digested.get(report.sha), dict):
                digested[report.sha]["path"] = store.rel(target)
                atomic_write(digested_path(store), json.dumps(digested, indent=1, ensure_ascii=False))
    except OSError as exc:  # the memories are written; only `memkit why` cannot show their conversation
        log.warning("could not keep a copy of %s in inbox/done/ (%s): `memkit why` cannot show it", path, exc)
