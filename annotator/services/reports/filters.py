"""Which submitted annotations an agreement report counts: its filters, checked and turned into queries.

Filters (all optional, combined with AND) restrict which submitted annotations count:
`batch` (a batch name of the project), `annotators` (usernames), `since` / `until` (dates, inclusive,
on `submitted_at` in the server's time zone), and `where`: trace metadata conditions "key=value" (the
trace's metadata value for key, as text, equals value; several conditions all hold), e.g. "round=Round 3";
`round`: a calibration round of the project (id, or name in params): the annotations of its slots;
`view`: a saved view of the project (id or name in params; its id and last change in the cleaned filters,
so editing a view makes its report another one): the traces it selects (the trace filter
language, annotator/search/filters.py). `where k=v` selects what a view of `meta=k:v` selects.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import Exact
from django.http import Http404
from django.utils import timezone

from annotator.access import ProjectAccess
from annotator.models import Annotation, Assignment, Membership, Project, Role, SavedView
from annotator.search.filters import FilterError
from annotator.search.scope import as_pairs, find_view, operator_access, scope_trace_ids
from traces.models import Batch, in_project_q

FILTER_KEYS = ("batch", "annotators", "since", "until", "where", "round", "view")
MAX_WHERE = 10
MAX_WHERE_CHARS = 200


class ReportFilterError(ValueError):
    """A filter names something that is not in the project, or a date that is not a date."""

    def __init__(self, messages: list[str] | str):
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


def clean_filters(
    project: Project, params: Mapping[str, Any], access: ProjectAccess | None = None
) -> dict[str, Any]:
    """Canonical filters (only the keys that are set; annotators sorted) from query or form params.

    `annotators` may be a list or one comma-separated string. `access`: who asks (a view they may not see
    is "no such view"); None for the operator (CLI, tasks). Raises ReportFilterError naming every
    problem."""
    errors: list[str] = []
    out: dict[str, Any] = {}
    batch = str(params.get("batch") or "").strip()
    if batch:
        if Batch.objects.in_project(project).filter(name=batch).exists():
            out["batch"] = batch
        else:
            errors.append(f"No batch “{batch}” in this project")
    raw = params.getlist("annotators") if hasattr(params, "getlist") else params.get("annotators") or []
    if isinstance(raw, str):
        raw = [raw]
    names = sorted({name.strip() for value in raw for name in str(value).split(",") if name.strip()})
    if names:
        known = set(
            Membership.objects.filter(
                project=project, role=Role.ANNOTATOR, user__username__in=names
            ).values_list("user__username", flat=True)
        )
        errors += [f"No annotator “{name}” in this project" for name in names if name not in known]
        out["annotators"] = names
    round_value = str(params.get("round") or "").strip()
    if round_value:
        rounds = project.rounds.all()
        found = (
            rounds.filter(pk=int(round_value))
            if round_value.isdigit() and len(round_value) < 10
            else rounds.none()
        ) or rounds.filter(name=round_value)
        round_id = found.values_list("pk", flat=True).first()
        if round_id is None:
            errors.append(f"No calibration round “{round_value[:100]}” in this project")
        else:
            out["round"] = round_id
    view_value = str(params.get("view") or "").strip()
    if view_value:
        view, problem = _clean_view(project, view_value, access)
        if problem:
            errors.append(problem)
        else:
            # The id, and when the view last changed: a report of the view before an edit is another
            # report (the filters are the report's key), as it counted other traces.
            out["view"] = view.pk
            out["view_at"] = view.updated_at.isoformat()
    where, where_errors = _clean_where(params)
    errors += where_errors
    if where:
        out["where"] = where
    for key in ("since", "until"):
        value = str(params.get(key) or "").strip()
        if value:
            try:
                out[key] = dt.date.fromisoformat(value).isoformat()
            except ValueError:
                errors.append(f"“{value}” is not a date (use YYYY-MM-DD) for {key}")
    if "since" in out and "until" in out and out["since"] > out["until"]:
        errors.append("The start date is after the end date")
    if errors:
        raise ReportFilterError(errors)
    return out


def _clean_view(project: Project, ref: str, access: ProjectAccess | None) -> tuple[SavedView | None, str]:
    """The saved view, or why it cannot scope the report (unknown, held back from this member, stale)."""
    try:
        view = find_view(access or operator_access(project), ref)
    except Http404:
        return None, f"No saved view “{ref[:100]}” in this project"
    try:
        scope_trace_ids(project, as_pairs(view.params))
    except FilterError as error:
        return None, f"The saved view “{view.name}” no longer reads: {error.param}: {error.message}"
    return view, ""


def _clean_where(params: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Sorted, de-duplicated "key=value" metadata conditions, and the problems with them."""
    raw = params.getlist("where") if hasattr(params, "getlist") else params.get("where") or []
    if isinstance(raw, str):
        raw = [raw]
    conditions, errors = set(), []
    for item in raw:
        text = str(item).strip()
        if not text:
            continue
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            errors.append(
                f"“{text[:MAX_WHERE_CHARS]}” is not a metadata condition: write key=value, e.g. round=Round 3"
            )
        elif len(text) > MAX_WHERE_CHARS:
            errors.append(f"A metadata condition may be at most {MAX_WHERE_CHARS} characters")
        else:
            conditions.add(f"{key.strip()}={value.strip()}")
    if len(conditions) > MAX_WHERE:
        errors.append(f"At most {MAX_WHERE} metadata conditions")
    return sorted(conditions), errors


