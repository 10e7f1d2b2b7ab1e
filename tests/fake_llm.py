"""A real OpenAI-compatible chat server on loopback, scripted by the test.

In tests::

    with FakeLLM(['{"a": 1}', Reply(status=500)]) as fake:
        settings = LLMSettings(base_url=fake.base_url, model="fake")
        ...
        assert fake.requests[0]["messages"][-1]["content"] == "..."

As a script, for an offline demo::

    python tests/fake_llm.py --port 8765 --script replies.json

where replies.json is a list of strings (answers in order) and/or objects
``{"match": "substring of the last user message", "content": "..."}``.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Union

__all__ = ["FakeLLM", "Reply", "ReplyLike", "last_user_message", "script_responder"]


@dataclass
class Reply:
    """One scripted answer.

    :param content: the assistant message content, wrapped in a proper chat.completion body.
    :param status: HTTP status; anything but 200 sends ``body`` (default: an OpenAI-style error).
    :param body: the body for a non-200 status: bytes, text, or a dict sent as JSON.
    :param delay: seconds to wait before answering (cut short when the server stops).
    :param raw: exact body bytes to send with ``status`` (e.g. something that is not JSON).
    :param truncate: announce a longer Content-Length than the body, send the body, close.
    """

    content: str | None = None
    status: int = 200
    body: bytes | str | dict[str, Any] | None = None
    delay: float = 0.0
    raw: bytes | None = None
    truncate: bool = False


ReplyLike = Union[str, Reply, Callable[[dict[str, Any]], Union[str, Reply]]]


def last_user_message(request: dict[str, Any]) -> str:
    """The content of the last user message of a chat request, or ``""``.

    :param request: the parsed request body.
    """
    for message in reversed(request.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return str(message.get("content", ""))
    return ""


def completion(content: str, model: str = "fake") -> dict[str, Any]:
    """A chat.completion body carrying ``content``.

    :param content: the assistant message content.
    :param model: the model name to echo.
    """
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class _Server(ThreadingHTTPServer):
    # Non-daemon handler threads that server_close() joins: nothing outlives the context.
    daemon_threads = False
    block_on_close = True
    fake: FakeLLM


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # one request per connection; the handler thread then ends
    timeout = 10  # a client that connects and never sends cannot hold up shutdown for long

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.fake.verbose:
            sys.stderr.write("fake_llm: " + (format % args) + "\n")

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
        else:
            self._send_json(404, _error(f"no route for GET {self.path}", "not_found"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            body = {"_raw": raw.decode("utf-8", errors="replace")}
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record(self.path, body, headers)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send_json(404, _error(f"no route for POST {self.path}", "not_found"))
            return
        if "_raw" in body:
            self._send_json(400, _error("request body is not JSON", "invalid_request_error"))
            return
        reply = fake._next_reply(body)
        if reply.delay and fake._stopping.wait(reply.delay):
            return  # shutting down: the client gave up long ago
        model = str(body.get("model") or "fake")
        if reply.raw is not None:
            self._send(reply.status, reply.raw, "text/plain", truncate=reply.truncate)
        elif reply.status != 200:
            payload = reply.body
            if payload is None:
                payload = _error(f"scripted HTTP {reply.status}", "server_error")
            if isinstance(payload, dict):
                self._send_json(reply.status, payload, truncate=reply.truncate)
            else:
                data = payload.encode("utf-8") if isinstance(payload, str) else payload
                self._send(reply.status, data, "text/plain", truncate=reply.truncate)
        else:
            content = "{}" if reply.content is None else reply.content
            self._send_json(200, completion(content, model), truncate=reply.truncate)

    def _send_json(self, status: int, payload: Any, *, truncate: bool = False) -> None:
        data = json.dumps(payload).encode("utf-8")
        self._send(status, data, "application/json", truncate=truncate)

    def _send(self, status: int, data: bytes, content_type: str, *, truncate: bool = False) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data) + (100 if truncate else 0)))
            self.send_header("Connection", "close")
            self.end_headers()
            if truncate:
                data = data[: len(data) // 2]
            self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and left


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class FakeLLM:
    """Context manager. ``with FakeLLM(replies) as fake:`` serves on an ephemeral loopback port.

    ``fake.base_url`` is ``http://127.0.0.1:PORT/v1``; ``fake.requests`` lists the parsed JSON
    bodies received, ``fake.headers`` their headers (lower-cased names), ``fake.paths`` their paths.
    """

    def __init__(
        self,
        replies: Iterable[ReplyLike] | Callable[[dict[str, Any]], str | Reply] = (),
        *,
        port: int = 0,
        verbose: bool = False,
    ) -> None:
        """Script the answers.

        :param replies: answers consumed in order (the last one repeats; ``"{}"`` if none), each
            a string (content), a :class:`Reply`, or a callable taking the request body and
            returning one of those; or a single such callable answering every request.
        :param port: port to listen on; 0 picks a free one.
        :param verbose: log each request on stderr.
        """
        if callable(replies):
            self._responder: Callable[[dict[str, Any]], str | Reply] | None = replies
            self._replies: list[ReplyLike] = []
        else:
            self._responder = None
            self._replies = list(replies)
        self.port = port
        self.verbose = verbose
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self._index = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` of the running server."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeLLM:
        """Bind and start serving in a background thread."""
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.fake = self
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake delayed replies, and join every thread."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join()
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.paths.append(path)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._responder is not None:
                item: ReplyLike = self._responder
            elif not self._replies:
                item = "{}"
            else:
                item = self._replies[min(self._index, len(self._replies) - 1)]
                self._index += 1
        while callable(item) and not isinstance(item, Reply):
            item = item(body)
        if isinstance(item, Reply):
            return item
        return Reply(content=str(item))


def script_responder(script: list[Any]) -> Callable[[dict[str, Any]], Reply]:
    """Answer from a demo script: objects with ``match`` first, else strings in order.

    :param script: strings (content, used in order, the last repeating) and objects
        ``{"match": ..., "content": ...}`` (also ``status``, ``body``, ``delay``); the first
        object whose ``match`` is in the last user message answers.
    """
    matchers: list[tuple[str, Reply]] = []
    sequence: list[Reply] = []
    for i, item in enumerate(script):
        if isinstance(item, str):
            sequence.append(Reply(content=item))
        elif isinstance(item, dict):
            unknown = set(item) - {"match", "content", "status", "body", "delay"}
            if unknown:
                raise ValueError(f"script item {i}: unknown keys {sorted(unknown)}")
            content = item.get("content")
            if content is not None and not isinstance(content, str):
                content = json.dumps(content)  # let a script hold the JSON answer as JSON
            reply = Reply(
                content=content,
                status=int(item.get("status", 200)),
                body=item.get("body"),
                delay=float(item.get("delay", 0.0)),
            )
            if "match" in item:
                matchers.append((str(item["match"]), reply))
            else:
                sequence.append(reply)
        else:
            raise ValueError(f"script item {i}: expected a string or an object, not {item!r}")
    lock = threading.Lock()
    position = [0]

    def respond(request: dict[str, Any]) -> Reply:
        text = last_user_message(request)
        for needle, reply in matchers:
            if needle in text:
                return reply
        if not sequence:
            return Reply(content="{}")
        with lock:
            reply = sequence[min(position[0], len(sequence) - 1)]
            position[0] += 1
        return reply

    return respond


def main(argv: list[str] | None = None) -> int:
    """Serve a scripted fake LLM until SIGTERM or Ctrl-C.

    :param argv: command-line arguments (default: ``sys.argv[1:]``).
    """
    parser = argparse.ArgumentParser(
        description="A scripted OpenAI-compatible chat server on 127.0.0.1."
    )
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--script", help="JSON file: a list of strings or {match, content} objects")
    parser.add_argument("--verbose", action="store_true", help="log requests on stderr")
    args = parser.parse_args(argv)
    script: list[Any] = []
    if args.script:
        with open(args.script, encoding="utf-8") as f:
            script = json.load(f)
        if not isinstance(script, list):
            parser.error(f"{args.script}: expected a JSON list")
    try:
        responder = script_responder(script)
    except ValueError as exc:
        parser.error(f"{args.script}: {exc}")

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    # Also when started in the background, where the shell would have SIGINT ignored.
    signal.signal(signal.SIGINT, stop)
    fake = FakeLLM(responder, port=args.port, verbose=args.verbose)
    try:
        fake.start()
    except OSError as exc:
        print(f"fake_llm: cannot listen on 127.0.0.1:{args.port}: {exc}", file=sys.stderr)
        return 1
    print(f"listening on {fake.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
