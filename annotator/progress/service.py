"""The owner's view of a project's progress: per annotator and per batch, counted in a few grouped queries.

Each dimension (annotator, batch) costs three queries whatever the project's size: the counts per status,
the median time per submitted trace, and submissions per day over the last days. PostgreSQL computes the
median itself (percentile_cont); SQLite, the embedded default, has no percentile, so there the submitted
times are read in one query and the median taken in Python.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, F, FloatField, Q, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotator.access import REPORT_ROLES, ProjectAccess
from annotator.models import AdjudicationItem, AgreementReport, Assignment, Project
from annotator.models.reports import JobStatus
from annotator.progress.estimate import Throughput, median, percent, throughput
from annotator.raters import fills_overlap_q
from annotator.services.reports import filters_key, report_is_current
from traces.models import in_project_q

DAYS = 14
S = Assignment.Status
DIMENSIONS = {
    "annotator": ("annotator_id", "annotator__username"),
    "batch": ("trace__batch_id", "trace__batch__name"),
}


class _Median(Aggregate):
    """PostgreSQL's continuous median (no SQLite equivalent: see the module docstring)."""

    function = "percentile_cont"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()


@dataclass(frozen=True)
class ProgressRow:
    """One annotator's or one batch's progress."""

    name: str
    assigned: int
    submitted: int
    drafts: int
    skipped: int
    median_seconds: float | None
    pace: Throughput

    @property
    def to_do(self) -> int:
        return self.assigned - self.submitted - self.drafts - self.skipped

    @property
    def bar(self) -> dict[str, float]:
        """Widths in percent of the assigned slots, for the stacked bar (submitted, skipped, drafts)."""
        return {
            "submitted": percent(self.submitted, self.assigned),
            "skipped": percent(self.skipped, self.assigned),
            "drafts": percent(self.drafts, self.assigned),
        }


@dataclass(frozen=True)
class ProjectProgress:
    total: ProgressRow
    by_annotator: list[ProgressRow]
    by_batch: list[ProgressRow]
    adjudication_open: int | None  # None: this user may not see the queue
    agreement: dict[str, Any] | None  # None: this user may not see the report


def work_slots(project: Project) -> QuerySet[Assignment]:
    """The overlap's slots: what "progress" means (no calibration items, LLMs, or imported raters unless
    the project counts them toward the overlap), the same rows the project page has always counted."""
    return project.assignments.work().filter(
        fills_overlap_q(project.imported_labels_count_toward_overlap, "annotator"),
        in_project_q(project, "trace"),
    )


_COUNTS = {
    "assigned": Count("id"),
    "submitted": Count("id", filter=Q(status=S.SUBMITTED)),
    "drafts": Count("id", filter=Q(status=S.IN_PROGRESS)),
    "skipped": Count("id", filter=Q(status=S.SKIPPED)),
}


def _medians(slots: QuerySet[Assignment], key: str | None) -> dict[Any, float | None]:
    submitted = slots.filter(status=S.SUBMITTED, annotation__isnull=False).order_by()
    field = "annotation__time_spent_seconds"
    if connection.vendor == "postgresql":
        if key is None:
            return {None: submitted.aggregate(m=_Median(field))["m"]}
        return {row[key]: row["m"] for row in submitted.values(key).annotate(m=_Median(field))}
    times: dict[Any, list[int]] = defaultdict(list)
    for group, seconds in submitted.values_list(key or "project_id", field):
        times[None if key is None else group].append(seconds)
    return {group: median(values) for group, values in times.items()}


def _daily(slots: QuerySet[Assignment], key: str, since: date) -> dict[Any, dict[date, int]]:
    rows = (
        slots.filter(status=S.SUBMITTED, annotation__submitted_at__date__gte=since)
        .annotate(day=TruncDate("annotation__submitted_at"))
        .order_by()
        .values(key, "day")
        .annotate(n=Count("id"))
    )
    daily: dict[Any, dict[date, int]] = defaultdict(dict)
    for row in rows:
        daily[row[key]][row["day"]] = row["n"]
    return daily


