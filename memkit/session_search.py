"""Search across past conversations (``memkit search --sessions``): a first working version that
scans every message of every session, by meaning (the vault's embedder) and by words.

Each session file's messages are rows ``(line, text)`` (:func:`memkit.sessions.message_rows`);
their vectors and terms are kept in memory per file, keyed by the file's stat, so a long-lived
process (the MCP server) embeds a file again only when it changed. A row's score is
``0.65 * cosine + 0.35 * (share of the query's terms it holds)``; rows that share no term and
whose cosine is below :data:`MIN_COSINE` are not returned.

The seam for the search index (it will index these rows beside the topics' entries): index
``message_rows(text)`` of every ``sessions/*.md`` file, and map a hit ``(path, line)`` back with
:meth:`SessionSearch.locate`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

import numpy as np

from .errors import InvalidValue, MemkitError
from .sessions import SessionMessage, Sessions, locate_row, message_rows
from .text import terms

__all__ = ["SessionHit", "SessionSearch", "VECTOR_WEIGHT", "MIN_COSINE"]

VECTOR_WEIGHT = 0.65
MIN_COSINE = 0.35  #: a row sharing no word with the query needs at least this cosine
MAX_ROW_CHARS = 2000  #: a message is embedded and matched up to this length


class _Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


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


@dataclass
class _FileRows:
    stamp: tuple[int, int, int]
    lines: list[int]
    texts: list[str]
    terms: list[frozenset[str]]
    vectors: np.ndarray | None


class SessionSearch:
    """Searches the messages of ``sessions`` with ``embedder`` (None: by words only)."""

    def __init__(self, sessions: Sessions, embedder: _Embedder | None) -> None:
        self.sessions = sessions
        self.embedder = embedder
        self._files: dict[str, _FileRows] = {}

    def _rows(self, path: Path) -> _FileRows | None:
        try:
            st = os.stat(path, follow_symlinks=False)
        except OSError:
            return None
        stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
        held = self._files.get(str(path))
        if held is not None and held.stamp == stamp:
            return held
        try:
            rows = message_rows(self.sessions.text(path))
        except MemkitError:
            return None
        texts = [t[:MAX_ROW_CHARS] for _, t in rows]
        vectors = None
        if self.embedder is not None and texts:
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
        held = _FileRows(stamp, [line for line, _ in rows], texts, [frozenset(terms(t)) for t in texts], vectors)
        self._files[str(path)] = held
        return held

    def search(self, query: str, *, k: int = 10, session: str | None = None, role: str | None = None,
               since: str | None = None) -> list[SessionHit]:
        """The ``k`` best messages for ``query``, best first.

        :param session: only this session (an id or a unique prefix); :param role: only this role;
        :param since: only messages at or after this day or time (ISO).
        """
        query = query.strip()
        if not query:
            raise InvalidValue("the query is empty")
        if k < 1:
            raise InvalidValue(f"k must be at least 1, got {k}")
        if session is not None:
            path, archived = self.sessions.find(session)
            paths = [(path, archived)]
        else:
            paths = [(p, False) for p in self.sessions.paths()]
        wanted = frozenset(terms(query))
        qvec = None
        if self.embedder is not None:
            qvec = np.asarray(self.embedder.embed([query]), dtype=np.float32)[0]
            if not np.any(qvec):
                qvec = None
        found: list[tuple[float, float, float, Path, bool, int]] = []
        for path, archived in paths:
            rows = self._rows(path)
            if rows is None or not rows.texts:
                continue
            cos = rows.vectors @ qvec if rows.vectors is not None and qvec is not None else np.zeros(len(rows.texts))
            for i, row_terms in enumerate(rows.terms):
                lexical = len(wanted & row_terms) / len(wanted) if wanted else 0.0
                c = float(cos[i])
                if lexical == 0.0 and c < MIN_COSINE:
                    continue
                score = VECTOR_WEIGHT * c + (1 - VECTOR_WEIGHT) * lexical if qvec is not None else lexical
                found.append((score, c, lexical, path, archived, rows.lines[i]))
        found.sort(key=lambda f: f[0], reverse=True)
        hits: list[SessionHit] = []
        loaded: dict[Path, Any] = {}
        for score, c, lexical, path, archived, line in found:
            if len(hits) >= k:
                break
            if path not in loaded:
                try:
                    loaded[path] = self.sessions.load_path(path, archived)
                except MemkitError:
                    loaded[path] = None
            conv = loaded[path]
            message: SessionMessage | None = locate_row(conv, line) if conv is not None else None
            if message is None or (role and message.role != role) or (since and message.time < since):
                continue
            hits.append(SessionHit(conv.id, conv.file, line, message.time, message.role, message.content, score, c,
                                   lexical, conv.display_title))
        return hits

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
