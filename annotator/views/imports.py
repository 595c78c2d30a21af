"""Import traces into a project from the browser: drag and drop, a progress bar fed by the job, per-file errors."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404, render

from annotator.access import MANAGE_ROLES, access_project
from annotator.services.imports import job_progress
from annotator.services.label_import import UNKNOWN_MODE_HINT
from annotator.services.uploads import UploadError, do_queue_import, jobs_for_project
from traces import importers


def import_page(request, slug: str):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    error, job, problem_status = "", None, 400
    if request.method == "POST":
        try:
            job = do_queue_import(
                project,
                batch_name=request.POST.get("batch", ""),
                fmt=request.POST.get("format", ""),
                files=request.FILES.getlist("files"),
                user=request.user,
                ignore_unknown_modes=request.POST.get("ignore_unknown_modes") == "on",
            )
        except UploadError as problem:
            error, problem_status = _for_the_page(str(problem)), problem.status
        if job is not None:
            # The job may have ended already (run inline, or failed because the task queue is down): show
            # the row as it is now, on the plain page as in the htmx swap.
            job.refresh_from_db()
        if request.htmx:
            if job is None:
                return render(
                    request, "annotator/partials/_import_error.html", {"error": error}, status=problem_status
                )
            return render(request, "annotator/partials/_import_job.html", _job_context(project, job))
    return render(
        request,
        "annotator/import.html",
        {
            "project": project,
            "formats": [(name, module.LABEL) for name, module in importers.FORMATS.items()],
            "jobs": jobs_for_project(project)[:20],
            "error": error,
            "job": _job_context(project, job) if job else None,
            "max_upload_mb": settings.IMPORT_MAX_UPLOAD_MB,
        },
    )


def import_job(request, slug: str, job_id: int):
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    job = get_object_or_404(jobs_for_project(project), pk=job_id)
    return render(request, "annotator/partials/_import_job.html", _job_context(project, job))


# The form's own words for the option the importers' errors name as a command-line flag.
PAGE_HINT = (
    'tick "Skip embedded labels whose mode is not in the taxonomy" above and import again to skip such labels'
)


def _for_the_page(text: str) -> str:
    return text.replace(UNKNOWN_MODE_HINT, PAGE_HINT) if isinstance(text, str) else text


def _job_context(project, job) -> dict:
    progress = job_progress(job)
    progress["error"] = _for_the_page(progress["error"])
    progress["errors"] = [
        {**e, "error": _for_the_page(e.get("error", ""))} if isinstance(e, dict) else e
        for e in progress["errors"] or []
    ]
    return {"project": project, "job": job, "progress": progress}
