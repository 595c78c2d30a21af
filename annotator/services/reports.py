"""Agreement reports: request (fingerprinted, so unchanged input is never recomputed), compute, refresh.

A report is a row (`AgreementReport`) keyed by its project, its canonical filters (`filters_key`) and a
fingerprint of its inputs: the filters, the taxonomy version, the report settings and an aggregate of
the matching submitted annotations (count, highest id, sum of versions, latest update). Every change to
an annotation bumps its version and `updated_at`, and a new one raises the count, so one aggregate query
tells whether a stored report still describes the data.

Recompute on change (debounced), the `on_trace_annotations_changed` hook calls `schedule_report_refresh`:

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
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from datetime import timedelta
from importlib import metadata
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import OperationalError, connection, transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

from annotator.agreement.report import SCHEMA, ReportSettings, build_report
from annotator.models import AgreementReport, Annotation, Project
from annotator.models.jobs import JobStatus
from annotator.services.enqueue import enqueue, is_eager
from annotator.services.jobs import heartbeat, send_job, stale_before
from annotator.services.report_data import (
    ReportFilterError,
    clean_filters,
    load_report_input,
    report_annotations,
)

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
    "schedule_report_refresh",
]

# A queued or running report older than this is presumed lost (its worker died) and is requested anew.
ABANDONED_AFTER = timedelta(minutes=15)
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
    stats = report_annotations(project, filters).aggregate(
        n=Count("id"), last_id=Max("id"), versions=Sum("version"), changed=Max("updated_at")
    )
    cfg = report_settings()
    payload = {
        "schema": SCHEMA,
        "taxonomy_version": project.taxonomy_version_id,
        "filters": dict(filters),
        "settings": [cfg.n_boot, cfg.pair_n_boot, cfg.ci, cfg.seed, list(cfg.windows)],
        "annotations": stats,
    }
    return hashlib.sha256(_canonical(payload).encode()).hexdigest()


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
                fingerprint = inputs_fingerprint(project, report.filters)
                loaded = load_report_input(project, report.filters)
            results = _results(project, report, loaded, fingerprint)
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
        error="",
    )
    report.refresh_from_db()
    return report


def _results(project: Project, report: AgreementReport, loaded, fingerprint: str) -> dict[str, Any]:
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
    results = build_report(loaded.data, cfg)
    for entry, info in zip(results["raters"], loaded.raters, strict=True):
        entry.update(kind=info["kind"], imported=info["imported"])
    return results


def software_version() -> str:
    """Name and version of this software, for methods sections ("computed with trace-annotator 0.1.0")."""
    try:
        return f"trace-annotator {metadata.version('trace-annotator')}"
    except metadata.PackageNotFoundError:  # run from a checkout that was never pip-installed
        return "trace-annotator (version unknown)"


def _debounce_key(project_id: int) -> str:
    return f"agreement-refresh:{project_id}"


def schedule_report_refresh(project_id: int) -> None:
    """Called after annotations changed (from the hook, after commit). Never computes a large report
    inline; see the module docstring for the debounce."""
    if celery_is_eager():
        submitted = Annotation.objects.filter(
            assignment__project_id=project_id, status=Annotation.Status.SUBMITTED
        ).count()
        if submitted <= settings.AGREEMENT_INLINE_MAX_ANNOTATIONS:
            do_refresh_reports(project_id)
        return
    countdown = settings.AGREEMENT_DEBOUNCE_SECONDS
    if cache.add(_debounce_key(project_id), "1", timeout=countdown + 300):
        enqueue("annotator.agreement.refresh_reports", project_id, countdown=countdown, after_commit=False)


def do_refresh_reports(project_id: int) -> AgreementReport | None:
    """Bring the project's unfiltered report up to date (computing it here, in the caller's process)."""
    cache.delete(_debounce_key(project_id))
    project = Project.objects.select_related("taxonomy_version__taxonomy").filter(pk=project_id).first()
    if project is None:
        return None
    report = do_request_report(project, {}, enqueue=False)
    if report.status != JobStatus.SUCCEEDED:
        report = do_compute_report(report.pk)
    return report


def report_is_current(project: Project, report: AgreementReport) -> bool:
    return report.fingerprint == inputs_fingerprint(project, report.filters)
