"""Which projects' similar-traces vectors are behind their traces: read by the periodic reconciliation
(annotator.services.jobs.do_reconcile), which sends their update again. Apart from the service so that the
jobs module, which the service uses, can import it."""

from __future__ import annotations

from django.db.models import Max

from annotator.models import TraceRepresentation, TraceVector
from annotator.models.jobs import JobStatus
from traces.models import Trace

UPDATE_TASK = "annotator.similar.update"


def projects_missing_vectors() -> list[int]:
    """Projects whose current representation lacks the vector of one of their traces and that no build is
    working on: an update lost with its worker or its message, which the reconciliation sends again."""
    current = (
        TraceRepresentation.objects.filter(status=JobStatus.SUCCEEDED)
        .values("project_id")
        .annotate(version=Max("version"))
    )
    busy = set(
        TraceRepresentation.objects.filter(status__in=TraceRepresentation.ACTIVE_STATUSES).values_list(
            "project_id", flat=True
        )
    )
    out = []
    for row in current:
        if row["project_id"] in busy:
            continue
        have = TraceVector.objects.filter(project_id=row["project_id"], version=row["version"])
        missing = Trace.objects.in_project(row["project_id"]).exclude(pk__in=have.values("trace_id"))
        if missing.exists():
            out.append(row["project_id"])
    return out
