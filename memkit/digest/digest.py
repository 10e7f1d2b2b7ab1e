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

The two questions put to the LLM, and the checks of its replies, are :mod:`memkit.digest.extract`.

The transcript is data, never instructions: the model's only possible effect is proposing
entries and naming which of the *shown* similar entries they update (those move to archive.md,
nothing is deleted).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..base.fsutil import atomic_write, file_lock
from ..base.similarity import similarities
from ..errors import LLMError, MemkitError, NumericError, TooManySupersedes, TopicNotFound, TranscriptError
from ..formats.archive import ArchivedEntry, ArchiveItem, archive_line
from ..formats.fields import FACTS_TOPIC, provenance, provenance_marker
from ..formats.lifecycle import core_text, plain_text
from ..formats.names import slugify
from ..formats.session import NAME_RE as SESSION_NAME_RE
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
from ..formats.transcript import Message, parse_transcript, read_transcript, render
from ..formats.words import terms
from ..llm import LLM
from ..search import Hit, Searcher, detect_topic, is_confident, split_target
from ..split import maybe_split
from ..store import PROFILE_TOPIC, Store
from .about import mark_about, people_lines, set_facts
from .extract import MAX_CONCLUSIONS, Conclusion, extract_conclusions, find_updates

log = logging.getLogger("memkit")

NEAR_DUPLICATE_COSINE = 0.92  #: duplicate_similarity for a model not calibrated (Searcher.duplicate_similarity)
NEAR_DUPLICATE_JACCARD = 0.8
NEAR_DUPLICATE_CONTAINMENT = 1.0  #: share of the new text's words already in an entry (all: it says nothing new)
UPDATE_CANDIDATES = 3
#: the most entries one conversation may archive as outdated; beyond it the digest stops and asks
#: (``allow_many_supersedes``): a transcript that says "mark every memory outdated" to a model that obeys
MAX_SUPERSEDES = 3
#: the static model's cosine from which a conclusion bears on an entry it says is outdated, with no word
#: and no topic in common. Measured with memkit-m2v (issue 41.10): pairs where one replaces the other
#: 0.27-0.98 (7 of 10 at 0.51 or more: "Switched to a vegan diet" / "Is vegetarian" 0.515), unrelated
#: pairs -0.07-0.26 ("The user's AWS key is [redacted]" / "The user likes zebras" 0.228); the vault's
#: own similarity threshold counts where it is higher (another model)
SUPERSEDE_COSINE = 0.45
#: the judge's cosine (all-MiniLM-L6-v2, the search's second stage) from which a conclusion bears on an
#: entry, where the judge runs. Measured on the same pairs: replacing 0.35-0.96 ("Moved to Porto" /
#: "Lives in Lisbon, in Arroios" 0.525, which the static model puts at 0.35), unrelated -0.06-0.20
SUPERSEDE_JUDGE = 0.30
_DATE_TAIL = re.compile(r"\s*\((?:due |until )?\d{4}-\d{2}-\d{2}\)")

__all__ = ["DigestReport", "InboxResult", "Conclusion", "MAX_CONCLUSIONS", "digest_file", "digest_messages",
           "process_inbox", "extract_conclusions", "session_source", "find_updates", "load_digested", "transcript_sha", "shares_evidence"]


