"""Search: embed the query, rank the vault's entries (lexical + vector fusion), filter, top k.

The :class:`Searcher` keeps the index's view and a :class:`memkit.search.rank.Ranker` over it. A search
re-checks the topic files (and other processes' writes to the sidecar) at most once every
``REFRESH_INTERVAL_S``; between checks it sees this process's own writes only. While
``memkit watch`` keeps the index current (it holds a lock on :attr:`Index.watch_mark`), a
search lists no topic files at all (20,000 files: ~0.4 s) and reads what the watcher indexed. When a file
changed, the ranker is extended with that file's rows rather than built again
(:meth:`Ranker.extended`). A process that has just written a topic file makes it searchable at
once with :meth:`Searcher.refresh_files` (no listing of topics/).

A search is one checked :class:`memkit.search.Query` handed to :meth:`Searcher.find`; what it may
return is :mod:`memkit.search.filters`, its second stage :mod:`memkit.search.judged`, its results
:mod:`memkit.search.hits`.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import replace
from datetime import date
from itertools import islice
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..base.blas import single_thread
from ..base.fsutil import lock_held
from ..base.limits import WEAK_HITS
from ..base.pages import release
from ..config import Config
from ..embeddings import (
    Embedder,
    judge_known_fast,
    judge_threads,
    judge_too_slow,
    prefetch_query,
    shared_judge,
    text_keys,
)
from ..errors import MemkitError, ModelError, TopicNotFound
from ..formats.topic import Topic
from ..formats.words import terms as text_terms
from ..index import (
    JUDGE_DIR,
    TRIM_MIN_ROWS,
    Index,
    IndexReport,
    IndexView,
    JudgeVectors,
    Progress,
    SessionSource,
    trim_memory,
)
from ..store import Store, load_people
from .filters import RowFacts, in_scope, query_mask
from .hits import Hit, hits_at
from .judge_rank import (
    JUDGE_THRESHOLD,
    JudgeParams,
)
from .judged import judged_hits
from .query import MODES, Mode, Query, Threshold, since_day
from .rank import MODEL_THRESHOLD, RECOMMENDED_THRESHOLD, Ranker
from .safety import bears_on, safety_rows

log = logging.getLogger("memkit")

__all__ = ["Hit", "Searcher", "Threshold", "Mode", "Query", "default_threshold", "MODES", "since_day"]

REFRESH_INTERVAL_S = 1.0  # an in-process index re-checks the files at most this often
REFRESH_WAIT_S = 2.0  # a search waits this long at most for another process's index write
SAFETY_MEMORIES = 2  #: safety notes a memory block adds at most (:meth:`Searcher.safety_hits`)
#: the judge's cosine with the message from which a safety note bears on it whatever its words
#: (:func:`memkit.search.safety.bears_on`: "I'm switching to my winter coat" and the inhaler in every coat)
SAFETY_SURE = 0.3
SAFETY_MAX_ROWS = 500  #: safety notes looked at (a vault of medical notes: the newest ones)
SAFETY_EMBED = 16  #: of them, at most this many without a stored judge vector are embedded for one message


#: duplicate_similarity's ``auto`` by model (bench/calibrate_duplicates.py on bench/duplicates.json:
#: the most similar pair of different memories, 0.74, plus a margin: 73 % of reworded duplicates
#: caught, none of 34 different memories dropped; 0.92 caught 37 %), and for any other model
MODEL_DUPLICATE: dict[str, float] = {"memkit-m2v": 0.80}
DUPLICATE_SIMILARITY = 0.92


def default_threshold(config: Config, dim: int, model: str = "") -> float:
    """memkit.yaml's threshold, or for ``auto`` (the default) the value calibrated for this model
    (by name, else by its size)."""
    value = config.embedding_similarity_threshold
    if not isinstance(value, str):
        return float(value)
    return MODEL_THRESHOLD.get(model, RECOMMENDED_THRESHOLD.get(dim, 0.3))


class Searcher:
    """Searches one vault: its index kept current with the files, and the ranker over it.

    :param store: the vault's files.
    :param index: its embedding index (with the model).
    """

    def __init__(self, store: Store, index: Index) -> None:
        self.store = store
        self.index = index
        self._ranked: tuple[IndexView, Ranker] | None = None
        self._lock = threading.Lock()
        self._unembedded = False  #: the last refresh recorded entries without vectors
        self._watched_until = 0.0  #: a watcher keeps the index current until then (looked again after)
        self._recheck = False  #: :meth:`changed` was called: the next refresh checks the files itself
        self.removed_indexes: list[str] = []  #: what the last :meth:`reindex` removed
        self._rows = RowFacts()  #: the rows' importances and expiry days, along the view's lineage
        self._judge: JudgeVectors | None = None
        self._judge_off = False  #: the judge cannot run here (said once)
        self._keys: tuple[int, np.ndarray, np.ndarray] | None = None  # (lineage, judge key per row, known)
        self.judge_params = JudgeParams()  #: the second stage's settings

    @classmethod
    def of_sessions(cls, store: Store, embedder: Embedder) -> "Searcher":
        """A searcher over the vault's conversations (``sessions/*.md``, one entry a message; an
        index of its own, :class:`memkit.index.SessionSource`)."""
        return cls(store, Index(store, embedder, SessionSource(store)))

    @property
    def config(self) -> Config:
        return self.store.config

    @property
    def dim(self) -> int:
        return self.index.embedder.dim

    def view(self) -> IndexView:
        """The index's current view of every entry (:class:`memkit.index.IndexView`), with this
        process's and other processes' writes; :meth:`refresh` first to see the files' changes."""
        return self.index.view()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The vault's model's unit rows for ``texts``. :raises ModelError: no model (words only)."""
        return self.index.embedder.embed(texts)

    def vectors_for(self, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these entry hashes (those the index has)."""
        return self.index.vectors_for(hashes)

    def threshold(self) -> float:
        """The default similarity threshold (see :func:`default_threshold`)."""
        return default_threshold(self.config, self.dim, self.index.embedder.name)

    def duplicate_similarity(self) -> float:
        """The static model's cosine from which a digest's conclusion is a near duplicate of an
        entry (memkit.yaml's ``duplicate_similarity``; ``auto``: the value calibrated for the model
        by bench/calibrate_duplicates.py, else :data:`DUPLICATE_SIMILARITY`)."""
        value = self.config.duplicate_similarity
        if not isinstance(value, str):
            return float(value)
        return MODEL_DUPLICATE.get(self.index.embedder.name, DUPLICATE_SIMILARITY)

    def judge_threshold(self) -> float:
        """The judge's cosine a confident hit reaches: memkit.yaml's ``judge_threshold`` or the
        calibrated :data:`memkit.search.judge_rank.JUDGE_THRESHOLD`."""
        value = self.config.judge_threshold
        return JUDGE_THRESHOLD if isinstance(value, str) else float(value)

    def judge(self) -> JudgeVectors | None:
        """The judge and its stored vectors of this vault, or None where it does not run: turned
        off (memkit.yaml ``judge: false``; ``judge: auto`` on a processor too slow for it) or
        unable to run here (said once)."""
        if not self.config.judge or self._judge_off:
            return None
        if self._judge is None and self.config.judge == "auto":
            slow = judge_too_slow(self.store.state_dir / JUDGE_DIR)
            if slow is not None:
                self._judge_off = True
                self.store.warn_once(slow)
                return None
        if self._judge is None:
            lazy = shared_judge()
            loaded = lazy.judge()
            if loaded is None:
                self._judge_off = True
                if not os.environ.get("MEMKIT_NO_JUDGE"):
                    self.store.warn_once(f"{lazy.reason}; searching with the static model alone")
                return None
            self._judge = JudgeVectors(self.store.state_dir, loaded)
        return self._judge

    def fill_judge(self, progress: Any = None, index: Index | None = None, workers: int = 1) -> int:
        """Store the judge's vector of every entry that has none yet (``memkit index``, the
        watcher and the servers call this after indexing; ``index``: another connection to this
        vault's index, the watcher's); how many were embedded. The static stage serves the
        entries meanwhile, and a search embeds the candidates it meets without one. ``workers``:
        the judge's passes side by side (``memkit index --judge``: every core; a fill beside
        searches, one)."""
        judge = self.judge()
        if judge is None:
            return 0
        view = (index or self.index).view()
        try:
            return judge.fill_view(view.lineage, view.texts, view.is_live, progress, workers)
        except ModelError as exc:
            self.store.warn_once(f"{exc}; searching with the static model alone")
            return 0


    def judge_missing(self) -> int | None:
        """About how many live entries of the index have no judge vector stored (the live entries less
        the vectors stored; None: no judge here)."""
        judge = self.judge()
        if judge is None:
            return None
        view = self.index.view()
        live = len(view) if view.live is None else int(np.count_nonzero(view.live))
        return max(0, live - judge.count())  # about: a count, not a lookup of every entry (1M: seconds, 1 GB)

    def changed(self) -> None:
        """Say the files just changed (this process wrote them): the next search re-checks them
        (itself, even while a watcher keeps the index current: its event may not have come yet)."""
        self.index.last_check = 0.0
        self._recheck = True

    def refresh(self, force: bool = False, *, embed: bool = True) -> bool:
        """Index changed files (at most once every ``REFRESH_INTERVAL_S`` unless ``force``);
        ``embed=False`` records them without loading the model (see :meth:`Index.refresh`).
        Whether it checked."""
        embed = embed and self.index.embedder.available  # no model: words only
        if embed and self._unembedded:
            force = True  # a refresh without vectors ran: embed what it recorded before searching by meaning
        if self._recheck:
            force, self._recheck = True, False
        now = time.monotonic()
        if force or now - self.index.last_check >= REFRESH_INTERVAL_S:
            if not force and self.watched():  # the watcher checked the files: its writes are read
                self.index.last_check = now
                self._watched_until = now + REFRESH_INTERVAL_S
                return True
            self._watched_until = 0.0
            report = self.index.refresh(wait=REFRESH_WAIT_S, embed=embed)
            self._unembedded = not embed
            self._freeze(report)
            return True
        return False

    def watched(self) -> bool:
        """Whether ``memkit watch`` keeps this index current: a watcher of this model that hears
        the files' events holds :attr:`Index.watch_mark` while every topic file is indexed
        (:meth:`memkit.frontends.watch.Watcher._mark_current` says when)."""
        return lock_held(self.index.watch_mark)

    def index_damage(self) -> tuple[str, str] | None:
        """The index file (relative to the vault) and what is wrong with it (SQLite's quick check),
        or None."""
        found = self.index.damage()
        return None if found is None else (self.store.rel(self.index.path), found)

    def remake_index(self, why: str) -> IndexReport:
        """Make the index anew from the topic files (a damaged one)."""
        report = self.index.remake(why)
        self._ranked = None
        self._freeze(report)
        return report

    def index_state(self) -> dict[str, Any]:
        """The index as ``memkit stats`` shows it: model, dimension, file, topic files it is behind."""
        index = self.index
        changed, gone = index.stale()
        return {"model": index.embedder.name, "dim": index.embedder.dim, "file": self.store.rel(index.path),
                "stale_files": len(changed) + len(gone), "exists": index.path.exists()}

    def other_indexes(self) -> list[str]:
        """The index files of other models (relative to the vault); none while this model is
        missing (they are what it will use again)."""
        index = self.index
        if not index.embedder.available:
            return []
        base = index.path.name[:-len(".sqlite3")].removesuffix("-sessions")  # <model>-<dim>
        ours = {f"{base}.sqlite3", f"{base}-sessions.sqlite3"}  # the topics' and the conversations' index
        try:
            return sorted(self.store.rel(f) for f in index.dir.glob("*.sqlite3") if f.name not in ours)
        except OSError:
            return []

    def reindex(self, *, full: bool = False, progress: Progress | None = None, judge: bool = False,
                judge_progress: Progress | None = None) -> IndexReport:
        """Index every changed file now (``full``: every file, parsed and embedded again), and
        remove other models' index files (see :meth:`memkit.index.index.Index.refresh`; they are in
        :attr:`removed_indexes` then); ``judge``: then store the judge's vector of every entry that
        lacks one (:meth:`fill_judge`, its count in ``report.judged``). ``progress`` and
        ``judge_progress`` are called with (done, total)."""
        report = self.index.refresh(full=full, progress=progress)
        self._freeze(report)
        self.removed_indexes = self.index.prune_other_models()
        if judge and not report.busy:
            report.fill_judge(lambda: self.fill_judge(judge_progress, workers=judge_threads()))
        return report

    def wrote(self, path: str | os.PathLike[str], parsed: Topic | None = None) -> None:
        """This process just wrote the topic file ``path`` (``parsed``: as it wrote it, with the
        file's stat after the write; the index does not read it again): index it now
        (:meth:`refresh_files`), so that a search finds it at once; a failure only makes the next
        search re-check every file."""
        try:
            self.refresh_files([path], parsed=[parsed] if parsed is not None else ())
        except MemkitError as exc:  # the write happened; the next search re-checks every file
            log.debug("indexing %s after the write failed: %s", path, exc)
            self.changed()

    def refresh_files(self, paths: Iterable[str | os.PathLike[str]], parsed: Sequence[Topic] = ()) -> IndexReport:
        """Index these topic files now (this process just wrote them), without listing topics/:
        the next search finds what was written. Their new entries are embedded when the model is
        loaded already; otherwise they are recorded without vectors and the next search (which
        re-checks every file) embeds them."""
        embed = self.index.embedder.loaded  # a LazyEmbedder not loaded yet: do not load it
        report = self.index.refresh(paths=paths, wait=REFRESH_WAIT_S, embed=embed, parsed=parsed)
        if not embed or report.busy:
            self.changed()
        else:
            self._freeze(report)
        return report

    def _freeze(self, report: IndexReport) -> None:
        """After a refresh that changed the index, write its frozen view when one is due
        (:meth:`memkit.index.Index.freeze`: a large index, none for its matrix or many rows
        since); a failure only leaves the view to be read from SQLite."""
        if report.busy or self._unembedded or not (report.changed_files or report.removed or report.rebuilt_model):
            return
        try:
            self.index.freeze(ranking_kept)
        except (OSError, ValueError, MemkitError) as exc:
            log.warning("could not write the frozen index (%s); searches read it from SQLite", exc)

    def ranker(self, *, others: bool = True) -> tuple[IndexView, Ranker]:
        """The current view of the index and the ranker built over it: extended when the view
        only gained rows (a file changed), built again when it was loaded whole. ``others``:
        see :meth:`Index.view`."""
        view = self.index.view(others=others)
        with self._lock:
            ranked = self._ranked
            if ranked is None or ranked[0] is not view:
                terms = (view.term_ids, view.term_offsets, view.vocab)
                with single_thread():
                    thawed = None
                    if ranked is not None and ranked[0].lineage == view.lineage and len(ranked[0]) <= len(view):
                        ranker = ranked[1].extended(view.texts, view.vectors, view.file_ids, terms,
                                                    view.live)
                    elif (thawed := _thawed(view)) is not None:
                        ranker = thawed
                    else:
                        ranker = Ranker(view.texts, view.vectors, view.file_ids, terms=terms,
                                        live=view.live)
                        if len(view) >= TRIM_MIN_ROWS:
                            trim_memory()
                self._ranked = ranked = (view, ranker)
            return ranked

    def search(self, query: str, *, k: int | None = None, threshold: Threshold = "auto", topic: str | None = None,
               kind: str | None = None, tag: str | None = None, since: str | date | None = None,
               mode: Mode = "hybrid", refresh: bool | None = None, weak: int = WEAK_HITS,
               words_first: bool = False, min_importance: float | None = None,
               subtopics: bool = True, judge: bool | None = None, private: bool = True, person: str | None = None,
               relation: str | None = None, where: Mapping[str, str] | Iterable[str] | None = None,
               linked: str | None = None) -> list[Hit]:
        """Search the vault's memories: the query checked once (:meth:`query`), its topics resolved
        (:meth:`scoped`), then answered (:meth:`find`), as :meth:`memkit.vault.Vault.search` does.

        :param query: what to look for (natural language, names, part numbers…).
        :param k: how many results at most (default ``max_memories_per_search``).
        :param threshold: minimum similarity (entries with a strong exact-word match pass anyway);
            ``"auto"``: memkit.yaml's value or the model's calibrated one; ``None``: none.
        :param topic: only this topic (and its subtopics ``topic-*`` unless not ``subtopics``).
        :param kind: only entries of this ``[kind]``.
        :param tag: only entries with this ``#tag``.
        :param since: only entries dated on or after this day (undated entries use their topic's date).
        :param mode: ``hybrid`` (default), ``vector`` or ``lexical``.
        :param refresh: index changed files first: ``None`` at most once a second, ``True`` now,
            ``False`` never.
        :param weak: when nothing passes the threshold, return up to this many of the closest
            entries instead, marked ``confident=False``: those sharing a word with the query, or
            whose cosine stands out of the query's noise (:meth:`memkit.search.rank.Ranker.cosine_noise`).
        :param words_first: the query is a memory, not a question (see
            :meth:`memkit.search.rank.Ranker.search_hits`): shared words weigh as much in notes as in
            conversations.
        :param min_importance: only entries whose ``(importance X)`` is at least this (an entry
            without one counts as :data:`memkit.formats.lifecycle.DEFAULT_IMPORTANCE`).
        :param judge: the second stage (:mod:`memkit.search.judge_rank`) re-scores the best candidates
            of a hybrid search: None as memkit.yaml says (``judge:``, on by default), False: the
            static stage alone (``search --fast``). When it runs, the threshold is on the judge's
            cosine (``"auto"``: ``judge_threshold``) and each hit carries it (:attr:`Hit.judge`).
        :param private: False leaves out the topics with ``private: true`` (the servers' searches),
            but for ``topic`` and its subtopics when it names one.
        :param person: only entries about this person (a name or ``@handle`` of people.md; ``me``: the
            user), :param relation: about a person of this relation, :param where: carrying these
            fields (``{"city": "Porto"}`` or ``["city=Porto"]``): :mod:`memkit.search.about`.
        :param linked: only topic ``linked`` (a name, a file's name alone or an alias, as a
            ``[[link]]`` names it) and the topics its entries link to or whose entries link to it.
        """
        q = self.query(query, k=k, threshold=threshold, topic=topic, kind=kind, tag=tag, since=since, mode=mode,
                       weak=weak, words_first=words_first, min_importance=min_importance, subtopics=subtopics,
                       judge=judge, person=person, relation=relation, where=where)
        return self.find(self.scoped(q, private=private, linked=linked), refresh=refresh)

    def scoped(self, q: Query, *, private: bool = True, linked: str | None = None) -> Query:
        """``q`` with the topics it may see resolved in this vault: ``private=False`` hides the
        ``private: true`` topics (but ``q.topic`` and its subtopics, when it names one), ``linked``
        keeps topic ``linked`` and the topics linked from or to it (:meth:`linked_topics`).
        :raises TopicNotFound: no topic ``linked``."""
        if not private:
            q = replace(q, hidden=frozenset(t for t in self.store.private_topics()
                                            if not (q.topic and in_scope(t, q.topic, q.subtopics))))
        if linked is not None:
            q = replace(q, within=self.linked_topics(linked))
        return q

    def linked_topics(self, topic: str) -> frozenset[str]:
        """Topic ``topic`` (named as a ``[[link]]`` names it) and the topics linked from or to it.

        :raises TopicNotFound: no topic of that name."""
        graph = self.store.links()
        names = graph.resolver.resolve(topic)
        if not names:
            raise TopicNotFound(f"no topic {topic!r} to follow the links of; see `memkit topics`")
        out: set[str] = set()
        for name in names:
            out |= graph.neighbourhood(name)
        return frozenset(out)

    def query(self, text: str, *, k: int | None = None, **options: Any) -> Query:
        """A :class:`Query` of this vault (``k`` default: ``max_memories_per_search``), checked
        once; ``options``: :meth:`search`'s. :raises InvalidValue: see :meth:`Query.make`."""
        return Query.make(text, k=self.config.max_memories_per_search if k is None else k, **options)

    def find(self, q: Query, *, refresh: bool | None = None) -> list[Hit]:
        """The hits of a checked query (:meth:`search`; ``refresh`` as there)."""
        query, k, mode, threshold, weak, name = q.text, q.k, q.mode, q.threshold, q.weak, q.topic
        if q.judge is not False and mode == "hybrid" and not q.words_first and self.config.judge \
                and not self._judge_off and (self.config.judge is True or self._judge is not None
                                             or judge_known_fast(self.store.state_dir / JUDGE_DIR)):
            # the judge's pass over the query (and, in a new process, its load) runs beside the
            # index check, the static model and the first stage: a search waits less
            prefetch_query(query)
        if not self.index.embedder.available:
            mode = "lexical"  # no model (warned when the vault looked for it): exact words only
        asked = threshold
        if threshold == "auto":
            threshold = self.threshold()
        try:
            checked = refresh is not False and self.refresh(force=bool(refresh), embed=mode != "lexical")
        except ModelError as exc:  # an embedding server that is down: words only, with a warning
            self.store.warn_once(f"{exc}; searching by words only")
            mode = "lexical"
            checked = refresh is not False and self.refresh(force=True, embed=False)
        # writes of other processes are looked for with the files (at most once a second)
        if checked:  # a file that needs a person is named on every search, not only when re-read
            for problem in self.index.file_errors():
                for message in problem.splitlines():
                    self.store.warn_once(message)
        # while a watcher keeps the index current, every search reads what it wrote (a cheap
        # look at the SQLite file's version), not only the first in a second
        watched = refresh is not False and time.monotonic() < self._watched_until
        view, ranker = self.ranker(others=checked or watched)
        subtopics = q.subtopics
        if name:
            if not any(in_scope(t, name, subtopics) for t in view.topics) and \
                    not any(in_scope(tf.name, name, subtopics) for tf in self.store.topic_files()):  # the disk only if the view lacks it
                raise TopicNotFound(f"no topic {name!r} (nor subtopics {name}-*) in this vault; see `memkit topics`")
        if len(view) == 0:
            return []
        mask = query_mask(view, q, load_people(self.store) if q.person or q.relation else [], self.importances)
        if mask is not None and not mask.any():
            return []
        qterms = text_terms(query)
        qids = view.term_ids_of(qterms)  # the query's term ids, from the view, once
        qt = ranker.lex.counted(qids)
        qvec = None
        if mode != "lexical":
            try:
                qvec = self.index.embedder.embed([query])[0]
            except ModelError as exc:
                self.store.warn_once(f"{exc}; searching by words only")
                mode = "lexical"
        expired = self.expired_rows(view)  # left out: asked for k more, then dropped (a mask would be slower)
        gone = set(expired.tolist())
        judging = self.judge() if (q.judge is not False and mode == "hybrid" and qvec is not None
                                   and not q.words_first) else None
        if judging is not None and qvec is not None:
            calibrated = asked == "auto" and isinstance(self.config.judge_threshold, str)
            judge_threshold = self.judge_threshold() if asked == "auto" else threshold
            try:
                return judged_hits(judging, self.judge_keys, self.judge_params, query, qt, qvec, view, ranker, k,
                                   judge_threshold, mask, gone, weak, calibrated=calibrated, exact_terms=(qterms, qids))
            except ModelError as exc:  # the static stage answers
                self.store.warn_once(f"{exc}; searching with the static model alone")
                self._judge_off = True
        with single_thread():
            ranked = ranker.search_hits(query, qvec, k=k + len(gone), mode=mode, threshold=threshold, mask=mask,
                                        words_first=q.words_first, qterms=qt)
        ranked = [r for r in ranked if r[0] not in gone][:k]
        if ranked or not weak or threshold is None or qvec is None:
            return hits_at(view, ranked)
        # nothing passed the threshold: the closest few that are more than noise, marked weak
        with single_thread():
            closest = ranker.search_hits(query, qvec, k=3 * min(k, weak) + len(gone), mode=mode, threshold=None, mask=mask,
                                         qterms=qt)
            noise = ranker.cosine_noise(qvec, mask)
        own = ranker.lex.coverage(qt)  # query words in an entry's own text
        shown = [r for r in closest if r[0] not in gone and (r[2] > noise or own[r[0]] > 0)][:min(k, weak)]
        return [replace(h, confident=False) for h in hits_at(view, shown)]


    def safety_hits(self, message: str, *, k: int = SAFETY_MEMORIES, floor: float = SAFETY_SURE) -> list[Hit]:
        """The safety notes (:mod:`memkit.search.safety`: allergies, medications, conditions) that
        bear on ``message``: their words and the message's meet in a domain
        (:func:`memkit.search.safety.bears_on`), or the judge's cosine with it reaches ``floor``; at
        most ``k``, closest first (by the judge; without it, the words alone and the static model).
        The notes are found through the word index (:func:`memkit.search.safety.safety_rows`), a few
        lookups whatever the vault's size."""
        view, ranker = self.ranker(others=False)
        rows = self._safety_rows(view, ranker) if len(view) else np.zeros(0, dtype=np.int64)
        if not rows.size:
            return []
        judge = self.judge()
        if judge is None:  # a board too slow for the judge: the notes whose words bear on the message
            return self._safety_by_words(view, rows, message, k)
        texts = [view.texts[i] for i in rows.tolist()]
        try:
            # their stored vectors, and at most SAFETY_EMBED embedded now: a message never waits seconds
            later = set(judge.missing(texts)[SAFETY_EMBED:])
            keep = [i for i in range(len(texts)) if i not in later]
            rows = rows[keep]
            cosines = judge.vectors([texts[i] for i in keep], self.judge_keys(view, rows)) @ judge.query(message)
        except ModelError:
            return self._safety_by_words(view, rows, message, k)
        kept_texts = [texts[i] for i in keep]
        order = list(islice((i for i in np.argsort(-cosines, kind="stable").tolist()
                             if cosines[i] >= floor or bears_on(kept_texts[i], message)), k))
        static = np.asarray(view.vectors[rows[order]], dtype=np.float32) @ self.index.embedder.embed([message])[0] \
            if order else np.zeros(0, np.float32)
        hits = hits_at(view, [(int(rows[i]), float(cosines[i]), float(c), 0.0) for i, c in zip(order, static)])
        return [replace(h, judge=float(cosines[i]), confident=False) for h, i in zip(hits, order)]

    def _safety_rows(self, view: IndexView, ranker: Ranker) -> np.ndarray:
        """The live, unexpired rows of safety notes outside private topics, the newest
        ``SAFETY_MAX_ROWS`` (:meth:`safety_hits`)."""
        rows = safety_rows(view.term_ids_of, ranker.lex.holders)
        if rows.size:
            gone = self.expired_rows(view)
            if gone.size:
                rows = rows[~np.isin(rows, gone)]
            private = self.store.private_topics()
            if private:  # never in a block: left out before the cut, so they take no public note's place
                rows = rows[~np.isin(view.file_ids[rows], [i for i, t in enumerate(view.topics) if t in private])]
        return rows[-SAFETY_MAX_ROWS:]  # the newest, where a vault holds very many

    def _safety_by_words(self, view: IndexView, rows: np.ndarray, message: str, k: int) -> list[Hit]:
        """:meth:`safety_hits` without the judge: the notes of ``rows`` whose words bear on ``message``,
        closest by the static model first (newest first where it cannot embed)."""
        rows = np.array([r for r in rows.tolist() if bears_on(view.texts[r], message)], dtype=np.int64)[::-1]
        if not rows.size:
            return []
        try:
            static = np.asarray(view.vectors[rows], dtype=np.float32) @ self.index.embedder.embed([message])[0]
        except (ModelError, ValueError, IndexError):
            static = np.zeros(rows.shape[0], dtype=np.float32)
        order = np.argsort(-static, kind="stable")[:k].tolist()
        hits = hits_at(view, [(int(rows[i]), float(static[i]), float(static[i]), 0.0) for i in order])
        return [replace(h, confident=False) for h in hits]

    def importances(self, view: IndexView) -> np.ndarray:
        """Each row's ``(importance X)`` (:meth:`memkit.search.filters.RowFacts.importances`)."""
        return self._rows.importances(view)

    def expired_rows(self, view: IndexView, today: date | None = None) -> np.ndarray:
        """The rows of ``view`` whose entry has expired by ``today``: search and context never show
        them (:meth:`memkit.search.filters.RowFacts.expired_rows`)."""
        return self._rows.expired_rows(view, self.config.expire, today)

    def judge_keys(self, view: IndexView, rows: np.ndarray) -> list[int]:
        """The judge's key (:func:`memkit.embeddings.judge.text_keys`) of each of ``rows``, computed once a row
        along the view's lineage."""
        cached = self._keys
        if cached is None or cached[0] != view.lineage or cached[1].shape[0] > len(view):
            cached = (view.lineage, np.zeros(len(view), dtype=np.int64), np.zeros(len(view), dtype=bool))
        elif cached[1].shape[0] < len(view):  # the view gained rows: room for theirs
            grow = len(view) - cached[1].shape[0]
            cached = (view.lineage, np.concatenate([cached[1], np.zeros(grow, np.int64)]),
                      np.concatenate([cached[2], np.zeros(grow, bool)]))
        self._keys = cached
        _, keys, known = cached
        todo = rows[~known[rows]]
        if todo.size:
            keys[todo] = text_keys([view.texts[i] for i in todo.tolist()])
            known[todo] = True
        return keys[rows].tolist()


