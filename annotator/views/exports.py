"""Export a project as a Hugging Face dataset: the form, the job's progress (polled by htmx), the download.

Owners only: an export holds every annotator's labels, so letting annotators export would end blind
annotation. The Hub token field is a sensitive POST parameter (masked in Django's error reports) and goes
straight to the service, which keeps it out of the database (see annotator.services.exports.jobs).
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables

from annotator.access import MANAGE_ROLES, access_project
from annotator.services.exports import (
    LICENSES,
    ExportOptionsError,
    clean_options,
    do_queue_export,
    export_status,
    exports_for,
)
from annotator.services.exports.tables import (
    CONTENT_TYPES,
    TableError,
    check_table,
    encode,
    filename,
    label_table,
)
from traces.models import Batch

_FLAGS = ("gold_only", "include_text", "real_names", "private")


@sensitive_variables("token")
@sensitive_post_parameters("hf_token")
def export_page(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    errors, export = [], None
    if request.method == "POST":
        values = {
            key: request.POST.get(key, "") for key in ("license", "repo_id", "commit_message", "pretty_name")
        }
        values |= {flag: flag in request.POST for flag in _FLAGS}  # an unticked box is absent: False
        values["batches"] = request.POST.getlist("batches")
        values["view"] = request.POST.get("view", "")
        token = request.POST.get("hf_token", "")
        try:
            options = clean_options(project, values)
            export = do_queue_export(project, options, user=request.user, token=token)
        except ExportOptionsError as problem:
            errors = problem.messages
        if export is not None:
            export.refresh_from_db()
        if request.htmx:
            context = {"project": project, "errors": errors, "export": export, "status": _status(export)}
            return _with_history(
                request, project, "annotator/partials/_export_result.html", context, 400 if errors else 200
            )
    return _page(request, project, export, errors)


def export_job(request, slug: str, export_id: int):
    """The job card (htmx polls it); a plain GET (its href) gets the whole page with this job shown."""
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    export = get_object_or_404(exports_for(project), pk=export_id)
    if not request.htmx:
        return _page(request, project, export, [])
    context = {"project": project, "export": export, "status": export_status(export)}
    return _with_history(request, project, "annotator/partials/_export_job.html", context, 200)


def _history(project) -> list:
    return [(past, export_status(past)) for past in exports_for(project)[:20]]


def _with_history(request, project, template: str, context: dict, status: int) -> HttpResponse:
    """An htmx answer plus the past exports out of band: the list never lags behind the job card."""
    response = render(request, template, context, status=status)
    history = render_to_string(
        "annotator/partials/_past_exports.html",
        {"project": project, "history": _history(project), "oob": True},
        request=request,
    )
    response.content += history.encode()
    return response


def export_download(request, slug: str, export_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    export = get_object_or_404(exports_for(project), pk=export_id)
    path = Path(export.path)
    root = Path(settings.EXPORT_DIR).resolve()
    if not (export.path.endswith(".zip") and path.is_file() and path.resolve().is_relative_to(root)):
        raise Http404("This export has no file to download (yet)")
    return FileResponse(
        path.open("rb"), as_attachment=True, filename=f"{project.slug}-export-{export.pk}.zip"
    )


def export_labels(request, slug: str):
    """A label table (annotations, labels with evidence, or gold) as CSV or JSON Lines, streamed. The same
    door, traces and pseudonyms as the dataset; a bad choice comes back on the export page, said in words."""
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    kind, fmt = request.GET.get("kind", "annotations"), request.GET.get("format", "csv")
    values = {flag: request.GET.get(flag, "") for flag in ("gold_only", "include_text", "real_names")}
    values |= {"batches": request.GET.getlist("batches"), "view": request.GET.get("view", "")}
    try:
        check_table(kind, fmt)
        options = clean_options(project, values)
    except TableError as problem:
        return _page(request, project, None, [str(problem)])
    except ExportOptionsError as problem:
        return _page(request, project, None, problem.messages)
    response = StreamingHttpResponse(
        encode(label_table(project, options, kind), fmt), content_type=CONTENT_TYPES[fmt]
    )
    response["Content-Disposition"] = f'attachment; filename="{filename(project, kind, fmt)}"'
    return response


def _page(request, project, export, errors: list[str]):
    return render(
        request,
        "annotator/export.html",
        {
            "project": project,
            "batches": Batch.objects.in_project(project).order_by("name"),
            "saved_views": project.saved_views.order_by("name").values_list("name", flat=True),
            "licenses": LICENSES,
            "token_on_server": bool(os.environ.get("HF_TOKEN")),
            "hf_endpoint": settings.HF_ENDPOINT,
            "history": _history(project),
            "errors": errors,
            "export": export,
            "status": _status(export),
        },
        status=400 if errors else 200,
    )


def _status(export) -> dict | None:
    return export_status(export) if export is not None else None