def where_conditions(filters: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [tuple(item.split("=", 1)) for item in filters.get("where") or []]


def _day_start(day: str) -> dt.datetime:
    return timezone.make_aware(dt.datetime.combine(dt.date.fromisoformat(day), dt.time.min))


def filter_q(project: Project, filters: Mapping[str, Any], prefix: str = "") -> Q:
    """Submitted annotations of the project matching `filters`; `prefix` reaches Annotation from another
    model (e.g. "annotation__" from LabelApplication), so every query joins instead of nesting."""
    q = Q(
        **{
            f"{prefix}status": Annotation.Status.SUBMITTED,
            f"{prefix}assignment__project": project,
            # Gold calibration answers test an annotator; they are never agreement data.
            f"{prefix}assignment__purpose": Assignment.Purpose.WORK,
        }
    )
    q &= in_project_q(project, f"{prefix}assignment__trace")  # the project's traces: one definition
    if filters.get("batch"):
        q &= Q(**{f"{prefix}assignment__trace__batch__name": filters["batch"]})
    if filters.get("annotators"):
        q &= Q(**{f"{prefix}assignment__annotator__username__in": filters["annotators"]})
    if filters.get("round"):
        q &= Q(**{f"{prefix}assignment__calibration_round_id": filters["round"]})
    if filters.get("view"):
        q &= Q(**{f"{prefix}assignment__trace__in": _view_scope(project, filters["view"])})
    for key, value in where_conditions(filters):
        # KeyTextTransform takes the key as given (no "__" path parsing): any metadata key works.
        q &= Q(Exact(KeyTextTransform(key, f"{prefix}assignment__trace__metadata"), value))
    if filters.get("since"):
        q &= Q(**{f"{prefix}submitted_at__gte": _day_start(filters["since"])})
    if filters.get("until"):
        q &= Q(**{f"{prefix}submitted_at__lt": _day_start(filters["until"]) + dt.timedelta(days=1)})
    return q


def _view_scope(project: Project, view_id: int):
    """The view's traces now; a view deleted since (or one that no longer reads) selects nothing."""
    view = project.saved_views.filter(pk=view_id).first()
    try:
        return [] if view is None else scope_trace_ids(project, as_pairs(view.params))
    except FilterError:
        return []


def report_annotations(project: Project, filters: Mapping[str, Any]) -> QuerySet[Annotation]:
    return Annotation.objects.filter(filter_q(project, filters))
