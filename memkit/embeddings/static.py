"""Embedding models: model2vec static models behind a one-method interface.

:class:`StaticEmbedder` reads a model2vec folder (tokenizer.json, model.safetensors, config.json)
directly with ``tokenizers`` and ``safetensors``, which loads several times faster than
``StaticModel.from_pretrained`` and gives the same vectors as ``StaticModel.encode``
(tests/embeddings/test_embed.py checks this).
"""
from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import socket
import threading
from itertools import chain
from pathlib import Path
from typing import Any, Callable, Sequence, cast

import numpy as np

from ..config import DEFAULT_MODEL
from ..errors import ModelError

log = logging.getLogger("memkit")

BUILTIN_MODEL = "memkit-m2v"  #: memkit's own model, shipped in the package (memkit/embeddings/models/, `make model`)
OFFLINE_MODEL = "tokenlearn-static-model"
#: how to install the offline model: memkit's PyPI name is not ``memkit`` (taken by another project)
OFFLINE_INSTALL = "pip install tokenlearn-static-model"


class StaticEmbedder:
    """A model2vec-format static model read straight from its folder.

    The tensors are memory-mapped from ``model.safetensors`` (a search touches only the rows of
    its query's tokens); a float16 table is converted to float32 once, on the first large batch
    (gathering float32 rows is faster). Texts are tokenised whitespace-separated chunk by chunk
    with a cache when the tokenizer allows it (a BERT-style or whitespace pre-tokenizer and a
    per-character normaliser give every chunk the same tokens alone as in its sentence): an
    indexing run tokenises each distinct word once.

    :param folder: a folder with tokenizer.json, model.safetensors and config.json.
    :param name: the name stamped on sidecars (model id or folder).
    """

    available = True
    loaded = True

    def __init__(self, folder: str | os.PathLike[str], name: str | None = None) -> None:
        from tokenizers import Tokenizer

        folder = Path(folder)
        try:
            self.config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            tensors = _read_tensors(folder / "model.safetensors")
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except (OSError, ValueError, Exception) as exc:  # safetensors/tokenizers raise their own types
            raise ModelError(f"cannot load the model in {folder}: {exc}") from exc
        if "embeddings" not in tensors:
            raise ModelError(f"{folder}/model.safetensors has no 'embeddings' tensor: not a model2vec model")
        self.embeddings = tensors["embeddings"]
        self.out_dtype = np.dtype(np.float32) if self.embeddings.dtype == np.int8 else self.embeddings.dtype
        self._table32: np.ndarray | None = None
        self._bulk: np.ndarray | bool | None = None  # see _bulk_table (False: none)
        self.weights = tensors.get("weights")
        self.mapping = tensors.get("mapping")
        padding = tokenizer.padding
        if padding is not None:
            tokenizer.enable_padding(pad_id=padding["pad_id"], pad_token=padding["pad_token"],
                                     pad_type_id=padding["pad_type_id"], length=0)
        self.max_length: int | None = self.config.get("max_length", 512)
        if self.max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(self.max_length)
        self.tokenizer = tokenizer
        self.unk_id = _unk_token_id(tokenizer)
        self.normalize = bool(self.config.get("normalize", True))
        self.name = name or str(folder)
        self.folder = folder
        self.dim = int(self.embeddings.shape[1])
        self._median_len: int | None = None
        self._lock = threading.Lock()  # a Tokenizer is not safe to share across threads mid-call
        self._chunks: dict[str, list[int]] | None = {} if _chunk_local(tokenizer) else None  # chunk -> token ids
        self._checked = False

    def process_spec(self) -> tuple[str, str, tuple[str, str]]:
        """How another process makes this model again (memkit.index.embed_process)."""
        return (__name__, "StaticEmbedder", (str(self.folder), self.name))

    def _median_token_length(self) -> int:
        if self._median_len is None:
            vocab = self.tokenizer.get_vocab()
            self._median_len = int(np.median([len(t) for t in vocab]))
        return self._median_len

    def _table(self, batch: int) -> np.ndarray:
        """The embedding table to gather from: float32 for large batches (converted once)."""
        if self.embeddings.dtype != np.float16 or batch < BULK_BATCH:
            return self.embeddings
        if self._table32 is None:
            self._table32 = np.asarray(self.embeddings, dtype=np.float32)
        return self._table32

    def _bulk_table(self) -> np.ndarray | None:
        """A large batch's table, by token id: each token's float32 row already multiplied by its
        weight (built once, ``vocabulary x dim x 4`` bytes: 30 MB for memkit's own model). It holds
        the very numbers each batch's gather-and-multiply gives (float32(row) * float32(weight)),
        so the vectors are the same bit for bit. None where those products are not float32 or the
        table would pass :data:`MAX_BULK_TABLE_BYTES`: each batch multiplies its own rows."""
        if self._bulk is None:
            table = self._table(BULK_BATCH)
            weights = self.weights
            dtype = np.result_type(table.dtype, np.float32 if weights is None else weights.dtype)
            tokens = len(weights) if weights is not None else (
                len(self.mapping) if self.mapping is not None else table.shape[0])
            if dtype != np.float32 or tokens * self.dim * 4 > MAX_BULK_TABLE_BYTES:
                self._bulk = False
            else:
                rows = table if self.mapping is None else table[np.asarray(self.mapping, dtype=np.int64)]
                if weights is not None:
                    rows = rows * np.asarray(weights)[:, None]
                self._bulk = np.ascontiguousarray(rows, dtype=np.float32)
        return self._bulk if isinstance(self._bulk, np.ndarray) else None

    def _encode(self, texts: list[str]) -> list[list[int]]:
        with self._lock:
            encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        return [e.ids for e in encodings]

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The token ids of each text, as ``Tokenizer.encode_batch_fast`` gives them (truncated)."""
        flat, counts = self._flat_ids(texts)
        return [part.tolist() for part in np.split(flat, np.cumsum(counts)[:-1])] if len(texts) else []

    def _flat_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The token ids of ``texts`` one after the other (int64) and how many each text has: the
        ids of :meth:`token_ids`, without a Python list per text."""
        cache = self._chunks
        if cache is None:
            return _flat(self._encode(texts))
        # each text's words, or a key of its own for a text the tokenizer takes whole
        parts: list[list[Any]]  # str words, or one tuple key
        if all(map(str.isascii, texts)) and _CONTROL_RE.search("".join(texts)) is None:
            parts = list(map(str.split, texts))
        else:
            parts = [text.split() if text.isascii() and _CONTROL_RE.search(text) is None else [(i,)]
                     for i, text in enumerate(texts)]
        words = list(chain.from_iterable(parts))
        # The batch's own words and their ids: the shared cache is only read once per word, so a
        # clear (this batch's or another thread's, past MAX_CACHED_CHUNKS) drops nothing it needs.
        lookup = cast("Callable[[object], list[int] | None]", cache.get)
        found: dict[Any, list[int] | None] = {w: lookup(w) for w in dict.fromkeys(words)}
        new = [w for w, ids in found.items() if ids is None and isinstance(w, str)]
        if new:
            encoded = self._encode(new)
            found.update(zip(new, encoded))
            if len(cache) + len(new) > MAX_CACHED_CHUNKS:
                cache.clear()
            cache.update(zip(new, encoded))
        whole = [(i,) for i, p in enumerate(parts) if p and isinstance(p[0], tuple)]
        if whole:
            found.update(zip(whole, self._encode([texts[i] for (i,) in whole])))
        limit = self.max_length
        if not self._checked:  # once: the chunk path must give the tokenizer's own ids
            self._checked = True
            sample = [i for i, p in enumerate(parts) if not (p and isinstance(p[0], tuple))][:32]
            ours = [list(chain.from_iterable(found[w] or [] for w in parts[i]))[:limit] for i in sample]
            if sample and self._encode([texts[i] for i in sample]) != ours:
                log.debug("chunk-wise tokenisation differs for this tokenizer: tokenising whole texts")
                self._chunks = None
                return _flat(self._encode(texts))
        per_word = list(map(cast("Callable[[object], list[int]]", found.__getitem__), words))
        lengths = np.fromiter(map(len, per_word), dtype=np.int64, count=len(per_word))
        flat = np.fromiter(chain.from_iterable(per_word), dtype=np.int64, count=int(lengths.sum()))
        word_ends = np.cumsum(np.fromiter(map(len, parts), dtype=np.int64, count=len(parts)))
        token_ends = np.concatenate(([0], np.cumsum(lengths)))[word_ends]
        counts = np.diff(token_ends, prepend=0)
        if limit is not None and len(counts) and int(counts.max()) > limit:  # truncated as the tokenizer does
            flat = flat[_positions(counts) < limit]
            counts = np.minimum(counts, limit)
        return flat, counts

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.max_length is not None and max(map(len, texts)) > self.max_length:
            cut = self.max_length * self._median_token_length()
            texts = [t[:cut] for t in texts]
        flat, counts = self._flat_ids(texts)
        if self.unk_id is not None:
            unknown = flat == self.unk_id
            if unknown.any():
                counts = counts - np.bincount(np.repeat(np.arange(len(texts)), counts)[unknown],
                                              minlength=len(texts))
                flat = flat[~unknown]
        if len(texts) == 1:
            return self._embed_one(flat.tolist())
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        bulk = self._bulk_table() if len(texts) >= BULK_BATCH else None
        table = self._table(len(texts))
        starts = np.cumsum(counts) - counts
        order = np.argsort(counts, kind="stable")
        for members in np.split(order, np.flatnonzero(np.diff(counts[order])) + 1):
            length = int(counts[members[0]])
            if not length:
                continue
            # sentences of equal length form one (n, length) id matrix: one gather, one mean
            matrix = flat[starts[members][:, None] + np.arange(length)]
            if bulk is not None:
                vectors = bulk[matrix]
            else:
                vectors = table[self.mapping[matrix] if self.mapping is not None else matrix]
                if self.weights is not None:
                    vectors = vectors * self.weights[matrix][..., None]
            out[members] = vectors.mean(axis=1, dtype=np.float32)
        nonempty = counts > 0
        if not nonempty.any():
            return out
        means = out[nonempty]
        # model2vec averages in the model's own dtype (float16 models round the mean): do the same
        means = means.astype(self.out_dtype).astype(np.float32)
        if self.normalize:
            means /= np.linalg.norm(means, axis=1, keepdims=True) + 1e-32
            means = means.astype(self.out_dtype).astype(np.float32)
        out[nonempty] = means
        return out

    def _embed_one(self, ids: list[int]) -> np.ndarray:
        """One text (a query): the steps of :meth:`embed` on one row, with fewer calls."""
        out = np.zeros((1, self.dim), dtype=np.float32)
        if not ids:
            return out
        matrix = np.array(ids, dtype=np.int64)
        vectors = self.embeddings[self.mapping[matrix] if self.mapping is not None else matrix]
        if self.weights is not None:
            vectors = vectors * self.weights[matrix][:, None]
        mean = vectors.mean(axis=0, dtype=np.float32).astype(self.out_dtype).astype(np.float32)
        if self.normalize:
            mean /= np.sqrt(np.add.reduce(mean * mean)) + np.float32(1e-32)
            mean = mean.astype(self.out_dtype).astype(np.float32)
        out[0] = mean
        return out


