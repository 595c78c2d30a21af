"""What the page, the API and the command share around the figures: the report envelope, the empty-state
message that tells people what to do next, the filter choices, and opening a request with its access check.

Stored results: the figures for a query are kept in the cache under a key made of the query and the
project's *data version* -- a handful of indexed lookups (newest annotation change, newest gold decision,
the project's batches, newest trace), never a scan -- so a page asking again answers from the stored
figures whatever the project's size, and any change that could move a figure changes the key; the figures
for the new key then come from an incremental refresh (:mod:`annotator.services.signatures.refresh`). After
annotations change, `do_refresh_signatures` (run by the agreement refresh task) recomputes the default
figures ahead of the next page view.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

from django.core.cache import cache
from django.db.models import Count, Q, Sum
from django.http import Http404

from annotator.access import REVIEW_ROLES, ProjectAccess, access_signatures
from annotator.models import (
    Annotation,
    AnnotationDeletion,
    Assignment,
    GoldHistory,
    OutcomeImport,
    Project,
    ProjectTrace,
    Role,
)
from annotator.search.filters import FilterError
from annotator.search.scope import as_pairs, find_view, scope_trace_ids
from annotator.services.signatures.load import (
    SignatureQuery,
    SignatureQueryError,
    load_signature_input,
    parse_signature_query,
)
from annotator.services.signatures.refresh import refresh_figures
from annotator.signatures import Signatures
from annotator.signatures.report import signatures_from
from annotator.signatures.tallies import Tallies, tally
from traces.models import Trace

__all__ = [
    "FilterOptions",
    "SignatureReport",
    "build_report",
    "data_version",
    "do_refresh_signatures",
    "empty_message",
    "filter_options",
    "open_signatures",
    "with_view",
]


@dataclass(frozen=True)
class SignatureReport:
    """The figures with what produced them; ``signatures`` is None (and ``empty_message`` says why) when the
    source labels no trace under the filters."""

    project: str
    source: str
    filters: dict[str, tuple[str, ...]]
    compare: tuple[str, str] | None
    empty_message: str | None
    signatures: Signatures | None


@dataclass(frozen=True)
class FilterOptions:
    batches: tuple[str, ...]
    models: tuple[str, ...]
    systems: tuple[str, ...]
    benchmarks: tuple[str, ...]
    annotators: tuple[str, ...]


def open_signatures(user, slug: str, params: Mapping) -> tuple[Project, SignatureQuery | None, str]:
    """(project, query, error) for a request: access first (outsiders get 404 whatever they send), then the
    query; an unparsable query comes back as an error message instead of a query."""
    try:
        query = parse_signature_query(params)
    except SignatureQueryError as error:
        return access_signatures(user, slug), None, str(error)
    project = access_signatures(user, slug, annotator=query.annotator)
    query, error = with_view(project, project.access, query, str(params.get("view") or ""))
    return project, (None if error else query), error


def with_view(
    project: Project, access: ProjectAccess, query: SignatureQuery, ref: str
) -> tuple[SignatureQuery, str]:
    """`query` narrowed to a saved view's traces (by id or name, as `access` may see it: a view on labels
    is for reviewers only), or the reason it cannot be (unknown, stale)."""
    ref = ref.strip()
    if not ref:
        return query, ""
    try:
        view = find_view(access, ref)
    except Http404:
        return query, f"No saved view {ref[:100]!r} in this project"
    pairs = as_pairs(view.params)
    try:
        scope_trace_ids(project, pairs)
    except FilterError as error:
        return query, f"The saved view {view.name!r} no longer reads: {error.param}: {error.message}"
    return replace(query, view=pairs), ""


# Stored figures outlive their data version by at most this long (a newer version is a new key).
STORED_SECONDS = 7 * 24 * 3600


# The parts of the data version an incremental refresh follows trace by trace; the others mean a full one.
CHANGING = ("gold", "annotations", "deletions")


def data_version(project: Project, query: SignatureQuery) -> str:
    """Everything the figures of `query` depend on that can change, from indexed lookups only."""
    return _digest(_version_parts(project, query))


def _digest(parts: dict[str, object]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _version_parts(project: Project, query: SignatureQuery) -> dict[str, object]:
    parts: dict[str, object] = {
        "project": [project.pk, project.created_at],  # ids can be reused (SQLite after a rollback)
        "taxonomy_version": project.taxonomy_version_id,
        "traces": _held_traces(project),
        "newest_trace": _newest_trace(),
        # Outcomes set after the import (annotator.outcomes): the newest such import of any project, since a
        # trace may be held by several. Not followed trace by trace: a new one means a full computation.
        "outcomes": OutcomeImport.objects.order_by("-pk").values_list("pk", flat=True).first(),
    }
    if query.use_gold:  # every change to gold labels is a GoldHistory row
        parts["gold"] = (
            GoldHistory.objects.filter(project=project).order_by("-pk").values_list("pk", flat=True).first()
        )
    if query.fallback:
        parts["annotations"] = _newest_annotation_change(project)
        parts["deletions"] = _newest_deletion(project)
    return parts


def _newest_deletion(project: Project) -> int | None:
    """The newest submitted annotation deleted (a database trigger records them, migration 0023)."""
    deletions = AnnotationDeletion.objects.filter(Q(project_id=project.pk) | Q(project_id__isnull=True))
    return deletions.order_by("-pk").values_list("pk", flat=True).first()


def _held_traces(project: Project) -> list[int]:
    """Which traces the project holds, in two numbers (how many, and the sum of their ids; one index-only
    scan of its membership rows): a trace added or removed changes them."""
    held = ProjectTrace.objects.filter(project=project).aggregate(n=Count("trace_id"), s=Sum("trace_id"))
    return [held["n"], held["s"] or 0]


def _newest_trace() -> int | None:
    return Trace.objects.order_by("-pk").values_list("pk", flat=True).first()


def _newest_annotation_change(project: Project) -> str:
    """When any of the project's annotations last changed (the updated_at index: one short range)."""
    return str(
        Annotation.objects.filter(assignment__project=project, assignment__purpose=Assignment.Purpose.WORK)
        .order_by("-updated_at")
        .values_list("updated_at", flat=True)
        .first()
    )


