"""What the "similar traces" panel shows for one trace and one member: the nearest traces they may open, each
with its similarity and a link to where this member opens it, and the state of the representation."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import PermissionDenied
from django.urls import reverse

from annotator.access import LABEL_ROLES, MANAGE_ROLES, REVIEW_ROLES, ProjectAccess
from annotator.models import TraceRepresentation
from annotator.search.filters import FilterError, TraceFilter
from annotator.search.service import filtered_traces
from annotator.similar.service import active_build, current_representation, latest_build
from traces.models import Trace

SHOWN = 8


@dataclass
class Neighbour:
    trace: Trace
    similarity: float
    url: str


@dataclass
class Panel:
    trace: Trace
    neighbours: list[Neighbour] = field(default_factory=list)
    current: TraceRepresentation | None = None
    building: TraceRepresentation | None = None
    failed: TraceRepresentation | None = None  # the newest build, when it failed (owners see why)
    stopped: TraceRepresentation | None = None  # the newest build, when its owner stopped it (owners see it)
    problem: str = ""  # why no neighbours are listed (not built yet, this trace not yet represented)
    may_build: bool = False
    list_url: str = ""  # the trace list ranked like this trace (reviewers)


def may_see_panel(access: ProjectAccess) -> bool:
    """Owners and adjudicators, and annotators (among the traces they may already open)."""
    return access.holds(REVIEW_ROLES | LABEL_ROLES)


def panel_for(access: ProjectAccess, trace: Trace) -> Panel:
    if not may_see_panel(access):
        raise PermissionDenied("Similar traces are for owners, adjudicators and annotators")
    project = access.project
    panel = Panel(trace=trace, may_build=access.holds(MANAGE_ROLES))
    panel.current = current_representation(project)
    panel.building = active_build(project)
    newest = latest_build(project)
    if newest is not None and newest.status == TraceRepresentation.Status.FAILED and panel.may_build:
        panel.failed = newest
    if newest is not None and newest.status == TraceRepresentation.Status.STOPPED and panel.may_build:
        panel.stopped = newest
    if panel.current is None:
        panel.problem = "Similar traces are not computed for this project yet."
        return panel
    try:
        found = filtered_traces(access, TraceFilter(like=trace.pk))
        rows = list(found.select_related("batch")[0:SHOWN])
    except FilterError as error:
        panel.problem = error.message[:1].upper() + error.message[1:] + "."
        return panel
    scores = getattr(found, "scores", {})
    links = _links(access, [row.pk for row in rows])
    panel.neighbours = [Neighbour(row, scores.get(row.pk, 0.0), links.get(row.pk, "")) for row in rows]
    if access.holds(REVIEW_ROLES):
        panel.list_url = reverse("project-traces", args=[project.slug]) + f"?like={trace.pk}"
    return panel


def _links(access: ProjectAccess, trace_ids: list[int]) -> dict[int, str]:
    """Where this member opens each trace: the review page for owners and adjudicators, else their own
    assignment of it (the only way an annotator opens a trace)."""
    slug = access.project.slug
    if access.holds(REVIEW_ROLES):
        return {pk: reverse("trace-review", args=[slug, pk]) for pk in trace_ids}
    mine = access.assignments().filter(trace_id__in=trace_ids).order_by("pk").values_list("trace_id", "pk")
    return {trace_id: reverse("annotate", args=[slug, pk]) for trace_id, pk in mine}
