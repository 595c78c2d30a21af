"""The unfiltered agreement report brought up to date incrementally, never by a full reload.

Every statistic is a sum over traces of a function of the trace's row (annotator.services.reports.state).
A refresh reloads only the traces with an annotation changed since the stored snapshot (``updated_at``,
indexed, minus REFRESH_MARGIN so that a transaction that committed late is still seen: reloading a trace
twice is harmless), moves them to their new rows, and builds the report from the rows. It writes only the
changes (folded into a new base past FOLD_AFTER traces). Anything the update cannot vouch for (a new or
vanished rater, another taxonomy version or window setting, an annotation deleted elsewhere, which the
count check catches, or too many changed traces) falls back to the full computation, which writes a fresh
state. The result is the same as the full computation's (tests/agreement/test_incremental.py).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from annotator.agreement.rows import ItemRows, compress, merge_rows
from annotator.models import AgreementReport, Annotation, Assignment, Project, ReportRows
from annotator.models.jobs import JobStatus
from annotator.services.followups import refresh_debounce_key
from annotator.services.reports.data import RatersChanged, annotation_columns, load_report_input
from annotator.services.reports.fingerprint import filters_key, fingerprint_of, newest_change, report_settings
from annotator.services.reports.jobs import do_compute_report, do_request_report, report_results
from annotator.services.reports.state import (
    Changes,
    Rows,
    from_micros,
    micros,
    save_state,
    state_key,
    trace_stats,
)

__all__ = ["do_refresh_reports"]

# An incremental refresh reloads the traces changed since its snapshot minus this margin: a transaction
# that saved an annotation before the snapshot but committed after it is still seen.
REFRESH_MARGIN = timedelta(minutes=10)
# Beyond this share of the project's traces changed, one full computation is cheaper than the update.
INCREMENTAL_MAX_SHARE = 0.25
# Past this many traces changed since the base state was written, a refresh writes a new base.
FOLD_AFTER = 20_000
# Stored rows are recomputed in full at least this often: a safety net for changes no updated_at shows
# (a submitted annotation deleted behind the app's back is already caught by a database trigger).
STATE_MAX_AGE = timedelta(hours=6)


def _packed(items: ItemRows) -> np.ndarray:
    """Each row's bytes (ratings, localisation codes, primary), as `compress` and `merge_rows` compare them."""
    n = len(items.ratings)
    fields = [
        items.ratings.reshape(n, int(np.prod(items.ratings.shape[1:]))).view(np.uint8),
        items.closest.reshape(n, int(np.prod(items.closest.shape[1:]))).view(np.uint8),
    ]
    if items.primary is not None:
        fields.append(np.ascontiguousarray(items.primary, dtype=np.int64).view(np.uint8))
    return np.ascontiguousarray(np.concatenate(fields, axis=1))


