"""Agreement reports: request (fingerprinted, so unchanged input is never recomputed), compute, open.

A report is a row (`AgreementReport`) keyed by its project, its canonical filters (`filters_key`) and a
fingerprint of its inputs (annotator.services.reports.fingerprint): asking for a report whose fingerprint
matches a queued, running or finished one returns that one.

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

Only the unfiltered report is refreshed automatically (incrementally: annotator.services.reports.refresh);
a filtered report (a batch, some annotators, a date range) is recomputed when someone asks for it and its
fingerprint has changed.

Is a stored report current? ``data_updated_at`` keeps the newest annotation change the report has seen;
the pages compare it with the newest change now (one indexed lookup) instead of re-aggregating every
annotation, so they answer in the same time at a thousand or a million traces.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import timedelta
from importlib import metadata
from typing import Any

from django.db import OperationalError, connection, transaction
from django.utils import timezone

from annotator.agreement.report import build_report_from_rows
from annotator.models import AgreementReport, Project
from annotator.models.jobs import JobStatus
from annotator.services.enqueue import is_eager
from annotator.services.jobs import heartbeat, send_job, stale_before
from annotator.services.reports.fingerprint import (
    filters_key,
    fingerprint_of,
    inputs_fingerprint,
    newest_change,
    report_settings,
)
from annotator.services.reports.state import Rows, report_rows

log = logging.getLogger(__name__)

__all__ = [
    "do_compute_report",
    "do_open_report",
    "do_request_report",
    "latest_finished",
    "latest_report",
    "report_is_current",
    "report_results",
    "software_version",
]

# A queued or running report older than this is presumed lost (its worker died) and is requested anew.
ABANDONED_AFTER = timedelta(minutes=15)
PENDING = (JobStatus.QUEUED, JobStatus.RUNNING)


def celery_is_eager() -> bool:
    """True when tasks run inline (no REDIS_URL): the laptop default."""
    return is_eager()


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
                fingerprint = fingerprint_of(project, report.filters, stats)
            results = report_results(project, report, rows, fingerprint)
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


def report_results(project: Project, report: AgreementReport, rows: Rows, fingerprint: str) -> dict[str, Any]:
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


def report_is_current(project: Project, report: AgreementReport) -> bool:
    """True when no annotation of the project changed since the report's data (one indexed lookup);
    reports stored before data_updated_at existed fall back to the fingerprint."""
    if report.data_updated_at is None:
        return report.fingerprint == inputs_fingerprint(project, report.filters)
    newest = newest_change(project)
    return newest is None or newest <= report.data_updated_at
