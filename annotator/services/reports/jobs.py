"""Agreement reports: request (fingerprinted, so unchanged input is never recomputed), compute, refresh.

A report is a row (`AgreementReport`) keyed by its project, its canonical filters (`filters_key`) and a
fingerprint of its inputs: the filters, the taxonomy version, the report settings and an aggregate of
the matching submitted annotations (count, highest id, sum of versions, latest update). Every change to
an annotation bumps its version and `updated_at`, and a new one raises the count, so one aggregate query
tells whether a stored report still describes the data.

Recompute on change (debounced), the `on_trace_annotations_changed` hook calls
`annotator.services.followups.schedule_report_refresh`:

- With a worker (Celery not eager): `cache.add` of a per-project key succeeds only for the first change
  in a window, and that change schedules `refresh_agreement_reports` with a countdown of
  AGREEMENT_DEBOUNCE_SECONDS (30). Later changes in the window find the key and do nothing, so a burst
  of submits costs one computation. The task deletes the key before it reads, so a change that lands
  while it computes schedules the next run. The key expires on its own (countdown + a margin) in case
  the task is lost.
- Eager (no REDIS_URL, the laptop default): a countdown cannot wait without blocking the request, so
  the refresh runs inline only while it is cheap (at most AGREEMENT_INLINE_MAX_ANNOTATIONS submitted
  annotations in the project, a few tens of milliseconds). Beyond that nothing runs on submit; the
  report page sees the changed fingerprint, says the report is out of date and recomputes on demand.

Only the unfiltered report is refreshed automatically; a filtered report (a batch, some annotators, a
date range) is recomputed when someone asks for it and its fingerprint has changed.

Incremental (the unfiltered report): every statistic is a sum over traces of a function of the trace's
row (``annotator.agreement.report.ItemRows``), so the project's traces are kept as distinct rows with
counts plus the row of every trace (``ReportRows``). A refresh reloads only the traces with an annotation
changed since the stored snapshot (``updated_at``, indexed, minus REFRESH_MARGIN so that a transaction
that committed late is still seen: reloading a trace twice is harmless), moves them to their new rows,
and builds the report from the rows -- never a full reload. The stored state is the last full
computation's (every trace's row) plus what refreshes changed since (``ReportRows.changes``, a few
kilobytes per refresh; folded into a new base past FOLD_AFTER traces), so a refresh of a million-trace
project writes kilobytes, not megabytes. Anything the update cannot vouch for (a new
or vanished rater, another taxonomy version or window setting, an annotation deleted elsewhere, which
the count check catches, or too many changed traces) falls back to the full computation, which writes a
fresh state. The result is the same as the full computation's (tests/agreement/test_incremental.py).

Is a stored report current? ``data_updated_at`` keeps the newest annotation change the report has seen;
the pages compare it with the newest change now (one indexed lookup) instead of re-aggregating every
annotation, so they answer in the same time at a thousand or a million traces.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from importlib import metadata
from typing import Any

import numpy as np
from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connection, transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

from annotator.agreement.report import SCHEMA, ReportSettings, build_report_from_rows
from annotator.agreement.rows import ItemRows, ModeInfo, compress, merge_rows
from annotator.models import AgreementReport, Annotation, Assignment, Project, ReportRows
from annotator.models.jobs import JobStatus
from annotator.services.enqueue import is_eager
from annotator.services.followups import refresh_debounce_key
from annotator.services.jobs import heartbeat, send_job, stale_before
from annotator.services.reports.data import (
    EPOCH,
    RatersChanged,
    annotation_columns,
    load_report_input,
    summary_aggregate,
)
from annotator.services.reports.filters import ReportFilterError, clean_filters, report_annotations
from taxonomy.models import FailureMode

log = logging.getLogger(__name__)

__all__ = [
    "ReportFilterError",
    "clean_filters",
    "do_compute_report",
    "do_refresh_reports",
    "do_request_report",
    "inputs_fingerprint",
    "latest_report",
    "report_settings",
]

# A queued or running report older than this is presumed lost (its worker died) and is requested anew.
ABANDONED_AFTER = timedelta(minutes=15)
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
PENDING = (JobStatus.QUEUED, JobStatus.RUNNING)


def celery_is_eager() -> bool:
    """True when tasks run inline (no REDIS_URL): the laptop default."""
    return is_eager()


def report_settings() -> ReportSettings:
    return ReportSettings(
        n_boot=settings.AGREEMENT_BOOTSTRAP,
        pair_n_boot=settings.AGREEMENT_PAIR_BOOTSTRAP,
        ci=0.95,
        seed=0,
        windows=(1, 3),
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def filters_key(filters: Mapping[str, Any]) -> str:
    return hashlib.sha256(_canonical(dict(filters)).encode()).hexdigest()


def inputs_fingerprint(project: Project, filters: Mapping[str, Any]) -> str:
    """One aggregate query over the matching submitted annotations, hashed with everything else the
    report depends on."""
    return _fingerprint(project, filters)[0]


def _fingerprint(project: Project, filters: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    if connection.vendor == "postgresql":
        stats = summary_aggregate(project, filters)  # the same numbers from one narrow table, no join
    else:
        stats = report_annotations(project, filters).aggregate(
            n=Count("id"), last_id=Max("id"), versions=Sum("version"), changed=Max("updated_at")
        )
    return _fingerprint_of(project, filters, stats), stats


def _fingerprint_of(project: Project, filters: Mapping[str, Any], stats: Mapping[str, Any]) -> str:
    cfg = report_settings()
    payload = {
        "schema": SCHEMA,
        "taxonomy_version": project.taxonomy_version_id,
        "filters": dict(filters),
        "settings": [cfg.n_boot, cfg.pair_n_boot, cfg.ci, cfg.seed, list(cfg.windows)],
        "annotations": dict(stats),
    }
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()


def newest_change(project: Project) -> datetime | None:
    """When any of the project's annotations last changed (any status, any filter): one short range of
    the updated_at index, whatever the project's size."""
    return (
        Annotation.objects.filter(assignment__project=project, assignment__purpose=Assignment.Purpose.WORK)
        .order_by("-updated_at")
        .values_list("updated_at", flat=True)
        .first()
    )