def _rows(slots: QuerySet[Assignment], dimension: str, today: date) -> list[ProgressRow]:
    key, label = DIMENSIONS[dimension]
    counts = slots.order_by().values(key, label).annotate(**_COUNTS)
    medians = _medians(slots, key)
    daily = _daily(slots, key, today - timedelta(days=DAYS - 1))
    rows = []
    for row in counts:
        remaining = row["assigned"] - row["submitted"] - row["skipped"]
        rows.append(
            ProgressRow(
                name=row[label],
                assigned=row["assigned"],
                submitted=row["submitted"],
                drafts=row["drafts"],
                skipped=row["skipped"],
                median_seconds=medians.get(row[key]),
                pace=throughput(daily.get(row[key], {}), today=today, remaining=remaining, days=DAYS),
            )
        )
    return sorted(rows, key=lambda r: r.name)


def _total(slots: QuerySet[Assignment], by_annotator: list[ProgressRow], today: date) -> ProgressRow:
    counts = {name: sum(getattr(r, name) for r in by_annotator) for name in _COUNTS}
    daily: dict[date, int] = defaultdict(int)
    for row in by_annotator:
        for day, n in zip(row.pace.days, row.pace.per_day, strict=True):
            daily[day] += n
    remaining = counts["assigned"] - counts["submitted"] - counts["skipped"]
    return ProgressRow(
        name="All annotators",
        **counts,
        median_seconds=_medians(slots, None).get(None),
        pace=throughput(daily, today=today, remaining=remaining, days=DAYS),
    )


def agreement_state(project: Project) -> dict[str, Any]:
    """The project-wide (unfiltered) report's state: none yet, computing, failed, current, or out of date."""
    report = (
        AgreementReport.objects.filter(project=project, filters_key=filters_key({}))
        .order_by("-requested_at", "-id")
        .only("id", "status", "computed_at", "data_updated_at", "fingerprint", "filters", "project_id")
        .first()
    )
    if report is None:
        return {"state": "none", "label": "not computed yet"}
    if report.status in (JobStatus.QUEUED, JobStatus.RUNNING):
        return {"state": "pending", "label": "computing"}
    if report.status != JobStatus.SUCCEEDED:
        return {"state": "failed", "label": "the last computation failed"}
    current = report_is_current(project, report)
    return {
        "state": "current" if current else "stale",
        "label": "up to date" if current else "out of date: annotations changed since",
        "computed_at": report.computed_at,
    }


def project_progress(access: ProjectAccess, *, today: date | None = None) -> ProjectProgress:
    """Everything the progress panel shows, for a member who may see every trace (owner, adjudicator,
    viewer); the queue size and the report's state only to those who may open them (never while blind)."""
    project = access.project
    today = today or timezone.localdate()
    slots = work_slots(project)
    by_annotator = _rows(slots, "annotator", today)
    sees_reports = access.holds(REPORT_ROLES) and not access.blind_count
    return ProjectProgress(
        total=_total(slots, by_annotator, today),
        by_annotator=by_annotator,
        by_batch=_rows(slots, "batch", today),
        adjudication_open=access.adjudication_items().filter(status=AdjudicationItem.Status.OPEN).count()
        if access.is_reviewer and not access.blind_count
        else None,
        agreement=agreement_state(project) if sees_reports else None,
    )


def project_summaries(projects: list[Project]) -> dict[int, dict[str, int]]:
    """For the home page: each project's slot counts and open adjudication items, two grouped queries for
    all the projects at once (the caller passes the projects the user owns)."""
    ids = [p.pk for p in projects]
    summaries: dict[int, dict[str, int]] = {
        pk: {name: 0 for name in _COUNTS} | {"open_items": 0} for pk in ids
    }
    counted = Q()
    for project in projects:
        counted |= Q(project=project) & fills_overlap_q(
            project.imported_labels_count_toward_overlap, "annotator"
        )
    if ids:
        rows = (
            Assignment.objects.work()
            .filter(counted, project_id__in=ids, trace__project_rows__project_id=F("project_id"))
            .order_by()
            .values("project_id")
            .annotate(**_COUNTS)
        )
        for row in rows:
            summaries[row["project_id"]].update({name: row[name] for name in _COUNTS})
        items = (
            AdjudicationItem.objects.filter(project_id__in=ids, status=AdjudicationItem.Status.OPEN)
            .order_by()
            .values("project_id")
            .annotate(n=Count("id"))
        )
        for row in items:
            summaries[row["project_id"]]["open_items"] = row["n"]
    for summary in summaries.values():
        summary["to_do"] = summary["assigned"] - summary["submitted"] - summary["drafts"] - summary["skipped"]
        summary["percent"] = round(percent(summary["submitted"] + summary["skipped"], summary["assigned"]))
    return summaries
