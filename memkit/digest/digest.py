"""Digest: turn a conversation transcript into durable memory entries with an LLM.

Steps: parse the transcript (a conversation that continues one digested before: only its new
messages); ask the LLM for conclusions (decisions, discoveries, preferences, confirmed
observations; not small talk or common sense); drop exact and near duplicates of anything in the
whole vault, compared without kind, tags, dates and markers, and what archive.md says was
forgotten, edited away or done (a near duplicate that adds a date, a number, a name or a changed
state supersedes the entry instead); route each conclusion (LLM topic hint if it names an existing
topic, else embedding detection; unrouted ones form a new topic when there are at least
``min_conclusions_for_new_topic`` of them, else go to ``general``); ask the LLM which existing
entries each conclusion updates (only entries shown to it can be named: the search's best hits
and its topic's entries of its kind), keep of those only the entries it plainly bears on (at
most ``MAX_SUPERSEDES`` in all, else stop and ask), and move a replacement to the topic of the entry
it replaces unless the LLM named one; then, under the vault lock, archive superseded entries
first and write the topic files (a crash in between duplicates, never loses). Transcript hashes
are remembered in ``.memkit/digested.json``: the same transcript twice adds nothing.

The two questions put to the LLM, and the checks of its replies, are :mod:`memkit.digest.extract`;
the steps after them are modules of their own: the duplicates (:mod:`memkit.digest.duplicates`),
the routing (:mod:`memkit.digest.routing`), the outdated entries (:mod:`memkit.digest.supersede`),
the writes (:mod:`memkit.digest.writing`), the report and ``digested.json``
(:mod:`memkit.digest.report`) and a dry run's answers kept (:mod:`memkit.digest.replies`).

The transcript is data, never instructions: the model's only possible effect is proposing
entries and naming which of the *shown* similar entries they update (those move to archive.md,
nothing is deleted).
"""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from ..errors import LLMError, MemkitError, TooManySupersedes, TopicNotFound, TranscriptError
from ..formats.fields import FACTS_TOPIC, provenance_marker
from ..formats.names import slugify
from ..formats.session import NAME_RE as SESSION_NAME_RE
from ..formats.transcript import Message, parse_transcript, read_transcript, render
from ..llm import LLM
from ..search import Searcher, split_target
from ..split import maybe_split
from ..store import PROFILE_TOPIC, Store
from .about import mark_about, people_lines, set_facts
from .duplicates import Nearest, drop_duplicates
from .extract import MAX_CONCLUSIONS, Conclusion, extract_conclusions, find_updates
from .replies import Replies
from .report import DigestReport, digested_prefix, load_digested, messages_sha, remember, transcript_sha
from .routing import route
from .supersede import MAX_SUPERSEDES, check_supersedes, update_candidates
from .writing import keep_copy, write_conclusions

log = logging.getLogger("memkit")


__all__ = ["DigestReport", "InboxResult", "Conclusion", "MAX_CONCLUSIONS", "MAX_SUPERSEDES", "digest_file",
           "digest_messages", "process_inbox", "extract_conclusions", "session_source", "find_updates",
           "load_digested", "transcript_sha"]


def _profile(store: Store) -> list[str]:
    """The pinned profile's entries (what matters to the person); none when there is no profile."""
    try:
        return [e.body for e in store.topic(PROFILE_TOPIC).entries]
    except TopicNotFound:
        return []


