"""MAST full MAD dataset: ``[{mas_name, llm_name, benchmark_name, trace_id, trace: {key, index,
trajectory}, mast_annotation: {"1.1": 0|1, ...}}]`` (a JSON array, or JSONL).

The labels come from the MAST LLM judge, so they become one annotation by annotator
``mast-llm-judge`` with the mode codes exactly as in the file. The raw log string is split into
steps by the framework splitters in :mod:`mast_split`. The file is ~190 MB, hence ijson.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, BinaryIO

from ._json import first_char, first_line, has_key, iter_array, iter_jsonl, peek
from ._util import Ctx, as_float, compact, text_of
from .limits import json_loads
from .mast_split import framework_of, split_trace
from .records import AnnotationRecord, LabelRecord, StepRecord, TraceRecord

FORMAT = "mast_full"
LABEL = "MAST / MAD full dataset (LLM-judge labels)"
JUDGE = "mast-llm-judge"


def sniff(head: bytes, filename: str) -> bool:
    c = first_char(head)
    if c == "{":
        obj = first_line(head)
        if isinstance(obj, dict):
            return "mas_name" in obj and "round" not in obj and "trace" in obj
        head = head.split(b"\n", 1)[0]
    elif c != "[":
        return False
    if not has_key(head, "mas_name") or has_key(head, "round"):
        return False
    return has_key(head, "llm_name") or has_key(head, "mast_annotation") or has_key(head, "trajectory")


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    head, stream = peek(stream, 4096)
    if first_char(head) == "[":
        for n, obj in iter_array(stream, filename):
            yield _record(obj, Ctx(filename, record=n), n)
    else:
        for n, (line_no, obj) in enumerate(iter_jsonl(stream, filename), start=1):
            record = _record(obj, Ctx(filename, record=n, line=line_no), n)
            record.line_no = line_no
            yield record


def _record(obj: Any, ctx: Ctx, n: int) -> TraceRecord:
    d = ctx.obj(obj)
    trace = d.get("trace")
    if isinstance(trace, dict):
        text = ctx.get(trace, "trajectory", str, "trace.trajectory", required=True)
        key = trace.get("key") if isinstance(trace.get("key"), str) else ""
    else:
        text = ctx.get(d, "trace", str, "trace", required=True)
        key = ""
    rec = build_record(d, text, ctx, n)
    if key:
        rec.external_id = f"{key}-{rec.metadata.get('trace_id', n)}"
    rec.model = rec.model or (d.get("llm_name") if isinstance(d.get("llm_name"), str) else "")
    ann = ctx.get(d, "mast_annotation", dict, "mast_annotation")
    if ann is not None:
        rec.annotations.append(judge_annotation(ann, ctx))
    return rec


def judge_annotation(ann: dict, ctx: Ctx) -> AnnotationRecord:
    labels = []
    for code, value in ann.items():
        if isinstance(value, str) and value.strip().lower() in ("yes", "true"):
            value = 1
        v = as_float(value)
        if v is None and value not in (None, "", "no", "false"):
            raise ctx.error(f"mast_annotation.{code}", f"expected 0/1 or a boolean, got {value!r}")
        if v:
            labels.append(LabelRecord(mode=str(code)))
    return AnnotationRecord(annotator=JUDGE, labels=labels, no_failure=not labels)


def build_record(d: dict, text: str, ctx: Ctx, n: int) -> TraceRecord:
    """Common part of full and human-labelled MAST records: steps, task, system, outcome."""
    mas = text_of(d.get("mas_name"))
    bench = text_of(d.get("benchmark_name"))
    trace_id = d.get("trace_id")
    # Two human-labelled records have mas_name and benchmark_name swapped ("GAIA"/"Magentic").
    framework = framework_of(mas, bench)
    benchmark = bench if framework_of(mas) or not framework_of(bench) else mas
    steps, extra, used = split_trace(text, framework)
    meta = compact(
        {
            "mas_name": mas,
            "benchmark_name": bench,
            "trace_id": trace_id,
            "llm_name": d.get("llm_name"),
            **{k: v for k, v in extra.items() if k not in ("problem_statement", "prompt")},
        }
    )
    ext = trace_id if isinstance(trace_id, str | int) and not isinstance(trace_id, bool) else n
    return TraceRecord(
        external_id=str(ext),
        steps=steps,
        task=_task(extra, text, steps),
        system=used or framework or mas,
        benchmark=benchmark,
        outcome=_outcome(extra, steps),
        metadata=meta,
        raw=d,
        record_no=n,
    )


def _task(extra: dict, text: str, steps: list[StepRecord]) -> str:
    for key in ("problem_statement", "prompt", "question", "task"):
        if extra.get(key):
            return text_of(extra[key]).strip()
    m = re.search(r"\*\*task_prompt\*\*: (.*)", text[:20000])
    if m:
        return m.group(1).strip()
    for s in steps:
        if s.role == "user" and s.content:
            return s.content
    return ""


def _outcome(extra: dict, steps: list[StepRecord]) -> str:
    """Only where the log itself says so: AppWorld's evaluation, AG2/GSM-Plus ``correct``."""
    other = extra.get("other_data")
    if isinstance(other, dict) and isinstance(other.get("correct"), bool):
        return "success" if other["correct"] else "failure"
    for s in reversed(steps):
        if s.agent == "evaluator":
            try:
                result = json_loads(s.content)
            except ValueError:
                return "unknown"
            if isinstance(result, dict) and isinstance(result.get("success"), bool):
                return "success" if result["success"] else "failure"
    return "unknown"
