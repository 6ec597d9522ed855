"""Hybrid search: the keyword and vector legs of one query, fused, boosted and judged.

:class:`HybridSearch` runs a query's keyword leg (BM25, the rank rows and
stored vectors of its hits, the term statistics the relevance model reads)
in a worker thread beside the query embedding and the vector leg; term
presence is queued behind it and run by whichever thread is free first.
SQLite, torch and numpy release the GIL while they work, so on two cores a
search costs the slower leg, not the sum, as long as neither leg hands
Python many small rows (the keyword leg ranks inside SQLite for that). The
legs are fused on light rows (:func:`funes.memory.ranking.rank_scored`); every
candidate is then judged (:mod:`funes.memory.relevance`) and the hits are
ordered by the relevance they show, with the parts of one chat message
collapsed into one hit (:mod:`funes.memory.judging`: only the hits returned
are explained). :class:`funes.memory.core.Core` owns the filters, the floor, the turns
around each hit and the access log; this module only ranks.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from ..errors import EmbedderUnavailable, InvalidInput
from ..models import KEYWORD_ONLY, JudgedRecord, Memory, RankFields, SearchHit, SearchPlan, SearchResults
from ..models import config as config_mod
from ..store import Store
from .dates import DateWindow, find_dates
from .embedding import Embedding, windowed
from .judging import ordered_hits
from .query_names import names_text, query_vector
from .ranking import RankSettings, query_terms, rank_scored
from .relevance import CALIBRATED_MODELS, named_terms, signal_judge, subject_names
from .windows import Window, long_enough, passage

log = logging.getLogger("funes")

PLAN_WAIT = 0.002  # seconds the vector leg waits at most for the keyword leg to begin ranking

# A record's count of text parts (its first vectors) and its passage windows (the vectors after them).
Layout = tuple[int, list[Window]]


class HybridSearch:
    """One store's hybrid ranking: keyword and vector legs in parallel, fused and judged."""

    def __init__(
        self,
        store: Store,
        embedding: Embedding,
        config: config_mod.Config,
        worker: Callable[[], ThreadPoolExecutor],
        after_vector_search: Callable[[], None],
    ) -> None:
        self.store = store
        self.embedding = embedding
        self.config = config
        self._worker = worker  # the keyword leg's thread, started on first use
        self._after_vector_search = after_vector_search  # e.g. queue the index work the vector leg asked for
        # Held by a search while no other is under way: only then is its keyword leg not queued behind another's
        # on the worker, and worth waiting for (``PLAN_WAIT``).
        self._alone = threading.Lock()

    def search(self, plan: SearchPlan, windows: tuple[DateWindow, ...] = ()) -> SearchResults:
        """The best ``plan.fetch`` hits of the fused keyword and vector legs, each with its relevance explained.

        ``windows``: spans of time the caller resolved itself (an event's, dated
        by the memory: :meth:`funes.memory.core.Core.search`), boosted like the dates
        the query names.
        """
        query, filters, now, limit = plan.text, plan.filters, plan.now, plan.fetch
        min_similarity, project = plan.min_similarity, plan.project
        candidates = max(self.config.candidates, limit * 2)
        # The keyword leg runs beside the query embedding and the vector leg:
        # SQLite, torch and numpy all release the GIL, so on two cores the
        # search costs the slower leg, not the sum.
        terms, names = query_terms(query), named_terms(query)
        ident = self.store.identity()
        # Another model's cosines make relevance a rough signal, not a ranker: the fused score orders then.
        calibrated = ident is not None and ident.model_id in CALIBRATED_MODELS
        # Relevance reads name_excess: the setting is on, the constants fit the model and the query names someone.
        excess = calibrated and bool(self.config.name_excess) and bool(names)

        # PostgreSQL answers the whole keyword leg, term presence included, in one round trip.
        one_trip = getattr(self.store, "keyword_leg", None)
        # Both stores read what judging reads of every candidate with its rank fields (a partial record), and
        # whole records of the hits returned only (PostgreSQL: the legs' statements read them, with the vectors
        # of the vector leg's hits that have several).
        partial = getattr(self.store, "judge_records", None)
        judged: dict[str, JudgedRecord] = {}
        several: dict[str, list[np.ndarray]] = {}

        def keyword_leg() -> tuple[
            list[tuple[str, float]],
            dict[str, RankFields],
            tuple[int, dict[str, int]],
            dict[str, list[np.ndarray]],
            set[str] | None,
            dict[str, JudgedRecord],
        ]:
            # What fusion and relevance read from the keyword index and of the keyword hits'
            # records: their light rows, their stored vectors (for the cosines of those the vector
            # leg missed) and the term statistics.
            scan = {
                "limit": candidates,
                "scan_cap": self.config.keyword_scan_cap,
                "common_ratio": self.config.keyword_common_ratio,
                "now": now,
            }
            if one_trip is not None:
                return one_trip(terms, filters, **scan)  # type: ignore[no-any-return]
            fields: dict[str, RankFields] = {}
            judged: dict[str, JudgedRecord] = {}
            if partial is not None:  # SQLite: the hits' partial records, read with them, beside the vector leg
                try:
                    found = self.store.keyword_search(  # type: ignore[call-arg]
                        terms, filters, fields=fields, judged=judged, ready=planned.set, **scan
                    )
                finally:
                    planned.set()
                judged.update(partial([i for i, _ in found if i not in judged], fields))  # a plan that read none
            else:
                found = self.store.keyword_search(terms, filters, fields=fields, **scan)
            stats = self.store.term_stats(terms)
            vectors = self.store.vectors_for([i for i, _ in found])
            return found, fields, stats, vectors, None, judged

        # SQLite: set once the keyword leg's plan is made and its ranking statement (which runs without the GIL)
        # begins. The vector leg waits for it: usearch holds the GIL for its whole graph search, and the keyword
        # thread, still planning, could not reach its statement until then (2-3 ms at 1M records).
        planned = threading.Event()
        worker = self._worker()
        # The worker runs in this caller's context (its tenant, which PostgreSQL's row-level security reads).
        pending = worker.submit(contextvars.copy_context().run, keyword_leg)
        # Which terms the memory holds at all (a relevance input) is queued behind the keyword leg;
        # whichever thread is free first runs it (this one takes it back if the worker has not begun).
        presence = None
        if one_trip is None:
            presence = worker.submit(contextvars.copy_context().run, self.store.term_presence, terms, filters, now)
        degraded = None
        vector: np.ndarray | None = None
        nearest: list[tuple[str, float]] = []
        fields: dict[str, RankFields] = {}
        alone = one_trip is None and partial is not None and self._alone.acquire(blocking=False)
        try:
            try:
                vector = query_vector(self.embedding, query, float(self.config.name_free_query_weight))
                if alone:
                    planned.wait(PLAN_WAIT)
                vector_leg = getattr(self.store, "vector_leg", None)  # PostgreSQL: rank fields in the same trip
                if vector_leg is not None:
                    # A query naming whom the store is about reads every hit's vectors too (_names_cosines).
                    more = {} if partial is None else {"judged": judged, "vectors": several, "every_vector": excess}
                    nearest, fields = vector_leg(vector, filters, k=candidates, now=now, **more)
                else:
                    nearest = self.store.vector_search(vector, filters, k=candidates, now=now)
                    if partial is not None:
                        judged = partial([i for i, _ in nearest], fields)
                    else:
                        fields = self.store.rank_fields([i for i, _ in nearest])
                self._after_vector_search()
            except EmbedderUnavailable as exc:
                # Keywords still find things: answer with them and say so, rather than fail.
                log.warning("embedder unavailable, searching by keyword only: %s", exc)
                degraded, vector, min_similarity = KEYWORD_ONLY, None, None
            # Times the query names ("last May", "on October 13, 2023"), resolved against the search's "now"
            # (as_of when given): a boost for records of that time, never a filter (funes.query_dates).
            named = (find_dates(query, now) + windows) if self.config.date_boost > 0 else ()
            settings = rank_settings(self.config, min_similarity, project, named)
            if presence is not None:
                present = self.store.term_presence(terms, filters, now) if presence.cancel() else presence.result()
        finally:
            if presence is not None:
                presence.cancel()
            try:
                keyword, keyword_fields, stats, stored, found_present, keyword_judged = pending.result()
            finally:
                if alone:
                    self._alone.release()
            stored = {**several, **stored}
        if found_present is not None:
            present = found_present
        fields.update(keyword_fields)
        fields.update(self.store.rank_fields([i for i, _ in keyword if i not in fields]))
        sims = dict(nearest)
        if vector is not None:
            sims.update(best_cosines({m: v for m, v in stored.items() if m not in sims}, vector))
        alone = (
            self._names_cosines(query, subject_names(names, *stats), present, list(fields), stored)
            if vector is not None and excess
            else None
        )
        judge = signal_judge(
            terms, *stats, has_vector=vector is not None, present=present, names=names, name_cosines=alone
        )
        records: dict[str, Any] | None = None
        cosines: dict[str, np.ndarray] = {}
        layouts: dict[str, Layout] = {}
        if partial is not None:
            records = {**keyword_judged, **judged}  # the partial records both legs already read
        if vector is not None and self._windows_on():
            # Passage windows: the candidates and their parts' cosines are read before ranking (one statement
            # on PostgreSQL), each record's cosine becomes its blend of whole text and best window.
            records, cosines, layouts = self._candidates(list(fields), vector, stored, partial, records or {})
            sims, nearest = self._blend(layouts, cosines, sims, nearest)
        # Every candidate is judged, then ordered by the relevance it shows: one order, one number.
        # Judging all of them (not the fused score's top few) keeps the order from depending on limit.
        scored = rank_scored(keyword, nearest, sims, fields, settings, now, len(fields))
        if partial is not None:
            assert records is not None
            records.update(partial([s.id for s in scored if s.id not in records]))
        elif records is None:
            records = self.store.get_many([s.id for s in scored])
        hits = ordered_hits(scored, records, judge, calibrated=calibrated, limit=limit)
        if partial is not None:
            whole = self.store.get_many([h.memory.id for h in hits])
            hits = [
                SearchHit(
                    memory=whole[h.memory.id], score=h.score, explanation=h.explanation, context=h.context, weak=h.weak
                )
                for h in hits
                if h.memory.id in whole
            ]
        if cosines:
            hits = _with_passages(hits, cosines, layouts)
        return SearchResults(hits, degraded=degraded)

    def _names_cosines(
        self,
        query: str,
        names: set[str],
        present: set[str] | None,
        ids: list[str],
        stored: dict[str, list[np.ndarray]],
    ) -> dict[str, float] | None:
        """Each candidate's best cosine with the query's names alone, when it names someone a record holds
        (``names``: its names the store is about; what they explain of a record's cosine: ``name_excess``); None
        otherwise."""
        if not names or (present is not None and not names & present):
            return None
        text = names_text(query, names)
        if not text or not ids:
            return None
        vector = self.embedding.embed_query(text)
        missing = [i for i in ids if i not in stored]
        vectors = {**stored, **(self.store.vectors_for(missing) if missing else {})}
        return best_cosines({i: vectors[i] for i in ids if i in vectors}, vector)

    def _windowed(self, memory: Memory | JudgedRecord) -> Layout | None:
        """A record's count of text parts and its passage windows (None when it has none)."""
        if not windowed(memory) or not long_enough(memory):
            return None
        return self.embedding.layout(self.embedding.embed_text(memory))

    def _candidates(
        self,
        ids: list[str],
        vector: np.ndarray,
        stored: dict[str, list[np.ndarray]],
        partial: Callable[[list[str]], dict[str, Any]] | None,
        read: dict[str, Any],
    ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[str, Layout]]:
        """The candidates' records (``read``: those already read), each part's cosine with the query for those
        with several parts, and the layout of those with passage windows (worked out once a search)."""
        both = getattr(self.store, "get_many_cosines", None)
        if both is not None and partial is None:
            records, cosines = both(ids, vector)
            found = {i: self._windowed(records[i]) for i in cosines if i in records}
            return records, cosines, {i: layout for i, layout in found.items() if layout is not None}
        records = {**read, **(partial or self.store.get_many)([i for i in ids if i not in read])}
        # A record of one stored vector has no windows (a partial record says how many it has): no layout to work out.
        found = {i: self._windowed(m) for i, m in records.items() if _several(m)}
        layouts = {i: layout for i, layout in found.items() if layout is not None}
        missing = [i for i in layouts if i not in stored]
        vectors = {**stored, **(self.store.vectors_for(missing) if missing else {})}
        cosines = {i: np.vstack(vectors[i]) @ vector for i in layouts if len(vectors.get(i, [])) > 1}
        return records, cosines, layouts

    def _blend(
        self,
        layouts: dict[str, Layout],
        cosines: dict[str, np.ndarray],
        sims: dict[str, float],
        nearest: list[tuple[str, float]],
    ) -> tuple[dict[str, float], list[tuple[str, float]]]:
        """Each windowed candidate's cosine: its whole text's plus ``passage_window_weight`` of its best window's gain."""
        weight = float(self.config.passage_window_weight)
        out = dict(sims)
        for i, cos in cosines.items():
            found = layouts.get(i)
            if found is None or len(cos) <= found[0]:
                continue  # no windows, or stored before them
            whole, window = float(cos[: found[0]].max()), float(cos[found[0] :].max())
            out[i] = whole + weight * max(0.0, window - whole)
        ranked = sorted(((i, out[i]) for i, _ in nearest), key=lambda kv: kv[1], reverse=True)
        return out, ranked

    def _windows_on(self) -> bool:
        return int(self.config.passage_window_sentences) > 0


