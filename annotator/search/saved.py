"""Saved views: a named trace filter shared in a project, and the verbs on it.

A view stores `TraceFilter.to_params()` and nothing else: its traces (and their count) are computed with
`filtered_traces`, as the member who asks may see them, each time. So one view can mean fewer traces to an
annotator (only theirs) than to an owner, and a view whose filters reveal labels (`reveals_labels`) holds
exactly as the same filters typed by hand would (annotator.search.service.check_blind).

Who may do what (annotator.access is the policy; this module only applies it):
- see and open a view: every member the view's filters are open to. A view on labels, the gold or the
  adjudication state is left out for annotators and viewers (they may never use those filters), and shown to
  an owner or adjudicator still blind on a trace it looks at as *held*: its name, the reason, no count and
  no traces, so they can still rename or delete it.
- create a view: owners and adjudicators (the trace list page where views are saved is theirs).
- rename, change or delete a view: owners, and the member who created it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, ProjectAccess
from annotator.models import CalibrationRound, SavedView
from annotator.search.filters import FilterError, TraceFilter
from annotator.search.scope import as_queryset, find_view, is_label_view, stored_params, view_filter
from annotator.search.service import RankedTraces, filtered_traces
from annotator.services.rounds import MAX_ROUND_TRACES, RoundError, TraceChoice, do_open_round
from traces.models import Trace

MAX_NAME = 100
MAX_VIEWS = 200  # per project: the list counts each one


class ViewError(ValueError):
    """A request about a view that cannot be done; `field` names what is wrong (name, params, view)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass
class ViewRow:
    """A view as one member sees it: its count, or why it has none (a stale parameter, a blind hold)."""

    view: SavedView
    count: int | None = None
    error: str = ""  # a stored parameter that no longer reads ("gold_mode: no failure mode 'FM-9' ...")
    held: str = ""  # why this member may not open it yet (blind labelling)

    @property
    def query(self) -> str:
        return urlencode(stored_params(self.view))

    @property
    def usable(self) -> bool:
        return not self.error and not self.held


def view_traces(access: ProjectAccess, view: SavedView) -> QuerySet[Trace] | RankedTraces:
    """The view's traces as this member may see them. Raises FilterError (a stored parameter that no longer
    reads, e.g. a mode gone from the taxonomy) and PermissionDenied (a blind hold), as the trace list does."""
    return filtered_traces(access, view_filter(view))


def view_row(access: ProjectAccess, view: SavedView) -> ViewRow:
    """One view with its current count for this member (one COUNT query), or why it has none."""
    try:
        count = view_traces(access, view).count()
    except FilterError as error:
        return ViewRow(view, error=f"{error.param}: {error.message}")
    except PermissionDenied as refusal:
        return ViewRow(view, held=str(refusal))
    return ViewRow(view, count=count)


def project_views(access: ProjectAccess) -> list[ViewRow]:
    """The project's views this member may see, by name, each with its count (see the module's rules)."""
    rows = []
    for view in access.project.saved_views.select_related("created_by").order_by("name", "id")[:MAX_VIEWS]:
        if not access.is_reviewer and is_label_view(view):
            continue
        rows.append(view_row(access, view))
    return rows


def open_view(access: ProjectAccess, ref: str | int) -> tuple[SavedView, TraceFilter]:
    """A view to apply: its filter, once the member is allowed its traces. PermissionDenied (blind hold)
    and FilterError (stale parameter) as `view_traces`."""
    view = find_view(access, ref)
    flt = view_filter(view)
    filtered_traces(access, flt)  # the checks only: a blind hold or an unknown mode raises here
    return view, flt


def may_create(access: ProjectAccess) -> bool:
    return access.holds(REVIEW_ROLES)


def may_manage(access: ProjectAccess, view: SavedView) -> bool:
    return access.holds(MANAGE_ROLES) or (
        access.user is not None and view.created_by_id is not None and view.created_by_id == access.user.pk
    )


def clean_name(name: str) -> str:
    name = " ".join((name or "").split())
    if not name:
        raise ViewError("name", "Give the view a name")
    if len(name) > MAX_NAME:
        raise ViewError("name", f"A view's name has at most {MAX_NAME} characters")
    if name.isdigit():
        # `view=12` means the view with id 12: a name of digits only could never be reached by name.
        raise ViewError("name", "A view's name needs a letter (digits alone name a view by its id)")
    return name