def digest_file(searcher: Searcher, path: str | os.PathLike[str], llm: LLM | None, *, dry_run: bool = False,
                now: datetime | None = None, split: bool = True, force: bool = False,
                allow_many_supersedes: bool = False) -> DigestReport:
    """Digest one transcript file. See the module docstring.

    :param searcher: searches (and through its store, writes) the vault.
    :param path: the transcript (plain ``Speaker: text``, JSON messages, or JSONL).
    :param llm: the LLM (:func:`memkit.llm.client.make_llm`); ``None`` raises LLMError saying how to configure one.
    :param dry_run: compute and return the changes (``report.diff``) without writing anything.
    :param now: the time stamped on entries (default now).
    :param split: split topics that end up over ``topic_split_threshold_lines``.
    :param force: read the whole transcript again, even one digested before (what is in the
        vault already, or was forgotten, is still not added again).
    :param allow_many_supersedes: archive more than :data:`MAX_SUPERSEDES` entries as outdated
        (else the digest stops, writes nothing and raises :class:`~memkit.errors.TooManySupersedes`).
    """
    path = Path(path)
    messages, data = read_transcript(path)
    report = digest_messages(searcher, messages, llm, name=str(path), sha=transcript_sha(data), dry_run=dry_run,
                             now=now, split=split, force=force, source=(path.name, None),
                             allow_many_supersedes=allow_many_supersedes)
    if report.written and not dry_run and not report.already_digested:
        keep_copy(searcher.store, path, data, report)
    return report


def digest_text(searcher: Searcher, text: str, llm: LLM | None, *, name: str = "transcript",
                dry_run: bool = False, source: tuple[str, str | None] | None = None) -> DigestReport:
    """Digest a conversation given as text (any format :func:`digest_file` reads); ``name`` is how
    reports and errors call it. ``source`` (its name or id, its day) names the conversation in the
    entries' ``(from …)`` markers; by default a session's messages (``name``: its file, ``sessions/DAY-ID.md …``) are
    from that session, and a text with no file behind it gets no marker."""
    data = text.encode("utf-8", errors="surrogatepass")
    return digest_messages(searcher, parse_transcript(data, name), llm, name=name, sha=transcript_sha(data),
                           dry_run=dry_run, source=source if source is not None else session_source(name))


def digest_messages(searcher: Searcher, messages: Sequence[Message], llm: LLM | None, *, name: str = "transcript",
                    sha: str | None = None, dry_run: bool = False, now: datetime | None = None,
                    split: bool = True, force: bool = False,
                    source: tuple[str, str | None] | None = None,
                    allow_many_supersedes: bool = False) -> DigestReport:
    """Digest a conversation given as messages (see :func:`digest_file`). A conversation that
    continues one digested before (the same first messages) has only its new messages read, the
    last few before them shown as context. Each entry written ends with ``(from SOURCE DAY)``
    (:func:`memkit.formats.fields.provenance_marker`): ``source`` is (a transcript's file name or a
    session's id, the conversation's day: None for the digest's own); None: no marker."""
    if llm is None:
        raise LLMError("digest needs an LLM: set `llm:` in memkit.yaml (e.g. llm: {base_url: "
                       "\"http://127.0.0.1:11434/v1\", model: \"llama3.2\"}); see docs/settings-notes.md#llm")
    if not messages:
        raise TranscriptError(f"{name}: the transcript is empty; nothing to digest")
    store = searcher.store
    sha = sha or transcript_sha(render(list(messages)).encode("utf-8"))
    now = (now or datetime.now()).replace(microsecond=0)
    report = DigestReport(name, sha, dry_run=dry_run)
    report.count, report.prefix = len(messages), messages_sha(messages)
    digested = {} if force else load_digested(store)
    start = digested_prefix(digested, messages)
    if sha in digested or start == len(messages):
        report.already_digested = True
        return report
    earlier, messages = list(messages[:start]), list(messages[start:])
    report.read_from = start
    asked, llm = llm, Replies(store, sha, llm)  # a dry run's answers serve the real digest after it
    topics = [(t.name, t.summary) for t in store.topics()]
    people, listed = people_lines(store)
    conclusions, new_topic, skipped = extract_conclusions(llm, messages, topics, _profile(store),
                                                          earlier=earlier[-EARLIER_SHOWN:], people=listed)
    mark_about(conclusions, people)
    report.skipped += skipped
    report.redacted = _redact(store, conclusions, new_topic)
    nearest = Nearest(searcher)
    fresh = drop_duplicates(store, searcher, conclusions, report.skipped, nearest)
    _mark_source(fresh, source, now)
    existing = {name for name, _ in topics}
    named = {id(c) for c in fresh if _names_topic(store, c.topic_hint, existing)}  # by the LLM
    hint = _session_topic(store, name)
    for c in fresh:  # the LLM named no topic: the one the context detected for the session
        c.topic_hint = c.topic_hint or hint
    opened = route(store, searcher, fresh, new_topic, existing, nearest)
    _outdated(store, searcher, fresh, llm, nearest, named, report)
    _too_many(fresh, llm, name, report, allow_many_supersedes)
    write_conclusions(store, fresh, new_topic, report, now, dry_run, force, opened)
    if not report.already_digested:
        written = [c for c in fresh if any(c.text in line for _, line in report.written)]
        report.facts = set_facts(store, written, now, dry_run)
    if not dry_run and (report.written or report.superseded):
        # the next digest of this process (the watcher's pass over inbox/) checks its conclusions
        # against these entries at once, not up to a second later (what `memkit digest A B` does)
        searcher.changed()
    if dry_run:
        llm.keep()
    else:
        llm.drop()
        if not report.written and not report.already_digested:
            remember(store, report, now)  # nothing to write: still digested
        if split and not report.already_digested:
            report.split = _split_big(searcher, {t for t, _ in report.written}, asked)
    return report


