"""A project's overview page: what it labels, who is in it, how far along it is."""

from __future__ import annotations

from django.db.models import Count, Q
from django.shortcuts import render

from annotator.access import ALL_TRACES_ROLES, access_project
from annotator.models import Assignment, Role
from annotator.navigation import project_nav
from annotator.progress.service import project_progress, work_slots
from annotator.views.queue import queue_context
from traces.models import Trace


def project_detail(request, slug: str):
    project = access_project(request.user, slug)
    # The overlap's work only: an LLM rater's annotations are counted on the LLM page, not as progress, and
    # so are imported raters' unless the project counts them toward the overlap (annotator.raters).
    counts = work_slots(project).aggregate(
        total=Count("id"),
        submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        drafts=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)),
        skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)),
    )
    members = (
        project.memberships.filter(active=True).select_related("user").order_by("role", "user__username")
    )
    batches = _held_batches(project)
    is_annotator = Role.ANNOTATOR in project.user_roles
    # Per annotator and per batch, for members who see every trace (no labels in it, only counts).
    progress = project_progress(project.access) if project.access.holds(ALL_TRACES_ROLES) else None
    return render(
        request,
        "annotator/project_detail.html",
        {
            "project": project,
            "counts": counts,
            "members": members,
            "batches": batches,
            "is_reviewer": project.access.is_reviewer,
            "is_owner": Role.OWNER in project.user_roles,
            "is_annotator": is_annotator,
            "nav": project_nav(project.access),
            "progress": progress,
            "progress_tables": [
                ("Per annotator", progress.by_annotator, "annotators"),
                ("Per batch", progress.by_batch, "batches"),
            ]
            if progress
            else [],
            **(queue_context(request, project) if is_annotator else {}),
        },
    )


def _held_batches(project) -> list[dict]:
    """The batches holding the project's traces, with how many of each it holds: a project may hold part of
    a batch (files imported into it) or follow it whole (attached)."""
    followed = set(project.batches.values_list("pk", flat=True))
    rows = (
        Trace.objects.in_project(project)
        .order_by()
        .values("batch_id", "batch__name", "batch__trace_count")
        .annotate(held=Count("id"))
    )
    return sorted(
        (
            {
                "name": row["batch__name"],
                "held": row["held"],
                "trace_count": row["batch__trace_count"],
                "followed": row["batch_id"] in followed,
            }
            for row in rows
        ),
        key=lambda row: row["name"],
    )
