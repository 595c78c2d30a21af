"""The viewer's "similar traces" panel (`_similar.html`, swap target `#similar-traces`), loaded lazily by htmx
under a trace on the annotation, review and adjudication pages; and the owner's button that (re)builds the
project's representation, which answers with the same panel (it then polls while the build runs), and the
owner's button that stops that build while its progress shows."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, ProjectAccess
from annotator.similar.panel import panel_for
from annotator.similar.service import do_request_build, do_stop_build

TEMPLATE = "annotator/partials/_similar.html"


@require_GET
def similar_panel(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    access = ProjectAccess.load(request.user, slug)
    trace = access.trace(trace_id)
    return render(request, TEMPLATE, {"project": access.project, "panel": panel_for(access, trace)})


@require_POST
def build(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    access = ProjectAccess.load(request.user, slug).require(MANAGE_ROLES)
    trace = access.trace(trace_id)
    started = do_request_build(access.project, actor=request.user)
    if not request.htmx:
        messages.success(request, f"Similar traces: build v{started.version} started.")
        return redirect("trace-review", slug, trace.pk)
    return render(request, TEMPLATE, {"project": access.project, "panel": panel_for(access, trace)})


@require_POST
def stop(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    access = ProjectAccess.load(request.user, slug).require(MANAGE_ROLES)
    trace = access.trace(trace_id)
    stopped = do_stop_build(access.project)
    if not request.htmx:
        if stopped is None:
            messages.error(request, "Similar traces: no build is in progress.")
        else:
            messages.success(request, f"Similar traces: build v{stopped.version} stopped.")
        return redirect("trace-review", slug, trace.pk)
    return render(request, TEMPLATE, {"project": access.project, "panel": panel_for(access, trace)})
