"""Our own published datasets (the exporter's layout), read back with their labels.

A dataset published by this tool (``export_dataset``) has a card whose tags include
:data:`EXPORT_TAG` and parquet configs ``traces`` (one row per trace, steps nested),
``annotations`` (one row per annotator per trace) and ``gold``. Re-importing it elsewhere must restore
the traces *and* who labelled what, so this reader joins the two configs: each annotation row
becomes an :class:`AnnotationRecord` of its (possibly pseudonymised) annotator, on the trace whose
``trace_uid`` it names. Gold labels are not imported: they are a decision of the publishing project.

The column names here are the contract between the exporter (annotator.services.exports) and this
reader; both import them from this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ._hf_rows import card_configs, card_front_matter, config_names, is_remote, iter_rows
from ._util import Ctx, as_float
from .limits import json_loads
from .records import (
    OUTCOMES,
    STEP_KINDS,
    AnnotationRecord,
    LabelRecord,
    StepRecord,
    TraceFormatError,
    TraceRecord,
)

FORMAT = "hf_export"
LABEL = "A dataset published by this tool (folder or hf://owner/name)"
EXPORT_TAG = "trace-annotator"
CONFIG_TRACES, CONFIG_ANNOTATIONS, CONFIG_GOLD = "traces", "annotations", "gold"
STEP_FIELDS = (
    "index",
    "parent",
    "agent",
    "role",
    "kind",
    "content",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "timestamp",
    "tokens",
    "duration_ms",
)


def looks_like(folder: Path) -> bool:
    """A local folder written by our exporter (its card carries our tag and a traces config)."""
    if not Path(folder).is_dir():
        return False
    tags = card_front_matter(Path(folder)).get("tags") or []
    return EXPORT_TAG in tags and CONFIG_TRACES in card_configs(Path(folder))


def is_export_repo(source: str) -> bool:
    """Whether a Hub repo has our configs; False when it cannot be asked (the caller reads it generically)."""
    try:
        names = config_names(source)
    except TraceFormatError:
        return False
    return CONFIG_TRACES in names and bool({CONFIG_ANNOTATIONS, CONFIG_GOLD} & set(names))


def parse_source(
    source: str,
    *,
    split: str | None = None,
    config: str | None = None,
    columns: Mapping[str, str] | str | None = None,
) -> Iterator[TraceRecord]:
    """Traces with their annotations. Annotations are gathered first (a few small fields per label,
    so memory follows the number of labels, not the size of the traces), then traces stream."""
    if columns or config:
        raise TraceFormatError("a published export has fixed columns and configs; drop --columns/--config")
    names = config_names(source) if is_remote(source) else card_configs(Path(source))
    if CONFIG_TRACES not in names:
        raise TraceFormatError(f"no {CONFIG_TRACES!r} config in the dataset card", file=source)
    by_trace: dict[str, list[AnnotationRecord]] = {}
    if CONFIG_ANNOTATIONS in names:
        where = f"{source} [{CONFIG_ANNOTATIONS}]"
        for record_no, row in enumerate(iter_rows(source, split=split, config=CONFIG_ANNOTATIONS), start=1):
            uid, annotation = annotation_from_row(row, Ctx(where, record=record_no))
            by_trace.setdefault(uid, []).append(annotation)
    where = f"{source} [{CONFIG_TRACES}]"
    for record_no, row in enumerate(iter_rows(source, split=split, config=CONFIG_TRACES), start=1):
        record = trace_from_row(row, Ctx(where, record=record_no), record_no)
        record.annotations = by_trace.pop(str(row.get("trace_uid") or ""), [])
        yield record
    if by_trace:
        orphan = next(iter(by_trace))
        raise TraceFormatError(
            f"{sum(len(v) for v in by_trace.values())} annotations name traces that are not in the "
            f"{CONFIG_TRACES!r} config (first: trace_uid {orphan!r})",
            file=f"{source} [{CONFIG_ANNOTATIONS}]",
            field="trace_uid",
        )


def trace_from_row(row: dict, ctx: Ctx, record_no: int = 0) -> TraceRecord:
    ext_id = row.get("id")
    if ext_id in (None, ""):
        raise ctx.error("id", "required field is missing")
    outcome = str(row.get("outcome") or "unknown")
    if outcome not in OUTCOMES:
        raise ctx.error("outcome", f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    raw_steps = row.get("steps") or []
    return TraceRecord(
        external_id=str(ext_id),
        steps=[_step(step, ctx, i, len(raw_steps)) for i, step in enumerate(raw_steps)],
        task=str(row.get("task") or ""),
        system=str(row.get("system") or ""),
        model=str(row.get("model") or ""),
        benchmark=str(row.get("benchmark") or ""),
        outcome=outcome,
        score=as_float(row.get("score")),
        metadata=_json_object(row.get("metadata"), ctx, "metadata"),
        record_no=record_no,
    )


def annotation_from_row(row: dict, ctx: Ctx) -> tuple[str, AnnotationRecord]:
    uid = str(row.get("trace_uid") or "")
    if not uid:
        raise ctx.error("trace_uid", "required field is missing")
    annotator = str(row.get("annotator") or "")
    if not annotator:
        raise ctx.error("annotator", "required field is missing")
    labels = [
        LabelRecord(
            mode=str(detail.get("mode") or ""),
            steps=[int(s) for s in detail.get("steps") or []],
            primary=bool(detail.get("primary")),
            note=str(detail.get("note") or ""),
        )
        for detail in row.get("label_details") or []
    ]
    if any(not label.mode for label in labels):
        raise ctx.error("label_details.mode", "required field is missing")
    return uid, AnnotationRecord(
        annotator=annotator,
        labels=labels,
        ambiguous=bool(row.get("ambiguous")),
        no_failure=bool(row.get("no_failure")),
        note=str(row.get("note") or ""),
    )


def _step(raw: Any, ctx: Ctx, i: int, n_steps: int) -> StepRecord:
    path = f"steps[{i}]"
    step = ctx.obj(raw, path)
    kind = str(step.get("kind") or "message")
    if kind not in STEP_KINDS:
        raise ctx.error(f"{path}.kind", f"expected one of {', '.join(STEP_KINDS)}, got {kind!r}")
    parent = step.get("parent")
    if parent is not None and not (isinstance(parent, int) and 0 <= parent < n_steps and parent != i):
        raise ctx.error(f"{path}.parent", f"expected the index of another step, got {parent!r}")
    tool_args = step.get("tool_args")
    if isinstance(tool_args, str):
        try:
            tool_args = json_loads(tool_args)
        except ValueError:
            raise ctx.error(f"{path}.tool_args", "expected JSON text") from None
    return StepRecord(
        kind=kind,
        content=str(step.get("content") or ""),
        agent=str(step.get("agent") or ""),
        role=str(step.get("role") or ""),
        tool_name=str(step.get("tool_name") or ""),
        tool_args=tool_args,
        tool_call_id=str(step.get("tool_call_id") or ""),
        timestamp=step.get("timestamp") or None,
        parent=parent,
        tokens=step.get("tokens"),
        duration_ms=step.get("duration_ms"),
    )


def _json_object(value: Any, ctx: Ctx, field: str) -> dict:
    if value in (None, ""):
        return {}
    try:
        data = json_loads(value) if isinstance(value, str) else value
    except ValueError:
        raise ctx.error(field, "expected a JSON object") from None
    if not isinstance(data, dict):
        raise ctx.error(field, "expected a JSON object")
    return data
