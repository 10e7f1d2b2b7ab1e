"""The library's entry point: :class:`Vault`, one object for everything memkit does with a vault.

``Vault`` sits on top of the layers and only delegates: the files to :class:`memkit.store.Store`,
the embedding sidecar to :class:`memkit.index.Index`, ranking to
:class:`memkit.search.Searcher`, and the flows to :mod:`memkit.digest`, :mod:`memkit.split` and
:mod:`memkit.context`. The model is loaded on first use and kept for the life of the object.
"""
from __future__ import annotations

import logging
import os
from datetime import date, datetime
from pathlib import Path
from typing import IO, Any, Literal, Mapping, Sequence, Union

from .config import Config, load_config, resolve_model
from .check import CheckReport, check_vault
from .context import Context, build_context, reset_session
from .proactive import Nudge, proactive
from .digest import DigestReport, InboxResult, digest_file, digest_messages, process_inbox, transcript_sha
from .embed import Embedder, LazyEmbedder, MissingModel
from .http_embed import HTTPEmbedder
from .errors import MemkitError, ModelError, VaultLocked
from .fsutil import VaultLock, file_lock
from .gitsync import GitSetup, git_setup
from .index import Index, IndexReport, Progress
from .llm import LLM, make_llm
from .recent import RecentTopic
from .search import Hit, Mode, Searcher, Threshold
from .route import closest_subtopic
from .split import SplitPlan, maybe_split, split_topic
from .store import Store, TopicFile, TopicInfo, find_vault
from .topic import Entry, Topic
from .upkeep import ChangeReport, FollowUp, HistoryStep, TidyReport, compact, distill, done, edit_entry, git_log, history, pending, stats, tidy
from .transcript import parse_transcript
from .capture import Captured
from .capture import capture as capture_conversation
from .gitsync import merge_files
from .names import is_topic_filename
from .upkeep import parse_day
from .recent import relative_time

log = logging.getLogger("memkit")

__all__ = ["Vault", "find_vault", "LLMChoice",
           # what the front ends (cli, watch, mcp_server) use besides Vault: they import only this
           # module, memkit.errors and memkit.limits (.importlinter)
           "Captured", "Index", "IndexReport", "Threshold", "is_topic_filename", "merge_files", "parse_day",
           "relative_time"]

#: which LLM a flow uses: ``"auto"`` the one memkit.yaml configures (none if it configures none),
#: None no LLM, or an LLM client
LLMChoice = Union[LLM, None, Literal["auto"]]


