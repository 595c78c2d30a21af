"""The owner's LLM rater page (/p/<slug>/llm/): endpoint settings, the key, the versioned prompt, runs.

Every view opens with `access_project(..., roles=MANAGE_ROLES)` (outsiders 404, other roles 403). Each htmx
form swaps its own partial (templates/annotator/partials/_llm_*.html), which is also what the full page
includes, so the first render and the responses are the same markup; without JavaScript the forms post
normally and redirect back. The stored key is never rendered: only where the key comes from.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, access_project
from annotator.models import LLMRun, Project, PromptTemplate, SavedView
from annotator.search.filters import FilterError
from annotator.search.saved import open_view
from annotator.services.enqueue import is_eager
from annotator.services.llm.agreement import CURVE_RULE, llm_agreement
from annotator.services.llm.config import (
    LLMSettingsError,
    current_prompt,
    do_forget_key,
    do_save_config,
    do_save_prompt,
    do_store_key,
    get_config,
)
from annotator.services.llm.estimate import estimate_run
from annotator.services.llm.labeller import messages_for
from annotator.services.llm.runs import LLMRunError, do_resume_run, do_start_run, do_stop_run, run_progress
from annotator.views.llm_forms import LLMConfigForm, StartRunForm
from traces.models import Batch, Trace

RUNS_SHOWN = 20


def _owner(request: HttpRequest, slug: str) -> Project:
    return access_project(request.user, slug, roles=MANAGE_ROLES)


def _config_context(project: Project, form: LLMConfigForm | None = None) -> dict[str, Any]:
    config = get_config(project)
    return {
        "project": project,
        "config": config,
        "form": form or LLMConfigForm(instance=config),
        "key_source": config.key_source(),
        "has_stored_key": config.has_stored_key,
    }


def _prompt_context(project: Project, draft: str | None = None) -> dict[str, Any]:
    template = current_prompt(project)
    trace = Trace.objects.in_project(project).order_by("id").first()
    preview = messages_for(project, trace, template=template, config=get_config(project)) if trace else None
    return {
        "project": project,
        "template": template,
        "versions": PromptTemplate.objects.filter(project=project).order_by("-number")[:10],
        "instructions": template.instructions if draft is None else draft,
        "preview": preview,
        "preview_trace": trace,
    }


def _runs_context(project: Project, form: StartRunForm | None = None) -> dict[str, Any]:
    runs = (
        LLMRun.objects.filter(project=project)
        .select_related("batch", "prompt", "rater")
        .order_by("-created_at")
    )
    return {
        "project": project,
        "runs": runs[:RUNS_SHOWN],
        "batches": Batch.objects.in_project(project).order_by("name"),
        "saved_views": project.saved_views.order_by("name").values_list("name", flat=True),
        "run_form": form or StartRunForm(),
        "default_model": get_config(project).model,
    }


def _page(
    request: HttpRequest, project: Project, overrides: dict | None = None, status: int = 200
) -> HttpResponse:
    context = {
        **_config_context(project),
        **_prompt_context(project),
        **_runs_context(project),
        **(overrides or {}),
    }
    return render(request, "annotator/llm.html", context, status=status)


def _respond(
    request: HttpRequest, project: Project, partial: str, context: dict, *, note: str = "", error: str = ""
) -> HttpResponse:
    """htmx: the partial with its note or error inline. A plain post: back to the page with a message, or
    on an error the page again (422) with what was typed, so nothing is lost without JavaScript either."""
    if request.htmx:
        status = 422 if error else 200
        return render(
            request, f"annotator/partials/{partial}", {**context, "note": note, "error": error}, status=status
        )
    if error:
        return _page(request, project, {**context, "error": error, "error_in": partial}, status=422)
    if note:
        messages.success(request, note)
    return redirect("project-llm", project.slug)


@require_GET
def llm_page(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, _owner(request, slug))


@require_POST
def save_config(request: HttpRequest, slug: str) -> HttpResponse:
    project = _owner(request, slug)
    form = LLMConfigForm(request.POST, instance=get_config(project))
    if not form.is_valid():
        error = "Some settings need fixing (see below)."
        return _respond(request, project, "_llm_config.html", _config_context(project, form), error=error)
    forgot = do_save_config(form.save(commit=False), actor=request.user)
    note = "Settings saved." + (
        " The base URL changed, so the stored API key was removed: store the key again." if forgot else ""
    )
    return _respond(request, project, "_llm_config.html", _config_context(project), note=note)


@require_POST
def save_key(request: HttpRequest, slug: str) -> HttpResponse:
    project = _owner(request, slug)
    error = ""
    try:
        if request.POST.get("action") == "forget":
            do_forget_key(project, actor=request.user)
        else:
            do_store_key(project, request.POST.get("api_key", ""), actor=request.user)
    except LLMSettingsError as problem:
        error = str(problem)
    note = (
        ""
        if error
        else "The key is stored, encrypted."
        if request.POST.get("action") != "forget"
        else "Key removed."
    )
    return _respond(request, project, "_llm_config.html", _config_context(project), note=note, error=error)


@require_POST
def save_prompt(request: HttpRequest, slug: str) -> HttpResponse:
    project = _owner(request, slug)
    text = request.POST.get("instructions", "")
    try:
        template, created = do_save_prompt(project, text, actor=request.user)
    except LLMSettingsError as problem:
        return _respond(
            request, project, "_llm_prompt.html", _prompt_context(project, text), error=str(problem)
        )
    note = f"Saved as prompt version {template.number}." if created else "No change: the prompt is as it was."
    return _respond(request, project, "_llm_prompt.html", _prompt_context(project), note=note)


@require_POST
def estimate(request: HttpRequest, slug: str) -> HttpResponse:
    """The start-run form's "Estimate" button: the run's requests, tokens and cost, before starting it."""
    project = _owner(request, slug)
    form = StartRunForm(request.POST)
    context: dict[str, Any] = {"project": project, "estimate": None}
    if not form.is_valid():
        error = "Choose a batch (and a limit from 1 to 2,147,483,647, if any)."
        return _estimate_response(request, project, form, context, error=error)
    try:
        context["estimate"] = estimate_run(
            project,
            form.cleaned_data["batch"],
            form.cleaned_data["limit"],
            form.cleaned_data["model"] or None,
        )
    except LLMRunError as problem:
        return _estimate_response(request, project, form, context, error=str(problem))
    return _estimate_response(request, project, form, context)


def _estimate_response(
    request: HttpRequest, project: Project, form: StartRunForm, context: dict, *, error: str = ""
) -> HttpResponse:
    """htmx: the estimate's own partial (422 with the error). A plain post: the page with the form as typed
    and the estimate (or the error) under it."""
    status = 422 if error else 200
    if request.htmx:
        return render(
            request,
            "annotator/partials/_llm_estimate.html",
            {**context, "estimate_error": error},
            status=status,
        )
    overrides = {**_runs_context(project, form), **context, "estimate_error": error}
    return _page(request, project, overrides, status=status)


@require_POST
def start_run(request: HttpRequest, slug: str) -> HttpResponse:
    project = _owner(request, slug)
    form = StartRunForm(request.POST)
    if not form.is_valid():
        error = "Choose a batch (and a limit from 1 to 2,147,483,647, if any)."
        return _respond(request, project, "_llm_runs.html", _runs_context(project, form), error=error)
    try:
        view = _chosen_view(project, form.cleaned_data["view"])
        run = do_start_run(
            project,
            view=view,
            batch_name=form.cleaned_data["batch"],
            limit=form.cleaned_data["limit"],
            model=form.cleaned_data["model"] or None,
            actor=request.user,
            background=is_eager(),  # no worker: never block this request on the run
        )
    except LLMRunError as problem:
        return _respond(request, project, "_llm_runs.html", _runs_context(project, form), error=str(problem))
    return _respond(request, project, "_llm_runs.html", _runs_context(project), note=f"Run {run.pk} queued.")


def _chosen_view(project: Project, ref: str) -> SavedView | None:
    """The saved view the run covers instead of the batch, if one is chosen: as the owner may use it (a view
    on labels is refused while they are blind on a trace it selects). LLMRunError says what is wrong."""
    if not ref.strip():
        return None
    try:
        return open_view(project.access, ref)[0]
    except Http404:
        raise LLMRunError(f"No saved view {ref[:100]!r} in this project.") from None
    except FilterError as error:
        raise LLMRunError(f"The saved view no longer reads: {error.param}: {error.message}") from None
    except PermissionDenied as refusal:
        raise LLMRunError(str(refusal)) from None


def _run(project: Project, run_id: int) -> LLMRun:
    return get_object_or_404(
        LLMRun.objects.select_related("batch", "prompt", "rater"), project=project, pk=run_id
    )


@require_GET
def run_status(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    project = _owner(request, slug)
    run = _run(project, run_id)
    context = {
        "project": project,
        "run": run,
        "progress": run_progress(run, hide=project.access.blind_trace_ids()),
    }
    template = "annotator/partials/_llm_run.html" if request.htmx else "annotator/llm_run.html"
    return render(request, template, context)


@require_POST
def run_action(request: HttpRequest, slug: str, run_id: int, action: str) -> HttpResponse:
    project = _owner(request, slug)
    run = _run(project, run_id)
    changed = do_stop_run(run) if action == "stop" else do_resume_run(run, background=is_eager())
    error = "" if changed else f"Run {run.pk} is {run.status_label}: nothing to {action}."
    run.refresh_from_db()
    context = {
        "project": project,
        "run": run,
        "progress": run_progress(run, hide=project.access.blind_trace_ids()),
    }
    return _respond(request, project, "_llm_run.html", context, error=error)


@require_GET
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    context = {"project": project, "raters": llm_agreement(project), "curve_rule": CURVE_RULE}
    if request.htmx:
        return render(request, "annotator/partials/_llm_agreement.html", context)
    return render(request, "annotator/llm_agreement.html", context)
