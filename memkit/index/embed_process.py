"""A large refresh's embedding in a second process, so that it runs beside the parsing and writing.

Python runs one thread at a time (the GIL): an embedding *thread* shares the CPU of the thread that
parses and writes. :class:`EmbedProcess` starts ``python -m memkit.index.embed_process`` (a new
interpreter: no fork of this process, whose tokenizer, SQLite connections and threads would not
survive one), which makes the model again from its folder (:func:`process_spec`) and answers each
batch of texts with its float32 rows. The child's vectors are the ones this process would make:
the same code on the same model files.

A refresh sends its entries' texts as written (:meth:`EmbedProcess.embed_entries`): the child
makes what the model embeds of each (:func:`embed_text`) and, when asked, their search terms
(:func:`entry_terms`): work the parent's thread would otherwise do between its own parsing and
writing (at 100k entries ~1.5 s of ~10), asked for while the child keeps up.

The protocol, over the child's stdin and stdout: a message is 8 bytes of length (little-endian)
and a pickle. The parent sends ``(sys.path, spec)`` once, then batches ``(texts, with_terms)``,
each answered ``("ok", rows, terms)``, ``terms`` each text's terms joined by spaces (None without
``with_terms``), or ``("error", exception)``. The parent ends an idle child with
SIGTERM (a busy one with SIGKILL) and reaps it; the end of stdin (the parent gone) ends it too.
"""
from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
from importlib import import_module
from typing import IO, Any, Sequence

import numpy as np

from ..errors import ModelError
from ..formats.fields import strip_provenance
from ..formats.topic import entry_body
from ..formats.words import terms as text_terms

__all__ = ["EmbedProcess", "process_spec", "usable_cpus", "embed_text", "entry_terms", "joined_terms"]

Spec = tuple[str, str, tuple[Any, ...]]  # (module, class or function, its arguments)
CLOSE_WAIT = 5.0  #: seconds a child that was told to end may take before it is killed


def process_spec(embedder: object) -> Spec | None:
    """How a child process makes ``embedder`` again (its ``process_spec()``), or None: an embedder
    without one (an embedding server, an object of the caller's own) embeds in this process."""
    spec = getattr(embedder, "process_spec", None)
    return spec() if callable(spec) else None


def embed_text(text: str) -> str:
    """What the model embeds of an entry whose text is ``text``: its body (no ``[kind]``, no
    trailing date) without the provenance marker."""
    return strip_provenance(entry_body(text))


def entry_terms(text: str) -> list[str]:
    """The search terms an entry whose text is ``text`` is indexed with (provenance left out)."""
    return text_terms(strip_provenance(text))


def joined_terms(text: str) -> str:
    """:func:`entry_terms` as one string, the terms joined by spaces (a term holds none)."""
    return " ".join(entry_terms(text))


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the OS tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _send(stream: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(8, "little"))
    stream.write(data)
    stream.flush()


def _recv(stream: IO[bytes]) -> Any:
    """The next message, or raises EOFError at the end of the stream."""
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


class EmbedProcess:
    """A child process embedding with the model ``spec`` names (see the module docstring).

    :meth:`embed_entries` is called from one thread at a time (the refresh's embedding worker);
    :meth:`close` from any thread, also while :meth:`embed_entries` waits (it then raises).
    """

    def __init__(self, spec: Spec) -> None:
        """:raises OSError: no interpreter to start (``sys.executable`` empty or missing)."""
        if not sys.executable:
            raise OSError("sys.executable is empty")
        self.proc = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout
        try:
            _send(self._in, (list(sys.path), spec))  # a few kB: fits the pipe while the child starts
        except OSError:
            pass  # the child died at once: the first batch says so

    def embed_entries(self, texts: Sequence[str], with_terms: bool = True) -> tuple[np.ndarray, list[str] | None]:
        """For entries whose texts are ``texts``: the rows of what the model embeds of each
        (:func:`embed_text`) and (``with_terms``) each one's :func:`joined_terms`, made by the child.

        :raises: the child's own exception when its model failed; :class:`ModelError` when the
            child is gone."""
        try:
            _send(self._in, (list(texts), with_terms))
            kind, *value = _recv(self._out)
        except (OSError, EOFError, ValueError):  # ValueError: a pipe closed by close()
            raise ModelError(f"memkit's embedding process ended unexpectedly ({self._status()})") from None
        if kind == "error":
            raise value[0]
        rows, terms = value
        return np.asarray(rows), terms

    def _status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "it stopped answering"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def close(self, kill: bool = False) -> None:
        """End the child and reap it: SIGTERM when it is idle (every answer taken: it ends at once,
        with no teardown to wait for), SIGKILL (``kill``) when it may be mid-batch."""
        proc = self.proc
        if proc.poll() is None:
            if kill:
                proc.kill()
            else:
                proc.terminate()
        for stream in (self._in, self._out):
            try:
                stream.close()
            except OSError:
                pass
        try:
            proc.wait(CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _make(spec: Spec) -> Any:
    module, name, args = spec
    return getattr(import_module(module), name)(*args)


def _error(exc: BaseException) -> BaseException:
    """``exc`` as it can cross to the parent (pickled), else a RuntimeError with its message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # an exception that does not pickle
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def main() -> None:
    """The child: answer batches until the end of stdin (the parent gone) or a SIGTERM (the
    parent done: its default action ends the process at once, without the interpreter's teardown)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which ends this process
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to stderr, not into the answers
    inp = sys.stdin.buffer
    try:
        path, spec = _recv(inp)
    except EOFError:
        return
    sys.path[:] = path
    embedder: Any = None
    failed: BaseException | None = None
    try:
        embedder = _make(spec)
    except Exception as exc:  # every batch answers with it
        failed = _error(exc)
    while True:
        try:
            message = _recv(inp)
        except EOFError:
            return
        if failed is not None:
            _send(out, ("error", failed))
            continue
        try:
            texts, with_terms = message  # entries' texts as written
            rows = np.ascontiguousarray(embedder.embed([embed_text(t) for t in texts]), dtype=np.float32)
            terms = [joined_terms(t) for t in texts] if with_terms else None
        except Exception as exc:
            _send(out, ("error", _error(exc)))
            continue
        _send(out, ("ok", rows, terms))


if __name__ == "__main__":
    main()