class Vault:
    """A memkit vault on disk: ``Vault("~/memory").search("what rice do I use")``.

    :param path: the vault folder (must exist; see :meth:`init` to create one).
    :param config: settings to use instead of reading memkit.yaml.
    :param model: the embedding model (a model2vec id or folder); default ``MEMKIT_MODEL``, then
        memkit.yaml's ``model``.
    :param embedder: an object with ``name``, ``dim`` and ``embed(texts)`` to use instead of a model.
    :param env: the environment ``MEMKIT_MODEL`` is read from (default ``os.environ``).
    """

    def __init__(self, path: str | os.PathLike[str], *, config: Config | None = None, model: str | None = None,
                 embedder: Embedder | None = None, env: Mapping[str, str] | None = None) -> None:
        self.store = Store(path, config if config is not None else load_config(Path(path).expanduser()))
        # The one place the library reads memkit's own environment: the README promises that
        # MEMKIT_MODEL wins over memkit.yaml for library users too, not only on the command line.
        env = os.environ if env is None else env
        #: the model id or folder in use (the injected embedder's name, if one was given)
        self.model = embedder.name if embedder is not None else resolve_model(model, self.config, env)
        self._embedder = embedder
        self._searcher: Searcher | None = None

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, profile: bool | None = None) -> "Vault":
        """Create a vault: memkit.yaml (commented defaults), topics/ with an empty pinned
        ``profile.md`` (the first layer of every context; ``profile=False`` leaves it out), inbox/,
        index.txt, .gitignore and .gitattributes.

        :raises VaultExists: if ``path`` already holds a vault.
        """
        return cls(Store.init(path, profile=profile).root)

    # ---- where things are ---------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        return self.store.root

    @property
    def config(self) -> Config:
        return self.store.config

    @property
    def topics_dir(self) -> Path:
        return self.store.topics_dir

    @property
    def state_dir(self) -> Path:
        return self.store.state_dir

    @property
    def inbox_dir(self) -> Path:
        return self.store.inbox_dir

    @property
    def recent_path(self) -> Path:
        """index.txt."""
        return self.store.recent_path

    def topic_path(self, name: str) -> Path:
        """The file of topic ``name`` (validated: it can never leave topics/)."""
        return self.store.topic_path(name)

    def rel(self, path: Path) -> str:
        """``path`` relative to the vault, with '/' separators."""
        return self.store.rel(path)

    def lock(self) -> VaultLock:
        """The vault's write lock (``with vault.lock():``), re-entrant within a process."""
        return self.store.lock()

    def ensure_topics_dir(self) -> Path:
        """Create topics/ if it is missing; returns it. :raises MemkitError: it cannot be created."""
        return self.store.ensure_topics_dir()

    # ---- reading -----------------------------------------------------------------------------------
    def topic_files(self) -> list[TopicFile]:
        """Every topic file, sorted by name (see :meth:`memkit.store.Store.topic_files`)."""
        return self.store.topic_files()

    def topics(self) -> list[TopicInfo]:
        """Every topic with its entry count, updated time and summary."""
        return self.store.topics()

    def topic(self, name: str) -> Topic:
        """One topic, parsed. :raises TopicNotFound: no such topic."""
        return self.store.topic(name)

    def entries(self, topic: str | None = None) -> list[Entry]:
        """Every entry of the vault, or of one topic."""
        return self.store.entries(topic)

    def find(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None) -> Entry:
        """The one entry whose id starts with ``ref`` or whose text contains ``match``.

        :raises EntryNotFound: when none or several match (the message lists them).
        """
        return self.store.find(ref, match=match, topic=topic)

    def recent(self) -> list[RecentTopic]:
        """The lines of index.txt (recent topics), newest first."""
        return self.store.recent()

    def rebuild_recent(self) -> list[RecentTopic]:
        """Regenerate index.txt from the topic files."""
        return self.store.rebuild_recent()

    def subtopics(self, parent: str) -> list[str]:
        """The topics a split made of ``parent`` (their frontmatter says ``parent: NAME``)."""
        return self.store.subtopics(parent)

    def check(self, *, fix: bool = False) -> CheckReport:
        """Every problem in the vault with file and line (see :mod:`memkit.check`); ``fix``
        repairs the safe ones first (duplicates to archive.md, duplicate keys, index.txt, the index)."""
        report = check_vault(self.store, self.searcher, fix=fix)
        if fix:
            self.changed()
        return report

    def git_setup(self) -> GitSetup:
        """Make the vault merge-friendly in git (see :mod:`memkit.gitsync`): memkit's lines in
        .gitattributes and .gitignore, and the merge driver registered in this clone."""
        return git_setup(self.store)

    # ---- memory that ages (see memkit.upkeep) ------------------------------------------------------
    def tidy(self, *, dry_run: bool = False, today: date | None = None) -> TidyReport:
        """Move expired entries (their ``(until DATE)`` or their kind's lifetime) to archive.md."""
        report = tidy(self.store, today=today, dry_run=dry_run)
        if not dry_run:
            self.changed()
        return report

    def edit(self, ref: str | None, text: str, *, match: str | None = None, topic: str | None = None) -> Entry:
        """Replace an entry where it stands; the old line goes to archive.md pointing at the new
        one (see :meth:`history`). Returns the new entry."""
        entry = edit_entry(self.store, self.store.find(ref, match=match, topic=topic), text)
        self._wrote(entry.topic)
        return entry

    def history(self, ref: str) -> list[HistoryStep]:
        """Every version of an entry, oldest first (``ref``: the id of any version)."""
        return history(self.store, ref)

    def git_history(self, step: HistoryStep) -> list[str]:
        """``git log`` lines of the commits that added or removed a version's text (when the vault
        is a git repository)."""
        return git_log(self.store, step.text, step.topic)

    def pending(self, *, today: date | None = None) -> list[FollowUp]:
        """The follow-ups (kind ``pending``), most urgent first."""
        return pending(self.store, today=today)

    def proactive(self, *, now: datetime | None = None, last_conversation: datetime | None = None,
                  llm: LLMChoice = "auto") -> Nudge:
        """Whether now is a good moment to bring up a follow-up, which, and how (see
        :func:`memkit.proactive.proactive`): quiet hours, the time since the last conversation,
        due and urgent follow-ups; with an LLM, a drafted opening line."""
        return proactive(self.store, self._llm(llm), now=now, last_conversation=last_conversation)

    def done(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None) -> Entry:
        """Archive a follow-up as resolved (``done``); returns it."""
        entry = done(self.store, self.store.find(ref, match=match, topic=topic))
        self._wrote(entry.topic)
        return entry

    def stats(self) -> dict[str, Any]:
        """Counts: entries per topic and kind, follow-ups, expired entries, archive, index, inbox."""
        return stats(self.store, self.searcher)

    def compact(self, topic: str, *, before: date, llm: LLMChoice = "auto", dry_run: bool = False) -> ChangeReport:
        """Condense ``topic``'s entries dated before ``before`` into fewer, denser ones (LLM)."""
        report = compact(self.store, self._llm(llm), topic, before=before, dry_run=dry_run)
        if not dry_run:
            self.changed()
        return report

    def distill(self, *, llm: LLMChoice = "auto", dry_run: bool = False) -> ChangeReport:
        """Rewrite the pinned profile from the vault's durable entries (LLM)."""
        report = distill(self.store, self._llm(llm), dry_run=dry_run)
        if not dry_run:
            self.changed()
        return report

    # ---- writing -----------------------------------------------------------------------------------
    def add(self, text: str, *, topic: str | None = None, kind: str | None = None, tags: Sequence[str] = (),
            when: datetime | None = None, split: bool = True) -> Entry:
        """Append ``- [kind] text #tags (date)`` to a topic (``general`` by default), creating it
        if needed; updates index.txt. A topic pushed past ``topic_split_threshold_lines`` is
        split at once, its parts named from their own words (``split=False`` leaves it); the entry
        returned is then the one in its subtopic. A topic that was split is not recreated: the
        text goes to the subtopic whose entries share most of its words, else ``TOPIC-general``
        (the entry returned says where).

        :raises MemkitError: empty text, a bad kind or tag; TopicNameError: a bad topic name.
        """
        if topic is not None:
            name = self.store.topic_path(topic).stem
            if not self.store.topic_path(name).exists():
                children = self.store.subtopics(name)
                if children:  # split before: never recreate the parent, go to the closest part
                    topic = closest_subtopic(self.searcher, name, children, text)
                    log.info("topic %s was split: added to %s", name, topic)
        entry, count = self.store.add(text, topic=topic, kind=kind, tags=tags, when=when)
        self._wrote(entry.topic)
        if split and count > self.config.topic_split_threshold_lines:
            plan = self._maybe_split(entry.topic)
            if plan is not None:  # the entry now lives in one of the subtopics: return where
                log.info("topic %s had %d entries (over topic_split_threshold_lines): split into %s",
                         entry.topic, count, ", ".join(plan.names))
                for part in plan.names:
                    moved = next((e for e in self.store.topic(part).entries if e.hash == entry.hash), None)
                    if moved is not None:
                        return moved
        return entry

    def forget(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None,
               reason: str = "forgotten") -> Entry:
        """Remove one entry (by id prefix or text) and keep it in archive.md; returns it (with the
        line it had). An entry written twice (a merge can leave that) loses its last occurrence."""
        (entry,) = self.store.forget(ref, match=match, topic=topic, reason=reason)
        self._wrote(entry.topic)
        return entry

    def forget_every(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None,
                     reason: str = "forgotten") -> list[Entry]:
        """Like :meth:`forget`, removing every occurrence of the entry; returns them."""
        entries = self.store.forget(ref, match=match, topic=topic, reason=reason, every=True)
        self._wrote(entries[0].topic)
        return entries

    def capture(self, *, path: str | os.PathLike[str] | None = None, stdin: bytes | IO[bytes] | None = None,
                session: str | None = None, now: bool = False, llm: LLMChoice = "auto") -> Captured:
        """Queue an assistant's conversation in inbox/ for the digest (see :mod:`memkit.capture`):
        a Claude Code hook payload or transcript, JSON messages or ``Speaker: text`` lines.

        :param path: a transcript file; :param stdin: bytes (or a binary stream) instead.
        :param session: the id the inbox file is named after (the same session replaces its file).
        :param now: digest it at once (needs an LLM) and move it to inbox/done/.
        :param llm: for ``now``: ``"auto"`` (memkit.yaml's), None (fails) or an LLM client.
        """
        digest = None
        if now:
            client = self._llm(llm)
            if client is None:
                raise MemkitError("--now needs an LLM: set `llm:` in memkit.yaml, or capture without --now "
                                  "and let `memkit watch` digest the inbox")

            def digest(target: Path) -> dict[str, Any]:
                return self.digest(target, llm=client).to_dict()

        return capture_conversation(self.store, path=path, stdin=stdin, session=session, digest=digest,
                                    llm_configured=bool(self.config.llm))

    def queue_transcript(self, name: str, data: bytes) -> Path:
        """Put a transcript in inbox/ (atomically; a file of that name is replaced) for
        :meth:`process_inbox` / ``memkit watch`` to digest once it is idle."""
        return self.store.queue_transcript(name, data)

    def inbox_done(self, path: Path, read: os.stat_result) -> bool:
        """Move a digested inbox transcript to inbox/done/ unless it changed since ``read``."""
        return self.store.inbox_done(path, read)

    def changed(self) -> None:
        """Say the files were just written (by this object, or by another one in this process,
        such as a second Vault that digested): the next search re-checks them at once instead
        of up to 1 s later."""
        if self._searcher is not None:
            self._searcher.changed()

    def _wrote(self, topic: str) -> None:
        """This object just wrote one topic file: index that file now (not the whole vault), so a
        search finds it at once and a long-running process (the MCP server) stays fast. Nothing
        is done before the first search (the model is not loaded for a write)."""
        if self._searcher is None:
            return
        try:
            self._searcher.refresh_files([self.store.topic_path(topic)])
        except MemkitError as exc:  # the write happened; the next search re-checks every file
            log.debug("indexing %s after the write failed: %s", topic, exc)
            self._searcher.changed()

    def _maybe_split(self, topic: str) -> SplitPlan | None:
        """Split ``topic`` if it grew past the threshold, naming the parts from their own words (an
        add never waits for an LLM); a failure is a warning, never a failure of the write that
        triggered it."""
        try:
            return maybe_split(self.searcher, topic, llm=None)
        except MemkitError as exc:
            log.warning("could not split %s: %s", topic, exc)
            return None

    # ---- index and search -----------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedding model: located at once, loaded on its first use (:class:`LazyEmbedder`),
        so what needs no vectors (lexical search, show, add…) never loads it."""
        if self._embedder is None:
            chosen: Embedder = LazyEmbedder(self.model)
            try:
                if self.config.embedder is not None and self.model is None:  # a server, unless a model is named
                    chosen = HTTPEmbedder(self.config.embedder)
                elif self.config.embedder is not None:
                    self.store.warn_once(f"both a model ({self.model}) and an embedder: are set; using the model")
                chosen.dim  # located now (a model's files read, a server asked once), loaded later
                self._embedder = chosen
            except ModelError as exc:  # what needs no vectors still works: words only, with a warning
                self.store.warn_once(f"{exc}; searching by words only until the model is found")
                self._embedder = MissingModel(self.model, str(exc))
        return self._embedder

    @property
    def searcher(self) -> Searcher:
        """The vault's index and ranker (loads the model on first use)."""
        if self._searcher is None:
            self._searcher = Searcher(self.store, Index(self.store, self.embedder))
        return self._searcher

    def open_index(self) -> Index:
        """A new :class:`memkit.index.Index` of this vault and model, with its own database
        connection: for a thread that refreshes while another searches this Vault (the watcher)."""
        return Index(self.store, self.embedder)

    def index(self, *, full: bool = False, progress: Progress | None = None) -> IndexReport:
        """Bring the embedding sidecar up to date with the topic files.

        :param full: parse and embed everything again.
        :param progress: called with (done, total) while embedding.

        The sidecars of other models are deleted once this model's is complete (derived data:
        switching back rebuilds one).
        """
        index = self.searcher.index
        report = index.refresh(full=full, progress=progress)
        index.prune_other_models()
        return report

    def search(self, query: str, *, k: int | None = None, threshold: Threshold = "auto", topic: str | None = None,
               kind: str | None = None, tag: str | None = None, since: str | date | None = None,
               mode: Mode = "hybrid", refresh: bool | None = None, weak: int = 3,
               min_importance: float | None = None) -> list[Hit]:
        """Hybrid lexical + vector search (see :meth:`memkit.search.Searcher.search`).

        :param query: what to look for.
        :param k: results at most (default ``max_memories_per_search``).
        :param threshold: ``"auto"`` (memkit.yaml or the model's calibrated value), a cosine, or None.
        :param topic: only this topic and its subtopics; :param kind: only this kind;
            :param tag: only this tag; :param since: only entries dated on or after this day.
        :param mode: ``hybrid``, ``vector`` or ``lexical``.
        :param refresh: check the files first: None at most once a second, True now, False never.
        :param weak: when nothing passes the threshold, up to this many of the closest entries that
            are more than noise, marked ``confident=False`` (0: none, an empty list).
        :param min_importance: only entries of at least this ``(importance X)`` (0..1; an entry
            without one counts as 0.5).
        """
        return self.searcher.search(query, k=k, threshold=threshold, topic=topic, kind=kind, tag=tag,
                                    since=since, mode=mode, refresh=refresh, weak=weak,
                                    min_importance=min_importance)

    # ---- the flows ----------------------------------------------------------------------------------
    def waiting_transcripts(self) -> list[Path]:
        """The transcripts in inbox/ waiting for a digest."""
        return self.store.waiting_transcripts()

    def llm(self) -> LLM | None:
        """The LLM configured under ``llm:`` in memkit.yaml, or None (see :mod:`memkit.llm`)."""
        return make_llm(self.config.llm)

    def _llm(self, choice: LLMChoice) -> LLM | None:
        return self.llm() if isinstance(choice, str) else choice

    def context(self, message: str, *, session: str | None = None, budget_tokens: int = 2000,
                now: datetime | None = None) -> Context:
        """The memory block for an assistant's system prompt, for the user's ``message``.

        :param message: the user's latest message (may be empty).
        :param session: a conversation id; memories accumulate across calls that share it.
        :param budget_tokens: the most the block may take (~4 characters a token).
        :param now: the current time (default: now).
        """
        return build_context(self.searcher, message, session=session, budget_tokens=budget_tokens, now=now)

    def reset_session(self, session: str) -> None:
        """Forget a context session's accumulated memories and topic."""
        reset_session(self.store, session)

    def digest(self, transcript: str | os.PathLike[str], *, llm: LLMChoice = "auto",
               dry_run: bool = False) -> DigestReport:
        """Digest a transcript file into memory entries (see :mod:`memkit.digest`).

        :param transcript: ``Speaker: text`` lines, a JSON list of ``{role, content}``, or JSONL.
        :param llm: ``"auto"``: the LLM configured in memkit.yaml; or an LLM client (None fails:
            a digest needs one).
        :param dry_run: only compute the change (``report.diff``).
        """
        try:
            return digest_file(self.searcher, transcript, self._llm(llm), dry_run=dry_run)
        finally:
            self.changed()

    def digest_text(self, text: str, *, name: str = "transcript", llm: LLMChoice = "auto",
                    dry_run: bool = False) -> DigestReport:
        """Digest a conversation given as text (any format :meth:`digest` reads); ``name`` is how
        reports and errors call it."""
        data = text.encode("utf-8", errors="surrogatepass")
        messages = parse_transcript(data, name)
        try:
            return digest_messages(self.searcher, messages, self._llm(llm), name=name,
                                   sha=transcript_sha(data), dry_run=dry_run)
        finally:
            self.changed()

    def process_inbox(self, *, llm: LLMChoice = "auto") -> list[InboxResult]:
        """Digest the transcripts in inbox/ that have been idle for ``session_timeout_minutes``
        (``llm`` as for :meth:`digest`)."""
        try:
            return process_inbox(self.searcher, self._llm(llm))
        finally:
            self.changed()

    def split(self, topic: str, *, llm: LLMChoice = "auto", dry_run: bool = False, min_part: int = 5,
              max_parts: int | None = None) -> SplitPlan:
        """Split ``topic`` into subtopics (see :mod:`memkit.split`); ``dry_run`` only plans it
        (:meth:`split_diff` shows it).

        :param llm: names the parts: ``"auto"`` the LLM configured in memkit.yaml, None none (the
            parts are named from their own words), or an LLM client.
        """
        plan = split_topic(self.searcher, topic, llm=self._llm(llm), dry_run=dry_run, min_part=min_part,
                           max_parts=max_parts)
        self.changed()
        return plan

    def split_diff(self, plan: SplitPlan) -> str:
        """A unified diff of every file ``plan`` writes or removes (index.txt included), as
        ``memkit split --dry-run`` prints it."""
        return plan.diff(self.store)

    # ---- for long-running front ends (memkit serve) ---------------------------------------------------
    def index_status(self) -> dict[str, Any]:
        """The index as ``memkit stats`` shows it: model, dim, file, exists and ``stale_files``
        (topic files changed since the last refresh). Loads no model."""
        return self.searcher.index_state()

    def write_locked(self) -> bool:
        """Whether a writer (a thread of this process or another process) holds the vault's write
        lock right now; never waits. False when the lock cannot be looked at (a read-only vault)."""
        try:
            with file_lock(self.store.lock().path, timeout=0):
                return False
        except VaultLocked:
            return True
        except MemkitError:
            return False
