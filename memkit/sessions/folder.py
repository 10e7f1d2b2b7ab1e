"""The vault's ``sessions/`` folder: conversation sessions created, read, listed, appended to, deleted
and pruned, one file each (the format: :mod:`memkit.formats.session`).

- Every message is one ``O_APPEND`` write, so writers appending at once lose nothing; a session
  file is created atomically and never replaced or rewritten by memkit, except when it ages
  (:mod:`memkit.sessions.aging`): its raw conversation is first kept in ``sessions/archive/raw/``,
  then the file is replaced atomically holding its lock, which every append takes too (shared),
  so a message saved meanwhile lands in the new file.
- Nothing is followed out of the vault: a ``sessions/`` that is a symlink leading outside, and a
  session file that is a symlink, are refused; a ``sessions/archive/`` or ``archive/raw/`` that
  leads outside is never written (aging and prune refuse it) nor read (a warning says so).
- Listing caches what it read of each file by its stat in ``.memkit/session-list.json``.
- Pruned sessions move to ``sessions/archive/`` (tracked, readable, restorable with ``mv``).

A helper-layer module: files only (no index, no LLM).
"""
from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import secrets
import stat
import time
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..base.fsutil import (
    TEMP_RE,
    FileChanged,
    NotRegularFile,
    append_guarded,
    atomic_write,
    describe_os_error,
    read_head,
    read_regular,
    replace_guarded,
    stamp_of,
)
from ..base.limits import MAX_SESSION_MESSAGE_CHARS
from ..config import Config
from ..errors import InvalidValue, MemkitError, SessionAmbiguous, SessionConflict, SessionNotFound
from ..formats.plain import check_plain, check_plain_data
from ..formats.session import (
    ARCHIVE_DIR,
    MAX_SESSION_BYTES,
    NAME_RE,
    RAW_DIR,
    SESSIONS_DIR,
    PruneReport,
    Session,
    SessionInfo,
    SessionMessage,
    SessionSummary,
    check_role,
    check_session_id,
    format_time,
    now_utc,
    parse_session,
    parse_session_tail,
    parse_time,
    render_header,
    render_message,
    render_summary,
    time_key,
)

log = logging.getLogger("memkit")

__all__ = ["SESSIONS_DIR", "Sessions"]

LIST_CACHE = "session-list.json"  #: under .memkit/: what listing read of each file, by its stat
LIST_FORMAT = 2  #: the listing cache's format (2: an aged session counts the messages its stage condensed)


# ---- the folder --------------------------------------------------------------------------------

