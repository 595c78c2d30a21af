"""Figures kept current after a few annotations change, without reloading every trace.

A full computation reads every trace of the project (a million: ~3 s of queries). It stores, beside the
figures, the counts behind every figure (:mod:`annotator.signatures.tallies`: small, whatever the number
of traces), its input with the trace id of each row (:mod:`annotator.signatures.splice`, once) and a
*watermark*, the moment they describe. The next time the figures are asked for after the data changed:

1. the traces changed since the watermark (minus ``REFRESH_MARGIN``, for a transaction that wrote before
   it and committed after) come from three short indexed ranges: annotations by ``updated_at``, gold
   decisions by ``GoldHistory.at``, deleted submitted annotations by ``AnnotationDeletion.at`` (a trigger
   writes those, migration 0023);
2. those traces alone are loaded again, every query narrowed to them, and their stored rows read back
   (from the rows of the full computation, or from the ``overlay`` of rows changed since);
3. if every one of them is counted exactly as before (a new annotation of a trace whose gold decides its
   labels, an edit that changes nothing the figures read), the stored figures are carried forward as
   they are; otherwise their old rows' counts are taken out of the stored counts and their new rows'
   counts put in, and the figures are made from the counts (every figure is a function of sums over
   traces, so this equals a full computation; tests/signatures/test_refresh.py checks it).

Anything else that could move a figure (taxonomy version and its modes, the project's batches, a new
trace, the query) is in ``_base``: when it differs, or the changes are too many or cannot be placed (an
annotation deleted after its assignment), or more than ``FOLD_AFTER`` traces changed since the full
computation, or it is older than ``STATE_MAX_AGE``, the figures are computed in full. All of it lives in
the cache beside the figures: losing it only costs a full computation.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta
from typing import TypeVar

import numpy as np
from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone

from annotator.models import Annotation, AnnotationDeletion, GoldHistory, Project
from annotator.services.signatures.load import SignatureQuery, load_trace_rows
from annotator.signatures.splice import TraceRows, describe, pack, rows_of, splice, take
from annotator.signatures.tallies import Tallies, combine, tally
from taxonomy.models import FailureMode

__all__ = ["REFRESH_MARGIN", "changed_traces", "refresh_figures"]

# A transaction that saved an annotation before the watermark but committed after it is still seen.
REFRESH_MARGIN = timedelta(minutes=10)
# Beyond this many changed traces a full computation is the simpler path (and each narrowed query
# carries the ids as parameters).
INCREMENTAL_MAX_TRACES = 5_000
# Stored rows are recomputed in full at least this often: a safety net for changes no timestamp shows.
STATE_MAX_AGE = timedelta(hours=6)
STORED_SECONDS = 7 * 24 * 3600

# Past this many traces changed since the last full computation, the next refresh is a full one.
FOLD_AFTER = 20_000

Figures = TypeVar("Figures")


@dataclass(frozen=True)
class _State:
    """What the stored figures were computed from: the counts behind every figure (small, whatever the
    number of traces), the rows that changed since the full computation (``overlay``, with the ids of
    every trace it replaces: a trace that left the figures has no row there) and where the full
    computation's rows are (``rows_key``, stored once: a million traces are ~20 MB)."""

    base: str
    watermark: datetime
    full_at: datetime
    rows_key: str
    counts: Tallies
    overlay: TraceRows | None
    replaced: np.ndarray
    figures: object


def refresh_figures(
    project: Project,
    query: SignatureQuery,
    keep_empty: bool,
    fixed: Mapping[str, object],
    figures_of: Callable[[Tallies], Figures],
) -> Figures:
    """`figures_of` the counts of the project's current input under `query`: the stored counts updated
    by the traces changed since (or the stored figures carried forward when none of them moved), else
    counted from a full load. `fixed`: the parts of the data version no refresh follows (the taxonomy
    version, the batches, the newest trace)."""
    key, base = _state_key(project, query, keep_empty), _base(project, query, fixed)
    now = timezone.now()  # before any read: every change after it is seen by the next refresh
    state = cache.get(key)
    if isinstance(state, _State) and state.base == base and now - state.full_at < STATE_MAX_AGE:
        updated = _incremental(project, query, state, now, figures_of)
        if updated is not None:
            cache.set(key, updated, STORED_SECONDS)
            return updated.figures
    rows = load_trace_rows(project, query)
    counts = tally(rows.data)
    figures = figures_of(counts)
    rows_key = f"{key}:rows:{now.isoformat()}"
    cache.set(rows_key, pack(rows), STORED_SECONDS)
    empty = np.zeros(0, dtype=np.int64)
    cache.set(key, _State(base, now, now, rows_key, counts, None, empty, figures), STORED_SECONDS)
    return figures