def _lookup(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position in the sorted `keys` of each of `values`, and whether it is there."""
    at = np.searchsorted(keys, values)
    found = at < len(keys)
    found[found] &= keys[at[found]] == values[found]
    return np.where(found, at, 0), found


def _incremental(
    project: Project, state: ReportRows, snapshot: datetime
) -> tuple[Rows, dict[str, Any]] | None:
    """The stored rows with the changed traces moved to their new rows, and the fingerprint's aggregate;
    None when a full computation is needed (see the module docstring).

    The state is the base written by the last full computation (every trace's row) plus the changes
    since (``Changes``): a refresh reads both and writes only the changes, so its cost follows the number
    of changed traces and distinct rows, not the number of traces; past FOLD_AFTER changed traces the
    changes are folded into a new base."""
    if state.key != state_key(project) or state.full_at < snapshot - STATE_MAX_AGE:
        return None
    with np.load(io.BytesIO(bytes(state.arrays))) as stored:
        trace_ids = stored["trace_ids"].astype(np.int64)
        row_of_trace = stored["row_of_trace"].astype(np.int64)
        versions = stored["versions"].astype(np.int64)
        counts = stored["counts"].astype(np.int64)
        last_id, changed_at = int(stored["last_id"]), int(stored["changed"])
        base = ItemRows(
            ratings=stored["ratings"],
            weight=np.zeros(0, dtype=np.int64),
            primary=stored["primary"] if "primary" in stored.files else None,
            closest=stored["closest"],
        )
    delta = Changes.read(state.changes, base)
    last_id, changed_at = max(last_id, delta.last_id), max(changed_at, delta.changed)
    ratings = np.concatenate([base.ratings, delta.ratings])
    closest = np.concatenate([base.closest, delta.closest])
    primary = None if base.primary is None else np.concatenate([base.primary, delta.primary])
    # The current state: the base's traces, those in the changes overridden.
    n_rows = len(ratings)
    at, overridden = _lookup(trace_ids, delta.traces)
    replaced = at[overridden]
    weight = np.bincount(row_of_trace, minlength=n_rows) - np.bincount(
        row_of_trace[replaced], minlength=n_rows
    )
    weight += np.bincount(delta.rows, minlength=n_rows)
    total_n = int(counts.sum() - counts[replaced].sum() + delta.counts.sum())
    total_versions = int(versions.sum() - versions[replaced].sum() + delta.versions.sum())

    changed = np.unique(
        np.fromiter(
            Annotation.objects.filter(
                assignment__project=project,
                assignment__purpose=Assignment.Purpose.WORK,
                updated_at__gte=state.watermark - REFRESH_MARGIN,
            )
            .order_by()
            .values_list("assignment__trace_id", flat=True),
            dtype=np.int64,
        )
    )
    if len(changed) > max(1000, INCREMENTAL_MAX_SHARE * len(trace_ids)):
        return None
    try:
        sub = load_report_input(project, {}, traces=changed.tolist(), rater_ids=state.rater_ids)
    except RatersChanged:
        return None
    sub_items, sub_rows = compress(sub.data, report_settings().windows)
    if (base.primary is None) != (sub_items.primary is None):
        return None
    columns = (
        sub.columns if sub.columns is not None else annotation_columns(project, {}, traces=changed.tolist())
    )
    sub_count, sub_versions, sub_aggregate = trace_stats(columns, sub.trace_ids)

    # Each changed trace's current row, count and versions (the changes first, then the base).
    in_delta_at, in_delta = _lookup(delta.traces, changed)
    in_base_at, in_base = _lookup(trace_ids, changed)
    in_base &= ~in_delta
    old_row = np.full(len(changed), -1, dtype=np.int64)
    old_count = np.zeros(len(changed), dtype=np.int64)
    old_versions = np.zeros(len(changed), dtype=np.int64)
    for found, where, (rows_of, counts_of, versions_of) in (
        (in_delta, in_delta_at, (delta.rows, delta.counts, delta.versions)),
        (in_base, in_base_at, (row_of_trace, counts, versions)),
    ):
        old_row[found] = rows_of[where[found]]
        old_count[found] = counts_of[where[found]]
        old_versions[found] = versions_of[where[found]]
    # A submitted annotation is never withdrawn (re-saving one as a draft is refused) and a deleted one
    # empties the key (trigger): a changed trace with fewer annotations than before is a surprise.
    new_at, new_found = _lookup(sub.trace_ids, changed)
    new_count = np.where(new_found, sub_count[new_at] if len(sub_count) else 0, 0)
    if (new_count < old_count).any():
        return None
    weight -= np.bincount(old_row[old_row >= 0], minlength=n_rows)
    total_n += int(sub_count.sum() - old_count.sum())
    total_versions += int(sub_versions.sum() - old_versions.sum())

    # The changed traces' rows: an existing row where one is equal, else a row added after the others.
    index = {row.tobytes(): k for k, row in enumerate(_packed(ItemRows(ratings, weight, primary, closest)))}
    added, sub_index = [], np.empty(len(sub_items.ratings), dtype=np.int64)
    for k, row in enumerate(_packed(sub_items)):
        key = row.tobytes()
        if key not in index:
            index[key] = n_rows + len(added)
            added.append(k)
        sub_index[k] = index[key]
    added = np.array(added, dtype=np.int64)
    ratings = np.concatenate([ratings, sub_items.ratings[added]])
    closest = np.concatenate([closest, sub_items.closest[added]])
    primary = None if primary is None else np.concatenate([primary, sub_items.primary[added]])
    new_rows = sub_index[sub_rows]
    weight = np.concatenate([weight, np.zeros(len(added), dtype=np.int64)])
    weight += np.bincount(new_rows, minlength=len(weight))

    used = np.flatnonzero(weight)
    # The rows in the order a full computation gives them (sorted by their bytes): the bootstrap draws
    # over rows in order, so only the same order gives the same numbers.
    items, _ = merge_rows(
        [
            ItemRows(
                ratings=ratings[used],
                weight=weight[used],
                primary=None if primary is None else primary[used],
                closest=closest[used],
            )
        ]
    )
    present = (items.ratings >= 0).any(axis=2)
    if (items.weight @ present == 0).any():  # a rater left with no annotation: not in a full report
        return None
    n = total_n
    # Ids and updated_at only grow (nothing submitted is withdrawn): the newest is the newer of the two.
    last_id = max(last_id, sub_aggregate["last_id"] or -1)
    changed_at = max(changed_at, micros(sub_aggregate["changed"]))
    aggregate = {
        "n": n,
        "last_id": last_id if n else None,
        "versions": total_versions if n else None,
        "changed": from_micros(changed_at) if n else None,
    }
    keep = ~np.isin(delta.traces, changed)
    traces = np.concatenate([delta.traces[keep], sub.trace_ids])
    order = np.argsort(traces, kind="stable")
    delta = Changes(
        traces=traces[order],
        rows=np.concatenate([delta.rows[keep], new_rows])[order],
        counts=np.concatenate([delta.counts[keep], sub_count])[order],
        versions=np.concatenate([delta.versions[keep], sub_versions])[order],
        ratings=ratings[len(base.ratings) :],
        closest=closest[len(base.closest) :],
        primary=None if primary is None else primary[len(base.ratings) :],
        last_id=last_id,
        changed=changed_at,
    )
    if len(delta.traces) > FOLD_AFTER:
        _fold(project, state, snapshot, (trace_ids, row_of_trace, counts, versions, base), delta, aggregate)
    else:
        ReportRows.objects.filter(pk=state.pk).update(changes=delta.blob(), watermark=snapshot)
    return Rows(items, sub.data.modes, sub.raters, incremental=True), aggregate


def _fold(
    project: Project,
    state: ReportRows,
    snapshot: datetime,
    base: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, ItemRows],
    delta: Changes,
    aggregate: Mapping[str, Any],
) -> None:
    """Write the base state anew with the changes applied, and no changes."""
    trace_ids, row_of_trace, counts, versions, rows_of_base = base
    keep = ~np.isin(trace_ids, delta.traces)
    traces = np.concatenate([trace_ids[keep], delta.traces])
    order = np.argsort(traces, kind="stable")
    rows = np.concatenate([row_of_trace[keep], delta.rows])[order]
    primary = None if delta.primary is None else np.concatenate([rows_of_base.primary, delta.primary])
    ratings = np.concatenate([rows_of_base.ratings, delta.ratings])
    closest = np.concatenate([rows_of_base.closest, delta.closest])
    used = np.unique(rows)
    renumber = np.full(len(ratings), -1, dtype=np.int64)
    renumber[used] = np.arange(len(used))
    items = ItemRows(
        ratings=ratings[used],
        weight=np.zeros(0, dtype=np.int64),
        primary=None if primary is None else primary[used],
        closest=closest[used],
    )
    save_state(
        project,
        traces[order],
        renumber[rows],
        items,
        np.concatenate([counts[keep], delta.counts])[order],
        np.concatenate([versions[keep], delta.versions])[order],
        aggregate,
        list(state.rater_ids),
        snapshot,
        state.full_at,
    )


def _refresh_incremental(project: Project) -> AgreementReport | None:
    """The unfiltered report brought up to date from the stored rows (see the module docstring), without
    aggregating every annotation; None when only a full computation can."""
    # Only whether there is one: the arrays (megabytes at a million traces) are read once, below.
    state = ReportRows.objects.filter(project=project).only("pk").first()
    if state is None:
        return None
    outer = connection.in_atomic_block
    with transaction.atomic():
        if connection.vendor == "postgresql" and not outer:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        snapshot = timezone.now()
        state = ReportRows.objects.filter(pk=state.pk).first()  # as of this snapshot
        found = _incremental(project, state, snapshot) if state is not None else None
        if found is None:
            return None
        rows, stats = found
        data_updated_at = newest_change(project)
    fingerprint = fingerprint_of(project, {}, stats)
    current = (
        AgreementReport.objects.filter(
            project=project, filters_key=filters_key({}), fingerprint=fingerprint, status=JobStatus.SUCCEEDED
        )
        .order_by("-requested_at", "-id")
        .first()
    )
    if current is not None:
        AgreementReport.objects.filter(pk=current.pk).update(data_updated_at=data_updated_at)
        current.refresh_from_db()
        return current
    report = AgreementReport.objects.create(
        project=project,
        filters={},
        filters_key=filters_key({}),
        fingerprint=fingerprint,
        status=JobStatus.RUNNING,
    )
    results = report_results(project, report, rows, fingerprint)
    AgreementReport.objects.filter(pk=report.pk).update(
        status=JobStatus.SUCCEEDED,
        results=results,
        computed_at=timezone.now(),
        finished_at=timezone.now(),
        data_updated_at=data_updated_at,
    )
    report.refresh_from_db()
    return report


def do_refresh_reports(project_id: int) -> AgreementReport | None:
    """Bring the project's unfiltered report up to date (computing it here, in the caller's process):
    incrementally from the stored rows when they can vouch for the result, else in full."""
    cache.delete(refresh_debounce_key(project_id))
    project = Project.objects.select_related("taxonomy_version__taxonomy").filter(pk=project_id).first()
    if project is None:
        return None
    report = _refresh_incremental(project)
    if report is not None:
        return report
    report = do_request_report(project, {}, enqueue=False)
    if report.status != JobStatus.SUCCEEDED:
        report = do_compute_report(report.pk)
    return report
