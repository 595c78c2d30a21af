"""The saved-views panel of the trace list (/p/<slug>/traces/): save the current filters under a name,
open, rename and delete views, open one as a calibration round. Who may do what: annotator/search/saved.py.

Each form posts to its own URL; htmx requests get the panel back (`_saved_views.html`, the one swap
target), with a 400 and the message inside it when the request is refused for its content (a duplicate
name, a filter that no longer reads), so site.js swaps it in; plain posts redirect back with a message.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, ProjectAccess, access_project
from annotator.models import Membership, Project, Role
from annotator.search.csv_export import trace_csv_lines
from annotator.search.filters import FilterError, parse
from annotator.search.saved import (
    ViewError,
    do_change_view,
    do_delete_view,
    do_open_view_round,
    do_save_view,
    find_view,
    may_create,
    may_manage,
    open_view,
    project_views,
    stored_params,
)
from annotator.search.service import filtered_traces
from annotator.services.rounds import RoundError


def panel_context(access: ProjectAccess, *, error: str = "", current: str = "") -> dict:
    """What the panel shows: the views this member may see with their counts, and whether they may save."""
    return {
        "project": access.project,
        "views": project_views(access),
        "may_create": may_create(access),
        "is_owner": access.holds(MANAGE_ROLES),
        "view_error": error,
        "current_query": current,
        "annotators": Membership.objects.filter(project=access.project, role=Role.ANNOTATOR, active=True)
        .order_by("user__username")
        .values_list("user__username", flat=True)
        if access.holds(MANAGE_ROLES)
        else [],
    }


def _answer(request: HttpRequest, project: Project, *, error: str = "", done: str = "") -> HttpResponse:
    access = project.access
    back = request.POST.get("query", "")
    if request.htmx:
        context = panel_context(access, error=error, current=back)
        context["view_done"] = done
        return render(request, "annotator/partials/_saved_views.html", context, status=400 if error else 200)
    if error:
        messages.error(request, error)
    elif done:
        messages.success(request, done)
    url = reverse("project-traces", args=[project.slug])
    return redirect(f"{url}?{back}" if back else url)


@require_POST
def save_view(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    query = request.POST.get("query", "")
    try:
        flt = parse(QueryDict(query))
        view = do_save_view(project.access, request.POST.get("name", ""), flt)
    except FilterError as error:
        return _answer(request, project, error=f"{error.param}: {error.message}")
    except ViewError as error:
        return _answer(
            request,
            project,
            error=error.message if error.field == "name" else f"{error.field}: {error.message}",
        )
    return _answer(request, project, done=f"Saved the view {view.name!r}.")


@require_GET
def traces_csv(request: HttpRequest, slug: str) -> HttpResponse:
    """The trace list's filters (or `view=ID|NAME`, a saved view's) as a CSV download of the traces."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    ref = request.GET.get("view", "").strip()
    try:
        if ref:
            view, flt = open_view(project.access, ref)
            name = view.name
        else:
            flt, name = parse(request.GET), "traces"
        traces = filtered_traces(project.access, flt)
    except FilterError as error:
        return HttpResponse(
            f"{error.param}: {error.message}", status=400, content_type="text/plain; charset=utf-8"
        )
    response = StreamingHttpResponse(trace_csv_lines(traces), content_type="text/csv; charset=utf-8")
    filename = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{project.slug}-{name}").strip("-")[:120]
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


@require_GET
def open_saved_view(request: HttpRequest, slug: str, view_id: int) -> HttpResponse:
    """A view's stable link: the trace list with its filters (the list applies the blind holds)."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    view = find_view(project.access, view_id)
    url = reverse("project-traces", args=[project.slug])
    params = stored_params(view)
    return redirect(f"{url}?{urlencode(params)}" if params else url)


@require_POST
def rename_view(request: HttpRequest, slug: str, view_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    view = find_view(project.access, view_id)
    old = view.name
    try:
        do_change_view(project.access, view, name=request.POST.get("name", ""))
    except ViewError as error:
        return _answer(request, project, error=f"Renaming {old!r}: {error.message}")
    return _answer(request, project, done=f"Renamed {old!r} to {view.name!r}.")


@require_POST
def delete_view(request: HttpRequest, slug: str, view_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    view = find_view(project.access, view_id)
    if not may_manage(project.access, view):
        raise PermissionDenied("Only the project's owners and the view's creator may delete it")
    name = view.name
    do_delete_view(project.access, view)
    return _answer(request, project, done=f"Deleted the view {name!r}.")


@require_POST
def view_round(request: HttpRequest, slug: str, view_id: int) -> HttpResponse:
    """Open a calibration round on the view's traces (owners), for the annotators ticked in the form."""
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    view = find_view(project.access, view_id)
    try:
        round_ = do_open_view_round(
            project.access,
            view,
            name=request.POST.get("round_name", "") or view.name,
            annotators=request.POST.getlist("annotators"),
            actor=request.user,
        )
    except (RoundError, FilterError) as error:
        return _answer(request, project, error=f"Round from {view.name!r}: {error}")
    done = (
        f"Opened the calibration round {round_.name!r} on {round_.traces.count()} trace(s) of {view.name!r}."
    )
    return _answer(request, project, done=done)
