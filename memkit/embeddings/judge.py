"""The judge: a small transformer that re-scores what the static model and words found.

memkit's static model (:mod:`memkit.embeddings.static`) finds candidates fast, but it is a weak judge of which
of them answers a question worded unlike its note. The judge is the static model's own teacher,
all-MiniLM-L6-v2 (Apache-2.0), exported by ``make model`` to an int8 ONNX file
(``memkit/embeddings/models/memkit-judge/model.onnx``, mean pooling and normalisation inside the graph) and
run with onnxruntime: a short query costs ~2 ms alone on two AVX2 cores (~3 ms beside a search's first stage), 270-400 entries a
second (docs/performance.md).

onnxruntime is a dependency of memkit; where it cannot be installed or loaded (an unusual
platform), :func:`judge_status` says why once and search works as before, with the static stage
alone.

A text is embedded as :func:`judge_text` gives it: the entry without memkit's markers (kind,
importance, dates), which carry no meaning a question asks for.
"""
from __future__ import annotations

import atexit
import hashlib
import importlib.util
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..base.ort import passes
from ..errors import ModelError
from ..formats.fields import PROVENANCE_MARKER

__all__ = ["Judge", "LazyJudge", "judge_folder", "judge_status", "judge_text", "text_keys", "shared_judge",
           "preload_judge", "prefetch_query", "prefetched", "judge_threads", "JUDGE_NAME"]

JUDGE_NAME = "memkit-judge"
MAX_TOKENS = 128  #: longer texts are cut (an entry's first ~100 words say what it is about)
#: texts a transformer pass by default: one. The int8 model quantises its activations with one
#: scale per pass (onnxruntime's dynamic quantisation), so a text batched with others gets a
#: slightly different vector (cosine ~0.99) than alone: a query is always embedded alone, the same
#: every time; filling the stored vectors passes several (``memkit.index.judge_vectors.FILL_PASS``).
BATCH = 1
THREADS_ENV = "MEMKIT_JUDGE_THREADS"
SPIN_ENV = "MEMKIT_JUDGE_SPIN"  #: "0": the pass's threads never spin (measuring; the default spins within a pass)

_MARKERS = re.compile(
    r"^\s*\[[^\]\n]{1,30}\]\s*"  # [kind]
    r"|\((?:importance|urgency)\s+[^()]{1,12}\)"
    r"|\((?:due|until)\s+\d{4}-\d{2}-\d{2}\)"
    r"|\(ask:[^()]*\)"
    r"|" + PROVENANCE_MARKER +  # the conversation it came from
    r"|\(\d{4}-\d{2}-\d{2}\)"  # the entry's date
    r"|(?<!\w)#(?=\w)",  # a tag's '#' (the word stays)
    re.IGNORECASE)


def judge_text(text: str) -> str:
    """What the judge reads of an entry or a query: the text without memkit's markers."""
    return " ".join(_MARKERS.sub(" ", str(text)).split())


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """A 64-bit key of each text's :func:`judge_text` (int64): the judge's vectors are stored under it."""
    out = np.empty(len(texts), dtype=np.int64)
    for i, t in enumerate(texts):
        out[i] = int.from_bytes(hashlib.blake2b(judge_text(t).encode("utf-8", "surrogatepass"),
                                                digest_size=8).digest(), "little", signed=True)
    return out


def judge_folder() -> Path | None:
    """The shipped judge model's folder, or None when it is not there."""
    folder = Path(__file__).resolve().parent / "models" / JUDGE_NAME
    return folder if (folder / "model.onnx").is_file() and (folder / "tokenizer.json").is_file() else None


def judge_status() -> str | None:
    """Why the judge cannot run here (None: it can)."""
    if os.environ.get("MEMKIT_NO_JUDGE"):
        return "the judge is turned off (MEMKIT_NO_JUDGE)"
    if judge_folder() is None:
        return f"the judge model is not installed (memkit/embeddings/models/{JUDGE_NAME}; `make model` builds it)"
    try:
        if importlib.util.find_spec("onnxruntime") is None:
            return "onnxruntime is not installed (pip install onnxruntime)"
    except (ImportError, ValueError):
        return "onnxruntime cannot be imported"
    return None


