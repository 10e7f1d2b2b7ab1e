"""Vault's 0.1 names of what now lives on ``vault.conversations`` and ``vault.frontend_internals``:
deprecated, each warns (:class:`DeprecationWarning`) and goes in memkit's next release.

Each is one call of its new home (``vault.sessions()`` is ``vault.conversations.list()``); library
users of memkit 0.1 call them (memkit's own front ends no longer do). :class:`memkit.vault.Vault`
inherits them, so that the facade itself holds only its composition and the flows' entry points.
:data:`RENAMED` lists each old name with its replacement (docs/python-api.md shows the table).
"""
from __future__ import annotations

import threading
import warnings
from datetime import datetime
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from .llm import LLMChoice

if TYPE_CHECKING:
    from .digest import DigestReport
    from .formats.session import PruneReport, Session, SessionInfo, SessionMessage
    from .index import Index
    from .search import Serving
    from .sessions import Conversations, Digested, Imported, SessionHit, Window

__all__ = ["RENAMED", "VaultAliases"]

#: each deprecated name of Vault and what replaces it (``vault.<new>``)
RENAMED = {
    "sessions": "conversations.list", "session": "conversations.show", "raw_session": "conversations.show_raw",
    "create_session": "conversations.new", "save_message": "conversations.append",
    "digest_new_messages": "conversations.digest_new", "recent_messages": "conversations.window",
    "delete_session": "conversations.delete", "prune_sessions": "conversations.prune",
    "digest_session": "conversations.digest", "export_session": "conversations.export",
    "import_sessions": "conversations.import_", "search_sessions": "conversations.search",
    "serving": "frontend_internals", "open_index": "frontend_internals.open_index",
    "fill_judge_aside": "frontend_internals.fill_judge_aside", "index_status": "frontend_internals.index_status",
    "write_locked": "frontend_internals.write_locked",
}


def _deprecated(old: str) -> None:
    """Warn that ``Vault.<old>`` is deprecated, pointing at the line that called it."""
    warnings.warn(f"Vault.{old} is deprecated and goes in memkit's next release; use vault.{RENAMED[old]}",
                  DeprecationWarning, stacklevel=3)


