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
from .session_format import SessionMessage, locate_row, message_rows
from .sessions import Sessions
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
    """Searches the messages of ``sessions`` with ``embedder`` (None: by words only).

    Every file's rows are joined into one matrix and one term -> rows map, rebuilt when a file
    changed (only the changed files are parsed and embedded again), so a search is one matrix
    product plus a count of the query's terms."""

    def __init__(self, sessions: Sessions, embedder: _Embedder | None) -> None:
        self.sessions = sessions
        self.embedder = embedder
        self._files: dict[str, _FileRows] = {}
        self._parsed: dict[str, tuple[tuple[int, int, int], Any]] = {}  #: file -> (stamp, Session) of hits shown
        self._joined: tuple[tuple[tuple[str, tuple[int, int, int]], ...], list[tuple[Path, int]], np.ndarray | None,
                            dict[str, np.ndarray]] | None = None

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

    def _join(self, paths: list[Path]) -> tuple[list[tuple[Path, int]], np.ndarray | None, dict[str, np.ndarray]]:
        """(row -> (file, line), the rows' vectors, term -> rows) of ``paths``, rebuilt when a file changed."""
        files = [(p, self._rows(p)) for p in paths]
        key = tuple((str(p), r.stamp) for p, r in files if r is not None)
        if self._joined is not None and self._joined[0] == key:
            return self._joined[1], self._joined[2], self._joined[3]
        where: list[tuple[Path, int]] = []
        blocks: list[np.ndarray] = []
        postings: dict[str, list[int]] = {}
        for path, rows in files:
            if rows is None or not rows.texts:
                continue
            for line, row_terms in zip(rows.lines, rows.terms):
                for term in row_terms:
                    postings.setdefault(term, []).append(len(where))
                where.append((path, line))
            if rows.vectors is not None:
                blocks.append(rows.vectors)
        matrix = np.vstack(blocks) if blocks and self.embedder is not None else None
        index = {t: np.asarray(rows_of, dtype=np.int64) for t, rows_of in postings.items()}
        self._joined = (key, where, matrix, index)
        return where, matrix, index

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
        paths = self.sessions.paths()
        if session is not None:
            only, _ = self.sessions.find(session)
            paths = [only] if only in paths else []
        where, matrix, index = self._join(paths)
        if not where:
            return []
        wanted = sorted(set(terms(query)))
        lexical = np.zeros(len(where), dtype=np.float32)
        for term in wanted:
            rows_of = index.get(term)
            if rows_of is not None:
                lexical[rows_of] += 1.0
        if wanted:
            lexical /= len(wanted)
        cos = np.zeros(len(where), dtype=np.float32)
        if matrix is not None and self.embedder is not None:
            qvec = np.asarray(self.embedder.embed([query]), dtype=np.float32)[0]
            if np.any(qvec):
                cos = matrix @ qvec
        use_vectors = bool(np.any(cos))
        score = VECTOR_WEIGHT * cos + (1 - VECTOR_WEIGHT) * lexical if use_vectors else lexical
        keep = (lexical > 0) | (cos >= MIN_COSINE)
        candidates = np.flatnonzero(keep)
        order = candidates[np.argsort(-score[candidates], kind="stable")]
        hits: list[SessionHit] = []
        loaded: dict[Path, Any] = {}
        for i in order.tolist():
            if len(hits) >= k:
                break
            path, line = where[i]
            if path not in loaded:
                loaded[path] = self._session(path)
            conv = loaded[path]
            message: SessionMessage | None = locate_row(conv, line) if conv is not None else None
            if message is None or (role and message.role != role) or (since and message.time < since):
                continue
            hits.append(SessionHit(conv.id, conv.file, line, message.time, message.role, message.content,
                                   float(score[i]), float(cos[i]), float(lexical[i]), conv.display_title))
        return hits

    def _session(self, path: Path) -> Any:
        """The parsed session of ``path`` (kept while the file is unchanged), or None."""
        rows = self._files.get(str(path))
        held = self._parsed.get(str(path))
        if rows is not None and held is not None and held[0] == rows.stamp:
            return held[1]
        try:
            conv = self.sessions.load_path(path)
        except MemkitError:
            return None
        if rows is not None:
            self._parsed[str(path)] = (rows.stamp, conv)
        return conv

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