class Sessions:
    """The vault's ``sessions/`` folder: create, read, list, append, delete, prune.

    :param root: the vault folder; :param state_dir: its ``.memkit/`` (the listing cache);
    :param config: its settings (``expire: conversation``).
    """

    def __init__(self, root: Path, state_dir: Path, config: Config) -> None:
        self.root = root
        self.dir = root / SESSIONS_DIR
        self.archive_dir = self.dir / ARCHIVE_DIR
        self.state_dir = state_dir
        self.config = config
        self._listing: dict[str, tuple[tuple[int, int, int], SessionInfo]] | None = None
        self._said: set[str] = set()  #: the warnings logged (each once per object)

    def _warn_once(self, message: str) -> None:
        """Log a warning once per object (a file read again is not reported again)."""
        if message not in self._said:
            if len(self._said) < 10_000:
                self._said.add(message)
            log.warning("%s", message)

    def _warned(self, session: Session) -> Session:
        """``session``, its :attr:`Session.problems` logged (each once, with its file and line)."""
        for problem in session.problems:
            self._warn_once(f"{session.file} {problem}")
        return session

    # -- paths
    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def _folder_ok(self, folder: Path) -> bool:
        """A sessions folder that is a real folder inside the vault (never followed out of it)."""
        try:
            st = os.lstat(folder)
        except FileNotFoundError:
            return False
        if stat.S_ISLNK(st.st_mode):
            try:
                folder.resolve().relative_to(self.root.resolve())
            except (ValueError, OSError, RuntimeError):
                raise MemkitError(f"{self.rel(folder)}/ is a symlink to a folder outside the vault; "
                                  f"memkit does not follow it") from None
            return folder.is_dir()
        return stat.S_ISDIR(st.st_mode)

    def _outside(self, folder: Path) -> bool:
        """Whether ``folder`` (existing or not) leads out of the vault through a symlink."""
        try:
            folder.resolve().relative_to(self.root.resolve())
            return False
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return True

    def _refuse_outside(self, folder: Path) -> None:
        """:raises MemkitError: ``folder`` (one of sessions/'s, to be written) leads out of the vault."""
        if self._outside(folder):
            link = next((f for f in (self.dir, self.archive_dir, self.archive_dir / RAW_DIR)
                         if f.is_symlink() and self._outside(f)), folder)
            raise MemkitError(f"{self.rel(link)}/ is a symlink to a folder outside the vault; memkit does not "
                              f"follow it (make it a real folder inside the vault)")

    def _files(self, archived: bool = False) -> list[os.DirEntry[str]]:
        folder = self.archive_dir if archived else self.dir
        if not self._folder_ok(self.dir):
            return []
        if archived:
            if self._outside(folder):  # not followed: the live sessions still work
                self._warn_once(f"{self.rel(folder)}/ is a symlink to a folder outside the vault; not followed")
                return []
            if not self._folder_ok(folder):
                return []
        try:
            with os.scandir(folder) as it:
                return sorted((e for e in it if NAME_RE.match(e.name) and not e.name.startswith(".")),
                              key=lambda e: e.name)
        except OSError as exc:
            raise MemkitError(f"{self.rel(folder)}/: cannot list: {exc.strerror or exc}") from None

    def find(self, session: str, *, exact: bool = False) -> tuple[Path, bool]:
        """The file of session ``session`` (its id, a unique prefix of it unless ``exact``, or its
        file name) and whether it is archived. :raises SessionNotFound: none; :raises SessionAmbiguous:
        several match."""
        given = session.strip().rsplit("/", 1)[-1]
        raw = given[:-3] if given.endswith(".md") else given
        if not raw or ".." in raw or "\\" in raw or "\0" in raw:
            raise SessionNotFound(f"no session {session!r}")
        names = {raw, given}  # a file name, or an id ending in .md (made before such ids were refused)
        same: list[tuple[Path, bool]] = []
        prefix: list[tuple[Path, bool]] = []
        for archived in (False, True):
            for entry in self._files(archived):
                m = NAME_RE.match(entry.name)
                assert m is not None
                sid, stem = m.group(2), entry.name[:-3]
                if sid in names or stem in names:
                    same.append((Path(entry.path), archived))
                elif not exact and sid.startswith(raw):
                    prefix.append((Path(entry.path), archived))
            if same:
                break
        found = same or prefix
        if len(found) == 1:
            return found[0]
        if not found:
            raise SessionNotFound(f"no session {session!r} in {SESSIONS_DIR}/ (`memkit session list` shows them)")
        listed = ", ".join(NAME_RE.match(p.name).group(2) for p, _ in found[:5])  # type: ignore[union-attr]
        raise SessionAmbiguous(f"session {session!r} is ambiguous: {listed}{'…' if len(found) > 5 else ''}")

    # -- reading
    def _read_bytes(self, path: Path) -> tuple[bytes, os.stat_result]:
        """A session file's bytes (a regular file, never through a symlink) and its stat."""
        try:
            if path.is_symlink():
                raise NotRegularFile("is a symlink; memkit does not follow it")
            return read_regular(path, MAX_SESSION_BYTES)
        except NotRegularFile as exc:
            raise MemkitError(f"{self.rel(path)} {exc}") from None
        except FileNotFoundError:
            raise SessionNotFound(f"{self.rel(path)} is gone") from None
        except OSError as exc:
            raise MemkitError(f"{self.rel(path)}: cannot read: {exc.strerror or exc}") from None

    def _read(self, path: Path) -> tuple[str, os.stat_result]:
        data, st = self._read_bytes(path)
        try:
            return data.decode("utf-8"), st
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise MemkitError(f"{self.rel(path)} line {line}: not valid UTF-8") from None

    def load(self, session: str, *, exact: bool = False) -> Session:
        """One session, parsed (``exact``: named by its id or file name, never a prefix).
        :raises SessionNotFound: no such session."""
        path, archived = self.find(session, exact=exact)
        return self.load_path(path, archived)

    def load_path(self, path: Path, archived: bool = False) -> Session:
        text, _ = self._read(path)
        m = NAME_RE.match(path.name)
        return self._warned(parse_session(text, self.rel(path), m.group(2) if m else path.stem, archived))

    def load_tail(self, path: Path, chars: int, archived: bool = False) -> tuple[Session, int]:
        """The session of ``path`` with only its newest messages parsed (see
        :func:`parse_session_tail`), and how many earlier ones were not."""
        text, _ = self._read(path)
        m = NAME_RE.match(path.name)
        session, earlier = parse_session_tail(text, self.rel(path), m.group(2) if m else path.stem, chars, archived)
        return self._warned(session), earlier

    def each(self, skipped: str) -> Iterator[tuple[Path, Session]]:
        """Every session file with its session, parsed; one that cannot be read is logged
        (``"<why>; <skipped>"``) and skipped."""
        for path in self.paths():
            try:
                yield path, self.load_path(path)
            except MemkitError as exc:
                log.warning("%s; %s", exc, skipped)

    def load_newest(self, path: Path, tokens: int, archived: bool = False) -> tuple[Session, int]:
        """:meth:`load_tail` reading enough of the file's end for ``tokens`` tokens of messages (~4
        characters each): a long session loads as fast as a short one."""
        chars = tokens * 5 + 4096
        while True:
            conv, earlier = self.load_tail(path, chars, archived)
            if not earlier or sum(len(m.content) + 16 for m in conv.messages) >= tokens * 4:
                return conv, earlier
            chars *= 4

    def text(self, path: Path) -> str:
        """A session file's text (checked: a regular file inside the vault)."""
        return self._read(path)[0]

    def paths(self, archived: bool = False) -> list[Path]:
        """Every session file (sorted by name: by creation day)."""
        return [Path(e.path) for e in self._files(archived)]

    def list(self, archived: bool = False) -> list[SessionInfo]:
        """Every session's listing line, most recently updated first. What is read of each file is
        cached by its stat (size, mtime, inode), in memory and in ``.memkit/session-list.json``,
        so listing reads only the files that changed."""
        cache = self._load_listing()
        out: list[SessionInfo] = []
        changed = False
        seen: set[str] = set()
        for entry in self._files(archived):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                log.warning("%s is not a regular file; skipped", self.rel(Path(entry.path)))
                continue
            key = f"{'archive/' if archived else ''}{entry.name}"
            seen.add(key)
            stamp = (st.st_size, st.st_mtime_ns, st.st_ino)
            held = cache.get(key)
            if held is not None and held[0] == stamp:
                out.append(held[1])
                continue
            try:
                info = self.load_path(Path(entry.path), archived).info(st.st_size)
            except MemkitError as exc:  # one bad file never hides the others
                log.warning("%s; skipped", exc)
                continue
            cache[key] = (stamp, info)
            changed = True
            out.append(info)
        gone = [k for k in cache if k.startswith("archive/") == archived and k not in seen]
        for key in gone:  # deleted, pruned or renamed since: forgotten
            del cache[key]
        if changed or gone:
            self._save_listing(cache)
        out.sort(key=lambda i: (time_key(i.updated), i.id), reverse=True)
        return out

    def _load_listing(self) -> dict[str, tuple[tuple[int, int, int], SessionInfo]]:
        if self._listing is not None:
            return self._listing
        self._listing = {}
        path = self.state_dir / LIST_CACHE
        try:
            data = json.loads(read_head(path, MAX_SESSION_BYTES).decode("utf-8")) if path.is_file() else {}
            if data.get("format") != LIST_FORMAT:  # written by an older memkit: counted otherwise
                data = {}
            for key, (stamp, info) in data.get("files", {}).items():
                self._listing[key] = ((int(stamp[0]), int(stamp[1]), int(stamp[2])), SessionInfo(**info))
        except (OSError, ValueError, TypeError, KeyError, AttributeError, NotRegularFile):
            self._listing = {}  # derived data: rebuilt when unreadable
        return self._listing

    def _save_listing(self, cache: Mapping[str, tuple[tuple[int, int, int], SessionInfo]]) -> None:
        data = {"format": LIST_FORMAT, "files": {k: [list(stamp), info.to_dict()] for k, (stamp, info) in cache.items()}}
        with contextlib.suppress(OSError):
            if not self.state_dir.exists():
                self.state_dir.mkdir()
            if self.state_dir.is_dir() and not self.state_dir.is_symlink():
                atomic_write(self.state_dir / LIST_CACHE, json.dumps(data, ensure_ascii=False))

    # -- writing
    def _ensure_dir(self) -> Path:
        if not self._folder_ok(self.dir):
            try:
                self.dir.mkdir(exist_ok=True)
            except OSError as exc:
                raise describe_os_error(exc, f"{SESSIONS_DIR}/") from exc
            if not self._folder_ok(self.dir):
                raise MemkitError(f"{SESSIONS_DIR} exists and is not a folder; memkit will not write sessions there")
        return self.dir

    def create(self, *, session_id: str | None = None, title: str | None = None, system: str | None = None,
               user: str | None = None, tags: Sequence[str] = (), metadata: Mapping[str, Any] | None = None,
               now: datetime | None = None, messages: Sequence[SessionMessage] = (),
               imported: datetime | None = None) -> Session:
        """Create ``sessions/<day>-<id>.md`` atomically (never replacing a file), holding
        ``messages`` from the start (an import: a kill leaves no session or the whole one);
        ``imported``: when it was imported (the header's ``imported:``, where idleness starts).

        :raises InvalidValue: a bad id; SessionConflict: the id is taken.
        """
        when = now_utc(now)
        for value, what in ((title, "the session's title"), (system, "the system prompt"), (user, "the session's user"),
                            *((tag, "a tag") for tag in tags)):
            if value is not None:
                check_plain(value, what)  # plain text only in the header (memkit.formats.plain)
        check_plain_data(metadata, "the session's metadata")
        for m in messages:
            check_plain(m.content, "a message")
            if m.name is not None:
                check_plain(m.name, "a message's name")
        folder = self._ensure_dir()
        title, system, messages = self.redacted(title, system, messages)  # never stored (docs/privacy.md)
        hide = self.config.redact.apply
        user, tags = (hide(user).text if user else user), [hide(tag).text for tag in tags]
        metadata = _hidden(metadata, lambda text: hide(text).text) if metadata else metadata
        given = session_id is not None
        for _ in range(8):
            sid = check_session_id(session_id) if given else secrets.token_hex(4)  # type: ignore[arg-type]
            try:
                path, _ = self.find(sid, exact=True)  # "imp" is free while "imp2" exists
                if given:
                    raise SessionConflict(f"session {sid} exists already ({self.rel(path)})")
                continue
            except SessionNotFound:
                pass
            path = folder / f"{when.date().isoformat()}-{sid}.md"
            text = render_header(sid, format_time(when), title=title, system=system, user=user, tags=tags,
                                 metadata=metadata, imported=format_time(imported) if imported else None
                                 ) + "".join(render_message(m) for m in messages)
            if _create_exclusive(path, text.encode("utf-8", errors="surrogatepass")):
                return parse_session(text, self.rel(path), sid)
            if given:
                raise SessionConflict(f"session {sid} exists already ({self.rel(path)})")
        raise MemkitError("could not pick a free session id")  # pragma: no cover - 8 collisions of 32 bits

    def redacted(self, title: str | None, system: str | None, messages: Sequence[SessionMessage]
                 ) -> tuple[str | None, str | None, builtins.list[SessionMessage]]:
        """A conversation's title, system prompt and messages with their secrets replaced by
        ``[redacted]`` (memkit.yaml's ``redact:``); each message says how many left it."""
        apply = self.config.redact.apply
        title, system = (apply(t).text if t else t for t in (title, system))
        out = []
        for m in messages:
            hidden = apply(m.content)
            out.append(replace(m, content=hidden.text, redacted=hidden.count) if hidden.count else m)
        return title, system, out

    def append(self, session: str, role: str, content: str, *, important: bool = False, name: str | None = None,
               now: datetime | None = None, time: str | None = None, exact: bool = False) -> SessionMessage:
        """Append one message to a session with a single ``O_APPEND`` write.

        :param time: the message's own time (an import); default ``now``.
        :param exact: ``session`` is the id or file name, never a prefix of another's.
        :raises SessionNotFound, InvalidValue: no such session, a bad role, a message over the limit.
        """
        path, archived = self.find(session, exact=exact)
        return self.append_path(path, role, content, important=important, name=name, now=now, time=time,
                                archived=archived)

    def append_path(self, path: Path, role: str, content: str, *, important: bool = False, name: str | None = None,
                    now: datetime | None = None, time: str | None = None, archived: bool = False
                    ) -> SessionMessage:
        if archived:
            raise SessionConflict(f"{self.rel(path)} is archived (pruned): move it back to {SESSIONS_DIR}/ to continue it")
        hidden = self.config.redact.apply(content) if isinstance(content, str) else None  # docs/privacy.md
        message = self.message(role, hidden.text if hidden else content, important=important, name=name, now=now,
                               time=time)
        if hidden and hidden.count:
            message = replace(message, redacted=hidden.count)
        self.append_raw(path, [render_message(message)])
        return message

    @staticmethod
    def message(role: str, content: str, *, important: bool = False, name: str | None = None,
                now: datetime | None = None, time: str | None = None) -> SessionMessage:
        """A message checked and stamped (not written)."""
        role = check_role(role)
        if not isinstance(content, str):
            raise InvalidValue("a message's content must be text")
        if len(content) > MAX_SESSION_MESSAGE_CHARS:
            raise InvalidValue(f"the message is {len(content):,} characters; the limit is {MAX_SESSION_MESSAGE_CHARS:,}")
        check_plain(content, "the message")  # no NUL, ESC or BEL in the file (memkit.formats.plain)
        if name is not None:
            check_plain(name, "a message's name")
            name = " ".join(name.split()).replace("·", "-") or None
            if name is not None and len(name) > 80:
                raise InvalidValue("a message's name is at most 80 characters")
        if time is not None:
            try:
                stamp = format_time(parse_time(time))
            except ValueError:
                raise InvalidValue(f"invalid time {time!r}: use ISO 8601 (2026-11-24T10:03:12Z)") from None
        else:
            stamp = format_time(now_utc(now))
        return SessionMessage(role, content.strip("\r\n"), stamp, important, name)

    def append_raw(self, path: Path, blocks: Iterable[str]) -> None:
        """Append rendered blocks in one ``O_APPEND`` write (never through a symlink)."""
        data = "".join(blocks).encode("utf-8", errors="surrogatepass")
        if not data:
            return
        try:
            if path.is_symlink():
                raise NotRegularFile("is a symlink; memkit does not follow it")
            self._drop_cut_heading(path)
            append_guarded(path, lambda last: data if last in (b"", b"\n") else b"\n" + data)
        except NotRegularFile as exc:
            raise MemkitError(f"{self.rel(path)} {exc}; memkit will not write to it") from None
        except FileNotFoundError:
            raise SessionNotFound(f"{self.rel(path)} is gone") from None
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc

    def _drop_cut_heading(self, path: Path) -> None:
        """A file that a write cut short in a heading (its last line ``### assistant · …`` with
        no newline: a message never written, which a read leaves out) loses that heading before
        anything is appended after it: else, no longer last, it reads as an empty message."""
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 512))
                tail = f.read()
        except OSError:
            return  # the append says what is wrong
        if not tail or tail.endswith(b"\n") or not tail.rsplit(b"\n", 1)[-1].startswith(b"### "):
            return
        base, stamp = self.read_for_rewrite(path)
        text = base.decode("utf-8", errors="surrogatepass")
        cut = text.rfind("\n") + 1
        if cut and not text.endswith("\n") and text.startswith("### ", cut):
            self.rewrite(path, text[:cut].rstrip("\r\n") + "\n", base, stamp)
            log.info("%s: a heading cut short at its end (no message under it) removed", self.rel(path))

    # -- aging (memkit.sessions.aging): the raw conversation kept, the file rewritten
    def read_for_rewrite(self, path: Path) -> tuple[bytes, tuple[int, int, int]]:
        """A session file's bytes and stamp, for :meth:`rewrite`."""
        data, st = self._read_bytes(path)
        return data, stamp_of(st)

    def rewrite(self, path: Path, data: str, base: bytes, stamp: tuple[int, int, int]) -> None:
        """Replace a session file atomically with ``data`` (computed from ``base``), holding the
        file's lock: messages appended meanwhile are carried into the new file, never lost.

        :raises MemkitError: the file was edited (not only appended to) since it was read."""
        try:
            replace_guarded(path, data.encode("utf-8", errors="surrogatepass"), base, stamp)
        except FileChanged as exc:
            raise MemkitError(f"{self.rel(path)}: {exc}") from None
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc
        self._listing = None

    def raw_path(self, path: Path) -> Path:
        """Where the raw conversation of the session file ``path`` is kept once it ages:
        ``sessions/archive/raw/<its name>``."""
        return self.archive_dir / RAW_DIR / path.name

    def raw_file(self, path: Path) -> Path | None:
        """The raw conversation of the session file ``path`` when it has one inside the vault
        (one reached through a symlink out of it is not read: a warning says so)."""
        raw = self.raw_path(path)
        if self._outside(raw.parent):
            self._warn_once(f"{self.rel(raw.parent)}/ leads outside the vault through a symlink; not read")
            return None
        return raw if raw.is_file() else None

    def keep_raw(self, path: Path, base: bytes, messages: Sequence[SessionMessage]) -> Path:
        """Keep the raw conversation before ``path`` is compressed: the first time, its file as it
        is (``base``, byte for byte); later, the ``messages`` the raw file lacks, appended. Returns
        the raw file."""
        raw = self.raw_path(path)
        self._refuse_outside(raw.parent)
        try:
            raw.parent.mkdir(parents=True, exist_ok=True)
            if not raw.exists() and _create_exclusive(raw, base):
                return raw
            kept = {(m.role, m.time, m.content) for m in self.load_path(raw, archived=True).messages}
            self.append_raw(raw, [render_message(m) for m in messages if (m.role, m.time, m.content) not in kept])
        except OSError as exc:
            raise describe_os_error(exc, self.rel(raw)) from exc
        return raw

    def sweep_temp(self, older_than_s: float = 3600.0) -> builtins.list[str]:
        """Remove the temp files a killed writer left in ``sessions/``, ``sessions/archive/`` and
        ``sessions/archive/raw/`` (memkit's own ``.NAME.md.XXXXXXXX.tmp``, older than
        ``older_than_s``: a live writer's is seconds old); never through a link out of the vault.
        Returns what was removed, relative to the vault."""
        gone: builtins.list[str] = []
        limit = time.time() - older_than_s
        for folder in (self.dir, self.archive_dir, self.archive_dir / RAW_DIR):
            if not folder.is_dir() or self._outside(folder):
                continue
            for entry in os.scandir(folder):
                m = TEMP_RE.match(entry.name)
                if not m or ".md" not in m.group(1) or not entry.is_file(follow_symlinks=False):
                    continue
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_mtime < limit:
                        os.unlink(entry.path)
                        gone.append(self.rel(Path(entry.path)))
        for rel in gone:
            log.info("%s: a temp file a killed writer left; removed", rel)
        return gone

    def load_raw(self, session: str) -> Session:
        """A session's whole conversation: once it aged, its raw file's messages and those saved
        since (in time order; the raw file's header); else the session as it is."""
        path, archived = self.find(session)
        return self.load_raw_path(path, archived)

    def load_raw_path(self, path: Path, archived: bool = False) -> Session:
        """:meth:`load_raw` of the session file ``path``."""
        live = self.load_path(path, archived)
        raw = self.raw_file(path)
        if raw is None:
            return live
        whole = self.load_path(raw, archived=True)
        kept = {(m.role, m.time, m.content) for m in whole.messages}
        whole.messages += [m for m in live.messages if (m.role, m.time, m.content) not in kept]
        whole.messages.sort(key=lambda m: time_key(m.time))
        whole.archived = archived
        return whole

    def add_summary(self, path: Path, summary: SessionSummary) -> None:
        """Cache a summary in the session's file (appended; see the module docstring), its secrets
        replaced by ``[redacted]`` (an LLM wrote it: docs/privacy.md)."""
        hidden = self.config.redact.apply(summary.text)
        self.append_raw(path, [render_summary(replace(summary, text=hidden.text) if hidden.count else summary)])

    def delete(self, session: str) -> SessionInfo:
        """Delete a session's file for good (the person asked). Returns what it was."""
        path, archived = self.find(session)
        info = self.load_path(path, archived).info(path.stat().st_size)
        try:
            path.unlink()
        except OSError as exc:
            raise describe_os_error(exc, self.rel(path)) from exc
        return info

    def prune(self, days: int | None = None, *, delete: bool = False, dry_run: bool = False,
              now: datetime | None = None) -> PruneReport:
        """Archive (move to ``sessions/archive/``) or delete the sessions idle (their last
        message, or their import when later: :attr:`Session.idle_since`) for longer than ``days`` (default: memkit.yaml's ``expire: conversation``, 30 days; ``never``
        prunes nothing)."""
        if days is None:
            days = self.config.expire.get("conversation")
        report = PruneReport(days, "deleted" if delete else "archived", [], dry_run)
        if days is None:
            return report
        if days < 0:
            raise InvalidValue(f"days must be 0 or more, got {days}")
        cutoff = now_utc(now) - timedelta(days=days)
        for path, session in self.each("not pruned"):
            if time_key(session.idle_since) >= cutoff:
                continue
            info = session.info(path.stat().st_size)
            if not dry_run:
                try:
                    if delete:
                        path.unlink()
                    else:
                        self._refuse_outside(self.archive_dir)
                        self.archive_dir.mkdir(exist_ok=True)
                        target = self.archive_dir / path.name
                        if target.exists():
                            raise MemkitError(f"{self.rel(target)} exists already; {self.rel(path)} not archived")
                        os.rename(path, target)
                        info = SessionInfo(**dict(info.to_dict(), file=self.rel(target), archived=True))
                except OSError as exc:
                    raise describe_os_error(exc, self.rel(path)) from exc
            report.sessions.append(info)
        return report


def _hidden(value: Any, hide: Any) -> Any:
    """``value`` (metadata: mappings, lists, texts) with ``hide`` applied to every text in it."""
    if isinstance(value, str):
        return hide(value)
    if isinstance(value, Mapping):
        return {k: _hidden(v, hide) for k, v in value.items()}
    return [_hidden(v, hide) for v in value] if isinstance(value, (list, tuple)) else value


def _create_exclusive(path: Path, data: bytes) -> bool:
    """Write ``path`` atomically only if it does not exist (a temp file hard-linked into place);
    False when it exists."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        atomic_write(tmp, data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: exclusive create, then the bytes
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