def _options_key(project: Project, what: str, version: list) -> str:
    described = json.dumps([project.pk, project.created_at, what, version], default=str)
    return f"signature-options:{hashlib.sha256(described.encode()).hexdigest()}"


def _stored_key(project: Project, query: SignatureQuery, keep_empty: bool, version: str | None = None) -> str:
    described = json.dumps(
        {
            "query": asdict(query),
            "keep_empty": keep_empty,
            "version": version or data_version(project, query),
        },
        sort_keys=True,
        default=str,
    )
    return f"signatures:{project.pk}:{hashlib.sha256(described.encode()).hexdigest()}"


def build_report(project: Project, query: SignatureQuery, *, keep_empty: bool = False) -> SignatureReport:
    """The figures for `query`: the stored ones when the project's data has not changed since, else
    computed and stored. With `keep_empty`, an empty selection still yields (all-zero) figures, so a CSV
    download always has its header."""
    parts = _version_parts(project, query)
    key = _stored_key(project, query, keep_empty, _digest(parts))
    stored = cache.get(key)
    if stored is not None:
        return stored
    fixed = {name: value for name, value in parts.items() if name not in CHANGING}
    report = refresh_figures(
        project,
        query,
        keep_empty,
        fixed,
        lambda counts: report_of(project, query, counts, keep_empty=keep_empty),
    )
    cache.set(key, report, STORED_SECONDS)
    return report


def do_refresh_signatures(project_id: int) -> SignatureReport | None:
    """Compute and store the default figures (gold labels, no filters) if the data changed: called after
    annotations change, so the page answers from stored figures."""
    project = Project.objects.filter(pk=project_id).first()
    return None if project is None else build_report(project, SignatureQuery())


def compute_report(project: Project, query: SignatureQuery, *, keep_empty: bool = False) -> SignatureReport:
    """The figures for `query`, computed from the database now."""
    return report_of(project, query, tally(load_signature_input(project, query)), keep_empty=keep_empty)


def report_of(
    project: Project, query: SignatureQuery, counts: Tallies, *, keep_empty: bool = False
) -> SignatureReport:
    """The report of the traces `counts` counted (the input of `query`)."""
    selected = counts.n_traces
    signatures = signatures_from(counts, compare=query.compare) if selected or keep_empty else None
    return SignatureReport(
        project=project.slug,
        source=query.source,
        filters=query.filters(),
        compare=query.compare,
        empty_message=None if selected else empty_message(query),
        signatures=signatures,
    )


def empty_message(query: SignatureQuery) -> str:
    """What to do when the source labels nothing under the filters."""
    widen = " or clear the filters" if query.filters() else ""
    if query.use_gold and query.fallback is None:
        return f"No gold labels yet: adjudicate, or choose the union of annotators as source{widen}."
    if query.fallback == "agreed":
        what = (
            "No trace has two submitted annotations yet: agreed labels need at least two annotators per trace"
        )
    elif query.fallback == "annotator":
        what = f"{query.annotator} has not submitted any annotation here yet"
    else:
        what = "No submitted annotations yet: label some traces"
    if query.use_gold:
        what = "No gold labels and " + what[0].lower() + what[1:]
    return f"{what}{widen}."


def filter_options(project: Project, user) -> FilterOptions:
    """The values the filters can take (two queries) and the annotators this user may pick as a source:
    everyone for owners and adjudicators, themself for an annotator, nobody for a viewer."""
    # Both lists scan the project (a million traces: hundreds of ms), so they are stored like the figures,
    # under the parts of the data version they depend on.
    traces_key = _options_key(project, "traces", [_held_traces(project), _newest_trace()])
    columns = cache.get(traces_key)
    if columns is None:
        combos = (
            Trace.objects.in_project(project)
            .order_by()
            .values_list("batch__name", "model", "system", "benchmark")
            .distinct()
        )
        columns = [sorted({row[i] for row in combos if row[i]}) for i in range(4)]
        cache.set(traces_key, columns, STORED_SECONDS)
    roles = getattr(project, "user_roles", frozenset())
    if roles & REVIEW_ROLES:
        annotators_key = _options_key(project, "annotators", [_newest_annotation_change(project)])
        annotators = cache.get(annotators_key)
        if annotators is None:
            annotators = sorted(
                set(
                    Annotation.objects.submitted_in(project)
                    .order_by()
                    .values_list("assignment__annotator__username", flat=True)
                    .distinct()
                )
            )
            cache.set(annotators_key, annotators, STORED_SECONDS)
    elif Role.ANNOTATOR in roles:
        annotators = [user.get_username()]
    else:
        annotators = []
    return FilterOptions(*(tuple(column) for column in columns), annotators=tuple(annotators))


def source_choices(options: FilterOptions, current: str | None) -> list[tuple[str, str]]:
    """(value, label) of the sources offered in the form; the current one is kept even if unusual."""
    choices = [
        ("gold", "Gold labels (agreed or adjudicated)"),
        ("gold+union", "Gold, else the union of annotators"),
        ("union", "Union of annotators (any annotator)"),
        ("agreed", "Agreed by every annotator"),
    ]
    choices += [(f"annotator:{name}", f"Only {name}'s labels") for name in options.annotators]
    if current and current not in {value for value, _ in choices}:
        choices.append((current, current))
    return choices
