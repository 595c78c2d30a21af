"""The agreement report's input as distinct rows, and the state an incremental refresh starts from.

Every statistic of the report is a sum over traces of a function of the trace's row
(``annotator.agreement.report.ItemRows``), so the project's traces are kept as distinct rows with counts
plus the row of every trace (``ReportRows``). The stored state is the last full computation's (every
trace's row, ``ReportRows.arrays``) plus what refreshes changed since (``ReportRows.changes``, a few
kilobytes per refresh, ``Changes``), so a refresh of a million-trace project writes kilobytes, not
megabytes. How a refresh uses it: annotator.services.reports.refresh.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from annotator.agreement.report import SCHEMA
from annotator.agreement.rows import ItemRows, ModeInfo, compress
from annotator.models import Project, ReportRows
from annotator.services.reports.data import EPOCH, annotation_columns, load_report_input
from annotator.services.reports.fingerprint import canonical, report_settings
from taxonomy.models import FailureMode

__all__ = [
    "Changes",
    "Rows",
    "from_micros",
    "micros",
    "report_rows",
    "save_state",
    "state_key",
    "trace_stats",
]


@dataclass(frozen=True)
class Rows:
    """The report's input as distinct item rows (see ItemRows), with the raters' and modes' metadata."""

    items: ItemRows
    modes: tuple[ModeInfo, ...]
    raters: list[dict[str, Any]]  # username, kind, imported; in the report's order
    incremental: bool = False


def report_rows(
    project: Project, filters: Mapping[str, Any], snapshot: datetime
) -> tuple[Rows, dict[str, Any]]:
    """The rows for `filters` from a full load, and the fingerprint's aggregate of the same annotations;
    for the unfiltered report the state an incremental refresh starts from is stored too. Call inside the
    transaction of the snapshot."""
    loaded = load_report_input(project, filters)
    items, row_of_item = compress(loaded.data, report_settings().windows)
    if loaded.columns is not None:
        counts, versions, aggregate = trace_stats(loaded.columns, loaded.trace_ids, loaded.column_items)
    else:
        counts, versions, aggregate = trace_stats(annotation_columns(project, filters), loaded.trace_ids)
    if not filters:
        save_state(
            project,
            loaded.trace_ids,
            row_of_item,
            items,
            counts,
            versions,
            aggregate,
            list(loaded.rater_ids),
            snapshot,
            snapshot,
        )
    return Rows(items, loaded.data.modes, loaded.raters), aggregate