@dataclass
class DigestReport:
    """What a digest wrote where, what it skipped and why."""

    transcript: str
    sha: str
    written: list[tuple[str, str]] = field(default_factory=list)  #: (topic, entry line)
    skipped: list[tuple[str, str]] = field(default_factory=list)  #: (text, reason)
    superseded: list[tuple[str, str, str]] = field(default_factory=list)  #: (topic, old text, new text)
    #: (topic, old text, new text, why kept): entries the LLM called outdated that the new one does not bear on
    refused: list[tuple[str, str, str, str]] = field(default_factory=list)
    many_supersedes: bool = False  #: a dry run: more than MAX_SUPERSEDES; the real digest stops and asks
    judged: list[tuple[str, str]] = field(default_factory=list)  #: (entry line, why it matters that much)
    new_topics: list[str] = field(default_factory=list)
    split: list[str] = field(default_factory=list)  #: topics split afterwards
    already_digested: bool = False
    dry_run: bool = False
    diff: str = ""
    read_from: int = 0  #: messages skipped as digested before (a conversation that went on)
    count: int = 0  #: messages in the conversation
    prefix: str = ""  #: :func:`messages_sha` of them
    redacted: int = 0  #: secrets replaced by ``[redacted]`` in the conclusions (docs/privacy.md)
    facts: list[dict[str, Any]] = field(default_factory=list)  #: keyed facts set: {key, value, old, changed, id}

    def to_dict(self) -> dict[str, Any]:
        return {
            "transcript": self.transcript, "sha": self.sha, "already_digested": self.already_digested,
            "dry_run": self.dry_run, "read_from": self.read_from,
            "written": [{"topic": t, "line": line} for t, line in self.written],
            "skipped": [{"text": t, "reason": r} for t, r in self.skipped],
            "superseded": [{"topic": t, "old": o, "new": n} for t, o, n in self.superseded],
            "refused": [{"topic": t, "old": o, "new": n, "why": w} for t, o, n, w in self.refused],
            "judged": [{"line": line, "why": why} for line, why in self.judged],
            "new_topics": self.new_topics, "split": self.split, "diff": self.diff, "redacted": self.redacted,
            "facts": self.facts,
        }

    def summary(self) -> str:
        if self.already_digested:
            return f"{self.transcript}: already digested; nothing added"
        verb = "would write" if self.dry_run else "wrote"
        parts = [f"{self.transcript}: {verb} {len(self.written)} entr{'y' if len(self.written) == 1 else 'ies'}"]
        if self.read_from:
            parts[0] += f" from the {self.count - self.read_from} message(s) after the {self.read_from} digested before"
        if self.superseded:
            parts.append(f"archived {len(self.superseded)} outdated")
        if self.many_supersedes:
            parts.append(f"more than {MAX_SUPERSEDES} outdated: the digest stops and asks for --allow-many-supersedes")
        if self.refused:
            parts.append(f"kept {len(self.refused)} the LLM called outdated (not outdated by anything said here)")
        if self.skipped:
            parts.append(f"skipped {len(self.skipped)}")
        if self.new_topics:
            parts.append(f"new topic(s): {', '.join(self.new_topics)}")
        if self.redacted:
            parts.append(f"{self.redacted} secret{'' if self.redacted == 1 else 's'} redacted")
        if any(f["changed"] for f in self.facts):
            parts.append("set " + ", ".join(f"{f['key']}: {f['value']}" for f in self.facts if f["changed"]))
        return ", ".join(parts)


def _profile(store: Store) -> list[str]:
    """The pinned profile's entries (what matters to the person); none when there is no profile."""
    try:
        return [e.body for e in store.topic(PROFILE_TOPIC).entries]
    except TopicNotFound:
        return []


# ---- the digest ------------------------------------------------------------------------------

def transcript_sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digested_path(store: Store) -> Path:
    return store.state_dir / "digested.json"