_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # removed or split differently by normalisers
BULK_BATCH = 256  #: a batch this large gathers from a float32 copy of a float16 table
MAX_CACHED_CHUNKS = 1_000_000  #: the word-chunk cache is emptied before it would pass this
MAX_BULK_TABLE_BYTES = 256 << 20  #: a larger model multiplies each bulk batch's rows by their weights itself
_SAFETENSORS_DTYPES = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "I8": "i1", "U8": "u1", "I16": "<i2",
                       "I32": "<i4", "I64": "<i8"}
_CHUNK_NORMALIZERS = {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents"}
_CHUNK_PRE_TOKENIZERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}


def _flat(id_lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Lists of ids as one int64 array and the length of each."""
    counts = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    return np.fromiter(chain.from_iterable(id_lists), dtype=np.int64, count=int(counts.sum())), counts


def _positions(counts: np.ndarray) -> np.ndarray:
    """Each item's position within its group, for groups of ``counts`` items one after the other."""
    return np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)


def _read_tensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file, memory-mapped (read-only, little-endian)."""
    with open(path, "rb") as fh:
        size = int.from_bytes(fh.read(8), "little")
        if not 0 < size <= 1 << 24:
            raise ValueError(f"{path.name}: bad safetensors header size")
        header = json.loads(fh.read(size))
        end = fh.seek(0, os.SEEK_END)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = np.dtype(_SAFETENSORS_DTYPES[info["dtype"]])  # KeyError: a dtype numpy lacks (BF16)
        start, stop = (int(x) for x in info["data_offsets"])
        shape = tuple(int(x) for x in info["shape"])
        count = int(np.prod(shape)) if shape else 1
        if stop - start != count * dtype.itemsize or 8 + size + stop > end:
            raise ValueError(f"{path.name}: tensor {name} does not fit the file")
        if not count:
            out[name] = np.zeros(shape, dtype=dtype)
            continue
        mapped = np.memmap(path, dtype=dtype, mode="r", offset=8 + size + start, shape=shape)
        out[name] = mapped.view(np.ndarray)
    return out


def _chunk_local(tokenizer: object) -> bool:
    """Whether every whitespace-separated chunk of an ASCII text gets the same tokens alone as in
    the text: a per-character normaliser, a pre-tokenizer that splits at whitespace first, and
    added tokens without whitespace or stripping."""
    def name(x: object) -> str:
        return type(x).__name__

    norm = getattr(tokenizer, "normalizer", None)
    pre = getattr(tokenizer, "pre_tokenizer", None)
    if norm is not None and name(norm) not in _CHUNK_NORMALIZERS:
        return False
    if pre is None or name(pre) not in _CHUNK_PRE_TOKENIZERS:
        return False
    try:
        added = tokenizer.get_added_tokens_decoder().values()  # type: ignore[attr-defined]
    except AttributeError:
        return False
    return not any(t.lstrip or t.rstrip or any(c.isspace() for c in t.content) for t in added)


def _unk_token_id(tokenizer: object) -> int | None:
    model = tokenizer.model  # type: ignore[attr-defined]
    if hasattr(model, "unk_token"):
        token = model.unk_token
        return None if token is None else tokenizer.token_to_id(token)  # type: ignore[attr-defined]
    return json.loads(tokenizer.to_str())["model"].get("unk_id")  # type: ignore[attr-defined]


# ---- resolving a model name to a folder -------------------------------------------------------

def offline_model_folder() -> Path | None:
    """The model shipped by the ``tokenlearn-static-model`` package (memkit[offline]), if installed."""
    try:
        spec = importlib.util.find_spec("static_model")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def cached_hub_folder(model_id: str) -> Path | None:
    """The snapshot folder of ``model_id`` in the Hugging Face cache, if it was downloaded before."""
    home = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface")), "hub")
    repo = Path(home) / ("models--" + model_id.replace("/", "--"))
    ref = repo / "refs" / "main"
    candidates = []
    if ref.is_file():
        candidates.append(repo / "snapshots" / ref.read_text().strip())
    snapshots = repo / "snapshots"
    if snapshots.is_dir():
        candidates.extend(sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True))
    for folder in candidates:
        if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    return None


def _hub_reachable(timeout: float = 3.0) -> bool:
    """A quick check that the Hugging Face hub answers, so an offline machine fails in seconds."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection(("huggingface.co", 443), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)  # DNS lookups ignore socket timeouts
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def _download(model_id: str) -> Path:
    # huggingface_hub takes the metadata timeout as an argument, but the download's read timeout
    # only from HF_HUB_DOWNLOAD_TIMEOUT, read when it is imported: set (unless the user did) first.
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "30")
    from huggingface_hub import snapshot_download

    log.info("downloading model %s (once; it is cached for later runs)", model_id)
    return Path(snapshot_download(model_id, etag_timeout=5,
                                  allow_patterns=["config.json", "model.safetensors", "tokenizer.json", "README.md"]))


