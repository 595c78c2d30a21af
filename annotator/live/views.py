"""The live section of a project's page (owners): where to point an OpenTelemetry exporter, an ingest token
created on the spot (its key shown once), which live traces get annotators, and the last spans received.

The section loads itself into the project page (`_live.html`, swap target `#live`); the spans list
refreshes on its own (`_live_spans.html`, swap target `#live-spans`). Both answer 200 with the message in the
fragment when a form is wrong, so htmx shows it where the owner looks.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, access_project
from annotator.live.service import do_save_live_settings, live_status
from annotator.models import LiveSettings, Project
from annotator.services.api_tokens import do_issue_ingest_token

SHOWN_SPANS = 10


def _section(request: HttpRequest, project: Project, **extra) -> HttpResponse:
    endpoint = request.build_absolute_uri(reverse("api-otlp-traces", args=[project.slug]))
    context = {
        "project": project,
        "endpoint": endpoint,
        "logs_endpoint": request.build_absolute_uri(reverse("api-otlp-logs", args=[project.slug])),
        "settings": LiveSettings.objects.filter(project=project).first() or LiveSettings(project=project),
        "choices": LiveSettings.Assign.choices,
        "status": live_status(project, recent=SHOWN_SPANS),
        **extra,
    }
    # The fragment for htmx; the same section on a page of its own for a plain link or form post.
    template = "annotator/partials/_live.html" if request.htmx else "annotator/live.html"
    return render(request, template, context)


@require_GET
def live_section(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    return _section(request, project)


@require_GET
def live_spans(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    return render(
        request,
        "annotator/partials/_live_spans.html",
        {"project": project, "status": live_status(project, recent=SHOWN_SPANS)},
    )


@require_POST
def create_ingest_token(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    name = request.POST.get("name", "").strip()[:100] or "OTLP exporter"
    token, key = do_issue_ingest_token(project, request.user, name=name)
    return _section(request, project, new_key=key, new_token=token)


@require_POST
def save_live_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    assign = request.POST.get("assign", "")
    try:
        rate = float(request.POST.get("sample_rate") or 1.0)
    except ValueError:
        rate = -1.0
    if assign not in LiveSettings.Assign.values:
        return _section(request, project, settings_error=f"Unknown choice {assign[:40]!r}.")
    if not 0 <= rate <= 1:
        return _section(request, project, settings_error="The sample rate is a share between 0 and 1.")
    do_save_live_settings(project, assign=assign, sample_rate=rate)
    return _section(request, project, settings_saved=True)