def latest_report(project: Project, filters: Mapping[str, Any]) -> AgreementReport | None:
    """The newest report for exactly these filters, whatever its status or age."""
    return (
        AgreementReport.objects.filter(project=project, filters_key=filters_key(filters))
        .order_by("-requested_at", "-id")
        .first()
    )


def latest_finished(project: Project, filters: Mapping[str, Any]) -> AgreementReport | None:
    return (
        AgreementReport.objects.filter(
            project=project, filters_key=filters_key(filters), status=JobStatus.SUCCEEDED
        )
        .order_by("-requested_at", "-id")
        .first()
    )


def _abandoned(report: AgreementReport) -> bool:
    return report.status in PENDING and report.requested_at < timezone.now() - ABANDONED_AFTER


def do_request_report(
    project: Project, filters: Mapping[str, Any] | None = None, *, force: bool = False, enqueue: bool = True
) -> AgreementReport:
    """The report for `filters` (already cleaned by `clean_filters`) on the current data.

    Returns the existing report when one with the same fingerprint is queued, running or done (so asking
    twice computes once); otherwise creates a queued report and, with `enqueue`, sends it to Celery after
    commit (inline when Celery is eager). `force` always creates a new one. A failed or abandoned report
    is requested anew."""
    filters = dict(filters or {})
    fingerprint = inputs_fingerprint(project, filters)
    if not force:
        existing = (
            AgreementReport.objects.filter(
                project=project, filters_key=filters_key(filters), fingerprint=fingerprint
            )
            .exclude(status=JobStatus.FAILED)
            .order_by("-requested_at", "-id")
            .first()
        )
        if existing is not None and not _abandoned(existing):
            if existing.status == JobStatus.SUCCEEDED:
                # Verified current just now: later page views compare against this newest change.
                AgreementReport.objects.filter(pk=existing.pk).update(data_updated_at=newest_change(project))
            return existing
    report = AgreementReport.objects.create(
        project=project,
        filters=filters,
        filters_key=filters_key(filters),
        fingerprint=fingerprint,
        status=JobStatus.QUEUED,
    )
    if enqueue:
        # Eager: inline, on this connection (it sees this transaction's rows, so there is no commit to
        # wait for). A worker reads through its own connection: send the task once the row is committed.
        # A broker that is down fails the report with a reason the page shows.
        send_job(AgreementReport, report.pk, after_commit=not celery_is_eager())
    return report


