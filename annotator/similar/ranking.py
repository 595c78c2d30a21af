"""`like=TRACE_ID` in the trace filter language: the traces the other filters leave, most similar first.

The ranking comes from the project's current representation (annotator.similar.service.index_for): one
matrix-vector product and argpartition for the best few, then one query asking which of those the other
filters (and the member's access) keep. A filter that keeps few traces is read whole instead and only its
rows are scored. Traces without a vector yet (imported a moment ago, before their update ran) are left out
of the list, as is the trace itself.
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

# Below this many traces left by the other filters, their ids are read at once and only they are scored;
# above, the ranking is walked best first until a page is filled.
READ_ALL_BELOW = 20_000


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
    """`found` (every other filter applied, in its order) narrowed to the traces with a vector, and in
    similarity order unless `flt.ordering` names another."""
    build, index = like_target(access, flt.like)
    traces = found.traces if isinstance(found, RankedTraces) else found
    have = TraceVector.objects.filter(project_id=build.project_id, version=build.version).values("trace_id")
    traces = traces.filter(pk__in=have).exclude(pk=flt.like)
    if flt.ordering:
        return traces
    return SimilarTraces(traces.order_by("id"), flt, index=index)


class SimilarTraces(RankedTraces):
    """The traces in similarity order, for a paginator (count and slices), like a search's ranked list.
    `scores` holds the cosine similarity of every trace a slice returned."""

    def __init__(self, traces: QuerySet[Trace], flt: TraceFilter, *, index: NeighbourIndex) -> None:
        super().__init__(traces, flt, True, scope=traces)
        self.index = index
        self.scores: dict[int, float] = {}
        self._count: int | None = None

    def _shaped(self, method: str, *args) -> SimilarTraces:
        shaped = SimilarTraces(getattr(self.traces, method)(*args), self.flt, index=self.index)
        shaped.scores, shaped._count = self.scores, self._count
        return shaped

    def count(self) -> int:
        if self._count is None:
            self._count = self.traces.count()
        return self._count

    def ranked_ids(self, window: slice) -> list[int]:
        start = window.start or 0
        stop = self.count() if window.stop is None else min(window.stop, self.count())
        if stop <= start:
            return []
        if self.count() < READ_ALL_BELOW or stop >= len(self.index) // 2:
            ids, scores = self._ranked_among_all(stop)
        else:
            ids, scores = self._ranked_walk(stop)
        picked = slice(start, stop)
        self.scores.update(zip(ids[picked].tolist(), scores[picked].tolist(), strict=True))
        return ids[picked].tolist()

    def _ranked_among_all(self, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Score only the traces the filters keep (read at once)."""
        like = self.flt.like
        allowed = np.fromiter(self.traces.values_list("pk", flat=True).order_by(), dtype=np.int64)
        rows = np.minimum(np.searchsorted(self.index.ids, allowed), len(self.index) - 1)
        rows = rows[self.index.ids[rows] == allowed]
        scores = self.index.matrix[rows] @ self.index.matrix[self.index.row_of(like)]
        order = np.lexsort((self.index.ids[rows], -scores))[:stop]
        return self.index.ids[rows][order], scores[order]

    def _ranked_walk(self, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Walk the whole index's ranking best first, asking the database which of each stretch the filters
        keep, a stretch four times the last until the page is full."""
        like = self.flt.like
        limit = max(4 * stop, 256)
        while True:
            ids, scores = self.index.ranked(like, limit=min(limit, len(self.index)))
            kept = set(self.traces.filter(pk__in=ids.tolist()).order_by().values_list("pk", flat=True))
            mask = np.fromiter((pk in kept for pk in ids.tolist()), dtype=bool, count=ids.size)
            if mask.sum() >= stop or limit >= len(self.index):
                return ids[mask], scores[mask]
            limit *= 4
            if limit > READ_ALL_BELOW:
                return self._ranked_among_all(stop)


def without_like(flt: TraceFilter) -> TraceFilter:
    """The other filters (and the ordering): what `like` ranks."""
    return replace(flt, like=None)
