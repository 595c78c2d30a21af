"""The project's outcomes page (/p/<slug>/outcomes/): owners upload a results file keyed by external id
and see the earlier ones. The form is its own swap target (#outcomes-form, `_outcomes_form.html`): an error
answers it again with every bad record listed (422, which static/js/site.js swaps), a success with what
changed. Without JavaScript the form posts and the page answers in full."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, access_project
from annotator.models import Project
from annotator.outcomes.parse import MAX_BYTES, MAX_PROBLEMS, OutcomeFileError
from annotator.outcomes.service import do_import_outcomes

SHOWN_IMPORTS = 20


class UploadError(ValueError):
    pass


def read_upload(upload) -> bytes:
    """The bytes of an uploaded results file, within MAX_BYTES; UploadError says what is wrong."""
    if upload is None:
        raise UploadError("Choose a results file to upload.")
    if (upload.size or 0) > MAX_BYTES:
        raise UploadError(f"{upload.name} is {upload.size:,} bytes; at most {MAX_BYTES:,}.")
    return upload.read()


def _context(project: Project, **extra: Any) -> dict[str, Any]:
    return {
        "project": project,
        "imports": project.outcome_imports.select_related("created_by")[:SHOWN_IMPORTS],
        "max_mb": MAX_BYTES // (1024 * 1024),
        **extra,
    }


def _answer(request: HttpRequest, project: Project, status: int = 200, **extra: Any) -> HttpResponse:
    template = "annotator/partials/_outcomes_form.html" if request.htmx else "annotator/outcomes.html"
    return render(request, template, _context(project, **extra), status=status)


@require_GET
def outcomes_page(request: HttpRequest, slug: str) -> HttpResponse:
    return _answer(request, access_project(request.user, slug, roles=MANAGE_ROLES))


@require_POST
def import_outcomes(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    upload = request.FILES.get("file")
    dry_run = request.POST.get("dry_run") == "on"
    ignore_unknown = request.POST.get("ignore_unknown") == "on"
    try:
        data = read_upload(upload)
        result = do_import_outcomes(
            project,
            data,
            filename=upload.name,
            actor=request.user,
            dry_run=dry_run,
            ignore_unknown=ignore_unknown,
        )
    except UploadError as error:
        return _answer(request, project, 422, error=str(error))
    except OutcomeFileError as error:
        shown = error.problems[:MAX_PROBLEMS]
        return _answer(
            request,
            project,
            422,
            error=f"Nothing changed: {upload.name} has {len(error.problems)} problem(s).",
            problems=shown,
            more=len(error.problems) - len(shown),
        )
    prefix = "Dry run, nothing changed: " if dry_run else ""
    return _answer(request, project, note=prefix + result.summary())