def do_open_report(project: Project, filters: Mapping[str, Any], *, retry: bool = False) -> AgreementReport:
    """What a reader of the report for `filters` gets, on the page and the API alike: the newest report, or
    a newly requested one when there is none yet (or the newest failed and the reader asked to retry)."""
    report = latest_report(project, filters)
    if report is None or (retry and report.status == JobStatus.FAILED):
        report = do_request_report(project, filters)
        report.refresh_from_db()
    return report


def do_compute_report(report_id: int) -> AgreementReport:
    """Compute and store one report. Idempotent: a finished report is returned untouched, and a duplicate
    delivery of a running one simply computes the same numbers again.

    Reads every input in one snapshot (REPEATABLE READ on PostgreSQL) so the results and the stored
    fingerprint describe the same data even while annotators keep submitting. A database that is
    unreachable is re-raised (the task retries it); any other error marks the report failed with the
    message, and is logged."""
    report = AgreementReport.objects.select_related("project__taxonomy_version__taxonomy").get(pk=report_id)
    if report.status == JobStatus.SUCCEEDED:
        return report
    # Computing twice gives the same numbers, so a duplicate delivery of a running report just computes
    # again; the claim counts the attempt (a report that kills its worker every time ends failed).
    if not AgreementReport.claim(report.pk, stale_before=stale_before()):
        AgreementReport.objects.filter(pk=report.pk).update(
            status=JobStatus.RUNNING, error="", heartbeat_at=timezone.now()
        )
    project = report.project
    outer = connection.in_atomic_block  # isolation can only be set at the start of a real transaction
    try:
        with heartbeat(AgreementReport, report.pk):
            with transaction.atomic():
                if connection.vendor == "postgresql" and not outer:
                    with connection.cursor() as cursor:
                        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                        cursor.execute("SET LOCAL work_mem = '256MB'")  # the aggregate's join, in memory
                snapshot = timezone.now()  # no later than the snapshot the reads below see
                data_updated_at = newest_change(project)
                rows, stats = report_rows(project, report.filters, snapshot)
                fingerprint = _fingerprint_of(project, report.filters, stats)
            results = _results(project, report, rows, fingerprint)
    except OperationalError:
        AgreementReport.objects.filter(pk=report.pk).update(status=JobStatus.QUEUED)
        raise
    except Exception as error:  # a bug or bad data: record it on the job row, do not retry forever
        log.exception("agreement report %s failed", report.pk)
        AgreementReport.objects.filter(pk=report.pk).update(
            status=JobStatus.FAILED, error=f"{type(error).__name__}: {error}", finished_at=timezone.now()
        )
        report.refresh_from_db()
        return report
    AgreementReport.objects.filter(pk=report.pk).update(
        status=JobStatus.SUCCEEDED,
        results=results,
        fingerprint=fingerprint,
        computed_at=timezone.now(),
        finished_at=timezone.now(),
        data_updated_at=data_updated_at,
        error="",
    )
    report.refresh_from_db()
    return report


@dataclass(frozen=True)
class Rows:
    """The report's input as distinct item rows (see ItemRows), with the raters' and modes' metadata."""

    items: ItemRows
    modes: tuple[ModeInfo, ...]
    raters: list[dict[str, Any]]  # username, kind, imported; in the report's order
    incremental: bool = False


def report_rows(
    project: Project, filters: Mapping[str, Any], snapshot: datetime
) -> tuple[Rows, dict[str, Any]]:
    """The rows for `filters` from a full load, and the fingerprint's aggregate of the same annotations;
    for the unfiltered report the state an incremental refresh starts from is stored too. Call inside the
    transaction of the snapshot."""
    loaded = load_report_input(project, filters)
    items, row_of_item = compress(loaded.data, report_settings().windows)
    if loaded.columns is not None:
        counts, versions, aggregate = _trace_stats(loaded.columns, loaded.trace_ids, loaded.column_items)
    else:
        counts, versions, aggregate = _trace_stats(annotation_columns(project, filters), loaded.trace_ids)
    if not filters:
        _save_state(
            project,
            loaded.trace_ids,
            row_of_item,
            items,
            counts,
            versions,
            aggregate,
            list(loaded.rater_ids),
            snapshot,
            snapshot,
        )
    return Rows(items, loaded.data.modes, loaded.raters), aggregate