def judge_threads() -> int:
    """The judge's threads: ``MEMKIT_JUDGE_THREADS``, else up to 2."""
    try:
        return max(1, int(os.environ.get(THREADS_ENV, "")))
    except ValueError:
        return max(1, min(2, os.cpu_count() or 1))


class Judge:
    """The transformer, loaded: :meth:`embed` gives unit float32 rows (``dim`` 384).

    :param folder: ``model.onnx`` and ``tokenizer.json``.
    :raises ModelError: they cannot be loaded.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        folder = Path(folder)
        try:
            from ..base.ort import onnxruntime as ort  # noqa: I001 - telemetry off (memkit/base/ort.py)
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ModelError(f"the judge needs onnxruntime ({exc})") from None
        try:
            tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tok.enable_truncation(MAX_TOKENS)
            tok.no_padding()
            session = _session(ort, folder, judge_threads())
        except Exception as exc:  # onnxruntime raises its own types
            raise ModelError(f"cannot load the judge model in {folder}: {exc}") from None
        self._ort = ort
        self.name = JUDGE_NAME
        self.folder = folder
        self._tok = tok
        self._session = session
        self._inputs = [i.name for i in session.get_inputs()]
        self.dim = int(session.get_outputs()[0].shape[-1])
        self._lock = threading.Lock()  # one pass at a time: the session's threads are the parallelism
        self._fingerprint: str | None = None
        self._single: Any = None  # a session of one thread, for passes side by side (:meth:`embed_apart`)

    @property
    def fingerprint(self) -> str:
        """Which model this is (its dimension and 4 KB read every MB of ``model.onnx``): stored
        vectors of another judge of the same size, or of the same judge quantised again, are not
        taken for its own."""
        if self._fingerprint is None:
            h = hashlib.blake2b(digest_size=8)
            h.update(str(self.dim).encode())
            try:
                with open(self.folder / "model.onnx", "rb") as f:
                    size = f.seek(0, os.SEEK_END)
                    h.update(str(size).encode())
                    for at in range(0, size, 1 << 20):
                        f.seek(at)
                        h.update(f.read(4096))
            except OSError:
                h.update(str(self.folder).encode())
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def embed(self, texts: Sequence[str], batch: int | None = None) -> np.ndarray:
        """Unit vectors of ``texts`` (as :func:`judge_text` reads them), float32 ``(n, dim)``;
        ``batch``: texts a pass (default ``BATCH``, one: see there)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not len(texts):
            return out
        encs = self._tok.encode_batch([judge_text(t) or "." for t in texts])
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
        batch = max(1, batch or BATCH)
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            feeds = self._feeds([encs[i].ids for i in rows])
            with passes, self._lock:
                out[rows] = self._session.run(None, feeds)[0]
        return _unit(out)

    def embed_apart(self, texts: Sequence[str], workers: int) -> np.ndarray:
        """:meth:`embed` of each text alone (the same vectors: a text a pass), ``workers`` passes
        side by side on a session of one thread: filling stored vectors on two cores, about 1.8
        times as many a second as one pass at a time on two threads (docs/performance.md)."""
        workers = min(max(1, workers), len(texts))
        if workers < 2:
            return self.embed(texts)
        if self._single is None:
            try:
                self._single = _session(self._ort, self.folder, 1)
            except Exception:  # noqa: BLE001 - onnxruntime's own types; one pass at a time then
                return self.embed(texts)
        single = self._single
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encs = self._tok.encode_batch([judge_text(t) or "." for t in texts])
        stop = threading.Event()
        failed: list[BaseException] = []

        def run(first: int) -> None:
            try:
                for i in range(first, len(encs), workers):
                    if stop.is_set():
                        return
                    with passes:
                        out[i] = single.run(None, self._feeds([encs[i].ids]))[0][0]
            except BaseException as exc:  # said in the calling thread
                failed.append(exc)
                stop.set()

        helpers = [threading.Thread(target=run, args=(w,), name="memkit-judge-fill", daemon=True)
                   for w in range(1, workers)]
        for thread in helpers:
            thread.start()
        try:
            run(0)
        finally:  # an interrupt too: no helper left inside a pass when the process exits
            if failed or sys.exc_info()[0] is not None:
                stop.set()
            for thread in helpers:
                thread.join()
        if failed:
            raise failed[0]
        return _unit(out)

    def _feeds(self, rows: Sequence[Sequence[int]]) -> dict[str, Any]:
        """The session's inputs for the token ids ``rows`` (padded to the longest, masked)."""
        width = max(len(r) for r in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, :len(row)] = row
            mask[r, :len(row)] = 1
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds


