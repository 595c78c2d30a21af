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


_COLUMNS_READ = (
    "id",
    "external_id",
    "batch__name",
    "benchmark",
    "model",
    "system",
    "outcome",
    "score",
    "step_count",
)
CHUNK = 2000


def trace_csv_lines(found: QuerySet[Trace] | RankedTraces) -> Iterator[str]:
    """The header and one CSV line per trace (cells safe for spreadsheets), read in chunks, in the list's
    order: a search's results best first, as its pages are."""
    writer = csv.writer(_Line(), lineterminator="\n")
    yield writer.writerow(CSV_COLUMNS)
    for row in _rows(found):
        yield writer.writerow([safe_cell(_cell(value)) for value in row])


def _rows(found: QuerySet[Trace] | RankedTraces) -> Iterator[tuple]:
    if not isinstance(found, RankedTraces):
        yield from found.values_list(*_COLUMNS_READ).iterator(chunk_size=CHUNK)
        return
    # The ranking once (ids only), then the rows a chunk at a time, put back in rank order.
    ranked = found.ranked_ids(slice(0, None))
    traces = as_queryset(found).order_by()
    for start in range(0, len(ranked), CHUNK):
        chunk = ranked[start : start + CHUNK]
        rows = {row[0]: row for row in traces.filter(pk__in=chunk).values_list(*_COLUMNS_READ)}
        yield from (rows[pk] for pk in chunk if pk in rows)


def _cell(value: Any) -> Any:
    return "" if value is None else value