def _check_unique(access: ProjectAccess, name: str, exclude: int | None = None) -> None:
    clash = access.project.saved_views.filter(name__iexact=name).exclude(pk=exclude).first()
    if clash is not None:
        raise ViewError("name", f"There is already a view named {clash.name!r} in this project")


def checked_filter(access: ProjectAccess, flt: TraceFilter) -> TraceFilter:
    """A filter worth saving: it reads in this project (known modes) and the member may use it."""
    try:
        filtered_traces(access, flt)
    except FilterError as error:
        raise ViewError(error.param, error.message) from None
    return flt


def do_save_view(access: ProjectAccess, name: str, flt: TraceFilter) -> SavedView:
    """Save `flt` as a view of the project named `name` (owners and adjudicators). Raises ViewError
    (the name, a parameter) and PermissionDenied (role, blind hold on a label filter)."""
    if not may_create(access):
        raise PermissionDenied("Saving views is for owners and adjudicators")
    name = clean_name(name)
    _check_unique(access, name)
    checked_filter(access, flt)
    if access.project.saved_views.count() >= MAX_VIEWS:
        raise ViewError("name", f"A project keeps at most {MAX_VIEWS} views: delete one first")
    try:
        with transaction.atomic():
            return SavedView.objects.create(
                project=access.project,
                name=name,
                params=[list(p) for p in flt.to_params()],
                created_by=access.user,
            )
    except IntegrityError:  # a concurrent save of the same name
        raise ViewError("name", f"There is already a view named {name!r} in this project") from None


def do_change_view(
    access: ProjectAccess, view: SavedView, *, name: str | None = None, flt: TraceFilter | None = None
) -> SavedView:
    """Rename a view and/or replace its filter (owners and the view's creator)."""
    if not may_manage(access, view):
        raise PermissionDenied("Only the project's owners and the view's creator may change it")
    fields = ["updated_at"]
    if name is not None:
        view.name = clean_name(name)
        _check_unique(access, view.name, exclude=view.pk)
        fields.append("name")
    if flt is not None:
        checked_filter(access, flt)
        view.params = [list(p) for p in flt.to_params()]
        fields.append("params")
    try:
        with transaction.atomic():
            view.save(update_fields=fields)
    except IntegrityError:
        raise ViewError("name", f"There is already a view named {view.name!r} in this project") from None
    return view


def do_delete_view(access: ProjectAccess, view: SavedView) -> None:
    if not may_manage(access, view):
        raise PermissionDenied("Only the project's owners and the view's creator may delete it")
    view.delete()


# Surfaces that take a view ---------------------------------------------------------------------------


def view_trace_ids(access: ProjectAccess, view: SavedView) -> list[int]:
    """The ids of the view's traces as this member may see them, in id order (FilterError, PermissionDenied
    as `view_traces`)."""
    return list(as_queryset(view_traces(access, view)).order_by("pk").values_list("pk", flat=True))


def do_open_view_round(
    access: ProjectAccess,
    view: SavedView,
    *,
    name: str,
    annotators: Sequence[str],
    sample: int | None = None,
    seed: int = 0,
    actor=None,
) -> CalibrationRound:
    """Open a calibration round on the view's traces (or a seeded sample of them), as `do_open_round` does
    with picked traces; the round's selection names the view. RoundError says what is wrong."""
    try:
        ids = view_trace_ids(access, view)
    except FilterError as error:
        raise RoundError(f"the view's {error.param} no longer reads: {error.message}") from None
    if not ids:
        raise RoundError(f"The view {view.name!r} holds no trace")
    if sample is not None:
        if sample < 2:
            raise RoundError("A sample needs at least 2 traces")
        # The rounds' own rule: sorted ids and a seeded generator pick the same traces on any database.
        ids = sorted(random.Random(seed).sample(ids, min(sample, len(ids))))
    if len(ids) > MAX_ROUND_TRACES:
        raise RoundError(
            f"A round may hold at most {MAX_ROUND_TRACES:,} traces (the view has {len(ids):,}): take a sample"
        )
    choice = TraceChoice(ids=tuple(ids), view=view.name)
    return do_open_round(access.project, name=name, annotators=annotators, choice=choice, actor=actor)
