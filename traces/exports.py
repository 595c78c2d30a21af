"""Writing traces back out: the native JSONL export (`export_traces`), lossless for native imports."""

from __future__ import annotations

import json
from collections.abc import Iterable

from traces.answer_key import merged
from traces.importers._util import Ctx
from traces.importers.native import dump_native
from traces.importers.native import from_dict as native_from_dict
from traces.importers.records import StepRecord, TraceRecord
from traces.models import Batch, Step, Trace
from traces.services import content_hash


def export_native(batch: Batch, out, *, chunk_size: int = 200) -> int:
    """Write the batch as native JSONL (one canonical trace per line); returns the number of traces.

    Traces go out in chunks with one step query per chunk, so memory and query count stay bounded.
    """
    count = 0
    ids = list(Trace.objects.filter(batch=batch).order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), chunk_size):
        chunk = ids[start : start + chunk_size]
        traces = Trace.objects.in_bulk(chunk)
        steps: dict[int, list[Step]] = {trace_id: [] for trace_id in chunk}
        for step in Step.objects.filter(trace_id__in=chunk).order_by("trace_id", "index"):
            steps[step.trace_id].append(step)
        for trace_id in chunk:
            trace = traces[trace_id]
            data = dump_native(trace_to_record(trace, steps[trace_id]))
            # Labels that came inside a native file travel with it (part of the record, not of a project).
            if (
                trace.source_format == "native"
                and isinstance(trace.raw, dict)
                and trace.raw.get("annotations")
            ):
                data["annotations"] = native_annotations(trace.raw)
            out.write(json.dumps(data, ensure_ascii=False) + "\n")
            count += 1
    return count


def native_annotations(raw: dict) -> list:
    """The canonical form of the annotations in a stored native record."""
    return dump_native(native_from_dict(raw, Ctx("stored record"))).get("annotations", [])


def stored_content_hash(trace: Trace, steps: Iterable[Step] | None = None) -> str:
    """The content key (traces.services.content_hash) of a stored trace: the same key its import computed,
    because the key covers exactly what the rows keep."""
    if steps is None:
        steps = Step.objects.filter(trace_id=trace.pk).order_by("index")
    return content_hash(trace_to_record(trace, steps))


def trace_to_record(trace: Trace, steps: Iterable[Step]) -> TraceRecord:
    return TraceRecord(
        external_id=trace.external_id,
        task=trace.task,
        system=trace.system,
        model=trace.model,
        benchmark=trace.benchmark,
        outcome=trace.outcome,
        score=trace.score,
        metadata=merged(trace.metadata, trace.answer_key),
        steps=[
            StepRecord(
                kind=step.kind,
                content=step.content,
                agent=step.agent,
                role=step.role,
                tool_name=step.tool_name,
                tool_args=step.tool_args,
                tool_call_id=step.tool_call_id,
                timestamp=step.timestamp or None,
                parent=step.parent_index,
                tokens=step.tokens,
                duration_ms=step.duration_ms,
            )
            for step in steps
        ],
    )
