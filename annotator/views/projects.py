"""A project's overview page: what it labels, who is in it, how far along it is."""

from __future__ import annotations

from django.db.models import Count, Q
from django.shortcuts import render

from annotator.access import access_project
from annotator.models import Assignment, Role
from annotator.raters import fills_overlap_q
from annotator.views.queue import queue_context
from traces.models import in_project_q


def project_detail(request, slug: str):
    project = access_project(request.user, slug)
    # The overlap's work only: an LLM rater's annotations are counted on the LLM page, not as progress, and
    # so are imported raters' unless the project counts them toward the overlap (annotator.raters).
    counts = (
        project.assignments.work()
        .filter(
            fills_overlap_q(project.imported_labels_count_toward_overlap, "annotator"),
            in_project_q(project, "trace"),
        )
        .aggregate(
            total=Count("id"),
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            drafts=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)),
            skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)),
        )
    )
    members = (
        project.memberships.filter(active=True).select_related("user").order_by("role", "user__username")
    )
    batches = project.batches.order_by("name")
    is_annotator = Role.ANNOTATOR in project.user_roles
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
            **(queue_context(request, project) if is_annotator else {}),
        },
    )
