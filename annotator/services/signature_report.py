"""What the page, the API and the command share around the figures: the report envelope, the empty-state
message that tells people what to do next, the filter choices, and opening a request with its access check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from annotator.access import REVIEW_ROLES, access_signatures
from annotator.models import Annotation, Project, Role
from annotator.services.signatures import (
    SignatureQuery,
    SignatureQueryError,
    load_signature_input,
    parse_signature_query,
)
from annotator.signatures import Signatures, compute_signatures
from traces.models import Trace

__all__ = [
    "FilterOptions",
    "SignatureReport",
    "build_report",
    "empty_message",
    "filter_options",
    "open_signatures",
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
    return access_signatures(user, slug, annotator=query.annotator), query, ""


def build_report(project: Project, query: SignatureQuery, *, keep_empty: bool = False) -> SignatureReport:
    """The figures for `query`. With `keep_empty`, an empty selection still yields (all-zero) figures, so a
    CSV download always has its header."""
    data = load_signature_input(project, query)
    selected = data.selected().n_traces
    signatures = compute_signatures(data, compare=query.compare) if selected or keep_empty else None
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
    combos = (
        Trace.objects.in_project(project)
        .order_by()
        .values_list("batch__name", "model", "system", "benchmark")
        .distinct()
    )
    columns = [sorted({row[i] for row in combos if row[i]}) for i in range(4)]
    roles = getattr(project, "user_roles", frozenset())
    if roles & REVIEW_ROLES:
        annotators = sorted(
            set(
                Annotation.objects.submitted_in(project)
                .order_by()
                .values_list("assignment__annotator__username", flat=True)
                .distinct()
            )
        )
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