def trace_stats(
    columns: np.ndarray, trace_ids: np.ndarray, position: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """From annotation_columns rows (trace, id, version, updated_at micros): per trace of the sorted
    `trace_ids` the number of annotations and the sum of their versions, and the fingerprint's aggregate
    over all of them (as SQL's Count/Max/Sum/Max gives it). `position`: each row's trace in `trace_ids`,
    when the caller knows it."""
    if position is None:
        position = np.searchsorted(trace_ids, columns[:, 0])
    count = np.bincount(position, minlength=len(trace_ids)).astype(np.int64)
    versions = np.bincount(position, weights=columns[:, 2], minlength=len(trace_ids)).astype(np.int64)
    if len(columns) == 0:
        return count, versions, {"n": 0, "last_id": None, "versions": None, "changed": None}
    aggregate = {
        "n": len(columns),
        "last_id": int(columns[:, 1].max()),
        "versions": int(columns[:, 2].sum()),
        "changed": from_micros(int(columns[:, 3].max())),
    }
    return count, versions, aggregate


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def micros(moment: datetime | None) -> int:
    return -1 if moment is None else (moment - EPOCH) // timedelta(microseconds=1)


def state_key(project: Project) -> str:
    """What stored rows are valid for: a change of any of these means a full computation."""
    modes = list(
        FailureMode.objects.filter(version_id=project.taxonomy_version_id)
        .order_by("order", "id")
        .values_list("id", "code", "name", "category__code", "parent__code", "fatal")
    )
    payload = {
        "schema": SCHEMA,
        "state": 3,
        "version": project.taxonomy_version_id,
        "multi_label": project.taxonomy_version.is_multi_label,
        "modes": modes,
        "windows": list(report_settings().windows),
    }
    return hashlib.sha256(canonical(payload).encode()).hexdigest()


def save_state(
    project: Project,
    trace_ids: np.ndarray,
    row_of_trace: np.ndarray,
    items: ItemRows,
    counts: np.ndarray,
    versions: np.ndarray,
    aggregate: Mapping[str, Any],
    rater_ids: list[int],
    snapshot: datetime,
    full_at: datetime,
) -> None:
    """Write the state. Kept small, since every refresh rewrites it: 13 bytes per trace (id, row, sum of
    versions, annotation count) plus the distinct rows. The count is stored rather than read from the
    row: an annotation whose every vote is missing (an imported source's NaN) leaves no mark in the row
    but is counted by the fingerprint's aggregate."""
    buffer = io.BytesIO()
    id_type = np.int32 if len(trace_ids) == 0 or trace_ids.max() < 2**31 else np.int64
    arrays = {
        "trace_ids": trace_ids.astype(id_type),
        "row_of_trace": row_of_trace.astype(np.int32),
        "counts": counts.astype(np.uint8 if len(counts) == 0 or counts.max() < 2**8 else np.int64),
        "versions": versions.astype(np.int32 if len(versions) == 0 or versions.max() < 2**31 else np.int64),
        "last_id": np.int64(-1 if aggregate["last_id"] is None else aggregate["last_id"]),
        "changed": np.int64(micros(aggregate["changed"])),
        "ratings": items.ratings,
        "closest": items.closest,
    }
    if items.primary is not None:
        arrays["primary"] = items.primary
    np.savez(buffer, **arrays)
    ReportRows.objects.update_or_create(
        project=project,
        defaults={
            "key": state_key(project),
            "rater_ids": rater_ids,
            "watermark": snapshot,
            "full_at": full_at,
            "arrays": buffer.getvalue(),
            "changes": b"",
        },
    )


@dataclass(frozen=True)
class Changes:
    """What refreshes changed since the base state (``ReportRows.arrays``) was written: per changed trace
    (sorted) its row, annotation count and sum of versions; the rows they added after the base's rows; the
    newest annotation id and update seen (micros, -1: none)."""

    traces: np.ndarray
    rows: np.ndarray
    counts: np.ndarray
    versions: np.ndarray
    ratings: np.ndarray
    closest: np.ndarray
    primary: np.ndarray | None
    last_id: int = -1
    changed: int = -1

    @classmethod
    def read(cls, blob: bytes | memoryview | None, base: ItemRows) -> Changes:
        if not blob or not len(blob):
            empty = np.zeros(0, dtype=np.int64)
            return cls(
                empty,
                empty,
                empty,
                empty,
                base.ratings[:0],
                base.closest[:0],
                None if base.primary is None else base.primary[:0],
            )
        with np.load(io.BytesIO(bytes(blob))) as stored:
            return cls(
                *(stored[name].astype(np.int64) for name in ("traces", "rows", "counts", "versions")),
                stored["ratings"],
                stored["closest"],
                stored["primary"] if "primary" in stored.files else None,
                int(stored["last_id"]),
                int(stored["changed"]),
            )

    def blob(self) -> bytes:
        buffer = io.BytesIO()
        arrays = {
            "traces": self.traces,
            "rows": self.rows,
            "counts": self.counts,
            "versions": self.versions,
            "ratings": self.ratings,
            "closest": self.closest,
            "last_id": np.int64(self.last_id),
            "changed": np.int64(self.changed),
        }
        if self.primary is not None:
            arrays["primary"] = self.primary
        np.savez(buffer, **arrays)
        return buffer.getvalue()
