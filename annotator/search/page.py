"""What the trace list page shows of a filter: the form's values and choices, the sortable column headers
(each a link that keeps the filter and flips the order), and one row per trace with its matching steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from annotator.models import Project
from annotator.search.filters import OUTCOMES, STATES, STEP_KINDS, TraceFilter
from annotator.search.service import StepMatch
from taxonomy.models import FailureMode
from traces.models import Trace

LIST_COLUMNS = ("id", "external_id", "outcome", "model", "system", "score", "step_count", "batch__name")
# (label, ordering value): the columns a click sorts by.
SORTABLE = (
    ("Trace", "external_id"),
    ("Outcome", "outcome"),
    ("Model", "model"),
    ("Score", "score"),
    ("Steps", "steps"),
    ("Batch", "batch"),
)


@dataclass
class TraceRow:
    trace: Trace
    counts: dict[str, Any]
    matches: list[StepMatch] = field(default_factory=list)
    live_received_at: datetime | None = None  # when a live (OTLP) trace's first span arrived

    @property
    def assigned(self) -> int:
        return self.counts.get("assigned", 0)

    @property
    def submitted(self) -> int:
        return self.counts.get("submitted", 0)

    @property
    def skipped(self) -> int:
        return self.counts.get("skipped", 0)


@dataclass
class SortColumn:
    label: str
    query: str  # the query string that sorts by this column (keeping the filter)
    direction: str  # "ascending" / "descending" when the list is sorted by it, else ""


def sort_columns(flt: TraceFilter) -> list[SortColumn]:
    column, descending = flt.order_key
    out = []
    for label, name in SORTABLE:
        current = column == name
        ordering = f"-{name}" if current and not descending else name
        query = urlencode(flt.with_ordering(ordering).to_params())
        direction = ("descending" if descending else "ascending") if current else ""
        out.append(SortColumn(label, query, direction))
    return out


@dataclass
class FilterForm:
    """The filter form's values (as typed) and its choices."""

    values: dict[str, Any]
    meta: list[str]
    outcomes: tuple[str, ...]
    states: tuple[str, ...]
    kinds: tuple[str, ...]
    modes: list[str]
    batches: list[str]

    @classmethod
    def of(cls, flt: TraceFilter, project: Project) -> FilterForm:
        values = {name: value for name, value in flt.to_params() if name != "meta"}
        return cls(
            values=values,
            meta=[f"{key}:{value}" for key, value in flt.meta],
            outcomes=OUTCOMES,
            states=STATES,
            kinds=STEP_KINDS,
            modes=list(
                FailureMode.objects.filter(version_id=project.taxonomy_version_id)
                .order_by("order")
                .values_list("code", flat=True)
            ),
            batches=list(project.access.batches().order_by("name").values_list("name", flat=True)),
        )