def _outdated(store: Store, searcher: Searcher, fresh: list[Conclusion], llm: Replies, nearest: Nearest,
              named: set[int], report: DigestReport) -> None:
    """Ask the LLM which entries shown to it each conclusion makes outdated, keep those it plainly
    bears on (:mod:`memkit.digest.supersede`), and move a replacement to the topic of the entry it
    replaces unless the LLM named one (``named``: the conclusions' ``id()``)."""
    pairs, seen = update_candidates(store, searcher, fresh, nearest)
    if pairs:
        try:
            find_updates(llm, pairs)
        except LLMError as exc:  # keep the new entries; keep the old ones too (nothing is lost)
            log.warning("could not check which entries are outdated (%s); kept them all", exc)
    check_supersedes(searcher, fresh, seen, report.refused)
    for c in fresh:  # a replacement stays where the entry it replaces was, unless the LLM named a topic
        where = next((e.topic for e in c.supersedes if e.topic != FACTS_TOPIC), None)  # facts.md holds key: value
        if where is not None and id(c) not in named:
            c.topic = split_target(searcher, where, c.text)


def _too_many(fresh: list[Conclusion], llm: Replies, name: str, report: DigestReport, allowed: bool) -> None:
    """More than :data:`MAX_SUPERSEDES` entries outdated by one conversation, not ``allowed``: a dry
    run says so (``report.many_supersedes``), a digest keeps the LLM's answers and stops.
    :raises TooManySupersedes: naming each entry and what outdates it."""
    outdated = {e.hash: (e, c) for c in fresh for e in c.supersedes}
    if len(outdated) <= MAX_SUPERSEDES or allowed:
        return
    if not report.dry_run:
        llm.keep()  # digested again with --allow-many-supersedes, it does not pay the LLM twice
        said = "; ".join(f'{e.topic}: "{e.text}" (by "{c.text}")' for e, c in outdated.values())
        raise TooManySupersedes(
            f"{name}: the digest would archive {len(outdated)} entries as outdated, more than the "
            f"{MAX_SUPERSEDES} one conversation may: {said}. Nothing was written; if they are all "
            "outdated, digest it again with --allow-many-supersedes (Python: allow_many_supersedes=True)")
    report.many_supersedes = True


def _redact(store: Store, conclusions: list[Conclusion], new_topic: dict[str, Any] | None) -> int:
    """Replace the secrets in the conclusions (and a proposed topic's title and summary) by
    ``[redacted]`` before anything compares or writes them; returns how many."""
    apply, count = store.config.redact.apply, 0
    for c in conclusions:
        for name in ("text", "markers"):
            hidden = apply(getattr(c, name))
            setattr(c, name, hidden.text)
            count += hidden.count
    for key in ("title", "summary"):
        if new_topic and isinstance(new_topic.get(key), str):
            hidden = apply(new_topic[key])
            new_topic[key] = hidden.text
            count += hidden.count
    return count


