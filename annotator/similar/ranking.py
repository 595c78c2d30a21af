"""`like=TRACE_ID` in the trace filter language: the traces the other filters leave, most similar first.

The ranking comes from the project's current representation (annotator.similar.service.index_for): one
matrix-vector product and argpartition for the best few, then one query asking which of those the other
filters (and the member's access) keep. A filter that keeps few traces is read whole instead and only its
rows are scored. Traces without a vector yet (imported a moment ago, before their update ran) are left out
of the ranking and listed after the ranked ones, by id; the trace itself is left out.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from django.db.models import QuerySet

from annotator.access import ProjectAccess
from annotator.models import TraceRepresentation, TraceVector
from annotator.search.filters import FilterError, TraceFilter
from annotator.search.service import RankedTraces
from annotator.similar.service import current_representation, index_for
from annotator.similar.vectors import NeighbourIndex
from traces.models import Trace

# Up to this many traces left by the other filters, their ids are read at once and only they are scored;
# above, the ranking is walked best first, a stretch at a time, until a page is filled.
READ_ALL_BELOW = 5_000
# A walk that has not filled the page after this many of the best is given up for reading every id.
WALK_LIMIT = 20_000


def like_target(access: ProjectAccess, trace_id: int) -> tuple[TraceRepresentation, NeighbourIndex]:
    """The representation and index to rank by, for a trace this member may open. A trace they may not open
    answers exactly like one that does not exist (blind labelling: no hint of it)."""
    if not access.traces().filter(pk=trace_id).exists():
        raise FilterError("like", f"no trace {trace_id} in this project")
    build = current_representation(access.project)
    if build is None:
        raise FilterError(
            "like",
            "similar traces are not computed for this project yet (an owner starts it from a trace's "
            "'Similar traces' panel, or `manage.py similar_traces SLUG --build`)",
        )
    index = index_for(build)
    if not index.has(trace_id):
        raise FilterError(
            "like",
            f"trace {trace_id} has no representation yet (imported after the last update: try again once "
            "its vectors are written)",
        )
    return build, index


def similar_traces(access: ProjectAccess, flt: TraceFilter, found: QuerySet[Trace] | RankedTraces):
    """`found` (every other filter applied) without the trace itself, in similarity order unless
    `flt.ordering` names another column. Traces with no vector yet come after the ranked ones, by id."""
    build, index = like_target(access, flt.like)
    traces = (found.traces if isinstance(found, RankedTraces) else found).excluding(flt.like)
    if flt.ordering:
        return traces
    return SimilarTraces(traces.order_by("id"), flt, index=index, build=build)


class SimilarTraces(RankedTraces):
    """The traces in similarity order, for a paginator (count and slices), like a search's ranked list.
    `scores` holds the cosine similarity of every ranked trace a slice returned."""

    def __init__(
        self, traces: QuerySet[Trace], flt: TraceFilter, *, index: NeighbourIndex, build: TraceRepresentation
    ) -> None:
        super().__init__(traces, flt, True, scope=traces)
        self.index = index
        self.build = build
        self.scores: dict[int, float] = {}
        self._count: int | None = None
        self._similarities: np.ndarray | None = None

    def _shaped(self, method: str, *args) -> SimilarTraces:
        traces = getattr(self.traces, method)(*args)
        shaped = SimilarTraces(traces, self.flt, index=self.index, build=self.build)
        shaped.scores, shaped._count, shaped._similarities = self.scores, self._count, self._similarities
        return shaped

    def count(self) -> int:
        if self._count is None:
            self._count = self.traces.count()
        return self._count

    def ranked_ids(self, window: slice) -> list[int]:
        start = window.start or 0
        # A paginator has counted already; the viewer's panel asks for a few and never needs the count.
        stop = self.count() if window.stop is None else window.stop
        if self._count is not None:
            stop = min(stop, self._count)
        if stop <= start:
            return []
        ids, scores = self._ranked(stop)
        picked = slice(start, stop)
        self.scores.update(zip(ids[picked].tolist(), scores[picked].tolist(), strict=True))
        out = ids[picked].tolist()
        if len(ids) < stop:  # every ranked trace is listed: the unranked ones follow, by id
            have = TraceVector.objects.filter(
                project_id=self.build.project_id, version=self.build.version
            ).values("trace_id")
            rest = self.traces.exclude(pk__in=have).order_by("id").values_list("pk", flat=True)
            out += list(rest[max(start - len(ids), 0) : stop - len(ids)])
        return out

    def _ranked(self, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, similarities) of the ranked traces the filters keep, best first: at least `stop` of them,
        or every one when there are fewer."""
        if self._count is not None and self._count <= READ_ALL_BELOW:
            return self._ranked_among_all()
        similarities = self._all_similarities()
        limit = max(4 * stop, 256)
        while limit <= WALK_LIMIT:
            rows = _best_rows(similarities, min(limit, len(self.index)))
            ids = self.index.ids[rows]
            kept = set(self.traces.filter(pk__in=ids.tolist()).order_by().values_list("pk", flat=True))
            mask = np.fromiter((pk in kept for pk in ids.tolist()), dtype=bool, count=ids.size)
            if mask.sum() >= stop or limit >= len(self.index):
                return ids[mask], similarities[rows][mask]
            limit *= 4
        return self._ranked_among_all()

    def _all_similarities(self) -> np.ndarray:
        if self._similarities is None:
            similarities = self.index.similarities(self.flt.like)
            similarities[self.index.row_of(self.flt.like)] = -np.inf
            self._similarities = similarities
        return self._similarities

    def _ranked_among_all(self) -> tuple[np.ndarray, np.ndarray]:
        """Score only the traces the filters keep (their ids read at once)."""
        allowed = np.fromiter(self.traces.order_by().values_list("pk", flat=True), dtype=np.int64)
        if not len(self.index) or not allowed.size:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        rows = np.minimum(np.searchsorted(self.index.ids, allowed), len(self.index) - 1)
        rows = rows[self.index.ids[rows] == allowed]
        similarities = self._all_similarities()[rows]
        order = np.lexsort((self.index.ids[rows], -similarities))
        return self.index.ids[rows][order], similarities[order]


def _best_rows(similarities: np.ndarray, limit: int) -> np.ndarray:
    """The rows of the `limit` highest similarities, best first (equal: lower row, i.e. lower trace id)."""
    if limit < similarities.size:
        top = np.argpartition(-similarities, limit - 1)[:limit]
    else:
        top = np.arange(similarities.size)
    top = top[np.lexsort((top, -similarities[top]))]
    return top[np.isfinite(similarities[top])]


def without_like(flt: TraceFilter) -> TraceFilter:
    """The other filters (and the ordering): what `like` ranks."""
    return replace(flt, like=None)
