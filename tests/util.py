from __future__ import annotations

from pathlib import Path


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


class FakeEmbedder:
    """Deterministic bag-of-words embedder (llm's EmbedDemo idea): each word a fixed random unit
    vector seeded by its crc32; a text is their normalised mean. Shared words -> similar vectors."""

    name = "fake-bow"
    dim = 32

    def __init__(self) -> None:
        self.calls: list[int] = []

    def _word(self, word: str):
        import zlib

        import numpy as np

        rng = np.random.default_rng(zlib.crc32(word.encode()))
        v = rng.standard_normal(self.dim).astype("float32")
        return v / np.linalg.norm(v)

    def embed(self, texts):
        import re

        import numpy as np

        texts = list(texts)
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype="float32")
        for i, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            if words:
                v = np.mean([self._word(w) for w in words], axis=0)
                out[i] = v / np.linalg.norm(v)
        return out


def vault_with(tmp_path: Path, topics: dict, embedder=None):
    """A new vault under ``tmp_path/v`` holding ``{name: file text}`` topics, searched with
    ``embedder`` (a fresh :class:`FakeEmbedder` by default)."""
    from memkit import Vault

    root = Vault.init(tmp_path / "v", profile=False).root
    for name, text in topics.items():
        write(root / "topics" / f"{name}.md", text)
    return Vault(root, embedder=embedder if embedder is not None else FakeEmbedder())


def loopback_llm(fake, retry_delay_s: float = 0.01):
    """An HTTP LLM client for a :class:`fake_llm.FakeLLM` server, with a short retry pause."""
    from memkit.llm.client import HTTPChatLLM, LLMSettings

    client = HTTPChatLLM(LLMSettings(base_url=fake.base_url, model="m", timeout_s=5))
    client.retry_delay_s = retry_delay_s
    return client


def wait_until(predicate, timeout: float = 10.0) -> bool:
    """Poll ``predicate`` every 10 ms until it holds or ``timeout`` seconds pass (tests wait with
    deadlines, never with fixed sleeps); returns its last value as a bool."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return bool(predicate())


def fork(fn, *args) -> int:
    """Start ``fn(*args)`` in a child process forked from this one (a real process, with memkit
    already imported: no interpreter start-up to pay); returns its pid, for :func:`reap`. The child
    exits 0 when ``fn`` returns, 1 when it raises (the traceback on stderr), and never runs the
    parent's clean-up (``os._exit``)."""
    import os
    import sys
    import traceback

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            fn(*args)
            code = 0
        except BaseException:  # noqa: BLE001 - reported to the parent through the exit code
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def reap(pid: int) -> int:
    """Wait for a :func:`fork` child; its exit code (``-N``: killed by signal N)."""
    import os

    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


class DripServer:
    """A server on 127.0.0.1 that reads each request and then sends ``head`` at once and ``answer``
    one byte every ``every`` seconds (until it is all sent, the client goes away or the server stops): a peer that
    a per-read timeout never catches. ``base_url`` ends in /v1."""

    def __init__(self, answer: bytes, every: float = 0.2, head: bytes = b"") -> None:
        import socket
        import threading

        self.answer, self.every, self.head = answer, every, head
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.workers: list = []

    def serve(self) -> None:
        import threading

        self.listener.settimeout(0.05)  # looks at stop between accepts (closing does not wake accept)
        while not self.stop.is_set():
            try:
                con, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            worker = threading.Thread(target=self.drip, args=(con,), daemon=True)
            self.workers.append(worker)
            worker.start()

    def drip(self, con) -> None:
        with con:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = con.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                chunk = con.recv(65536)
                if not chunk:
                    return
                body += chunk
            try:
                con.sendall(self.head)
            except OSError:
                return
            for i in range(len(self.answer)):
                if self.stop.wait(self.every):
                    return
                try:
                    con.sendall(self.answer[i:i + 1])
                except OSError:
                    return

    def __enter__(self) -> "DripServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in [self.thread, *self.workers]:
            thread.join(5)
        self.listener.close()


def dripped_json(body: dict) -> bytes:
    """A whole 200 answer carrying ``body`` as JSON, for :class:`DripServer`."""
    import json

    data = json.dumps(body).encode()
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)