def load_digested(store: Store) -> dict[str, Any]:
    """The transcripts digested so far: sha -> {transcript, at, added}."""
    try:
        data = json.loads(_digested_path(store).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def messages_sha(messages: Sequence[Message]) -> str:
    """A hash of the messages themselves (their roles and texts, whatever file format held them)."""
    data = json.dumps([[m.role, m.content] for m in messages], ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", errors="surrogatepass")).hexdigest()


def digested_prefix(digested: dict[str, Any], messages: Sequence[Message]) -> int:
    """How many of ``messages``, from the first, a digest already read: the conversation captured
    again once it went on (0: none; ``len(messages)``: all of it)."""
    sizes = sorted({int(r["messages"]) for r in digested.values() if isinstance(r, dict)
                    and isinstance(r.get("messages"), int) and 0 < r["messages"] <= len(messages)}, reverse=True)
    prefixes = {r.get("prefix") for r in digested.values() if isinstance(r, dict)}
    return next((n for n in sizes if messages_sha(messages[:n]) in prefixes), 0)


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
        _keep_copy(searcher.store, path, data, report)
    return report


def _keep_copy(store: Store, path: Path, data: bytes, report: DigestReport) -> None:
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
                atomic_write(_digested_path(store), json.dumps(digested, indent=1, ensure_ascii=False))
    except OSError as exc:  # the memories are written; only `memkit why` cannot show their conversation
        log.warning("could not keep a copy of %s in inbox/done/ (%s): `memkit why` cannot show it", path, exc)


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
    asked, llm = llm, _Replies(store, sha, llm)  # a dry run's answers serve the real digest after it
    topics = [(t.name, t.summary) for t in store.topics()]
    people, listed = people_lines(store)
    conclusions, new_topic, skipped = extract_conclusions(llm, messages, topics, _profile(store),
                                                          earlier=earlier[-EARLIER_SHOWN:], people=listed)
    mark_about(conclusions, people)
    report.skipped += skipped
    report.redacted = _redact(store, conclusions, new_topic)
    nearest = _Nearest(searcher)
    fresh = _drop_duplicates(searcher, conclusions, report, nearest)
    _mark_source(fresh, source, now)
    existing = {name for name, _ in topics}
    named = {id(c) for c in fresh if _names_topic(store, c.topic_hint, existing)}  # by the LLM
    hint = _session_topic(store, name)
    for c in fresh:  # the LLM named no topic: the one the context detected for the session
        c.topic_hint = c.topic_hint or hint
    _route(searcher, fresh, new_topic, existing, nearest)
    pairs, seen = _update_candidates(searcher, fresh, nearest)
    if pairs:
        try:
            find_updates(llm, pairs)
        except LLMError as exc:  # keep the new entries; keep the old ones too (nothing is lost)
            log.warning("could not check which entries are outdated (%s); kept them all", exc)
    _check_supersedes(searcher, fresh, seen, report)
    for c in fresh:  # a replacement stays where the entry it replaces was, unless the LLM named a topic
        where = next((e.topic for e in c.supersedes if e.topic != FACTS_TOPIC), None)  # facts.md holds key: value
        if where is not None and id(c) not in named:
            c.topic = split_target(searcher, where, c.text)
    outdated = {e.hash: (e, c) for c in fresh for e in c.supersedes}
    if len(outdated) > MAX_SUPERSEDES and not allow_many_supersedes:
        if not dry_run:
            llm.keep()  # digested again with --allow-many-supersedes, it does not pay the LLM twice
            said = "; ".join(f'{e.topic}: "{e.text}" (by "{c.text}")' for e, c in outdated.values())
            raise TooManySupersedes(
                f"{name}: the digest would archive {len(outdated)} entries as outdated, more than the "
                f"{MAX_SUPERSEDES} one conversation may: {said}. Nothing was written; if they are all "
                "outdated, digest it again with --allow-many-supersedes (Python: allow_many_supersedes=True)")
        report.many_supersedes = True
    _apply(store, fresh, new_topic, report, now, dry_run, force)
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
            _remember(store, report, now)  # nothing to write: still digested
        if split and not report.already_digested:
            report.split = _split_big(searcher, {t for t, _ in report.written}, asked)
    return report


class _Replies:
    """The LLM, with the answers a dry run got kept for the real digest of the same transcript by
    the same model (``.memkit/digest-cache/SHA.json``): ``digest --dry-run`` then ``digest`` pays
    the LLM once. An answer is found by the request it answered (the prompt holds the day, the
    topics and the entries shown), so a vault that changed in between is asked again. The answers
    are kept with their secrets redacted (docs/privacy.md); the real digest removes the file."""

    def __init__(self, store: Store, sha: str, llm: LLM) -> None:
        self.llm = llm
        self.path = store.state_dir / CACHE_DIR / f"{sha}.json"
        self.redact = store.config.redact.apply
        settings = getattr(llm, "settings", None)
        self.model = " ".join([type(llm).__name__] + [str(getattr(settings, a, None) or "")
                                                      for a in ("base_url", "model", "command")])
        self.replies: dict[str, str] = {}
        self.fresh: dict[str, str] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("model") == self.model and isinstance(data.get("replies"), dict):
                self.replies = {str(k): v for k, v in data["replies"].items() if isinstance(v, str)}
        except (OSError, ValueError):
            pass

    def chat(self, messages: list[dict[str, str]]) -> str:
        key = hashlib.sha256(json.dumps([self.model, messages], ensure_ascii=False, sort_keys=True)
                             .encode("utf-8", errors="surrogatepass")).hexdigest()
        if key in self.replies:
            return self.replies[key]
        reply = self.llm.chat(messages)
        self.fresh[key] = reply
        return reply

    def keep(self) -> None:
        """A dry run, or a digest that stopped to ask (TooManySupersedes): keep the answers for the
        digest after it."""
        if not self.fresh:
            return
        replies = {**self.replies, **{k: self.redact(v).text for k, v in self.fresh.items()}}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps({"model": self.model, "replies": replies}, ensure_ascii=False))
        except OSError as exc:
            log.warning("could not keep the dry run's answers (%s): the digest asks the LLM again", exc)

    def drop(self) -> None:
        """The real digest is done: its dry run's answers are no longer needed."""
        with contextlib.suppress(OSError):
            self.path.unlink()


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


CACHE_DIR = "digest-cache"  #: under .memkit/: a dry run's LLM answers, until the real digest (:class:`_Replies`)
NEAREST = 5  #: hits of a conclusion looked at (duplicates, updates, routing): searched once each
EARLIER_SHOWN = 6  #: messages before a continued conversation's new part shown to the LLM as context
SAME_TOPIC_CANDIDATES = 5  #: entries of a conclusion's topic and kind shown as what it may update


class _Nearest:
    """Each conclusion's nearest entries (hybrid, words first, no threshold), searched once for the
    duplicate check, the update candidates and the routing (nothing is written in between)."""

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self._hits: dict[str, list[Hit]] = {}

    def __call__(self, text: str) -> list[Hit]:
        if text not in self._hits:
            self._hits[text] = self.searcher.search(text, k=NEAREST, threshold=None, words_first=True)
        return self._hits[text]


def _drop_duplicates(searcher: Searcher, conclusions: list[Conclusion], report: DigestReport,
                     nearest: _Nearest) -> list[Conclusion]:
    """The conclusions that say something new: not what an entry says already, nor what was
    forgotten, edited away or done (archive.md), each compared by its core (text without markers,
    kind, tags and dates: :func:`memkit.formats.lifecycle.core_text`). A near duplicate that adds a
    date, a number, a name or a changed state (:func:`adds_to`) is kept, and supersedes the entry
    it repeats."""
    entries = searcher.store.entries()
    existing = {core_text(e.text): e for e in entries}
    by_id = {e.id: e for e in entries}
    gone = _gone(searcher.store.archived())
    gone_words = [(set(terms(key)), a) for key, a in gone.items()]
    seen: dict[str, Conclusion] = {}
    fresh = []
    for c in conclusions:
        key = core_text(c.text)
        if key in existing:
            report.skipped.append((c.text, f"already in {existing[key].topic}"))
            continue
        if key in seen:
            report.skipped.append((c.text, "repeated in this transcript"))
            continue
        left = gone.get(key) or _said_alike(c.text, gone_words)
        if left is not None:
            report.skipped.append((c.text, f"{_why_gone(left)} on {left.day} (archive.md): not added again"))
            continue
        near = _near_duplicate(nearest(c.text), c.text, searcher.duplicate_similarity())
        if near is not None:
            added = adds_to(c.text, near.text)
            old = by_id.get(near.id)
            if added is None or old is None:
                report.skipped.append((c.text, f"near duplicate of {near.id} in {near.topic}: {near.text}"))
                continue
            # the newer, more specific fact wins (the Lo-Bug rule): it supersedes the entry it repeats
            log.info("%r adds %s to %s: it supersedes it", c.text, added, near.id)
            c.supersedes.append(old)
        seen[key] = c
        fresh.append(c)
    return fresh


#: words that say a state changed: "planning a trip" -> "booked the trip", "likes jazz" -> "likes jazz, not rock"
STATE_WORDS = frozenset("""
    accepted approved arrived bought booked broke broken canceled cancelled changed closed completed confirmed
    declined decided delivered divorced done dropped ended engaged failed finished fired fixed graduated hired
    instead joined left longer married moved never no not nowadays opened paid passed postponed quit rejected
    rescheduled retired scheduled signed sold started stopped switched anymore finally
""".split())
_FIELD_MARKER_RE = re.compile(r"\((?:people|[a-z][a-z0-9-]{0,39}):[^()]*\)")  #: ``(people: …)``, ``(city: Porto)``
_TOKEN_RE = re.compile(r"[^\W_][\w'.:/-]*[^\W_]|[^\W_]")


def _tokens(text: str) -> list[str]:
    """The words of a memory's text without its markers, kind, tags and date (case kept)."""
    return _TOKEN_RE.findall(_FIELD_MARKER_RE.sub(" ", plain_text(text)))


def adds_to(text: str, entry: str) -> str | None:
    """What ``text``, a near duplicate of ``entry``, adds to it that makes it a newer fact rather
    than the same one reworded, or None: a number or date ("May 20 to 27"), a name (a capitalised
    word not first in the sentence: "moved to Porto"), or a word saying a state changed
    (:data:`STATE_WORDS`: "booked", "not", "stopped"). "Has a tree nut allergy" adds nothing to
    "Allergic to tree nuts"."""
    new, old = _tokens(text), _tokens(entry)
    had = {w.casefold() for w in old}
    had |= {w.rstrip("s") for w in had}
    fresh = [(i, w) for i, w in enumerate(new) if w.casefold() not in had and w.casefold().rstrip("s") not in had]
    numbers = [w for _, w in fresh if any(ch.isdigit() for ch in w)]
    if numbers:
        return "the number" + ("s " if len(numbers) > 1 else " ") + ", ".join(numbers)
    names = [w for i, w in fresh if i > 0 and w[:1].isupper() and w.casefold() not in STATE_WORDS]
    if names:
        return "the name" + ("s " if len(names) > 1 else " ") + ", ".join(names)
    states = [w for _, w in fresh if w.casefold() in STATE_WORDS]
    if states:
        return "a changed state (" + ", ".join(states) + ")"
    return None


def _gone(archived: Sequence[ArchivedEntry]) -> dict[str, ArchivedEntry]:
    """What left the topics on purpose (forgotten, edited, done, superseded, compacted: not what
    merely expired), by core text; the latest leaving of each."""
    return {core_text(a.text): a for a in archived if not a.reason.startswith("expired")}


def _why_gone(a: ArchivedEntry) -> str:
    if a.reason.startswith("edited"):
        return "edited away"
    return a.reason.split(":")[0].split(" by ")[0].split(" into ")[0]


def _said_alike(text: str, archived: Iterable[tuple[set[str], ArchivedEntry]]) -> ArchivedEntry | None:
    """An archived entry (given with its words) whose words nearly all coincide with the text's (a
    Jaccard of NEAR_DUPLICATE_JACCARD): the forgotten memory worded a little otherwise."""
    words = set(terms(core_text(text)))
    if len(words) < 3:
        return None
    for other, a in archived:
        if len(words & other) / max(1, len(words | other)) >= NEAR_DUPLICATE_JACCARD:
            return a
    return None


def near_duplicate_by_words(entry: str, text: str) -> bool:
    """Whether ``text`` says what ``entry`` says by their words alone: they mostly coincide (a
    Jaccard of NEAR_DUPLICATE_JACCARD), or the new text's words are all in the entry already
    (containment of NEAR_DUPLICATE_CONTAINMENT with a Jaccard of at least half that). A new text
    that adds words to an entry is not a duplicate (it may be an update)."""
    words = set(terms(core_text(text)))
    other = set(terms(core_text(entry)))
    common = len(words & other)
    jaccard = common / max(1, len(words | other))
    contained = common / max(1, len(words))  # the new text's words already there: nothing new
    return jaccard >= NEAR_DUPLICATE_JACCARD or \
        (contained >= NEAR_DUPLICATE_CONTAINMENT and jaccard >= NEAR_DUPLICATE_CONTAINMENT / 2 and common >= 3)


def _near_duplicate(found: list[Hit], text: str, cosine: float = NEAR_DUPLICATE_COSINE) -> Hit | None:
    """An existing entry that says the same (the hybrid search's best hits, judged on the words and
    the meaning): the static model's ``cosine`` (memkit.yaml's ``duplicate_similarity``, calibrated
    per model), or :func:`near_duplicate_by_words`."""
    for h in found[:3]:
        if h.cosine >= cosine or near_duplicate_by_words(h.text, text):
            return h
    return None


def _update_candidates(searcher: Searcher, conclusions: list[Conclusion],
                       nearest: _Nearest) -> tuple[list[tuple[Conclusion, list[Entry]]], dict[tuple[int, str], float]]:
    """The entries each conclusion may make outdated, once it is routed: the vault's own search's
    best hits for it (what ``memkit search`` answers: the closest entries that are more than
    noise), its nearest hits that are real evidence (:func:`memkit.search.route.is_confident`), and
    the latest entries of its topic of the same kind (or of no kind): "moved to Porto" is shown
    "Lives in Lisbon" though they share no word. Also returns the cosine the search saw for each
    (conclusion's ``id()``, entry id) it found confidently (:func:`_check_supersedes` reads it)."""
    threshold = searcher.threshold()
    entries = searcher.store.entries()
    by_id = {e.id: e for e in entries}
    by_topic: dict[str, list[Entry]] = {}
    for e in entries:
        by_topic.setdefault(e.topic, []).append(e)
    pairs = []
    seen: dict[tuple[int, str], float] = {}
    for c in conclusions:
        hits = searcher.search(c.text, k=UPDATE_CANDIDATES, weak=UPDATE_CANDIDATES)
        hits += [h for h in nearest(c.text) if is_confident(h, threshold)]
        for h in hits:
            if h.confident:
                seen[(id(c), h.id)] = max(h.cosine, seen.get((id(c), h.id), -1.0))
        shown = {h.id: by_id[h.id] for h in hits if h.id in by_id}
        shown = dict(list(shown.items())[:UPDATE_CANDIDATES])
        alike = [e for e in by_topic.get(c.topic or "", []) if e.is_list and e.kind in (c.kind, None)]
        for e in alike[::-1][:SAME_TOPIC_CANDIDATES]:
            shown.setdefault(e.id, e)
        if shown:
            pairs.append((c, list(shown.values())))
    return pairs, seen


def _bears_on(c: Conclusion, e: Entry, cosine: float | None, limit: float, judged: float | None) -> str | None:
    """Why conclusion ``c`` plainly bears on entry ``e`` (so it may make it outdated), or None:
    they share evidence (:func:`shares_evidence`, either way round), they are of one topic (not
    ``general``, which holds what belongs to none) and one kind (an entry without a kind is of
    any), or their meanings are close: the static model's ``cosine`` is ``limit`` or more, or the
    judge's (``judged``) :data:`SUPERSEDE_JUDGE` or more."""
    if shares_evidence(c.text, e.text) or shares_evidence(e.text, c.text):
        return "shared words"
    if c.topic and c.topic == e.topic and c.topic != "general" and e.kind in (None, c.kind):
        return "same topic and kind"
    if cosine is not None and cosine >= limit:
        return f"similar ({cosine:.2f})"
    if judged is not None and judged >= SUPERSEDE_JUDGE:
        return f"similar to the judge ({judged:.2f})"
    return None


def _judge_cosines(searcher: Searcher, text: str, entries: Sequence[Entry]) -> dict[str, float]:
    """The judge's cosine of ``text`` with each entry (by id); none where the judge does not run."""
    vectors = searcher.judge()
    if vectors is None:
        return {}
    try:
        rows = vectors.judge.embed([core_text(text)] + [core_text(e.text) for e in entries])
    except (MemkitError, OSError, RuntimeError, ValueError) as exc:
        log.warning("could not judge which entries a conclusion bears on (%s): the static model alone", exc)
        return {}
    return {e.id: float(rows[0] @ rows[i]) for i, e in enumerate(entries, 1)}


def _check_supersedes(searcher: Searcher, conclusions: list[Conclusion], seen: dict[tuple[int, str], float],
                      report: DigestReport) -> None:
    """Keep of each conclusion's supersedes only the entries it plainly bears on
    (:func:`_bears_on`): the transcript is data, and a model that obeys "mark every memory as
    outdated" names entries the conversation never touched. The others stay, named in
    ``report.refused``."""
    limit = max(SUPERSEDE_COSINE, searcher.threshold())
    for c in conclusions:
        if not c.supersedes:
            continue
        cosines: dict[str, float] = {}
        try:
            vectors = searcher.embed([core_text(c.text)] + [core_text(e.text) for e in c.supersedes])
            cosines = {e.id: float(vectors[0] @ vectors[i]) for i, e in enumerate(c.supersedes, 1)}
        except MemkitError:  # no model (words only): the search's cosines, the words and the topics
            pass
        judged = _judge_cosines(searcher, c.text, c.supersedes)
        kept = []
        for e in c.supersedes:
            found = [x for x in (cosines.get(e.id), seen.get((id(c), e.id))) if x is not None]
            if _bears_on(c, e, max(found) if found else None, limit, judged.get(e.id)) is not None:
                kept.append(e)
            else:
                report.refused.append((e.topic, e.text, c.text, "the LLM called it outdated, but the new entry "
                                       "shares no words, topic or meaning with it"))
                log.warning("kept %s (%s): the LLM called it outdated by %r, which does not bear on it",
                            e.id, e.topic, c.text)
        c.supersedes = kept


def _route(searcher: Searcher, conclusions: list[Conclusion], new_topic: dict[str, Any] | None,
           existing: set[str], nearest: _Nearest) -> None:
    """Where each conclusion goes, by the design's seed rules: the LLM's hint when it names a topic (a
    split parent: its closest subtopic); else the topic the vault's hits agree on (a detected topic);
    else, when at least ``min_conclusions_for_new_topic`` conclusions are left, a new topic: the one
    the LLM proposed for the conclusions that fit no existing topic (all of them), or, with no
    proposal, the largest group of them alike in words or meaning; else the topic of a close hit
    that shares a good part of its words (:func:`shares_evidence`); else ``general``. One shared
    word is no evidence: nothing goes to an unrelated existing topic on it."""
    store = searcher.store
    unrouted = []
    for c in conclusions:
        hint = slugify(c.topic_hint or "")
        if hint in existing:
            c.topic = hint
            continue
        if hint and store.subtopics(hint):  # the LLM named a topic that was split since: its closest part
            c.topic = split_target(searcher, hint, c.text)
            continue
        guess = detect_topic(searcher, c.text, words_first=True, hits=nearest(c.text))
        if guess is not None:
            c.topic = guess.topic
            continue
        unrouted.append(c)
    proposed = _proposed_name(new_topic)
    # the LLM, shown every topic, said these fit none and proposed one for them: it is the judge
    group = unrouted if proposed else _together(searcher, unrouted)
    if len(group) >= searcher.config.min_conclusions_for_new_topic:
        name = _new_topic_name(new_topic, group, existing)
        for c in group:
            c.topic = name
    threshold = searcher.threshold()
    for c in unrouted:
        if c.topic is not None:
            continue
        best = next((h for h in nearest(c.text) if shares_evidence(c.text, h.text) and is_confident(h, threshold)),
                    None)
        c.topic = best.topic if best is not None and best.topic in existing else "general"
    for c in conclusions:  # a topic that was split is never recreated: its closest part, at any depth
        c.topic = split_target(searcher, c.topic or "general", c.text)


def _content_words(text: str) -> set[str]:
    return {w for w in terms(_DATE_TAIL.sub("", text)) if not w.isdigit()}


def shares_evidence(text: str, entry: str) -> bool:
    """Whether an entry shares enough of a text's words to place the text beside it: two content
    words or more, and at least a third of the text's ("cetirizine for hay fever" beside the
    cetirizine entry; not "prefers" alone, which half the vault says)."""
    words = _content_words(text)
    shared = words & _content_words(entry)
    return len(shared) >= 2 and 3 * len(shared) >= len(words)


def _proposed_name(new_topic: dict[str, Any] | None) -> str:
    """The topic name the LLM proposed (``""`` for none, or for ``general``)."""
    name = slugify(str((new_topic or {}).get("name") or (new_topic or {}).get("title") or ""))
    return "" if name == "general" else name


def _together(searcher: Searcher, conclusions: list[Conclusion]) -> list[Conclusion]:
    """The largest group of conclusions that belong together: linked when they share a content word
    (four letters or more), or their meanings are close (cosine at the vault's threshold + 0.1)."""
    if len(conclusions) < 2:
        return list(conclusions)
    words = [{w for w in terms(_DATE_TAIL.sub("", c.text)) if len(w) >= 4 and w.isalpha()} for c in conclusions]
    try:
        vectors = searcher.embed([c.text for c in conclusions])
        close = similarities(vectors) >= searcher.threshold() + 0.1
    except NumericError as exc:
        log.warning("grouping the conclusions by their shared words only: %s", exc)
        close = None
    except MemkitError:  # no model: by shared words only
        close = None
    n = len(conclusions)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if words[i] & words[j] or (close is not None and bool(close[i, j])):
                parent[root(i)] = root(j)
    groups: dict[int, list[Conclusion]] = {}
    for i, c in enumerate(conclusions):
        groups.setdefault(root(i), []).append(c)
    return max(groups.values(), key=len)


def _summary_of(conclusions: Sequence[Conclusion]) -> str:
    """A few words saying what a new topic holds: its conclusions' most frequent content words."""
    counts: dict[str, int] = {}
    for c in conclusions:
        for w in terms(_DATE_TAIL.sub("", c.text)):
            if w.isalpha() and len(w) > 2:
                counts[w] = counts.get(w, 0) + 1
    return ", ".join(sorted(counts, key=lambda w: (-counts[w], w))[:4])


def _new_topic_name(proposed: dict[str, Any] | None, conclusions: list[Conclusion], existing: set[str]) -> str:
    base = _proposed_name(proposed)
    if not base:
        words: dict[str, int] = {}
        for c in conclusions:
            for w in terms(c.text):
                if w.isalpha() and len(w) > 3:
                    words[w] = words.get(w, 0) + 1
        base = slugify("-".join(sorted(words, key=lambda w: (-words[w], w))[:2])) or "notes"
    name, n = base, 2
    while name in existing:
        name, n = f"{base}-{n}", n + 1
    return name


def _apply(store: Store, conclusions: list[Conclusion], new_topic: dict[str, Any] | None,
           report: DigestReport, now: datetime, dry_run: bool, force: bool = False) -> None:
    if not conclusions:
        return
    day = now.date().isoformat()
    by_topic: dict[str, list[Conclusion]] = {}
    for c in conclusions:
        by_topic.setdefault(c.topic or "general", []).append(c)
    proposed = new_topic or {}
    with (contextlib.nullcontext() if dry_run else store.lock()):
        # another digest of it just finished (--force reads it again on purpose: what is there is skipped below)
        if not dry_run and not force and report.sha in load_digested(store):
            report.already_digested = True
            return
        # exact duplicates written by another writer since we looked (a concurrent digest)
        present = {core_text(e.text) for e in store.entries()}
        for name in list(by_topic):
            keep = [c for c in by_topic[name] if core_text(c.text) not in present]
            report.skipped += [(c.text, "written meanwhile by another writer") for c in by_topic[name] if c not in keep]
            by_topic[name] = keep
            if not keep:
                del by_topic[name]
        texts: dict[str, tuple[Topic | None, str, str]] = {}  # name -> (topic or None, old text, new text)
        archive_items: list[ArchiveItem] = []
        for name, items in by_topic.items():
            current = store.read_for_write(name)
            if current is None:
                title = str(proposed.get("title") or name.replace("-", " ").capitalize())
                summary = " ".join(str(proposed.get("summary") or "").split())[:120] if name not in ("general",) else ""
                if not summary and name != "general":  # a new topic always says what it holds
                    summary = _summary_of(items)
                old, text = "", new_topic_text(" ".join(title.split())[:80], summary, now)
                report.new_topics.append(name)
            else:
                old = text = current.raw
            texts[name] = (current, old, text)
        # outdated entries: archive first, then remove them from their files (bottom up)
        removals: dict[str, dict[str, tuple[Entry, str]]] = {}  # topic -> hash -> (entry, by)
        written_as = {c.text: format_entry(c.entry_text, c.kind, c.tags, day) for c in conclusions}
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
        for name, items in by_topic.items():
            current, old, text = texts[name]
            for c in items:
                line = written_as[c.text]
                text = append_line(text, line)
                report.written.append((name, line))
                if c.why:
                    report.judged.append((line, c.why))
            texts[name] = (current, old, text)
        report.diff = "".join(
            unified_diff(old if current is not None else None, new, store.topic_rel(name))
            for name, (current, old, new) in sorted(texts.items())
        )
        if archive_items:
            archive_path = store.archive_path
            old_lines = len(archive_path.read_text(encoding="utf-8", errors="replace").splitlines()) if archive_path.exists() else 0
            report.diff += (f"--- a/archive.md\n+++ b/archive.md\n"
                            f"@@ -{old_lines},0 +{old_lines + 1},{len(archive_items)} @@\n") + "".join(
                f"+{archive_line(item, now)}\n" for item in archive_items)
        if dry_run:
            return
        store.archive(archive_items, now)
        for name, (current, _old, text) in texts.items():
            store.write_topic(name, text, current=current, now=now)
        _remember(store, report, now)


def _remember(store: Store, report: DigestReport, now: datetime) -> None:
    """Record the transcript as digested: its hash, and its messages' count and hash (a longer
    capture of the same conversation is then read from where this one ended); a file inside the
    vault, its path (``memkit why`` reads it again)."""
    path = _digested_path(store)
    with file_lock(store.state_dir / "digested.lock"):
        data = load_digested(store)
        data[report.sha] = {"transcript": os.path.basename(report.transcript), "at": now.isoformat(),
                            "added": len(report.written), "messages": report.count, "prefix": report.prefix}
        where = Path(report.transcript).resolve()
        if where.is_file() and store.is_inside(where):  # where `memkit why` finds it again
            data[report.sha]["path"] = store.rel(where)
        atomic_write(path, json.dumps(data, indent=1, ensure_ascii=False))


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