def _session(ort: Any, folder: Path, threads: int) -> Any:
    """An onnxruntime session of the judge's ``model.onnx`` on ``threads`` threads."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    # the file was saved already optimised (bench/make_judge.py): the basic passes only
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    # the pass's threads spin between its operators (a wake-up each costs more than the
    # operator: a query 2.6 -> 2.0 ms on two AVX2 cores) and stop when the pass ends, so
    # nothing busy-waits between passes (on a small board the judge shares its cores)
    opts.add_session_config_entry("session.intra_op.allow_spinning", os.environ.get(SPIN_ENV, "1"))
    opts.add_session_config_entry("session.force_spinning_stop", "1")
    return ort.InferenceSession(str(folder / "model.onnx"), sess_options=opts, providers=["CPUExecutionProvider"])


def _unit(out: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    out /= np.maximum(norms, np.float32(1e-12))
    return out


#: two texts nothing alike: a judge that finds them near-identical computes wrongly on this machine
_PROBES = ("The cat slept on the warm windowsill all afternoon.", "Quarterly VAT return is due on 7 May.")
PROBE_MAX_COSINE = 0.9


def check_sane(judge: Judge) -> None:
    """Refuse a judge whose runtime computes wrongly here (seen under an emulated Arm CPU with SME:
    every text got the same vector). :raises ModelError: naming what was wrong."""
    try:
        v = judge.embed(list(_PROBES))
    except Exception as exc:  # onnxruntime raises its own types
        raise ModelError(f"the judge does not run here ({exc})") from None
    if not np.isfinite(v).all() or float(v[0] @ v[1]) > PROBE_MAX_COSINE:
        raise ModelError("the judge's runtime gives wrong vectors on this processor (two unlike texts "
                         "come out alike; seen with onnxruntime on Arm chips with SME)")


class LazyJudge:
    """The judge, loaded on first use; ``available`` is False (with the reason in ``reason``)
    where it cannot run, and then never tries again."""

    def __init__(self) -> None:
        self.reason: str | None = judge_status()
        self._judge: Judge | None = None
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return self.reason is None

    @property
    def loaded(self) -> bool:
        return self._judge is not None

    @property
    def loading(self) -> bool:
        """Whether a thread is loading the judge now."""
        return self._lock.locked()

    def judge(self) -> Judge | None:
        """The loaded judge, or None where it cannot run (the reason logged once)."""
        if self._judge is None and self.reason is None:
            with self._lock:
                if self._judge is None and self.reason is None:
                    folder = judge_folder()
                    try:
                        assert folder is not None
                        judge = Judge(folder)
                        check_sane(judge)
                        self._judge = judge
                    except ModelError as exc:
                        self.reason = str(exc)  # the searcher says it, once a vault
        return self._judge


_SHARED: LazyJudge | None = None
_SHARED_LOCK = threading.Lock()


#: the query a search asked the judge for ahead (:func:`prefetch_query`): its text, set when done,
#: and what it gave ((judge, vector), or nothing when it could not)
_SOON: tuple[str, threading.Event, list[tuple[Judge, np.ndarray]]] | None = None
_SOON_LOCK = threading.Lock()
_ABANDONED: list[LazyJudge] = []  #: a forked child's copies of a judge its parent was loading: never freed
_PRELOAD: threading.Thread | None = None
_THREADS: list[threading.Thread] = []  #: the judge's threads started by this process (joined at exit)
_SETTLING = False  #: whether :func:`_settle` is registered
SETTLE_S = 60.0  #: how long the exit waits for a judge thread still loading or embedding


def _settle() -> None:
    """At the interpreter's exit, wait for the judge's threads: a daemon thread killed while
    onnxruntime sets up its session aborts the whole process (rc 134, "terminate called without an
    active exception"), as a search that found nothing to re-score exits before its prefetch ends."""
    for thread in list(_THREADS):
        thread.join(SETTLE_S)


def _start(thread: threading.Thread) -> None:
    """Start one of the judge's daemon threads, the exit waiting for it (:func:`_settle`)."""
    global _SETTLING
    if not _SETTLING:
        atexit.register(_settle)  # on first use, not on import: importing memkit has no side effect
        _SETTLING = True
    _THREADS[:] = [t for t in _THREADS if t.is_alive()] + [thread]
    thread.start()


def _forked() -> None:
    """A forked child whose parent was loading the judge (a preload thread held its lock, and that
    thread is not in the child) makes its own. The copy is kept, not freed: freeing an onnxruntime
    session in a forked child waits for its parent's threads forever."""
    global _SHARED, _SHARED_LOCK, _PRELOAD, _SOON, _SOON_LOCK
    _SHARED_LOCK, _PRELOAD, _SOON, _SOON_LOCK = threading.Lock(), None, None, threading.Lock()
    _THREADS.clear()  # the parent's threads are not in the child: nothing to wait for
    if _SHARED is not None and _SHARED.loading:
        _ABANDONED.append(_SHARED)
        _SHARED = None


def preload_judge() -> None:
    """Load the process's judge (onnxruntime's import, the session, the tokenizer: ~0.25 s) in a
    thread of its own, once: onnxruntime and the tokenizers work outside the GIL, so a cold
    search's index check and static model load go on meanwhile; the search then takes the judge
    when it needs it (:class:`LazyJudge` waits for the load)."""
    global _PRELOAD
    if _PRELOAD is None and not shared_judge().loaded and shared_judge().available:
        _PRELOAD = threading.Thread(target=shared_judge().judge, name="memkit-judge-load", daemon=True)
        _start(_PRELOAD)


def prefetch_query(text: str) -> None:
    """Embed ``text`` with the process's judge in a thread of its own (loading the judge first
    if need be) while the search's first stage runs: the transformer's pass and numpy's
    products release the GIL, so on two cores the query's pass costs the search only what
    outlasts the first stage. :func:`prefetched` takes the vector; the vector is the one the
    text gets alone (a query is always embedded alone), so no result moves."""
    global _SOON
    lazy = shared_judge()
    if not lazy.available:
        return
    done, box = threading.Event(), []  # type: ignore[var-annotated]
    with _SOON_LOCK:
        if _SOON is not None and _SOON[0] == text and not (_SOON[1].is_set() and not _SOON[2]):
            return  # already asked (and not failed)
        _SOON = (text, done, box)

    def run() -> None:
        try:
            judge = lazy.judge()
            if judge is not None:
                box.append((judge, judge.embed([text])[0]))
        except Exception:  # noqa: BLE001 - the search embeds it itself and says what failed
            pass
        finally:
            done.set()

    _start(threading.Thread(target=run, name="memkit-judge-query", daemon=True))


def prefetched(judge: Judge, text: str) -> np.ndarray | None:
    """The vector :func:`prefetch_query` made of ``text`` with ``judge`` (waiting for it), or None
    when none was asked for, it failed, or another judge made it."""
    with _SOON_LOCK:
        soon = _SOON
    if soon is None or soon[0] != text:
        return None
    soon[1].wait()
    got = soon[2][0] if soon[2] else None
    return got[1] if got is not None and got[0] is judge else None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def shared_judge() -> LazyJudge:
    """The process's judge (one model in memory however many vaults a process opens)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or (_SHARED.reason is not None and _SHARED.reason != judge_status()):
            _SHARED = LazyJudge()  # made again when what stopped it changed (a test hiding onnxruntime)
        return _SHARED
