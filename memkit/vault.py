"""The library's entry point: :class:`Vault`, one object for everything memkit does with a vault.

``Vault`` composes and delegates: the files to :class:`memkit.store.Store`, the embedder chosen
by :func:`memkit.embeddings.make_embedder`, the index and ranking to :class:`memkit.search.Searcher`,
the conversations to ``vault.conversations`` (:class:`memkit.sessions.Conversations`), the keyed
facts and people to ``vault.facts`` (:class:`memkit.store.Facts`), memory that ages to
``vault.upkeep`` (:class:`memkit.upkeep.Upkeep`), the servers' hooks to ``vault.frontend_internals``
(:class:`memkit.runtime.Serving`, not library API), the links to ``vault.links``
(:class:`memkit.memories.Links`), and the flows to memkit.memories (an add), memkit.split,
memkit.digest and memkit.context. What every service is handed is one
:class:`memkit.runtime.Runtime` (the store, the embedder, a lazy searcher, the LLM factory, the
write hooks), built here. The model is loaded on first use and kept for the life of the object.
"""
from __future__ import annotations

import importlib
import os
from datetime import date, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, Mapping, Sequence, overload

from .config import Config, load_config, resolve_model
from .embeddings import Embedder, complete
from .errors import MemkitError
from .formats.lifecycle import parse_day, with_dates
from .formats.names import is_topic_filename
from .formats.recent import RecentTopic, relative_time
from .formats.topic import Entry, Topic
from .index import Index, IndexReport, Progress
from .llm import LLMChoice
from .memories import Links, add_entry
from .runtime import Runtime, Serving
from .search import Hit, Mode, Searcher, Threshold
from .store import Facts, Store, TopicInfo, find_vault

if TYPE_CHECKING:  # the services: each is imported by the methods that use it (see _LAZY below)
    from .context import Context, Nudge, Why
    from .digest import Captured, DigestReport
    from .formats.session import PruneReport, Session, SessionInfo, SessionMessage
    from .git import GitSetup, merge_files
    from .sessions import Conversations, Imported, SessionHit, Window
    from .split import SplitPlan
    from .upkeep import Upkeep

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