class VaultAliases:
    """The deprecated 0.1 names of the session verbs (:class:`memkit.sessions.Conversations`) and
    of the servers' hooks (:class:`memkit.search.Serving`, ``vault.frontend_internals``)."""

    @property
    def conversations(self) -> Conversations:
        raise NotImplementedError

    @property
    def frontend_internals(self) -> Serving:
        raise NotImplementedError

    @property
    def serving(self) -> Serving:
        """Deprecated: ``vault.frontend_internals`` (internal, not library API)."""
        _deprecated("serving")
        return self.frontend_internals

    def sessions(self, *, archived: bool = False) -> list[SessionInfo]:
        """Deprecated: :meth:`vault.conversations.list <memkit.sessions.Conversations.list>`."""
        _deprecated("sessions")
        return self.conversations.list(archived=archived)

    def session(self, session_id: str) -> Session:
        """Deprecated: :meth:`vault.conversations.show <memkit.sessions.Conversations.show>`."""
        _deprecated("session")
        return self.conversations.show(session_id)

    def raw_session(self, session_id: str) -> Session:
        """Deprecated: :meth:`vault.conversations.show_raw <memkit.sessions.Conversations.show_raw>`."""
        _deprecated("raw_session")
        return self.conversations.show_raw(session_id)

    def create_session(self, *, system_prompt: str | None = None, title: str | None = None,
                       metadata: Mapping[str, Any] | None = None, user: str | None = None, tags: Sequence[str] = (),
                       session_id: str | None = None, now: datetime | None = None) -> Session:
        """Deprecated: :meth:`vault.conversations.new <memkit.sessions.Conversations.new>`."""
        _deprecated("create_session")
        return self.conversations.new(system_prompt=system_prompt, title=title, metadata=metadata, user=user,
                                      tags=tags, session_id=session_id, now=now)

    def save_message(self, session_id: str, role: str, content: str, *, important: bool = False,
                     name: str | None = None, now: datetime | None = None, exact: bool = False,
                     digest: bool = True) -> SessionMessage:
        """Deprecated: :meth:`vault.conversations.append <memkit.sessions.Conversations.append>`."""
        _deprecated("save_message")
        return self.conversations.append(session_id, role, content, important=important, name=name, now=now,
                                         exact=exact, digest=digest)

    def digest_new_messages(self, session_id: str, *, llm: LLMChoice = "auto", force: bool = True) -> Digested | None:
        """Deprecated: :meth:`vault.conversations.digest_new <memkit.sessions.Conversations.digest_new>`."""
        _deprecated("digest_new_messages")
        return self.conversations.digest_new(session_id, llm=llm, force=force)

    def recent_messages(self, session_id: str, max_tokens: int = 4096, *, strategy: str | None = None,
                        llm: LLMChoice = "auto", keep_recent: int | None = None,
                        now: datetime | None = None, exact: bool = False, cache: bool = True) -> Window:
        """Deprecated: :meth:`vault.conversations.window <memkit.sessions.Conversations.window>`."""
        _deprecated("recent_messages")
        return self.conversations.window(session_id, max_tokens, strategy=strategy, llm=llm, keep_recent=keep_recent,
                                         now=now, exact=exact, cache=cache)

    def delete_session(self, session_id: str) -> SessionInfo:
        """Deprecated: :meth:`vault.conversations.delete <memkit.sessions.Conversations.delete>`."""
        _deprecated("delete_session")
        return self.conversations.delete(session_id)

    def prune_sessions(self, days: int | None = None, *, delete: bool = False, dry_run: bool = False,
                       now: datetime | None = None) -> PruneReport:
        """Deprecated: :meth:`vault.conversations.prune <memkit.sessions.Conversations.prune>`."""
        _deprecated("prune_sessions")
        return self.conversations.prune(days, delete=delete, dry_run=dry_run, now=now)

    def digest_session(self, session_id: str, *, llm: LLMChoice = "auto", dry_run: bool = False) -> DigestReport:
        """Deprecated: :meth:`vault.conversations.digest <memkit.sessions.Conversations.digest>`."""
        _deprecated("digest_session")
        return self.conversations.digest(session_id, llm=llm, dry_run=dry_run)

    def export_session(self, session_id: str) -> str:
        """Deprecated: :meth:`vault.conversations.export <memkit.sessions.Conversations.export>`."""
        _deprecated("export_session")
        return self.conversations.export(session_id)

    def import_sessions(self, data: bytes, *, name: str = "import", fmt: str = "auto", session_id: str | None = None,
                        title: str | None = None, now: datetime | None = None) -> list[Imported]:
        """Deprecated: :meth:`vault.conversations.import_ <memkit.sessions.Conversations.import_>`."""
        _deprecated("import_sessions")
        return self.conversations.import_(data, name=name, fmt=fmt, session_id=session_id, title=title, now=now)

    def search_sessions(self, query: str, *, k: int = 10, session: str | None = None, role: str | None = None,
                        since: str | None = None, exact: bool = False) -> list[SessionHit]:
        """Deprecated: :meth:`vault.conversations.search <memkit.sessions.Conversations.search>`."""
        _deprecated("search_sessions")
        return self.conversations.search(query, k=k, session=session, role=role, since=since, exact=exact)

    def open_index(self) -> Index:
        """Deprecated: :meth:`vault.frontend_internals.open_index <memkit.search.Serving.open_index>`."""
        _deprecated("open_index")
        return self.frontend_internals.open_index()

    def fill_judge_aside(self, stop: threading.Event | None = None) -> threading.Thread:
        """Deprecated: :meth:`vault.frontend_internals.fill_judge_aside <memkit.search.Serving.fill_judge_aside>`."""
        _deprecated("fill_judge_aside")
        return self.frontend_internals.fill_judge_aside(stop)

    def index_status(self) -> dict[str, Any]:
        """Deprecated: :meth:`vault.frontend_internals.index_status <memkit.search.Serving.index_status>`."""
        _deprecated("index_status")
        return self.frontend_internals.index_status()

    def write_locked(self) -> bool:
        """Deprecated: :meth:`vault.frontend_internals.write_locked <memkit.search.Serving.write_locked>`."""
        _deprecated("write_locked")
        return self.frontend_internals.write_locked()
