"""The step viewer inside a project: access checks here, rendering in traces.viewer and its partials.

The annotation page and the review page both compose `traces/partials/_steps.html` (swap target
`#trace-steps`); paging, filters, search and deep links re-render just that partial through `trace_steps`,
with the page's own URL pushed so a reload or a shared link opens the same place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from annotator.access import ProjectAccess, access_trace
from annotator.models import Project
from traces.models import Trace
from traces.viewer import StepFilter, full_step, step_page, trace_header


def evidence_marks(evidence: Iterable[tuple[str, str, Iterable[int]]]) -> dict[int, list[str]]:
    """Step index -> "CODE · who" for every (who, mode code, evidence steps): the marks the review and
    adjudication pages put on the trace so each rater's evidence shows where it points."""
    marks: dict[int, list[str]] = {}
    for who, code, steps in evidence:
        for step in steps:
            marks.setdefault(step, []).append(f"{code} · {who}")
    return marks


def viewer_context(
    request: HttpRequest,
    project: Project,
    trace: Trace,
    *,
    page_url: str,
    steps_url: str,
    marks: dict[int, list[str]] | None = None,
) -> dict[str, Any]:
    """Everything the viewer partials need for the page of steps the request asks for."""
    filters = StepFilter.from_params(request.GET)
    page = step_page(trace, filters, page=request.GET.get("page"), step=request.GET.get("step"))
    for step in page.steps:
        step.marks = (marks or {}).get(step.index, [])
    # The answer key (Who&When's attribution, MAST's failure modes) only for those who may see labels.
    header = trace_header(trace, ProjectAccess.of(request.user, project).metadata(trace))
    return {
        **header,
        "page": page,
        "page_url": page_url,
        "steps_url": steps_url,
        "step_url": reverse("trace-step", args=[project.slug, trace.pk, 0]).removesuffix("0/"),
    }


def _page_path(request: HttpRequest, project: Project, fallback: str) -> str:
    """The page the partial lives in (from htmx's HX-Current-URL), for hrefs and the pushed URL. Only a
    path inside this project is trusted; anything else falls back."""
    current = request.htmx.current_url if request.htmx else None
    path = urlparse(current).path if current else ""
    return path if path.startswith(f"/p/{project.slug}/") else fallback


def render_steps(
    request: HttpRequest, project: Project, trace: Trace, *, fallback: str, steps_url: str, marks=None
) -> HttpResponse:
    page_url = _page_path(request, project, fallback)
    context = viewer_context(request, project, trace, page_url=page_url, steps_url=steps_url, marks=marks)
    response = render(request, "traces/partials/_steps.html", context)
    if request.htmx:
        query = request.GET.urlencode()
        response["HX-Push-Url"] = f"{page_url}?{query}" if query else page_url
    return response


def trace_steps(request: HttpRequest, slug: str, trace_id: int) -> HttpResponse:
    """A page of steps (htmx partial; a plain request gets the same fragment of HTML)."""
    project, trace = access_trace(request.user, slug, trace_id)
    mine = (
        trace.assignments.filter(project=project, annotator=request.user).values_list("pk", flat=True).first()
    )
    fallback = (
        reverse("annotate", args=[slug, mine]) if mine else reverse("trace-review", args=[slug, trace_id])
    )
    return render_steps(
        request, project, trace, fallback=fallback, steps_url=reverse("trace-steps", args=[slug, trace_id])
    )


def trace_step(request: HttpRequest, slug: str, trace_id: int, index: int) -> HttpResponse:
    """One step in full (for steps longer than the viewer's inline limit)."""
    project, trace = access_trace(request.user, slug, trace_id)
    step = full_step(trace, index, StepFilter.from_params(request.GET))
    if step is None:
        raise Http404("No such step")
    context = {
        "step": step,
        "page": None,
        "q": request.GET.get("q", ""),
        "page_url": _page_path(request, project, reverse("trace-steps", args=[slug, trace_id])),
        "step_url": reverse("trace-step", args=[slug, trace_id, 0]).removesuffix("0/"),
        "full": True,
    }
    template = "traces/partials/_step.html" if request.htmx else "traces/step_page.html"
    return render(request, template, {**context, "trace": trace, "project": project})