class Vault:
    """A memkit vault on disk: ``Vault("~/memory").search("what rice do I use")``.

    Its verbs read and write memories (``add``, ``search``, ``context``, ``digest``…); the groups
    of verbs are objects it hands out, as ``sqlite_utils.Database`` hands out tables:
    ``vault.conversations`` (the sessions), ``vault.facts`` (keyed facts and people),
    ``vault.upkeep`` (memory that ages: tidy, follow-ups, history, compaction, the scheduled jobs).

    :param path: the vault folder (must exist; see :meth:`init` to create one).
    :param config: settings to use instead of reading memkit.yaml.
    :param model: the embedding model (a model2vec id or folder); default ``MEMKIT_MODEL``, then
        memkit.yaml's ``model``.
    :param embedder: an object with ``name``, ``dim`` and ``embed(texts)`` to use instead of a model.
    :param env: the environment ``MEMKIT_MODEL`` is read from (default ``os.environ``).
    """

    _links: Links | None = None  #: vault.links, made on first use

    def __init__(self, path: str | os.PathLike[str], *, config: Config | None = None, model: str | None = None,
                 embedder: Embedder | None = None, env: Mapping[str, str] | None = None) -> None:
        self.store = Store(path, config if config is not None else load_config(Path(path).expanduser()))
        # The one place the library reads memkit's own environment: the docs promise that
        # MEMKIT_MODEL wins over memkit.yaml for library users too, not only on the command line.
        env = os.environ if env is None else env
        #: the model id or folder in use (the injected embedder's name, if one was given)
        self.model = embedder.name if embedder is not None else resolve_model(model, self.config, env)
        self._rt = Runtime(self.store, self.model, complete(embedder) if embedder is not None else None)
        self._conversations: Conversations | None = None
        self._facts: Facts | None = None
        self._upkeep: Upkeep | None = None
        self._serving: Serving | None = None

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r})"

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, profile: bool = True, existing: bool = False) -> "Vault":
        """Create a vault: memkit.yaml (commented defaults), topics/ with an empty pinned
        ``profile.md`` (the first layer of every context; ``profile=False`` leaves it out), inbox/,
        index.txt, .gitignore and .gitattributes. ``existing``: ``path`` is a folder of notes (an
        Obsidian vault) adopted as it is, its notes at any depth the topics, no file in it written
        (docs/folders.md).

        :raises VaultExists: if ``path`` already holds a vault.
        """
        return cls((Store.adopt(path) if existing else Store.init(path, profile=profile)).root)

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

    # ---- the objects it hands out ----------------------------------------------------------------------
    @property
    def conversations(self) -> Conversations:
        """The vault's conversation sessions (``sessions/``) and their verbs: ``new``, ``append``,
        ``list``, ``show``, ``window``, ``search``, ``digest``, ``export``, ``import_``, ``delete``,
        ``prune`` (see :class:`memkit.sessions.Conversations`)."""
        from .sessions import Conversations
        if self._conversations is None:
            self._conversations = Conversations(self._rt)
        return self._conversations

    @property
    def facts(self) -> Facts:
        """Keyed facts and people (:class:`memkit.store.Facts`): ``set``, ``get``, ``all``,
        ``history``, ``people``, ``add_person``."""
        if self._facts is None:
            self._facts = Facts(self.store, self._rt.wrote)
        return self._facts

    @property
    def upkeep(self) -> Upkeep:
        """Memory that ages (:class:`memkit.upkeep.Upkeep`): ``tidy``, ``pending``, ``done``,
        ``history``, ``git_history``, ``check`` (every problem; ``fix``: the safe ones repaired),
        ``compact``, ``distill``, ``stats``, ``waiting_transcripts``, ``process_inbox``, ``run`` (every
        scheduled job once) and ``due``."""
        from .upkeep import Upkeep
        if self._upkeep is None:
            self._upkeep = Upkeep(self._rt)
        return self._upkeep

    @property
    def links(self) -> Links:
        """The vault's ``[[links]]`` and what is like a memory (:class:`memkit.memories.Links`):
        ``related``, ``backlinks``, ``broken``, ``rename``."""
        if self._links is None:
            self._links = Links(self._rt)
        return self._links

    @property
    def frontend_internals(self) -> Serving:
        """Internal, not library API: what only memkit's long-running front ends (``memkit serve``,
        ``mcp``, ``watch``) need (:class:`memkit.runtime.Serving`); its names may change in any release."""
        if self._serving is None:
            self._serving = Serving(self._rt)
        return self._serving

    @property
    def embedder(self) -> Embedder:
        """The embedding model, chosen once (:func:`memkit.embeddings.make_embedder`): located at
        once, loaded on its first use, so what needs no vectors (lexical search, show, add…) never
        loads it; a model that cannot be found: words only, with a warning."""
        return self._rt.embedder

    @property
    def searcher(self) -> Searcher:
        """The vault's index and ranker (loads the model on first use)."""
        return self._rt.searcher

    # ---- reading -----------------------------------------------------------------------------------
    def topics(self) -> list[TopicInfo]:
        """Every topic with its entry count, updated time and summary."""
        return self.store.topics()

    def topic(self, name: str) -> Topic:
        """One topic, parsed. :raises TopicNotFound: no such topic (``vault.store.show_topic``
        answers for one split away)."""
        return self.store.topic(name)

    def entries(self, topic: str | None = None) -> list[Entry]:
        """Every entry of the vault, or of one topic (``vault.store.find`` finds one by id or text)."""
        return self.store.entries(topic)

    def recent(self, *, rebuild: bool = False) -> list[RecentTopic]:
        """The lines of index.txt (recent topics), newest first; ``rebuild``: made anew from the topic files."""
        return self.store.index_txt.rebuild(self.store.iter_topics()) if rebuild else self.store.index_txt.read()

    def git_setup(self) -> GitSetup:
        """Make the vault merge-friendly in git (see :mod:`memkit.git.sync`): memkit's lines in
        .gitattributes and .gitignore, and the merge driver registered in this clone."""
        from .git import git_setup
        return git_setup(self.store)

    def why(self, ref: str) -> Why:
        """Where a memory came from: the conversation its ``(from …)`` marker names (a session, an aged
        session's raw archive, a transcript in inbox/done/) and the lines of it that say the memory
        (see :mod:`memkit.context.provenance`; ``ref``: its id, current or archived).

        :raises EntryNotFound: no such entry. :raises ProvenanceNotFound: it names no conversation,
            or that conversation is gone."""
        from .context import why
        return why(self.store, ref)

    # ---- writing -----------------------------------------------------------------------------------
    def add(self, text: str, *, topic: str | None = None, kind: str | None = None, tags: Sequence[str] = (),
            due: str | date | None = None, until: str | date | None = None, when: datetime | None = None,
            split: bool = True, allow_duplicate: bool = False) -> Entry:
        """Append ``- [kind] text #tags (date)`` to a topic (``general`` by default), creating it
        if needed; updates index.txt. A topic pushed past ``topic_split_threshold_lines`` is
        split at once, its parts named by the configured LLM, else from their words
        (``split=False`` leaves it); the entry returned is then the one in its subtopic. A topic that was split is not recreated: the
        text goes to the subtopic whose entries share most of its words, else ``TOPIC-general``
        (the entry returned says where; see :mod:`memkit.memories.adding`).

        ``due``: a follow-up due that day (``(due DATE)``, kind ``pending`` unless one is given);
        ``until``: the memory expires after that day (``(until DATE)``; not in the past); each a
        date or ``YYYY-MM-DD``. The topic's entry of the same text (its date aside) is returned
        unwritten (``.duplicate``) unless ``allow_duplicate``.

        :raises MemkitError: empty text, a bad kind, tag or date, ``until`` in the past;
            TopicNameError: a bad topic name.
        """
        text, kind = with_dates(text, kind, due=_day(due, "due"), until=_day(until, "until"))
        return add_entry(self._rt, text, topic=topic, kind=kind, tags=tags, when=when, split=split,
                         allow_duplicate=allow_duplicate)

    def edit(self, ref: str | None, text: str, *, match: str | None = None, topic: str | None = None) -> Entry:
        """Replace an entry where it stands; the old line goes to archive.md pointing at the new
        one (see ``vault.upkeep.history``). Returns the new entry."""
        from .upkeep import edit_entry
        entry = edit_entry(self.store, self.store.find(ref, match=match, topic=topic), text)
        self._rt.wrote(entry.topic)
        return entry

    @overload
    def forget(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None,
               reason: str = "forgotten", every: Literal[False] = False) -> Entry: ...

    @overload
    def forget(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None,
               reason: str = "forgotten", every: Literal[True]) -> list[Entry]: ...

    def forget(self, ref: str | None = None, *, match: str | None = None, topic: str | None = None,
               reason: str = "forgotten", every: bool = False) -> Entry | list[Entry]:
        """Remove one entry (by id prefix or text) and keep it in archive.md; returns it (with the
        line it had). An entry written twice (a merge can leave that) loses its last occurrence;
        ``every``: every occurrence, returned as a list."""
        entries = self.store.forget(ref, match=match, topic=topic, reason=reason, every=every)
        self._rt.wrote(entries[0].topic)
        return entries if every else entries[0]

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
        client = self._rt.llm(llm) if now else None
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
        self._rt.changed()

    # ---- index and search -----------------------------------------------------------------------------
    def index(self, *, full: bool = False, progress: Progress | None = None,
              judge_progress: Progress | None = None, judge: bool = True) -> IndexReport:
        """Bring the embedding sidecar up to date with the topic files, then store the judge's
        vector of every entry that lacks one (the second search stage, :mod:`memkit.index.judge_vectors`).

        :param full: parse and embed everything again.
        :param progress: called with (done, total) while embedding; ``judge_progress`` the same
            for the judge's vectors.
        :param judge: also fill the judge's vectors (False: the servers' start, which fills them
            aside, :meth:`memkit.runtime.Serving.fill_judge_aside`).

        The sidecars of other models are deleted once this model's is complete (derived data:
        switching back rebuilds one).
        """
        return self.searcher.reindex(full=full, progress=progress, judge=judge, judge_progress=judge_progress)

    def search(self, query: str, *, k: int | None = None, threshold: Threshold = "auto", topic: str | None = None,
               kind: str | None = None, tag: str | None = None, since: str | date | None = None,
               mode: Mode = "hybrid", refresh: bool | None = None, weak: int = 3,
               min_importance: float | None = None, judge: bool | None = None, fast: bool = False,
               private: bool = True, person: str | None = None, relation: str | None = None,
               where: Mapping[str, str] | Sequence[str] | None = None, linked: str | None = None) -> list[Hit]:
        """Hybrid lexical + vector search: the ``k`` best entries for ``query`` (default
        ``max_memories_per_search``) that pass ``threshold`` and the filters (``topic`` and its
        subtopics, ``kind``, ``tag``, ``since``, ``min_importance``), re-scored by the judge unless
        ``judge=False`` or ``fast``; when none passes, up to ``weak`` close ones marked ``confident=False``.
        ``person`` (a name or @handle of people.md, ``me``), ``relation`` (family, self…) and ``where``
        (``{"city": "Porto"}`` or ``["city=Porto"]``) filter on who and what an entry is about.
        Each parameter: :meth:`memkit.search.Searcher.search` (the query is checked once, a
        :class:`memkit.search.Query`); ``private=False`` leaves out ``private: true`` topics unless
        ``topic`` names them (what the servers do: docs/privacy.md); ``linked``: only a topic and the
        topics it links to or is linked from (``[[links]]``)."""
        searcher = self.searcher
        q = searcher.query(query, k=k, threshold=threshold, topic=topic, kind=kind, tag=tag, since=since, mode=mode,
                           weak=weak, min_importance=min_importance, judge=False if fast else judge, person=person,
                           relation=relation, where=where)  # checked once, then passed down
        return searcher.find(searcher.scoped(q, private=private, linked=linked), refresh=refresh)

    # ---- the flows ----------------------------------------------------------------------------------
    def context(self, message: str, *, session: str | None = None, budget_tokens: int = 2000,
                now: datetime | None = None, reset: bool = False, clear: bool = False,
                markers: bool = False) -> Context:
        """The memory block for an assistant's system prompt, for the user's ``message``.

        :param message: the user's latest message (may be empty; never saved here: ``conversations.append``).
        :param session: a conversation session's id (started if new): its last turns join the block, memories
            accumulate across calls that share it; ``reset`` forgets what it accumulated (its memories
            and topic) first, ``clear`` ends its window first. ``now``: default now.
        :param budget_tokens: the most the block may take (~4 characters a token); ``markers``: show markers."""
        from .context import build_context, reset_session
        if reset and session:
            reset_session(self.store, session)
        return build_context(self.searcher, message, session=session, budget_tokens=budget_tokens, now=now,
                             conversations=self.conversations if session else None, clear=clear, markers=markers)

    def proactive(self, *, now: datetime | None = None, last_conversation: datetime | None = None,
                  llm: LLMChoice = "auto") -> Nudge:
        """Whether now is a good moment to bring up a follow-up, which, and how (see
        :func:`memkit.context.nudge.proactive`): quiet hours, the time since the last conversation,
        due and urgent follow-ups; with an LLM, a drafted opening line."""
        from .context import proactive
        return proactive(self.store, self._rt.llm(llm), now=now, last_conversation=last_conversation)

    def digest(self, transcript: str | os.PathLike[str] | None = None, *, text: str | None = None,
               name: str = "transcript", llm: LLMChoice = "auto", dry_run: bool = False, force: bool = False,
               allow_many_supersedes: bool = False) -> DigestReport:
        """Digest a transcript file, or a conversation given as ``text``, into memory entries (see
        :mod:`memkit.digest.digest`).

        :param transcript: ``Speaker: text`` lines, a JSON list of ``{role, content}``, or JSONL;
            :param text: the same, as text (``name``: how reports and errors call it).
        :param llm: ``"auto"``: the LLM configured in memkit.yaml; or an LLM client (None fails).
        :param dry_run: only compute the change (``report.diff``); ``force``: read the file all again;
            ``allow_many_supersedes``: archive over 3 outdated entries (else TooManySupersedes)."""
        from .digest import digest_file, digest_text
        client = self._rt.llm(llm)
        try:
            if text is not None:
                return digest_text(self.searcher, text, client, name=name, dry_run=dry_run)
            if transcript is None:
                raise MemkitError("digest: give a transcript file or its text")
            return digest_file(self.searcher, transcript, client, dry_run=dry_run, force=force,
                               allow_many_supersedes=allow_many_supersedes)
        finally:
            self.changed()

    def split(self, topic: str, *, llm: LLMChoice = "auto", dry_run: bool = False, min_part: int = 5,
              max_parts: int | None = None) -> SplitPlan:
        """Split ``topic`` into subtopics (see :mod:`memkit.split.split`); ``dry_run`` only plans it
        (``plan.diff(vault.store)`` shows it, as ``memkit split --dry-run`` prints it).

        :param llm: names the parts: ``"auto"`` the LLM configured in memkit.yaml, None none (the
            parts are named from their own words), or an LLM client.
        """
        from .split import split_topic
        plan = split_topic(self.searcher, topic, llm=self._rt.llm(llm), dry_run=dry_run, min_part=min_part,
                           max_parts=max_parts)
        self.changed()
        return plan


def _day(value: str | date | None, what: str) -> date | None:
    """A day given as a date or ``YYYY-MM-DD``. :raises InvalidValue: naming ``what``."""
    return value if value is None or isinstance(value, date) else parse_day(value, what)
