"""A vault's conversation sessions as one object: ``vault.conversations`` (as sqlite-utils hands out
``db["table"]``), with the verbs of ``memkit session``: new, append, list, show, window, search,
digest, export, import, delete, prune.

It composes the folder (:class:`memkit.sessions.folder.Sessions`), a long conversation's window
(:mod:`memkit.sessions.budget`), import and export (:mod:`memkit.sessions.io`), search over an index
of its own (:mod:`memkit.sessions.search`) and the live digest (:mod:`memkit.sessions.live_digest`);
the facade hands it the vault's runtime context (:class:`memkit.runtime.Runtime`: the store, the
LLM factory, the embedder, the searcher the digest writes through).
"""
from __future__ import annotations

import builtins
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..errors import MemkitError, SessionAmbiguous, SessionConflict, SessionNotFound, TranscriptError
from ..formats.names import session_file_name
from ..formats.session import PruneReport, Session, SessionInfo, SessionMessage, check_session_id
from ..runtime import Runtime
from ..search import Searcher
from .budget import Window, window
from .folder import Sessions
from .io import Imported, export_jsonl, import_conversations, parse_conversations
from .live_digest import Digested, digest_new, digest_quietly, mark_digested, to_jsonl
from .search import SessionHit, SessionSearch

if TYPE_CHECKING:
    from ..digest import Captured, DigestReport
    from ..llm import LLMChoice

__all__ = ["Conversations"]