def _incremental(
    project: Project,
    query: SignatureQuery,
    state: _State,
    now: datetime,
    figures_of: Callable[[Tallies], Figures],
) -> _State | None:
    """The state after the traces changed since `state`, or None when only a full computation will do."""
    touched = changed_traces(project, state.watermark - REFRESH_MARGIN)
    if touched is None or len(touched) > INCREMENTAL_MAX_TRACES:
        return None
    if not len(touched):
        return replace(state, watermark=now)
    old = _stored_rows(state, touched)
    if old is None:  # the full computation's rows are gone from the cache
        return None
    current = load_trace_rows(project, query, only=touched.tolist())
    if describe(old) == describe(current):
        return replace(state, watermark=now)  # every changed trace counts as before: no figure can move
    replaced = np.union1d(state.replaced, touched)
    if len(replaced) > FOLD_AFTER:
        return None
    counts = combine(combine(state.counts, tally(old.data), sign=-1), tally(current.data))
    overlay = current if state.overlay is None else splice(state.overlay, touched, current)
    return _State(
        state.base, now, state.full_at, state.rows_key, counts, overlay, replaced, figures_of(counts)
    )


def _stored_rows(state: _State, traces: np.ndarray) -> TraceRows | None:
    """The rows the stored counts hold for `traces`: the overlay's for those changed before, the full
    computation's for the others."""
    before = np.intersect1d(traces, state.replaced)
    blob = cache.get(state.rows_key)
    if blob is None:
        return None
    rows = rows_of(blob, np.setdiff1d(traces, before))
    if state.overlay is None or not len(before):
        return rows
    return splice(rows, before, take(state.overlay, before))


def changed_traces(project: Project, since: datetime) -> np.ndarray | None:
    """The traces whose labels may have changed since `since` (sorted ids), from three indexed ranges; None
    when a change cannot be placed (a submitted annotation deleted after its assignment)."""
    annotated = Annotation.objects.filter(assignment__project=project, updated_at__gte=since).values_list(
        "assignment__trace_id", flat=True
    )
    decided = GoldHistory.objects.filter(project=project, at__gte=since).values_list("trace_id", flat=True)
    deleted = list(
        AnnotationDeletion.objects.filter(
            Q(project_id=project.pk) | Q(project_id__isnull=True), at__gte=since
        )
        .values_list("trace_id", flat=True)
        .distinct()
    )
    if None in deleted:
        return None
    ids = {*annotated.order_by().distinct(), *decided.order_by().distinct(), *deleted}
    return np.array(sorted(pk for pk in ids if pk is not None), dtype=np.int64)


def _state_key(project: Project, query: SignatureQuery, keep_empty: bool) -> str:
    described = json.dumps({"query": asdict(query), "keep_empty": keep_empty}, sort_keys=True, default=str)
    return f"signature-rows:{project.pk}:{hashlib.sha256(described.encode()).hexdigest()}"


def _base(project: Project, query: SignatureQuery, fixed: Mapping[str, object]) -> str:
    """What the stored counts hold for every trace and cannot update: a change means a full computation."""
    parts = {
        **fixed,
        "slug": project.slug,
        "modes": list(  # the columns and what the figures show of them
            FailureMode.objects.filter(version_id=project.taxonomy_version_id)
            .order_by("order", "id")
            .values_list("id", "code", "name", "fatal", "category__code", "category__name")
        ),
        "query": asdict(query),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
