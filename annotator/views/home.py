"""The landing page: the projects I belong to, with my role and progress."""

from __future__ import annotations

from django.db.models import Count, Q
from django.shortcuts import render

from annotator.models import Assignment, Project
from annotator.services.projects import may_create_projects


def home(request):
    # Archived projects leave the list; `?archived=1` shows them too.
    show_archived = request.GET.get("archived") == "1"
    projects = Project.objects.visible_to(request.user)
    if not show_archived:
        projects = projects.filter(archived_at__isnull=True)
    projects = (
        projects.select_related("taxonomy_version__taxonomy")
        .annotate(
            my_total=Count("assignments", filter=Q(assignments__annotator=request.user), distinct=True),
            my_done=Count(
                "assignments",
                filter=Q(
                    assignments__annotator=request.user,
                    assignments__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED],
                ),
                distinct=True,
            ),
        )
        .order_by("name")
    )
    roles: dict[int, list[str]] = {}
    for membership in request.user.memberships.filter(active=True).values("project_id", "role"):
        roles.setdefault(membership["project_id"], []).append(membership["role"])
    rows = [(project, sorted(roles.get(project.pk, []))) for project in projects]
    return render(
        request,
        "annotator/home.html",
        {"rows": rows, "show_archived": show_archived, "may_create": may_create_projects(request.user)},
    )
