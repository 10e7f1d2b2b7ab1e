"""The library's entry point: :class:`Vault`, one object for everything memkit does with a vault.

``Vault`` composes and delegates: the files to :class:`memkit.store.Store`, the embedder chosen
by :func:`memkit.embeddings.make_embedder`, the index and ranking to :class:`memkit.search.Searcher`,
the conversations to ``vault.conversations`` (:class:`memkit.sessions.Conversations`), the servers'
hooks to ``vault.frontend_internals`` (:class:`memkit.search.Serving`, not library API), and the
flows to memkit.split (an add), memkit.digest, memkit.upkeep and memkit.context. The model is
loaded on first use and kept for the life of the object. The 0.1 names of what moved are in :mod:`memkit.vault_aliases`.
"""
from __future__ import annotations

import importlib
import os
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Mapping, Sequence

from .config import Config, load_config, resolve_model
from .embeddings import Embedder, complete, make_embedder
from .errors import MemkitError
from .formats.lifecycle import parse_day, with_dates
from .formats.names import is_topic_filename
from .formats.recent import RecentTopic, relative_time
from .formats.topic import Entry, Topic
from .index import Index, IndexReport, Progress
from .llm import LLMChoice
from .search import Hit, Mode, Searcher, Serving, Threshold
from .store import Store, TopicInfo, find_vault
from .vault_aliases import VaultAliases
from .vault_facts import VaultFacts
from .vault_links import VaultLinks

if TYPE_CHECKING:  # the services: each is imported by the methods that use it (see _LAZY below)
    from .context import Context, Nudge
    from .digest import Captured, DigestReport, InboxResult
    from .formats.session import PruneReport, Session, SessionInfo, SessionMessage
    from .git import GitSetup, merge_files
    from .llm import LLM
    from .sessions import Conversations, Imported, SessionHit, Window
    from .split import SplitPlan
    from .upkeep import ChangeReport, CheckReport, FollowUp, HistoryStep, TidyReport, UpkeepReport

__all__ = ["Vault", "find_vault", "LLMChoice",
           # what the front ends (cli, watch, mcp_server) use besides Vault: they import only this
           # module, memkit.errors and memkit.base.limits (.importlinter)
           "Captured", "Index", "IndexReport", "Threshold", "is_topic_filename", "merge_files", "parse_day",
           "relative_time", "Session", "SessionInfo", "SessionMessage", "SessionHit", "Window", "PruneReport",
           "Imported"]

#: the names of ``__all__`` that come from a service, imported when first asked for: importing this
#: module loads no service (issue 16.5: `memkit search` loads no digest, LLM client or sessions)
_LAZY = {"Captured": ".digest", "merge_files": ".git", "Session": ".formats.session",
         "SessionInfo": ".formats.session", "SessionMessage": ".formats.session", "PruneReport": ".formats.session",
         "SessionHit": ".sessions", "Window": ".sessions", "Imported": ".sessions"}

def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __package__), name)
    globals()[name] = value
    return value

