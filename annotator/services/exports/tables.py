"""Label tables as CSV or JSON Lines, beside the Hub dataset (issue 34): one row per annotation, per label
(with its evidence), or per gold decision.

The rows are the dataset export's own (annotator.services.exports.rows): the same traces (batches, saved
view, gold only), the same pseudonyms (``annotator-N`` unless real names are asked for), only submitted
annotations, and the same access rule at every door (owners who are blind on no trace). A spreadsheet is
where a CSV goes, so every cell goes through annotator.csvsafe. A value that is missing stays missing: an
empty cell in CSV and ``null`` in JSON Lines (a mode an imported annotation has no value for is not a 0).

Streamed: rows are produced in chunks by the row generators and written as they come, so a million-label
project never sits in memory.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from annotator.csvsafe import csv_writer
from annotator.models import Project
from annotator.services.exports.dataset import mode_columns
from annotator.services.exports.options import ExportOptions
from annotator.services.exports.rows import annotation_rows, gold_rows, pseudonyms_for, selected_traces

KINDS = ("annotations", "labels", "gold")
FORMATS = ("csv", "jsonl")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
_ANNOTATION_COLUMNS = (
    "trace_uid",
    "trace_id",
    "annotator",
    "annotator_kind",
    "labels",
    "primary_label",
    "evidence_steps",
    "no_failure",
    "ambiguous",
    "confidence",
    "note",
    "submitted_at",
)
_LABEL_COLUMNS = (
    "trace_uid",
    "trace_id",
    "annotator",
    "annotator_kind",
    "mode",
    "primary",
    "evidence_steps",
    "quotes",
    "label_note",
    "submitted_at",
)
_GOLD_COLUMNS = (
    "trace_uid",
    "trace_id",
    "status",
    "labels",
    "primary_label",
    "evidence_steps",
    "disputed",
    "adjudicator",
    "resolved_at",
    "note",
    "decided_by",
)


class TableError(ValueError):
    pass


@dataclass(frozen=True)
class Table:
    kind: str
    columns: tuple[str, ...]
    rows: Iterator[dict[str, Any]]


def check_table(kind: str, fmt: str) -> None:
    """Raise TableError naming the bad value (for the page, the API and the CLI alike)."""
    problems = []
    if kind not in KINDS:
        problems.append(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if fmt not in FORMATS:
        problems.append(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if problems:
        raise TableError("; ".join(problems))


def label_table(project: Project, options: ExportOptions, kind: str) -> Table:
    """The rows of one table for the traces `options` select. The caller has checked access (the dataset
    export's rule: an owner not blind on any trace of the project)."""
    check_table(kind, "csv")
    modes = mode_columns(project.taxonomy_version.modes.order_by("order", "id").values_list("code", "name"))
    traces = selected_traces(project, options)
    names = pseudonyms_for(project, traces, options.real_names)
    text = options.include_text
    if kind == "annotations":
        rows = annotation_rows(project, traces, modes, names, include_text=text)
        columns = (*_ANNOTATION_COLUMNS, *(m.column for m in modes))
        return Table(kind, columns, ({c: row[c] for c in columns} for row in rows))
    if kind == "labels":
        rows = annotation_rows(project, traces, modes, names, include_text=text)
        return Table(kind, _LABEL_COLUMNS, _per_label(rows))
    rows = gold_rows(project, traces, modes, names)
    columns = (*_GOLD_COLUMNS, *(m.column for m in modes))
    return Table(kind, columns, _gold(rows, columns))


def _per_label(rows: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for row in rows:
        for detail in row["label_details"]:
            yield {
                "trace_uid": row["trace_uid"],
                "trace_id": row["trace_id"],
                "annotator": row["annotator"],
                "annotator_kind": row["annotator_kind"],
                "mode": detail["mode"],
                "primary": detail["primary"],
                "evidence_steps": detail["steps"],
                "quotes": detail["quotes"],
                "label_note": detail["note"],
                "submitted_at": row["submitted_at"],
            }


def _gold(rows: Iterator[dict[str, Any]], columns: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    for row in rows:
        # Who decided each gold label: one name when one person did, else each label's decider in order.
        deciders = list(dict.fromkeys(d["decided_by"] for d in row["label_details"] if d["decided_by"]))
        yield {c: row[c] for c in columns if c != "decided_by"} | {"decided_by": deciders}


def encode(table: Table, fmt: str) -> Iterator[str]:
    """The table as text chunks (a header then one line per row), for a streamed response or a file."""
    check_table(table.kind, fmt)
    if fmt == "jsonl":
        for row in table.rows:
            yield json.dumps({c: row[c] for c in table.columns}, ensure_ascii=False) + "\n"
        return
    buffer = io.StringIO()
    writer = csv_writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    for n, row in enumerate(table.rows, start=1):
        writer.writerow([_cell(row[c]) for c in table.columns])
        if n % 500 == 0:
            yield _drain(buffer)
    yield _drain(buffer)


def filename(project: Project, kind: str, fmt: str) -> str:
    return f"{project.slug}-{kind}.{fmt}"


def _cell(value: Any) -> Any:
    """A CSV cell: None as an empty cell (missing), booleans as true/false, lists of codes, names or step
    numbers joined with "; ", lists of free text (quotes) as a JSON array so no separator is ambiguous."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        if any(isinstance(v, str) and (";" in v or "\n" in v) for v in value):
            return json.dumps(value, ensure_ascii=False)
        return "; ".join(str(v) for v in value)
    return value


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text
