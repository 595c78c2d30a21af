"""The trace list as CSV: the traces a filter (or a saved view) selects, one row each, for a spreadsheet.
Trace data only (no labels): who may filter may download what the filter shows them."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from annotator.csvsafe import safe_cell
from annotator.search.scope import as_queryset
from annotator.search.service import RankedTraces
from traces.models import Trace

CSV_COLUMNS = ("id", "external_id", "batch", "benchmark", "model", "system", "outcome", "score", "step_count")


class _Line:
    """A file-like that hands back what csv writes, so rows stream one at a time."""

    def write(self, value: str) -> str:
        return value


def trace_csv_lines(found: QuerySet[Trace] | RankedTraces) -> Iterator[str]:
    """The header and one CSV line per trace (cells safe for spreadsheets), read in chunks, in the list's
    order (a search's results in id order: the rank orders a page, not a download)."""
    traces = as_queryset(found)
    if isinstance(found, RankedTraces):
        traces = traces.order_by("id")
    writer = csv.writer(_Line(), lineterminator="\n")
    yield writer.writerow(CSV_COLUMNS)
    rows = traces.values_list(
        "id", "external_id", "batch__name", "benchmark", "model", "system", "outcome", "score", "step_count"
    )
    for row in rows.iterator(chunk_size=2000):
        yield writer.writerow([safe_cell(_cell(value)) for value in row])


def _cell(value: Any) -> Any:
    return "" if value is None else value