def _with_passages(
    hits: list[SearchHit], cosines: dict[str, np.ndarray], layouts: dict[str, Layout]
) -> list[SearchHit]:
    """Hits whose best-matching part is a passage window, explained by that window's sentences."""
    out: list[SearchHit] = []
    for hit in hits:
        cos, found = cosines.get(hit.memory.id), layouts.get(hit.memory.id)
        if cos is None or found is None:
            out.append(hit)
            continue
        part = int(np.argmax(cos))
        matched = passage(found[1], found[0], part, float(cos[part]))
        out.append(replace(hit, explanation=replace(hit.explanation, passage=matched)) if matched else hit)
    return out


def _several(memory: Memory | JudgedRecord) -> bool:
    """Whether a record may have several stored vectors (a partial record knows; a whole one may)."""
    count = getattr(memory, "vectors", None)
    return count is None or count > 1


def rank_settings(
    config: config_mod.Config,
    min_similarity: float | None = None,
    project: str | None = None,
    date_windows: tuple[DateWindow, ...] = (),
) -> RankSettings:
    """The ranking knobs from the settings (retention scores records with the same ones)."""
    try:
        return RankSettings(
            fusion=config.fusion,
            keyword_weight=config.keyword_weight,
            vector_weight=config.vector_weight,
            rrf_k=config.rrf_k,
            boost_project=config.boost_project,
            boost_team=config.boost_team,
            importance_weight=config.importance_weight,
            recency_weight=config.recency_weight,
            recency_half_life_days=config.recency_half_life_days,
            min_similarity=min_similarity,
            strong_keyword_rank=config.strong_keyword_rank,
            vector_floor=config.vector_floor if config.vector_floor > -1 else None,
            current_project=project,
            date_boost=float(config.date_boost),
            date_windows=date_windows,
        )
    except ValueError as exc:
        raise InvalidInput(
            f"The fusion settings are invalid: {exc}.",
            hint="Set fusion to 'convex' or 'rrf' and keyword_weight / vector_weight to numbers >= 0, "
            "e.g. `funes config set fusion convex`.",
        ) from exc


def best_cosines(vectors: dict[str, list[np.ndarray]], query: np.ndarray) -> dict[str, float]:
    """Each record's best cosine with the (unit) query over its parts' vectors: one product for all."""
    vectors = {m: parts for m, parts in vectors.items() if len(parts)}
    if not vectors:
        return {}
    counts = np.fromiter((len(v) for v in vectors.values()), dtype=np.int64, count=len(vectors))
    sims = np.vstack([row for parts in vectors.values() for row in parts]) @ query
    best = np.maximum.reduceat(sims, np.cumsum(counts) - counts)
    return dict(zip(vectors, best.tolist(), strict=True))
