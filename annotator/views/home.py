"""The landing page: the projects I belong to, with my role, my own progress and, for the projects I own,
how far the whole project is (annotator.progress.service.project_summaries: two grouped queries)."""

from __future__ import annotations

from django.db.models import Count, Q
from django.shortcuts import render

from annotator.models import Assignment, Project, Role
from annotator.progress.service import project_summaries
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
    projects = list(projects)
    owned = [p for p in projects if Role.OWNER in roles.get(p.pk, [])]
    summaries = project_summaries(owned)
    # The open adjudication count is a hint about disagreements: not while I am still blind in a project.
    blind = set(
        Assignment.objects.filter(annotator=request.user, project__in=owned, project__blind=True)
        .exclude(status=Assignment.Status.SUBMITTED)
        .values_list("project_id", flat=True)
        .distinct()
    )
    for pk in blind:
        if Role.ANNOTATOR in roles.get(pk, []):
            summaries[pk]["open_items"] = None
    rows = [(project, sorted(roles.get(project.pk, [])), summaries.get(project.pk)) for project in projects]
    return render(
        request,
        "annotator/home.html",
        {"rows": rows, "show_archived": show_archived, "may_create": may_create_projects(request.user)},
    )
