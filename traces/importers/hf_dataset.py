"""Hugging Face datasets of agent traces: a Hub repo, a local dataset folder or a parquet file.

Datasets on the Hub have no common schema, so a column mapping says which column holds what
(``id=trace_id,steps=messages``); unmapped fields are guessed from common names. The steps column may
hold OpenAI-style chat messages, ShareGPT turns, thought/action/observation dicts, our native step
dicts, or plain text (one step).

A single parquet file goes through :func:`parse` like any other file (it is sniffed by its magic
bytes); folders and ``hf://owner/name`` repos are whole sources, read by :func:`parse_source`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, BinaryIO

from ._chat import chat_steps, first_text
from ._hf_rows import HF_PREFIX, column_names, open_dataset, parquet_rows, source_error
from ._util import Ctx, as_float, compact, text_of
from .limits import json_loads
from .native import STEP_KEYS
from .native import _step as native_step
from .records import OUTCOMES, STEP_KINDS, StepRecord, TraceFormatError, TraceRecord

FORMAT = "hf_dataset"
LABEL = "Hugging Face dataset (parquet file, dataset folder or hf://owner/name)"

FIELDS = ("id", "steps", "task", "model", "outcome", "score", "system", "benchmark", "metadata")
# Tried in order when a field is not mapped explicitly.
GUESSES: dict[str, tuple[str, ...]] = {
    "id": ("id", "trace_id", "instance_id", "task_id", "sample_id"),
    "steps": ("messages", "steps", "trajectory", "history", "conversations", "conversation"),
    "task": ("task", "question", "instruction", "problem_statement", "prompt"),
    "model": ("model", "model_name"),
    "outcome": ("outcome", "label", "resolved", "success"),
    "score": ("score", "reward"),
    "system": ("framework", "agent_system", "agent_framework"),
    "benchmark": ("benchmark",),
    "metadata": ("metadata",),
}
_SUCCESS = {"success", "succeeded", "pass", "passed", "resolved", "true", "yes", "1", "correct", "solved"}
_FAILURE = {"failure", "failed", "fail", "unresolved", "false", "no", "0", "incorrect", "error", "unsolved"}
_SHAREGPT_ROLES = {"human": "user", "gpt": "assistant", "system": "system", "tool": "tool"}
_EXTRA_SCALAR_MAX = 500  # unmapped text columns up to this length are kept in metadata


def sniff(head: bytes, filename: str) -> bool:
    return head[:4] == b"PAR1"


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    """One parquet file, a bounded batch of rows at a time (_hf_rows.parquet_rows), with the guessed column
    mapping."""
    import pyarrow.parquet as pq

    try:
        names = pq.ParquetFile(stream).schema_arrow.names
    except Exception as error:
        raise TraceFormatError(f"not a readable parquet file: {error}", file=filename) from error
    columns = resolve_columns({}, names, filename)
    yield from records_from_rows(parquet_rows(stream, filename), columns, filename)


def parse_source(
    source: str,
    *,
    columns: Mapping[str, str] | str | None = None,
    split: str | None = None,
    config: str | None = None,
) -> Iterator[TraceRecord]:
    """Stream the traces of a dataset folder, a data file or ``hf://owner/name`` (see the module doc)."""
    mapping = parse_columns(columns)
    dataset = open_dataset(source, split=split, config=config)
    rows = iter(dataset)
    names = column_names(dataset)
    first = None
    if names is None:  # a streamed dataset whose features are unknown until the first row
        first = next(rows, None)
        if first is None:
            return
        names = list(first)
    resolved = resolve_columns(mapping, names, source)
    stream = rows if first is None else _chain(first, rows)
    yield from records_from_rows(_guarded(stream, source), resolved, source)


