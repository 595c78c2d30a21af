"""A saved view's filters as the scope of a project-wide surface (the dataset export, the agreement report,
the signatures): the ids of its traces, read as the operator would (every trace, every filter).

Those surfaces show labels of many traces at once, so they are already refused to anyone still blind on a
trace of the project (`ProjectAccess.require_project_labels`), and each checks who may pick the view
(`annotator.search.saved.find_view`) before it gets here; what is left is to compile the filter language
once, the same way for all of them.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet
from django.http import Http404

from annotator.access import ProjectAccess
from annotator.models import Project, Role, SavedView
from annotator.search.filters import FilterError, TraceFilter, parse
from annotator.search.service import RankedTraces, filtered_traces
from traces.models import Trace

Pairs = tuple[tuple[str, str], ...]


def as_pairs(params: Iterable) -> Pairs:
    """Stored view parameters ([[name, value], ...] from JSON) as hashable pairs."""
    return tuple((str(name), str(value)) for name, value in params or ())


def scope_filter(pairs: Pairs) -> TraceFilter:
    mapping: dict[str, list[str]] = {}
    for name, value in pairs:
        mapping.setdefault(name, []).append(value)
    return parse(mapping)


def operator_access(project: Project) -> ProjectAccess:
    return ProjectAccess(user=None, project=project, roles=frozenset({Role.OWNER}))


def as_queryset(found: QuerySet[Trace] | RankedTraces) -> QuerySet[Trace]:
    """The traces `filtered_traces` found as a plain queryset (a search's rank order left aside): for
    membership (`pk__in=`), counts and id-ordered reads."""
    return found.traces if isinstance(found, RankedTraces) else found


def scope_trace_ids(project: Project, pairs: Pairs) -> QuerySet:
    """A subquery of the ids of the traces the filters select (use with `pk__in=` / `trace__in=`).
    Raises FilterError when a stored parameter no longer reads (a mode gone from the taxonomy)."""
    return as_queryset(filtered_traces(operator_access(project), scope_filter(pairs))).order_by().values("pk")


# Finding a view (here rather than in saved.py: the report's filters need it, and saved.py opens rounds,
# whose service imports the report's).


def stored_params(view: SavedView) -> list[tuple[str, str]]:
    """The view's parameters as (name, value) pairs; anything malformed in the JSON is skipped."""
    pairs = []
    for item in view.params or []:
        if isinstance(item, list | tuple) and len(item) == 2:
            pairs.append((str(item[0]), str(item[1])))
    return pairs


def params_mapping(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in pairs:
        out.setdefault(name, []).append(value)
    return out


def view_filter(view: SavedView) -> TraceFilter:
    """The view's filter; FilterError names the stored parameter that no longer reads."""
    return parse(params_mapping(stored_params(view)))


def is_label_view(view: SavedView) -> bool:
    try:
        return view_filter(view).reveals_labels
    except FilterError:
        return False


def find_view(access: ProjectAccess, ref: str | int) -> SavedView:
    """A view of the project by id or by exact name, if this member may see it (else 404, the answer for
    a missing one, as for traces)."""
    text = str(ref).strip()
    views = access.project.saved_views.select_related("created_by")
    view = views.filter(pk=int(text)).first() if text.isdigit() else views.filter(name=text).first()
    if view is None or (not access.is_reviewer and is_label_view(view)):
        raise Http404(f"No saved view {text!r} in this project")
    return view