class Vault(VaultAliases, VaultFacts, VaultLinks):
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
        # The one place the library reads memkit's own environment: the docs promise that
        # MEMKIT_MODEL wins over memkit.yaml for library users too, not only on the command line.
        env = os.environ if env is None else env
        #: the model id or folder in use (the injected embedder's name, if one was given)
        self.model = embedder.name if embedder is not None else resolve_model(model, self.config, env)
        self._embedder = complete(embedder) if embedder is not None else None
        self._searcher: Searcher | None = None
        self._conversations: Conversations | None = None
        self._serving: Serving | None = None

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, profile: bool = True) -> "Vault":
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

    def ensure_topics_dir(self) -> Path:
        """Create topics/ if it is missing; returns it. :raises MemkitError: it cannot be created."""
        return self.store.ensure_topics_dir()

    # ---- reading -----------------------------------------------------------------------------------
    def topics(self) -> list[TopicInfo]:
        """Every topic with its entry count, updated time and summary."""
        return self.store.topics()

    def topic(self, name: str) -> Topic:
        """One topic, parsed. :raises TopicNotFound: no such topic."""
        return self.store.topic(name)

    def show_topic(self, name: str) -> dict[str, Any]:
        """A topic as the front ends show it (name, title, summary, file, entries, ``split_into``); one
        split away: ``name`` and ``split_into`` only. :raises TopicNotFound: neither."""
        return self.store.show_topic(name)

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
        return self.store.index_txt.read()

    def rebuild_recent(self) -> list[RecentTopic]:
        """Regenerate index.txt from the topic files."""
        return self.store.index_txt.rebuild(self.store.iter_topics())

    def subtopics(self, parent: str) -> list[str]:
        """The topics a split made of ``parent`` (their frontmatter says ``parent: NAME``)."""
        return self.store.subtopics(parent)

    def check(self, *, fix: bool = False) -> CheckReport:
        """Every problem in the vault with file and line (see :mod:`memkit.upkeep.check`); ``fix``
        repairs the safe ones first (duplicates to archive.md, duplicate keys, index.txt, the index)."""
        from .upkeep import check_vault
        report = check_vault(self.store, self.searcher, fix=fix)
        if fix:
            self.changed()
        return report

    def git_setup(self) -> GitSetup:
        """Make the vault merge-friendly in git (see :mod:`memkit.git.sync`): memkit's lines in
        .gitattributes and .gitignore, and the merge driver registered in this clone."""
        from .git import git_setup
        return git_setup(self.store)

    # ---- memory that ages (see memkit.upkeep.upkeep) ------------------------------------------------------
    def tidy(self, *, dry_run: bool = False, today: date | None = None) -> TidyReport:
        """Move expired entries (their ``(until DATE)`` or their kind's lifetime) to archive.md."""
        from .upkeep import tidy
        report = tidy(self.store, today=today, dry_run=dry_run)
        if not dry_run:
            self.changed()
        return report

    def edit(self, ref: str | None, text: str, *, match: str | None = None, topic: str | None = None) -> Entry:
        """Replace an entry where it stands; the old line goes to archive.md pointing at the new
        one (see :meth:`history`). Returns the new entry."""
        from .upkeep import edit_entry
        entry = edit_entry(self.store, self.store.find(ref, match=match, topic=topic), text)
        self._wrote(entry.topic)
        return entry

    def history(self, ref: str) -> list[HistoryStep]:
        """Every version of an entry, oldest first (``ref``: the id of any version)."""
        from .upkeep import history
        return history(self.store, ref)

    def git_history(self, step: HistoryStep) -> list[str]:
        """``git log`` lines of the commits that added or removed a version's text (when the vault
        is a git repository)."""
        from .upkeep import git_log
        return git_log(self.store, step.text, step.topic)

    def pending(self, *, today: date | None = None) -> list[FollowUp]:
        """The follow-ups (kind ``pending``), most urgent first."""
        from .upkeep import pending
        return pending(self.store, today=today)

    def proactive(self, *, now: datetime | None = None, last_conversation: datetime | None = None,
                  llm: LLMChoice = "auto") -> Nudge:
        """Whether now is a good moment to bring up a follow-up, which, and how (see
        :func:`memkit.context.nudge.proactive`): quiet hours, the time since the last conversation,
        due and urgent follow-ups; with an LLM, a drafted opening line."""
        from .context import proactive
        return proactive(self.store, self._llm(llm), now=now, last_conversation=last_conversation)

    def done(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None) -> Entry:
        """Archive a follow-up as resolved (``done``); returns it."""
        from .upkeep import done
        entry = done(self.store, self.store.find(ref, match=match, topic=topic))
        self._wrote(entry.topic)
        return entry

    def stats(self) -> dict[str, Any]:
        """Counts: entries per topic and kind, follow-ups, expired entries, archive, index, inbox."""
        from .upkeep import stats
        return stats(self.store, self.searcher)

    def compact(self, topic: str, *, before: date, llm: LLMChoice = "auto", dry_run: bool = False) -> ChangeReport:
        """Condense ``topic``'s entries dated before ``before`` into fewer, denser ones (LLM)."""
        from .upkeep import compact
        report = compact(self.store, self._llm(llm), topic, before=before, dry_run=dry_run)
        if not dry_run:
            self.changed()
        return report

    def distill(self, *, llm: LLMChoice = "auto", dry_run: bool = False, proposed: bool = False) -> ChangeReport:
        """Rewrite the pinned profile from the vault's durable entries (LLM).

        :param proposed: write the rewrite `memkit upkeep` proposed instead (as reviewed: no LLM
            call; the proposal goes once written).
        """
        from .upkeep import apply_proposal, distill
        report = apply_proposal(self.store, dry_run=dry_run) if proposed else \
            distill(self.store, self._llm(llm), dry_run=dry_run)
        if not dry_run:
            self.changed()
        return report

    def upkeep(self, *, now: datetime | None = None, llm: LLMChoice = "auto") -> UpkeepReport:
        """Run every scheduled job once: expiry tidy, sessions digested every
        ``digest_every_messages``, conversations aged (summary, core) and pruned, the profile's
        re-distillation when due (see :mod:`memkit.upkeep.schedule`)."""
        from .upkeep import run_upkeep
        client = self._llm(llm)
        report = run_upkeep(self.store, client, now=now,
                            digest=lambda text, name: self.digest_text(text, name=name, llm=client))
        if any(j.changed for j in report.jobs):
            self.changed()
        return report

    def upkeep_due(self, now: datetime | None = None) -> bool:
        """Whether the daily upkeep is due (not run today, and ``upkeep_hour`` has come)."""
        from .upkeep import upkeep_due
        return upkeep_due(self.store, now or datetime.now())

    # ---- writing -----------------------------------------------------------------------------------
    def add(self, text: str, *, topic: str | None = None, kind: str | None = None, tags: Sequence[str] = (),
            due: date | None = None, until: date | None = None, when: datetime | None = None,
            split: bool = True, allow_duplicate: bool = False) -> Entry:
        """Append ``- [kind] text #tags (date)`` to a topic (``general`` by default), creating it
        if needed; updates index.txt. A topic pushed past ``topic_split_threshold_lines`` is
        split at once, its parts named from their own words (``split=False`` leaves it); the entry
        returned is then the one in its subtopic. A topic that was split is not recreated: the
        text goes to the subtopic whose entries share most of its words, else ``TOPIC-general``
        (the entry returned says where; see :mod:`memkit.split.adding`).

        ``due``: a follow-up due that day (``(due DATE)``, kind ``pending`` unless one is given);
        ``until``: the memory expires after that day (``(until DATE)``; not in the past). The topic's
        entry of the same text (its date aside) is returned unwritten (``.duplicate``) unless ``allow_duplicate``.

        :raises MemkitError: empty text, a bad kind or tag, ``until`` in the past; TopicNameError: a
            bad topic name.
        """
        from .split import add_entry
        text, kind = with_dates(text, kind, due=due, until=until)
        return add_entry(self.store, lambda: self.searcher, text, topic=topic, kind=kind, tags=tags, when=when,
                         split=split, allow_duplicate=allow_duplicate, wrote=self._wrote)

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
                session: str | None = None, now: bool = False, llm: LLMChoice = "auto",
                save: bool = False) -> Captured:
        """Queue an assistant's conversation in inbox/ for the digest (see :mod:`memkit.digest.captured`):
        a Claude Code hook payload or transcript, JSON messages or ``Speaker: text`` lines.

        :param path: a transcript file; :param stdin: bytes (or a binary stream) instead.
        :param session: the id the inbox file is named after (the same session replaces its file).
        :param now: digest it at once (needs an LLM) and move it to inbox/done/.
        :param llm: for ``now``: ``"auto"`` (memkit.yaml's), None (fails) or an LLM client.
        :param save: also store the conversation as a session named after the capture's session id
            (:meth:`memkit.sessions.Conversations.save_capture`): capturing it again appends only
            the new messages.
        """
        from .digest import capture as capture_conversation
        client = self._llm(llm) if now else None
        if now and client is None:
            raise MemkitError("--now needs an LLM: set `llm:` in memkit.yaml, or capture without --now "
                              "and let `memkit watch` digest the inbox")
        result = capture_conversation(self.store, path=path, stdin=stdin, session=session,
                                      digest=(lambda target: self.digest(target, llm=client).to_dict()) if now else None,
                                      llm_configured=bool(self.config.llm))
        if save:
            result.saved = self.conversations.save_capture(result).to_dict()
        return result

    def changed(self) -> None:
        """Say the files were just written (by this object, or by another one in this process,
        such as a second Vault that digested): the next search re-checks them at once instead
        of up to 1 s later."""
        if self._searcher is not None:
            self._searcher.changed()

    def _wrote(self, topic: str, path: Path | None = None, parsed: Topic | None = None) -> None:
        """This object just wrote one topic file (``path``, when known): index that file now (not
        the whole vault), so a search finds it at once and a long-running process (the MCP server)
        stays fast. Nothing is done before the first search (the model is not loaded for a write)."""
        if self._searcher is not None:
            self._searcher.wrote(path if path is not None else self.store.topic_path(topic), parsed)

    # ---- conversation sessions: vault.conversations (memkit.sessions.Conversations) -------------------
    @property
    def conversations(self) -> Conversations:
        """The vault's conversation sessions (``sessions/``) and their verbs: ``new``, ``append``,
        ``list``, ``show``, ``window``, ``search``, ``digest``, ``export``, ``import_``, ``delete``,
        ``prune`` (see :class:`memkit.sessions.Conversations`; their 0.1 names, ``create_session``…:
        :mod:`memkit.vault_aliases`)."""
        from .sessions import Conversations
        if self._conversations is None:
            self._conversations = Conversations(
                self.store, llm=self._llm, embedder=lambda: self.embedder,
                digest=lambda text, name, llm, dry_run: self.digest_text(text, name=name, llm=llm, dry_run=dry_run))
        return self._conversations

    # ---- index and search -----------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        """The embedding model, chosen once (:func:`memkit.embeddings.make_embedder`): located at
        once, loaded on its first use, so what needs no vectors (lexical search, show, add…) never
        loads it; a model that cannot be found: words only, with a warning."""
        if self._embedder is None:
            self._embedder = make_embedder(self.model, self.config, self.store.warn_once)
        return self._embedder

    @property
    def searcher(self) -> Searcher:
        """The vault's index and ranker (loads the model on first use)."""
        if self._searcher is None:
            self._searcher = Searcher(self.store, Index(self.store, self.embedder))
        return self._searcher

    def index(self, *, full: bool = False, progress: Progress | None = None,
              judge_progress: Progress | None = None, judge: bool = True) -> IndexReport:
        """Bring the embedding sidecar up to date with the topic files, then store the judge's
        vector of every entry that lacks one (the second search stage, :mod:`memkit.index.judge_vectors`).

        :param full: parse and embed everything again.
        :param progress: called with (done, total) while embedding; ``judge_progress`` the same
            for the judge's vectors.
        :param judge: also fill the judge's vectors (False: the servers' start, which fills them
            aside, :meth:`memkit.search.Serving.fill_judge_aside`).

        The sidecars of other models are deleted once this model's is complete (derived data:
        switching back rebuilds one).
        """
        return self.searcher.reindex(full=full, progress=progress, judge=judge, judge_progress=judge_progress)

    def search(self, query: str, *, k: int | None = None, threshold: Threshold = "auto", topic: str | None = None,
               kind: str | None = None, tag: str | None = None, since: str | date | None = None,
               mode: Mode = "hybrid", refresh: bool | None = None, weak: int = 3,
               min_importance: float | None = None, judge: bool | None = None, private: bool = True,
               person: str | None = None, relation: str | None = None,
               where: Mapping[str, str] | Sequence[str] | None = None, linked: str | None = None) -> list[Hit]:
        """Hybrid lexical + vector search: the ``k`` best entries for ``query`` (default
        ``max_memories_per_search``) that pass ``threshold`` and the filters (``topic`` and its
        subtopics, ``kind``, ``tag``, ``since``, ``min_importance``), re-scored by the judge unless
        ``judge=False``; when none passes, up to ``weak`` close ones marked ``confident=False``.
        ``person`` (a name or @handle of people.md, ``me``), ``relation`` (family, self…) and ``where``
        (``{"city": "Porto"}`` or ``["city=Porto"]``) filter on who and what an entry is about.
        Each parameter: :meth:`memkit.search.Searcher.search` (the query is checked once, a
        :class:`memkit.search.Query`); ``private=False`` leaves out ``private: true`` topics unless
        ``topic`` names them (docs/privacy.md); ``linked``: a topic and the topics it links with."""
        return self.searcher.search(query, k=k, threshold=threshold, topic=topic, kind=kind, tag=tag, since=since,
                                    mode=mode, refresh=refresh, weak=weak, min_importance=min_importance, judge=judge,
                                    private=private, person=person, relation=relation, where=where, linked=linked)

    # ---- the flows ----------------------------------------------------------------------------------
    def waiting_transcripts(self) -> list[Path]:
        """The transcripts in inbox/ waiting for a digest."""
        return self.store.inbox.waiting()

    def llm(self) -> LLM | None:
        """The LLM configured under ``llm:`` in memkit.yaml, or None (see :mod:`memkit.llm.client`)."""
        return self._llm("auto")

    def _llm(self, choice: LLMChoice) -> LLM | None:  # either way its requests are redacted (docs/privacy.md)
        from .llm import choose
        return choose(choice, self.config.llm, self.config.redact.rules)

    def private_topics(self) -> list[str]:
        """Topics with ``private: true``: what the servers list and find leaves them out (docs/privacy.md)."""
        return self.store.private_topics()

    def context(self, message: str, *, session: str | None = None, budget_tokens: int = 2000,
                now: datetime | None = None, clear: bool = False, markers: bool = False) -> Context:
        """The memory block for an assistant's system prompt, for the user's ``message``.

        :param message: the user's latest message (may be empty; never saved here: ``conversations.append``).
        :param session: a conversation session's id (started if new): its last turns join the block, memories
            accumulate across calls that share it; ``clear`` ends its window first. ``now``: default now.
        :param budget_tokens: the most the block may take (~4 characters a token); ``markers``: show markers."""
        from .context import build_context
        return build_context(self.searcher, message, session=session, budget_tokens=budget_tokens, now=now,
                             conversations=self.conversations if session else None, clear=clear, markers=markers)

    def reset_session(self, session: str) -> None:
        """Forget a context session's accumulated memories and topic."""
        from .context import reset_session
        reset_session(self.store, session)

    def digest(self, transcript: str | os.PathLike[str], *, llm: LLMChoice = "auto",
               dry_run: bool = False, force: bool = False, allow_many_supersedes: bool = False) -> DigestReport:
        """Digest a transcript file into memory entries (see :mod:`memkit.digest.digest`).

        :param transcript: ``Speaker: text`` lines, a JSON list of ``{role, content}``, or JSONL.
        :param llm: ``"auto"``: the LLM configured in memkit.yaml; or an LLM client (None fails).
        :param dry_run: only compute the change (``report.diff``); ``force``: read it all again;
            ``allow_many_supersedes``: archive over 3 outdated entries (else TooManySupersedes)."""
        from .digest import digest_file
        try:
            return digest_file(self.searcher, transcript, self._llm(llm), dry_run=dry_run, force=force,
                               allow_many_supersedes=allow_many_supersedes)
        finally:
            self.changed()

    def digest_text(self, text: str, *, name: str = "transcript", llm: LLMChoice = "auto",
                    dry_run: bool = False) -> DigestReport:
        """Digest a conversation given as text (any format :meth:`digest` reads); ``name`` is how
        reports and errors call it."""
        from .digest import digest_text
        try:
            return digest_text(self.searcher, text, self._llm(llm), name=name, dry_run=dry_run)
        finally:
            self.changed()

    def process_inbox(self, *, llm: LLMChoice = "auto") -> list[InboxResult]:
        """Digest the transcripts in inbox/ that have been idle for ``session_timeout_minutes``
        (``llm`` as for :meth:`digest`)."""
        from .digest import process_inbox
        try:
            return process_inbox(self.searcher, self._llm(llm))
        finally:
            self.changed()

    def split(self, topic: str, *, llm: LLMChoice = "auto", dry_run: bool = False, min_part: int = 5,
              max_parts: int | None = None) -> SplitPlan:
        """Split ``topic`` into subtopics (see :mod:`memkit.split.split`); ``dry_run`` only plans it
        (:meth:`split_diff` shows it).

        :param llm: names the parts: ``"auto"`` the LLM configured in memkit.yaml, None none (the
            parts are named from their own words), or an LLM client.
        """
        from .split import split_topic
        plan = split_topic(self.searcher, topic, llm=self._llm(llm), dry_run=dry_run, min_part=min_part,
                           max_parts=max_parts)
        self.changed()
        return plan

    def split_diff(self, plan: SplitPlan) -> str:
        """A unified diff of every file ``plan`` writes or removes (index.txt included), as
        ``memkit split --dry-run`` prints it."""
        return plan.diff(self.store)

    # ---- for memkit's own long-running front ends (memkit serve, mcp, watch) -----------------------------
    @property
    def frontend_internals(self) -> Serving:
        """Internal, not library API: what only memkit's long-running front ends (``memkit serve``,
        ``mcp``, ``watch``) need (:class:`memkit.search.Serving`); its names may change in any
        release. Its earlier names (``vault.serving``, ``vault.open_index()``…): :mod:`memkit.vault_aliases`."""
        if self._serving is None:
            self._serving = Serving(self.store, lambda: self.searcher, lambda: self.embedder)
        return self._serving
