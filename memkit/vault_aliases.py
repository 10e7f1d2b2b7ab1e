"""Vault's 0.1 method names for what now lives on ``vault.conversations`` and ``vault.serving``.

Each is one call of its new home (``vault.sessions()`` is ``vault.conversations.list()``); the
front ends and library users of memkit 0.1 call them. :class:`memkit.vault.Vault` inherits them,
so that the facade itself holds only its composition and the flows' entry points.
"""
from __future__ import annotations

import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .llm import LLMChoice

if TYPE_CHECKING:
    from .digest import DigestReport
    from .formats.session import PruneReport, Session, SessionInfo, SessionMessage
    from .index import Index
    from .search import Serving
    from .sessions import Conversations, Digested, Imported, SessionHit, Window

__all__ = ["VaultAliases"]


class VaultAliases:
    """The 0.1 names of the session verbs (:class:`memkit.sessions.Conversations`) and of the
    servers' hooks (:class:`memkit.search.Serving`)."""

    @property
    def conversations(self) -> Conversations:
        raise NotImplementedError

    @property
    def serving(self) -> Serving:
        raise NotImplementedError

    def sessions(self, *, archived: bool = False) -> list[SessionInfo]:
        """:meth:`conversations.list <memkit.sessions.Conversations.list>`."""
        return self.conversations.list(archived=archived)

    def session(self, session_id: str) -> Session:
        """:meth:`conversations.show <memkit.sessions.Conversations.show>`."""
        return self.conversations.show(session_id)

    def raw_session(self, session_id: str) -> Session:
        """:meth:`conversations.show_raw <memkit.sessions.Conversations.show_raw>`."""
        return self.conversations.show_raw(session_id)

    def create_session(self, *, system_prompt: str | None = None, title: str | None = None,
                       metadata: Mapping[str, Any] | None = None, user: str | None = None, tags: Sequence[str] = (),
                       session_id: str | None = None, now: datetime | None = None) -> Session:
        """:meth:`conversations.new <memkit.sessions.Conversations.new>`."""
        return self.conversations.new(system_prompt=system_prompt, title=title, metadata=metadata, user=user,
                                      tags=tags, session_id=session_id, now=now)

    def save_message(self, session_id: str, role: str, content: str, *, important: bool = False,
                     name: str | None = None, now: datetime | None = None, exact: bool = False,
                     digest: bool = True) -> SessionMessage:
        """:meth:`conversations.append <memkit.sessions.Conversations.append>`."""
        return self.conversations.append(session_id, role, content, important=important, name=name, now=now,
                                         exact=exact, digest=digest)

    def digest_new_messages(self, session_id: str, *, llm: LLMChoice = "auto", force: bool = True) -> Digested | None:
        """:meth:`conversations.digest_new <memkit.sessions.Conversations.digest_new>`."""
        return self.conversations.digest_new(session_id, llm=llm, force=force)

    def recent_messages(self, session_id: str, max_tokens: int = 4096, *, strategy: str | None = None,
                        llm: LLMChoice = "auto", keep_recent: int | None = None,
                        now: datetime | None = None, exact: bool = False, cache: bool = True) -> Window:
        """:meth:`conversations.window <memkit.sessions.Conversations.window>`."""
        return self.conversations.window(session_id, max_tokens, strategy=strategy, llm=llm, keep_recent=keep_recent,
                                         now=now, exact=exact, cache=cache)

    def delete_session(self, session_id: str) -> SessionInfo:
        """:meth:`conversations.delete <memkit.sessions.Conversations.delete>`."""
        return self.conversations.delete(session_id)

    def prune_sessions(self, days: int | None = None, *, delete: bool = False, dry_run: bool = False,
                       now: datetime | None = None) -> PruneReport:
        """:meth:`conversations.prune <memkit.sessions.Conversations.prune>`."""
        return self.conversations.prune(days, delete=delete, dry_run=dry_run, now=now)

    def digest_session(self, session_id: str, *, llm: LLMChoice = "auto", dry_run: bool = False) -> DigestReport:
        """:meth:`conversations.digest <memkit.sessions.Conversations.digest>`."""
        return self.conversations.digest(session_id, llm=llm, dry_run=dry_run)

    def export_session(self, session_id: str) -> str:
        """:meth:`conversations.export <memkit.sessions.Conversations.export>`."""
        return self.conversations.export(session_id)

    def import_sessions(self, data: bytes, *, name: str = "import", fmt: str = "auto", session_id: str | None = None,
                        title: str | None = None, now: datetime | None = None) -> list[Imported]:
        """:meth:`conversations.import_ <memkit.sessions.Conversations.import_>`."""
        return self.conversations.import_(data, name=name, fmt=fmt, session_id=session_id, title=title, now=now)

    def search_sessions(self, query: str, *, k: int = 10, session: str | None = None, role: str | None = None,
                        since: str | None = None, exact: bool = False) -> list[SessionHit]:
        """:meth:`conversations.search <memkit.sessions.Conversations.search>`."""
        return self.conversations.search(query, k=k, session=session, role=role, since=since, exact=exact)

    def open_index(self) -> Index:
        """:meth:`serving.open_index <memkit.search.Serving.open_index>`."""
        return self.serving.open_index()

    def fill_judge_aside(self, stop: threading.Event | None = None) -> threading.Thread:
        """:meth:`serving.fill_judge_aside <memkit.search.Serving.fill_judge_aside>`."""
        return self.serving.fill_judge_aside(stop)

    def index_status(self) -> dict[str, Any]:
        """:meth:`serving.index_status <memkit.search.Serving.index_status>`."""
        return self.serving.index_status()

    def write_locked(self) -> bool:
        """:meth:`serving.write_locked <memkit.search.Serving.write_locked>`."""
        return self.serving.write_locked()
