"""A real OpenAI-compatible ``/v1/embeddings`` server on loopback for tests: each text's vector is
FakeEmbedder's bag of words (shared words, close vectors). ``down`` makes it answer 503;
``garbage`` makes it answer something that is not embeddings."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from util import FakeEmbedder


class FakeEmbedServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.down = False
        self.garbage = False
        self._embedder = FakeEmbedder()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append(dict(body, path=self.path, auth=self.headers.get("Authorization")))
                if outer.down:
                    return self._send(503, {"error": {"message": "loading model"}})
                if self.path != "/v1/embeddings":
                    return self._send(404, {"error": {"message": "not found"}})
                if outer.garbage:
                    return self._send(200, {"data": "nope"})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vectors = outer._embedder.embed(inputs)
                data = [{"object": "embedding", "index": i, "embedding": v.tolist()} for i, v in enumerate(vectors)]
                data.reverse()  # the index says where each goes, not the order
                self._send(200, {"object": "list", "data": data, "model": body.get("model")})

            def _send(self, status: int, obj: Any) -> None:
                raw = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FakeEmbedServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def texts_sent(self) -> int:
        return sum(len(r["input"]) for r in self.requests if isinstance(r.get("input"), list))