def _thawed(view: IndexView) -> Ranker | None:
    """The ranker of a view that starts with frozen rows (:mod:`memkit.index.frozen`): theirs
    memory-mapped as the index kept it, extended by the rows after them; None when the view has
    none, or they were kept for other ranking parameters."""
    frozen = view.frozen
    if frozen is None:
        return None
    f = frozen.rows
    base = Ranker.restored(f, view.vectors[:f], view.file_ids[:f], (view.term_ids, view.term_offsets[:f + 1], view.vocab),
                           frozen.live, frozen.ranking, frozen.info, frozen.live)
    if base is None:
        return None
    if len(view) == f and (view.live is frozen.live):
        return base
    terms = (view.term_ids, view.term_offsets, view.vocab)
    return base.extended(view.texts, view.vectors, view.file_ids, terms, view.live)


def ranking_kept(view: IndexView) -> dict[str, Any]:
    """What a frozen index keeps of the ranker of ``view`` (:meth:`Ranker.kept`): the work a new
    process would otherwise do again. Built here without the prefix scan's copy (it is written
    from the matrix a block at a time)."""
    with single_thread():
        ranker = Ranker(view.texts, view.vectors, view.file_ids, terms=(view.term_ids, view.term_offsets, view.vocab),
                        live=view.live, scan=False, pages=lambda: release(view.vectors))
    kept = ranker.kept()
    release(view.vectors)
    return kept