def parse_columns(spec: Mapping[str, str] | str | None) -> dict[str, str]:
    """``"id=trace_id,steps=messages"`` (or a dict) to {field: column}; unknown fields are errors."""
    if not spec:
        return {}
    if isinstance(spec, str):
        pairs = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            field, sep, column = part.partition("=")
            if not sep or not field.strip() or not column.strip():
                raise TraceFormatError(f"column mapping {part!r}: expected FIELD=COLUMN", field="columns")
            pairs[field.strip()] = column.strip()
        spec = pairs
    for field in spec:
        if field not in FIELDS:
            raise TraceFormatError(
                f"unknown field {field!r} in the column mapping; expected one of {', '.join(FIELDS)}",
                field="columns",
            )
    return dict(spec)


def resolve_columns(mapping: Mapping[str, str], names: Iterable[str], source: str) -> dict[str, str]:
    """{field: column} for this dataset: explicit columns must exist, the others are guessed."""
    available = list(names)
    present = set(available)
    resolved: dict[str, str] = {}
    for field, column in mapping.items():
        if column not in present:
            raise TraceFormatError(
                f"column {column!r} (mapped to {field}) is not in the dataset; its columns are "
                f"{', '.join(available) or 'none'}",
                file=source,
                field=column,
            )
        resolved[field] = column
    taken = set(resolved.values())
    for field, candidates in GUESSES.items():
        if field in resolved:
            continue
        for column in candidates:
            if column in present and column not in taken:
                resolved[field] = column
                taken.add(column)
                break
    if "steps" not in resolved:
        raise TraceFormatError(
            "no steps column found (tried "
            f"{', '.join(GUESSES['steps'])}); map one with --columns steps=COLUMN. The dataset's columns are "
            f"{', '.join(available) or 'none'}",
            file=source,
            field="steps",
        )
    return resolved


def records_from_rows(rows: Iterable[dict], columns: Mapping[str, str], source: str) -> Iterator[TraceRecord]:
    for record_no, row in enumerate(rows, start=1):
        yield row_to_record(row, columns, Ctx(source, record=record_no), record_no)


def row_to_record(row: dict, columns: Mapping[str, str], ctx: Ctx, record_no: int = 0) -> TraceRecord:
    """One dataset row to a trace; errors name the source, the row number and the column."""

    def get(field: str) -> Any:
        column = columns.get(field)
        return row.get(column) if column else None

    steps_column = columns["steps"]
    steps = steps_from(row.get(steps_column), ctx, steps_column)
    ext_id = get("id")
    outcome, outcome_score = outcome_from(get("outcome"))
    score = as_float(get("score"))
    metadata = _metadata(get("metadata"), ctx, columns.get("metadata", ""))
    used = set(columns.values())
    metadata.update(compact({k: v for k, v in row.items() if k not in used and _small_scalar(v)}))
    if outcome == "unknown" and get("outcome") not in (None, ""):
        metadata.setdefault("outcome_raw", _jsonable(get("outcome")))
    task = text_of(get("task"))
    if not task and isinstance(row.get(steps_column), list):
        task = first_text(row.get(steps_column))
    return TraceRecord(
        external_id=str(ext_id) if ext_id not in (None, "") else str(record_no),
        steps=steps,
        task=task,
        system=text_of(get("system")),
        model=text_of(get("model")),
        benchmark=text_of(get("benchmark")),
        outcome=outcome,
        score=score if score is not None else outcome_score,
        metadata=metadata,
        raw=_jsonable(row),
        record_no=record_no,
    )