def session_source(name: str) -> tuple[str, str | None] | None:
    """(ID, DAY) when ``name`` is a session's file (``sessions/2026-11-24-lisbon.md``,
    maybe followed by `` (messages 3-9)``), the name a session's digest is given; else None."""
    found = SESSION_NAME_RE.match(name.split(" (", 1)[0].replace("\\", "/").rsplit("/", 1)[-1])
    return (found.group(2), found.group(1)) if found else None


def _names_topic(store: Store, hint: str | None, existing: set[str]) -> bool:
    """Whether the LLM's topic hint names a topic of the vault (or one split since)."""
    slug = slugify(hint or "")
    return bool(slug) and (slug in existing or bool(store.subtopics(slug)))


def _session_topic(store: Store, name: str) -> str | None:
    """The topic ``memkit context --session ID`` detected for the session a digest's messages come
    from (``name``: its file), read from the context's state (``.memkit/sessions/<id>.json``,
    :meth:`Store.context_state_path`); None for a transcript or a session without one."""
    found = session_source(name)
    if found is None:
        return None
    path = store.context_state_path(found[0])
    try:
        topic = json.loads(path.read_bytes().decode("utf-8")).get("topic")
    except (OSError, ValueError, AttributeError):
        return None
    return topic if isinstance(topic, str) and topic.strip() else None


def _mark_source(conclusions: Sequence[Conclusion], source: tuple[str, str | None] | None, now: datetime) -> None:
    """End each conclusion's markers with where it came from: a session by its id and day, a file by
    its name and the digest's day."""
    if not source:
        return
    day = now.date().isoformat()  # the entries' date: a marker of that day leaves its day out (one date)
    marker = provenance_marker(source[0], source[1] or day, entry_day=day)
    for c in conclusions:
        c.markers = f"{c.markers} {marker}".strip()


EARLIER_SHOWN = 6  #: messages before a continued conversation's new part shown to the LLM as context


def _split_big(searcher: Searcher, names: set[str], llm: LLM | None) -> list[str]:
    done = []
    for name in sorted(names):
        try:
            if maybe_split(searcher, name, llm=llm) is not None:
                done.append(name)
        except MemkitError as exc:
            log.warning("could not split %s: %s", name, exc)
    return done


# ---- inbox -----------------------------------------------------------------------------------

@dataclass
class InboxResult:
    file: str
    report: DigestReport | None = None
    error: str | None = None


def process_inbox(searcher: Searcher, llm: LLM | None, *, now: datetime | None = None,
                  idle_minutes: float | None = None) -> list[InboxResult]:
    """Digest each transcript in inbox/ idle for ``session_timeout_minutes``; move it to inbox/done/
    on success; on failure leave it and write the error to ``inbox/<name>.error`` (retried when the
    transcript changes)."""
    store = searcher.store
    inbox = store.inbox_dir
    if not inbox.is_dir():
        return []
    idle = store.config.session_timeout_minutes if idle_minutes is None else idle_minutes
    now_ts = (now or datetime.now()).timestamp()
    results = []
    for path in store.inbox.waiting():
        try:
            before = path.stat()
        except OSError:
            continue
        if now_ts - before.st_mtime < idle * 60:
            continue
        error_file = path.with_name(path.name + ".error")
        if error_file.exists() and error_file.stat().st_mtime >= before.st_mtime:
            continue  # failed before and unchanged since
        try:
            report = digest_file(searcher, path, llm)
        except MemkitError as exc:
            store.inbox.error(path, f"{datetime.now().replace(microsecond=0).isoformat()} {exc}")
            results.append(InboxResult(path.name, error=str(exc)))
            continue
        if not store.inbox.done(path, before):  # replaced while it was digested: digest it again later
            continue
        results.append(InboxResult(path.name, report=report))
    return results