def _trace_stats(
    columns: np.ndarray, trace_ids: np.ndarray, position: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """From annotation_columns rows (trace, id, version, updated_at micros): per trace of the sorted
    `trace_ids` the number of annotations and the sum of their versions, and the fingerprint's aggregate
    over all of them (as SQL's Count/Max/Sum/Max gives it). `position`: each row's trace in `trace_ids`,
    when the caller knows it."""
    if position is None:
        position = np.searchsorted(trace_ids, columns[:, 0])
    count = np.bincount(position, minlength=len(trace_ids)).astype(np.int64)
    versions = np.bincount(position, weights=columns[:, 2], minlength=len(trace_ids)).astype(np.int64)
    if len(columns) == 0:
        return count, versions, {"n": 0, "last_id": None, "versions": None, "changed": None}
    aggregate = {
        "n": len(columns),
        "last_id": int(columns[:, 1].max()),
        "versions": int(columns[:, 2].sum()),
        "changed": _from_micros(int(columns[:, 3].max())),
    }
    return count, versions, aggregate


def _from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def _micros(moment: datetime | None) -> int:
    return -1 if moment is None else (moment - EPOCH) // timedelta(microseconds=1)


def _state_key(project: Project) -> str:
    """What stored rows are valid for: a change of any of these means a full computation."""
    modes = list(
        FailureMode.objects.filter(version_id=project.taxonomy_version_id)
        .order_by("order", "id")
        .values_list("id", "code", "name", "category__code", "parent__code", "fatal")
    )
    payload = {
        "schema": SCHEMA,
        "state": 3,
        "version": project.taxonomy_version_id,
        "multi_label": project.taxonomy_version.is_multi_label,
        "modes": modes,
        "windows": list(report_settings().windows),
    }
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()


def _save_state(
    project: Project,
    trace_ids: np.ndarray,
    row_of_trace: np.ndarray,
    items: ItemRows,
    counts: np.ndarray,
    versions: np.ndarray,
    aggregate: Mapping[str, Any],
    rater_ids: list[int],
    snapshot: datetime,
    full_at: datetime,
) -> None:
    """Write the state. Kept small, since every refresh rewrites it: 13 bytes per trace (id, row, sum of
    versions, annotation count) plus the distinct rows. The count is stored rather than read from the
    row: an annotation whose every vote is missing (an imported source's NaN) leaves no mark in the row
    but is counted by the fingerprint's aggregate."""
    buffer = io.BytesIO()
    id_type = np.int32 if len(trace_ids) == 0 or trace_ids.max() < 2**31 else np.int64
    arrays = {
        "trace_ids": trace_ids.astype(id_type),
        "row_of_trace": row_of_trace.astype(np.int32),
        "counts": counts.astype(np.uint8 if len(counts) == 0 or counts.max() < 2**8 else np.int64),
        "versions": versions.astype(np.int32 if len(versions) == 0 or versions.max() < 2**31 else np.int64),
        "last_id": np.int64(-1 if aggregate["last_id"] is None else aggregate["last_id"]),
        "changed": np.int64(_micros(aggregate["changed"])),
        "ratings": items.ratings,
        "closest": items.closest,
    }
    if items.primary is not None:
        arrays["primary"] = items.primary
    np.savez(buffer, **arrays)
    ReportRows.objects.update_or_create(
        project=project,
        defaults={
            "key": _state_key(project),
            "rater_ids": rater_ids,
            "watermark": snapshot,
            "full_at": full_at,
            "arrays": buffer.getvalue(),
            "changes": b"",
        },
    )


@dataclass(frozen=True)
class _Changes:
    """What refreshes changed since the base state (``ReportRows.arrays``) was written: per changed trace
    (sorted) its row, annotation count and sum of versions; the rows they added after the base's rows; the
    newest annotation id and update seen (micros, -1: none)."""

    traces: np.ndarray
    rows: np.ndarray
    counts: np.ndarray
    versions: np.ndarray
    ratings: np.ndarray
    closest: np.ndarray
    primary: np.ndarray | None
    last_id: int = -1
    changed: int = -1

    @classmethod
    def read(cls, blob: bytes | memoryview | None, base: ItemRows) -> _Changes:
        if not blob or not len(blob):
            empty = np.zeros(0, dtype=np.int64)
            return cls(
                empty,
                empty,
                empty,
                empty,
                base.ratings[:0],
                base.closest[:0],
                None if base.primary is None else base.primary[:0],
            )
        with np.load(io.BytesIO(bytes(blob))) as stored:
            return cls(
                *(stored[name].astype(np.int64) for name in ("traces", "rows", "counts", "versions")),
                stored["ratings"],
                stored["closest"],
                stored["primary"] if "primary" in stored.files else None,
                int(stored["last_id"]),
                int(stored["changed"]),
            )

    def blob(self) -> bytes:
        buffer = io.BytesIO()
        arrays = {
            "traces": self.traces,
            "rows": self.rows,
            "counts": self.counts,
            "versions": self.versions,
            "ratings": self.ratings,
            "closest": self.closest,
            "last_id": np.int64(self.last_id),
            "changed": np.int64(self.changed),
        }
        if self.primary is not None:
            arrays["primary"] = self.primary
        np.savez(buffer, **arrays)
        return buffer.getvalue()


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
    since (``_Changes``): a refresh reads both and writes only the changes, so its cost follows the number
    of changed traces and distinct rows, not the number of traces; past FOLD_AFTER changed traces the
    changes are folded into a new base."""
    if state.key != _state_key(project) or state.full_at < snapshot - STATE_MAX_AGE:
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
    delta = _Changes.read(state.changes, base)
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
    sub_count, sub_versions, sub_aggregate = _trace_stats(columns, sub.trace_ids)

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
    changed_at = max(changed_at, _micros(sub_aggregate["changed"]))
    aggregate = {
        "n": n,
        "last_id": last_id if n else None,
        "versions": total_versions if n else None,
        "changed": _from_micros(changed_at) if n else None,
    }
    keep = ~np.isin(delta.traces, changed)
    traces = np.concatenate([delta.traces[keep], sub.trace_ids])
    order = np.argsort(traces, kind="stable")
    delta = _Changes(
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
    delta: _Changes,
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
    _save_state(
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
    fingerprint = _fingerprint_of(project, {}, stats)
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
    results = _results(project, report, rows, fingerprint)
    AgreementReport.objects.filter(pk=report.pk).update(
        status=JobStatus.SUCCEEDED,
        results=results,
        computed_at=timezone.now(),
        finished_at=timezone.now(),
        data_updated_at=data_updated_at,
    )
    report.refresh_from_db()
    return report


def _results(project: Project, report: AgreementReport, rows: Rows, fingerprint: str) -> dict[str, Any]:
    version = project.taxonomy_version
    cfg = report_settings()
    cfg.extra.update(
        {
            "project": project.slug,
            "taxonomy": {
                "slug": version.taxonomy.slug,
                "version": version.number,
                "labelling_mode": version.labelling_mode,
            },
            "filters": report.filters,
            "fingerprint": fingerprint,
            "software": software_version(),
            "computed_at": timezone.now().isoformat(),
        }
    )
    names = [r["username"] for r in rows.raters]
    results = build_report_from_rows(rows.items, names, rows.modes, cfg)
    for entry, info in zip(results["raters"], rows.raters, strict=True):
        entry.update(kind=info["kind"], imported=info["imported"])
    return results


def software_version() -> str:
    """Name and version of this software, for methods sections ("computed with trace-annotator 0.1.0")."""
    try:
        return f"trace-annotator {metadata.version('trace-annotator')}"
    except metadata.PackageNotFoundError:  # run from a checkout that was never pip-installed
        return "trace-annotator (version unknown)"


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


def report_is_current(project: Project, report: AgreementReport) -> bool:
    """True when no annotation of the project changed since the report's data (one indexed lookup);
    reports stored before data_updated_at existed fall back to the fingerprint."""
    if report.data_updated_at is None:
        return report.fingerprint == inputs_fingerprint(project, report.filters)
    newest = newest_change(project)
    return newest is None or newest <= report.data_updated_at