def steps_from(value: Any, ctx: Ctx, column: str) -> list[StepRecord]:
    """Steps from whatever the steps column holds (see the module doc)."""
    if value is None:
        raise ctx.error(column, "the steps column is null")
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{"):
            try:
                parsed = json_loads(stripped)
            except ValueError:
                parsed = None
            if isinstance(parsed, list | dict):
                return steps_from(parsed, ctx, column)
        return [StepRecord(kind="message", content=value)]
    if isinstance(value, dict):
        for key in ("messages", "steps", "trajectory", "history"):
            if isinstance(value.get(key), list):
                return steps_from(value[key], ctx, f"{column}.{key}")
        raise ctx.error(column, "expected a list of steps or messages, got an object")
    if not isinstance(value, list):
        raise ctx.error(column, f"expected a list of steps or messages, got {type(value).__name__}")
    if not value:
        return []
    if all(isinstance(item, str) for item in value):
        return [StepRecord(kind="message", content=item) for item in value]
    first = ctx.obj(value[0], f"{column}[0]")
    if "from" in first and "value" in first:
        return chat_steps([_sharegpt(ctx.obj(m, f"{column}[{i}]")) for i, m in enumerate(value)], ctx, column)
    if "role" in first and first.get("kind") not in STEP_KINDS:
        return chat_steps(value, ctx, column)
    if {"thought", "action", "observation"} & set(first) and "kind" not in first:
        return _thought_action_steps(value, ctx, column)
    return [
        native_step(ctx, _native_dict(ctx.obj(s, f"{column}[{i}]")), i, len(value))
        for i, s in enumerate(value)
    ]


def outcome_from(value: Any) -> tuple[str, float | None]:
    """(outcome, score implied by it): booleans, 0/1 or rewards, and the usual words."""
    if value is None or value == "":
        return "unknown", None
    if isinstance(value, bool):
        return ("success" if value else "failure"), None
    if isinstance(value, int | float):
        number = as_float(value)
        if number is None:
            return "unknown", None
        return ("success" if number >= 1 else "failure"), number
    text = str(value).strip().lower()
    if text in OUTCOMES:
        return text, None
    if text in _SUCCESS:
        return "success", None
    if text in _FAILURE:
        return "failure", None
    return "unknown", None


def _sharegpt(message: dict) -> dict:
    role = str(message.get("from") or "")
    return {"role": _SHAREGPT_ROLES.get(role, role or "user"), "content": message.get("value")}


def _thought_action_steps(value: list, ctx: Ctx, column: str) -> list[StepRecord]:
    steps: list[StepRecord] = []
    for i, raw in enumerate(value):
        item = ctx.obj(raw, f"{column}[{i}]")
        if text_of(item.get("thought")):
            steps.append(StepRecord(kind="reasoning", content=text_of(item["thought"]), agent="agent"))
        call = None
        if text_of(item.get("action")):
            call = len(steps)
            steps.append(StepRecord(kind="tool_call", content=text_of(item["action"]), agent="agent"))
        if item.get("observation") is not None:
            steps.append(
                StepRecord(
                    kind="observation", content=text_of(item["observation"]), agent="environment", parent=call
                )
            )
    return steps


def _native_dict(step: dict) -> dict:
    """Native step keys only, without the nulls a parquet struct carries for absent fields."""
    return {k: v for k, v in step.items() if k in STEP_KEYS and v is not None}


def _metadata(value: Any, ctx: Ctx, column: str) -> dict:
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        try:
            value = json_loads(value)
        except ValueError:
            raise ctx.error(column, "expected a JSON object") from None
    if not isinstance(value, dict):
        raise ctx.error(column, f"expected an object, got {type(value).__name__}")
    return dict(_jsonable(value))


def _small_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return len(value) <= _EXTRA_SCALAR_MAX
    return isinstance(value, bool | int | float)


def _jsonable(value: Any) -> Any:
    """Rows may hold dates, bytes or NaN; the stored record must be plain JSON."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


def _chain(first: dict, rest: Iterator[dict]) -> Iterator[dict]:
    yield first
    yield from rest


def _guarded(rows: Iterator[dict], source: str) -> Iterator[dict]:
    """Errors raised by `datasets` while streaming also name the source."""
    try:
        yield from rows
    except TraceFormatError:
        raise
    except Exception as error:
        raise source_error(source, error) from error


__all__ = ["FORMAT", "HF_PREFIX", "LABEL", "parse", "parse_columns", "parse_source", "sniff", "steps_from"]