class Conversations:
    """The vault's ``sessions/`` folder and what is done with its conversations.

    :param runtime: the vault's store (its lock, its state folder, its settings), its LLM factory
        (``"auto"``: memkit.yaml's), its embedder (asked for on the first search only) and its
        searcher (a digest writes through it).
    """

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime
        self.store = store = runtime.store
        self.folder = Sessions(store.root, store.state_dir, store.config)  #: the files themselves
        self._llm = runtime.llm
        self._search: SessionSearch | None = None

    def _digest(self, text: str, name: str, llm: LLMChoice, dry_run: bool) -> DigestReport:
        """Digest a conversation given as text (JSONL) into memory entries."""
        from ..digest import digest_text  # the digest and its LLM client: only when a conversation is digested
        try:
            return digest_text(self._rt.searcher, text, self._rt.llm(llm), name=name, dry_run=dry_run)
        finally:
            self._rt.changed()

    def __repr__(self) -> str:
        return f"Conversations({str(self.store.root)!r})"

    # ---- reading ----------------------------------------------------------------------------------
    def list(self, *, archived: bool = False) -> list[SessionInfo]:
        """Every conversation session, most recently updated first (``archived``: the pruned ones)."""
        return self.folder.list(archived)

    def show(self, session_id: str) -> Session:
        """One session with all its messages (its id, a unique prefix, or its file name).

        :raises SessionNotFound: none or several match."""
        return self.folder.load(session_id)

    def show_raw(self, session_id: str) -> Session:
        """A session's whole raw conversation: once it aged (:mod:`memkit.sessions.aging`), the
        messages kept in ``sessions/archive/raw/`` and those saved since; else the session."""
        return self.folder.load_raw(session_id)

    def window(self, session_id: str, max_tokens: int = 4096, *, strategy: str | None = None,
               llm: LLMChoice = "auto", keep_recent: int | None = None, now: datetime | None = None,
               exact: bool = False, cache: bool = True) -> Window:
        """The session's history within ``max_tokens``, oldest first, the system prompt first (see
        :mod:`memkit.sessions.budget`; ``strategy`` default: memkit.yaml's ``session_strategy``).
        A summary made on the way is cached in the session file (``cache=False``: only returned, the
        file untouched). ``exact``: ``session_id`` is the id or file name, not a prefix."""
        config = self.store.config
        chosen = strategy or config.session_strategy
        folder = self.folder
        path, archived = folder.find(session_id, exact=exact)
        # "simple" reads only the newest messages that fit and needs no LLM; the others read it all
        conv, earlier = (folder.load_newest(path, max_tokens, archived) if chosen == "simple"
                         else (folder.load_path(path, archived), 0))
        client = self._llm(llm) if chosen != "simple" else None
        return window(conv, max_tokens=max_tokens, strategy=chosen, llm=client,
                      keep_recent=keep_recent or config.session_keep_recent, now=now,
                      save_summary=(lambda s: folder.add_summary(path, s)) if cache else None, earlier=earlier,
                      redact=lambda text: config.redact.apply(text).text)

    def export(self, session_id: str) -> str:
        """A session as JSONL ``{"role", "content", "time"}`` lines, its system prompt first."""
        return export_jsonl(self.show(session_id))

    def search(self, query: str, *, k: int = 10, session: str | None = None, role: str | None = None,
               since: str | None = None, exact: bool = False) -> builtins.list[SessionHit]:
        """Messages of past conversations that match ``query`` by meaning and words, best first
        (see :mod:`memkit.sessions.search`; ``exact``: as for :meth:`window`)."""
        if self._search is None:
            self._search = SessionSearch(self.folder, Searcher.of_sessions(self.store, self._rt.embedder))
        return self._search.search(query, k=k, session=session, role=role, since=since, exact=exact)

    # ---- writing ----------------------------------------------------------------------------------
    def new(self, *, system_prompt: str | None = None, title: str | None = None,
            metadata: Mapping[str, Any] | None = None, user: str | None = None, tags: Sequence[str] = (),
            session_id: str | None = None, now: datetime | None = None) -> Session:
        """Start a conversation: ``sessions/<day>-<id>.md`` (``session_id`` or 8 hex digits). The
        id also works as the context's session. :raises MemkitError: the id is taken or invalid."""
        with self.store.lock():
            return self.folder.create(session_id=session_id, title=title, system=system_prompt, user=user,
                                      tags=tags, metadata=metadata, now=now)

    def append(self, session_id: str, role: str, content: str, *, important: bool = False,
               name: str | None = None, now: datetime | None = None, exact: bool = False,
               digest: bool = True) -> SessionMessage:
        """Append a message (role user, assistant, system or tool) to a session: one ``O_APPEND``
        write, so concurrent writers lose nothing. ``important`` keeps it verbatim in ``hybrid``;
        ``exact``: ``session_id`` is the id or file name, not a prefix (an API's clients' ids).

        With ``digest_every_messages: N`` in memkit.yaml and an LLM configured, the N-th new message
        digests the messages not digested yet (a failure is logged; the message is saved); not with
        ``digest=False`` (the caller digests later: :meth:`digest_new` with ``force=False``).

        An id with no session starts one (as the context's session does: one rule); the message
        says so (``created``). :raises InvalidValue: such an id is not a valid one (the rule is
        named), or the message is not (checked before anything is written); :raises SessionAmbiguous:
        a prefix several sessions share; :raises SessionConflict: the session is archived."""
        folder = self.folder
        try:
            path, archived = folder.find(session_id, exact=exact)
            created = False
        except SessionAmbiguous:
            raise
        except SessionNotFound:
            folder.message(role, content, important=important, name=name, now=now)  # refuse before creating
            path, archived, created = self._start(check_session_id(session_id), now), False, True
        message = folder.append_path(path, role, content, important=important, name=name, now=now, archived=archived)
        if created:
            message = replace(message, created=True)
        config = self.store.config
        every = config.digest_every_messages
        if digest and every > 0 and config.llm is not None:
            digest_quietly(self.folder, self.store.state_dir, session_id, every, self._digest_with("auto"))
        return message

    def _start(self, session_id: str, now: datetime | None) -> Path:
        """The file of a session started for a message to ``session_id`` (another writer may just
        have started it: then that one's)."""
        try:
            self.new(session_id=session_id, now=now)
        except SessionConflict:
            pass
        return self.folder.find(session_id, exact=True)[0]

    def digest_new(self, session_id: str, *, llm: LLMChoice = "auto", force: bool = True) -> Digested | None:
        """Digest the messages of a session the LLM has not seen yet (see
        :mod:`memkit.sessions.live_digest`); ``force=False`` only when ``digest_every_messages`` are new.
        None: nothing new (or another writer is digesting it now)."""
        return digest_new(self.folder, self.store.state_dir, session_id, self.store.config.digest_every_messages,
                          self._digest_with(llm), force=force)

    def digest(self, session_id: str, *, llm: LLMChoice = "auto", dry_run: bool = False) -> DigestReport:
        """Digest a session's messages into memory entries, as a transcript is (digesting the same
        messages twice adds nothing); they count as digested for ``digest_every_messages`` then,
        which sends only later ones."""
        conv = self.show(session_id)
        if not conv.messages:
            raise MemkitError(f"session {conv.id} has no messages to digest")
        report = self._digest(to_jsonl(conv.messages), conv.file, llm, dry_run)
        if not dry_run:
            mark_digested(self.store.state_dir, conv)
        return report

    def import_(self, data: bytes, *, name: str = "import", fmt: str = "auto", session_id: str | None = None,
                title: str | None = None, now: datetime | None = None) -> builtins.list[Imported]:
        """Store the conversations of a JSONL / JSON messages file, a Claude Code transcript or a
        ChatGPT export (``fmt``: ``auto`` detects it) as sessions; into an existing ``session_id``
        only the messages it lacks are appended."""
        _, conversations = parse_conversations(data, name, fmt, now)
        conversations = [c for c in conversations if c.messages]  # an empty one is no session to make
        if not conversations:
            raise TranscriptError(f"{name}: holds no conversation (no message with text found); nothing imported. "
                                  "Give JSONL or JSON {role, content} messages, a Claude Code transcript or a "
                                  "ChatGPT export")
        for conv in conversations:  # before comparing with a session's messages, which were redacted too
            conv.title, conv.system, conv.messages = self.folder.redacted(conv.title, conv.system, conv.messages)
        with self.store.lock():
            return import_conversations(self.folder, conversations, session_id=session_id, title=title, now=now)

    def save_capture(self, captured: Captured) -> Imported:
        """Store a capture's conversation (:func:`memkit.digest.capture`) as the session named after
        its session id (a path or a long id: its readable, collision-free file stem); capturing it
        again appends only the new messages. A Claude Code transcript is read again for its
        messages' times; other formats have none, and their messages are stamped now."""
        try:
            sid = check_session_id(captured.session)
        except MemkitError:
            sid = session_file_name(captured.session, captured.session, "")
        data, fmt, name = (self.store.root / captured.file).read_bytes(), "jsonl", captured.file
        if captured.format == "claude-code" and captured.source != "stdin":  # the transcript itself has the times
            try:
                data, fmt, name = Path(captured.source).read_bytes(), "claude-code", captured.source
            except OSError:
                pass
        (saved,) = self.import_(data, name=name, fmt=fmt, session_id=sid)
        return saved

    def delete(self, session_id: str) -> SessionInfo:
        """Delete a session's file for good (:meth:`prune` archives instead)."""
        with self.store.lock():
            return self.folder.delete(session_id)

    def prune(self, days: int | None = None, *, delete: bool = False, dry_run: bool = False,
              now: datetime | None = None) -> PruneReport:
        """Move sessions idle for more than ``days`` (default: ``expire: conversation``, 30 days)
        to ``sessions/archive/``, or delete them with ``delete``."""
        with self.store.lock():
            return self.folder.prune(days, delete=delete, dry_run=dry_run, now=now)

    def _digest_with(self, llm: LLMChoice) -> Callable[[str, str], DigestReport]:
        """A session digest's callback: (JSONL, name) -> report."""
        return lambda text, name: self._digest(text, name, llm, False)