_CACHE: dict[str, StaticEmbedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(spec: str | None = None, *, allow_fallback: bool = True) -> StaticEmbedder:
    """Load a model once per process: a local folder, a cached or downloadable hub id, or the
    offline model of ``tokenlearn-static-model`` when the hub is out of reach.

    :param spec: model id or folder; default ``minishlab/potion-base-8M``.
    :param allow_fallback: use the offline package model when ``spec`` cannot be had.
    :raises ModelError: saying how to fix it.
    """
    folder, name = locate_model(spec, allow_fallback=allow_fallback)
    return _load_folder(folder, name)


def _load_folder(folder: Path, name: str) -> StaticEmbedder:
    key = f"{name}\0{folder}"
    with _CACHE_LOCK:
        if key not in _CACHE:
            _CACHE[key] = StaticEmbedder(folder, name=name)
        return _CACHE[key]


def builtin_model_folder() -> Path | None:
    """The folder of memkit's own model, shipped in the package (None in a checkout that has not
    built it: `make model`)."""
    folder = Path(__file__).resolve().parent / "models" / BUILTIN_MODEL
    return folder if (folder / "model.safetensors").is_file() else None


def locate_model(spec: str | None = None, *, allow_fallback: bool = True) -> tuple[Path, str]:
    """The folder of model ``spec`` and the name its vectors are stamped with, without loading it:
    a local folder, memkit's built-in model, the offline package model, a cached hub snapshot, a
    download (when the hub is reachable), or the built-in model as a fallback (with one warning).

    ``spec`` None (nothing configured): potion-base-8M when it is cached, else the built-in model;
    neither the network nor the hub is asked.

    :raises ModelError: saying how to fix it.
    """
    if not spec:
        cached = cached_hub_folder(DEFAULT_MODEL)
        if cached is not None:
            return cached, DEFAULT_MODEL
        builtin = builtin_model_folder()
        if builtin is not None:
            return builtin, BUILTIN_MODEL
        spec = DEFAULT_MODEL  # a checkout without the built-in model: the hub, else the offline package
    path = Path(spec).expanduser()
    if path.is_dir():
        return path, spec
    if spec == BUILTIN_MODEL:
        builtin = builtin_model_folder()
        if builtin is None:
            raise ModelError(f"memkit's built-in model is missing from {Path(__file__).parent / 'models'}: "
                             "reinstall memkit, or build it with `make model`")
        return builtin, BUILTIN_MODEL
    if spec == OFFLINE_MODEL:
        folder = offline_model_folder()
        if folder is None:
            raise ModelError(f"{OFFLINE_MODEL} is not installed: {OFFLINE_INSTALL} (x86_64 only)")
        return folder, OFFLINE_MODEL
    if spec.startswith((".", "/", "~")) or spec.count("/") != 1:
        raise ModelError(f"model {spec!r} is neither a folder nor a model id like 'minishlab/potion-base-8M'")
    folder = cached_hub_folder(spec)
    if folder is not None:
        return folder, spec
    problem = "the Hugging Face hub is unreachable (or HF_HUB_OFFLINE is set)"
    if _hub_reachable():
        try:
            return _download(spec), spec
        except Exception as exc:  # huggingface_hub raises many types
            problem = f"downloading it failed: {type(exc).__name__}: {exc}"
    if allow_fallback:
        for fallback, name in ((builtin_model_folder(), BUILTIN_MODEL), (offline_model_folder(), OFFLINE_MODEL)):
            if fallback is not None:
                log.warning("model %s is not available (%s); using %s instead. To use it without this warning, "
                            "name %s (`model:` in memkit.yaml, MEMKIT_MODEL or --model) instead of %s",
                            spec, problem, name, name, spec)
                return fallback, name
    raise ModelError(
        f"model {spec!r} is not available: {problem}. Fix: run once with network access to cache it, "
        f"or set `model:` in memkit.yaml (or MEMKIT_MODEL / --model) to a local model2vec folder or "
        f"to {BUILTIN_MODEL}, memkit's own model"
    )


def model_dim(folder: Path) -> int:
    """The dimension of a model2vec folder's embeddings, read from the safetensors header alone
    (a few kB), so a sidecar can be found without loading the model."""
    path = folder / "model.safetensors"
    try:
        with open(path, "rb") as fh:
            size = int.from_bytes(fh.read(8), "little")
            if not 0 < size <= 1 << 24:
                raise ValueError("bad header size")
            header = json.loads(fh.read(size))
        return int(header["embeddings"]["shape"][1])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ModelError(f"cannot read the model in {folder}: {path.name} is not a model2vec safetensors file "
                         f"({exc})") from None


class MissingModel:
    """Stands in for a model that cannot be found: everything that needs no vectors (lexical search,
    topics, add, check…) works; :meth:`embed` raises the reason. Its index holds no vectors
    (dimension 0) and is dropped once the model is found.

    :param spec: the model asked for; :param reason: why it cannot be used.
    """

    dim = 0
    loaded = False
    available = False

    def __init__(self, spec: str | None, reason: str) -> None:
        self.spec = spec
        self.name = f"unavailable {spec or 'default'}"
        self.reason = reason

    def __repr__(self) -> str:
        return f"MissingModel({self.spec!r})"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        raise ModelError(self.reason)


class LazyEmbedder:
    """A model located at once (its name and dimension, from its files) and loaded on its first
    :meth:`embed`: commands that need no vectors (lexical search, show, add…) never pay the
    model's load time (1–2 s and ~450 MB for the offline model's tokenizer).

    :param spec: model id or folder (see :func:`locate_model`).
    """

    available = True

    def __init__(self, spec: str | None = None) -> None:
        self.spec = spec or None
        self._where: tuple[Path, str] | None = None
        self._dim: int | None = None
        self._model: StaticEmbedder | None = None

    def __repr__(self) -> str:
        return f"LazyEmbedder({self.spec!r}{', loaded' if self._model else ''})"

    def _locate(self) -> tuple[Path, str]:
        if self._where is None:
            self._where = locate_model(self.spec)
        return self._where

    @property
    def name(self) -> str:
        return self._locate()[1]

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = self._model.dim if self._model is not None else model_dim(self._locate()[0])
        return self._dim

    @property
    def loaded(self) -> bool:
        """Whether the model itself has been loaded."""
        return self._model is not None

    def process_spec(self) -> tuple[str, str, tuple[str, str]]:
        """How another process makes this model (located, not loaded here)."""
        folder, name = self._locate()
        return (__name__, "StaticEmbedder", (str(folder), name))

    def model(self) -> StaticEmbedder:
        """The loaded model (loads it on first use)."""
        if self._model is None:
            self._model = _load_folder(*self._locate())
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.model().embed(texts)
