"""Search across past conversations (``memkit search --sessions``) with the vault's index.

Every message of every ``sessions/*.md`` file is a row of an index of its own (the same SQLite
file, ``.npy`` matrix and ranker as the topics: :class:`memkit.index.sources.SessionSource`, files
``<model>-<dim>-sessions.*``), written as ``role: text`` so that conversations are ranked as
conversations are (speakers, a word weight of 0.6). A search refreshes that index (only the
session files that changed are read again; a message appended is embedded alone), asks the
:class:`memkit.search.searcher.Searcher` over it, and maps each hit ``(file, line)`` back to its session
and message (:meth:`SessionSearch.locate`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import MemkitError, TopicNotFound
from ..formats.session import SUMMARY, locate_row
from ..search import Searcher
from .folder import Sessions

__all__ = ["SessionHit", "SessionSearch"]


@dataclass(frozen=True)
class SessionHit:
    """A message found in a past conversation."""

    session: str  #: the session id
    file: str
    line: int  #: the line of the message's heading
    time: str
    role: str
    text: str  #: the message's content
    score: float
    cosine: float
    lexical: float
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "title": self.title, "file": self.file, "line": self.line,
                "time": self.time, "role": self.role, "text": self.text, "score": round(self.score, 4),
                "cosine": round(self.cosine, 4), "lexical": round(self.lexical, 4)}


class SessionSearch:
    """Searches the messages of ``sessions`` with ``searcher``, a :class:`memkit.search.searcher.Searcher`
    over the sessions' index."""

    def __init__(self, sessions: Sessions, searcher: Searcher) -> None:
        self.sessions = sessions
        self.searcher = searcher
        self._parsed: dict[str, tuple[tuple[int, int, int], Any]] = {}  #: file -> (stamp, Session) of hits shown

    def search(self, query: str, *, k: int = 10, session: str | None = None, role: str | None = None,
               since: str | None = None, exact: bool = False) -> list[SessionHit]:
        """The ``k`` best messages for ``query``, best first.

        :param session: only this session (an id or a unique prefix); :param role: only this role;
        :param since: only messages at or after this day or time (ISO).
        """
        wanted = k if since is None or len(since) <= 10 else 3 * k  # a time finer than a day: checked after
        q = self.searcher.query(query, k=wanted, kind=role, since=since[:10] if since else None,
                                subtopics=False,  # "chat" is not "chat-2"
                                judge=False, weak=0)  # messages: the static stage (the judge is calibrated on memories)
        if session is not None:
            path, archived = self.sessions.find(session, exact=exact)
            if archived:
                return []  # pruned sessions are not searched
            q = replace(q, topic=path.stem)
        try:
            hits = self.searcher.find(q, refresh=True)  # a stat a file: a conversation grows between two searches
        except TopicNotFound:  # that session has no message to search
            return []
        out: list[SessionHit] = []
        for hit in hits:
            found = self._hit(self.sessions.root / hit.file, hit.line)
            if found is None or (since and found.time < since):
                continue
            out.append(SessionHit(found.session, found.file, found.line, found.time, found.role, found.text,
                                  hit.score, hit.cosine, hit.lexical, found.title))
            if len(out) >= k:
                break
        return out

    def _hit(self, path: Path, line: int) -> SessionHit | None:
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        held = self._parsed.get(str(path))
        if held is None or held[0] != stamp:
            try:
                held = (stamp, self.sessions.load_path(path))
            except MemkitError:
                return None
            self._parsed[str(path)] = held
        conv = held[1]
        message = locate_row(conv, line)
        if message is not None:
            return SessionHit(conv.id, conv.file, line, message.time, message.role, message.content, 0.0, 0.0, 0.0,
                              conv.display_title)
        stage = conv.stage_block  # an aged conversation: its summary or core memory
        if stage is not None and stage.line == line:
            return SessionHit(conv.id, conv.file, line, stage.time, SUMMARY, stage.text, 0.0, 0.0, 0.0,
                              conv.display_title)
        return None

    def locate(self, path: Path, line: int) -> SessionHit | None:
        """An index row ``(path, line)`` back to its session and message (None: the file changed)."""
        try:
            conv = self.sessions.load_path(path, path.parent.name == "archive")
        except MemkitError:
            return None
        message = locate_row(conv, line)
        if message is None:
            return None
        return SessionHit(conv.id, conv.file, line, message.time, message.role, message.content, 0.0, 0.0, 0.0,
                          conv.display_title)
