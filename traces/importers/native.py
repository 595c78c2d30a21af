"""Native JSONL: this project's own lossless interchange format, one trace per line.

It is what the exporter writes and what other formats are normalised into, so validation is
strict (unknown keys, wrong types and unknown step kinds are errors) and :func:`dump_native`
is canonical: parse -> dump -> parse is the identity and a canonical file round-trips byte
for byte through ``json.dumps(d, ensure_ascii=False)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from ._json import first_char, first_line, has_key, iter_jsonl
from ._util import Ctx
from .records import (
    OUTCOMES,
    STEP_KINDS,
    AnnotationRecord,
    LabelRecord,
    StepRecord,
    TraceFormatError,
    TraceRecord,
)

FORMAT = "native"
LABEL = "Native JSONL (trace-annotator)"

TRACE_KEYS = (
    "id",
    "task",
    "system",
    "model",
    "benchmark",
    "outcome",
    "score",
    "metadata",
    "steps",
    "annotations",
)
STEP_KEYS = (
    "agent",
    "role",
    "kind",
    "content",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "timestamp",
    "parent",
    "tokens",
    "duration_ms",
)
ANNOTATION_KEYS = ("annotator", "labels", "ambiguous", "no_failure", "note")
LABEL_KEYS = ("mode", "steps", "primary", "note")


def sniff(head: bytes, filename: str) -> bool:
    if first_char(head) != "{":
        return False
    obj = first_line(head)
    if isinstance(obj, dict):
        # Unknown extra keys still select native: the parser then names them precisely.
        return "id" in obj and isinstance(obj.get("steps"), list) and "messages" not in obj
    # First line longer than the head: fall back to the canonical key order written by dump_native.
    return head.lstrip()[:6] == b'{"id":' and has_key(head, "steps")


def splits_by_line(head: bytes) -> bool:
    """Every line is a trace: an import may hand pieces of the file to worker processes."""
    return True


def parse(
    stream: BinaryIO, filename: str, *, first_line: int = 1, first_record: int = 1, checked: bool = False
) -> Iterator[TraceRecord]:
    """`first_line`, `first_record`: the numbers of the stream's first line and trace (a piece of a file);
    `checked`: the stream is within the depth and value limits as a whole (see _json.iter_jsonl)."""
    lines = iter_jsonl(stream, filename, first_line, checked=checked)
    for record_no, (line_no, obj) in enumerate(lines, start=first_record):
        record = from_dict(obj, Ctx(filename, record=record_no, line=line_no), record_no=record_no)
        record.line_no = line_no
        yield record


def _check_keys(ctx: Ctx, d: dict, allowed: tuple[str, ...], path: str) -> None:
    for key in d:
        if key not in allowed:
            where = f"{path}.{key}" if path else key
            raise ctx.error(where, f"unknown field; expected one of {', '.join(allowed)}")


def from_dict(obj: Any, ctx: Ctx, record_no: int = 0) -> TraceRecord:
    """Validate one native trace dict and build the record (also used by other importers' tests)."""
    d = ctx.obj(obj)
    _check_keys(ctx, d, TRACE_KEYS, "")
    ext_id = ctx.get(d, "id", (str, int), "id", required=True)
    raw_steps = ctx.get(d, "steps", list, "steps", required=True)
    steps = [_step(ctx, s, i, len(raw_steps)) for i, s in enumerate(raw_steps)]
    outcome = ctx.text(d, "outcome", "outcome") or "unknown"
    if outcome not in OUTCOMES:
        raise ctx.error("outcome", f"expected one of {', '.join(OUTCOMES)}, got {outcome!r}")
    score = ctx.get(d, "score", (int, float), "score")
    raw_ann = ctx.get(d, "annotations", list, "annotations") or []
    return TraceRecord(
        external_id=str(ext_id),
        steps=steps,
        task=ctx.text(d, "task", "task"),
        system=ctx.text(d, "system", "system"),
        model=ctx.text(d, "model", "model"),
        benchmark=ctx.text(d, "benchmark", "benchmark"),
        outcome=outcome,
        score=float(score) if score is not None else None,
        metadata=ctx.get(d, "metadata", dict, "metadata") or {},
        raw=obj,
        annotations=[_annotation(ctx, a, i, len(steps)) for i, a in enumerate(raw_ann)],
        record_no=record_no,
    )


_STEP_KEY_SET = frozenset(STEP_KEYS)
_JSON_TYPES = (dict, list, str, int, float, bool)


def _step(ctx: Ctx, raw: Any, i: int, n_steps: int) -> StepRecord:
    return _plain_step(raw, i, n_steps) or _checked_step(ctx, raw, i, n_steps)


# The type of every step key's value in a plain step (no nulls): the keys are StepRecord's field names.
_STEP_TYPES = {key: str for key in STEP_KEYS} | {"parent": int, "tokens": int, "duration_ms": int}
_STEP_TYPES["tool_args"] = object  # any JSON value (checked on its own)


def _plain_step(s: Any, i: int, n_steps: int) -> StepRecord | None:
    """The common step, validated with one exact type test per key present and built straight from the
    dict (its keys are StepRecord's fields): the same rules as _checked_step, several times faster on a
    file of well-formed steps. None for anything unusual (a wrong type, an unknown key or kind, a bad
    parent, an int subclass): _checked_step then accepts it or names the field."""
    if type(s) is not dict:
        return None
    types = _STEP_TYPES
    for key, value in s.items():
        want = types.get(key)
        if type(value) is not want and want is not object:
            return _plain_step_with_nulls(s, i, n_steps)  # a null, or something _checked_step names
    kind = s.get("kind")
    parent = s.get("parent")
    if parent is not None and not (0 <= parent < n_steps and parent != i):
        return None
    tool_args = s.get("tool_args")
    if tool_args is not None and not isinstance(tool_args, _JSON_TYPES):
        return None
    if kind is None:
        return StepRecord("message", **s)
    return StepRecord(**s) if kind in STEP_KINDS else None


def _plain_step_with_nulls(s: dict, i: int, n_steps: int) -> StepRecord | None:
    """_plain_step for a step that holds nulls (they read as absent) or needs _checked_step."""
    if not _STEP_KEY_SET.issuperset(s):
        return None
    get = s.get
    texts = []
    for key in ("kind", "content", "agent", "role", "tool_name", "tool_call_id", "timestamp"):
        value = get(key)
        if value is not None and type(value) is not str:
            return None
        texts.append(value)
    kind, content, agent, role, tool_name, tool_call_id, timestamp = texts
    kind = kind or "message"
    if kind not in STEP_KINDS:
        return None
    numbers = (get("parent"), get("tokens"), get("duration_ms"))
    for value in numbers:
        if value is not None and type(value) is not int:
            return None
    parent, tokens, duration_ms = numbers
    if parent is not None and not (0 <= parent < n_steps and parent != i):
        return None
    tool_args = get("tool_args")
    if tool_args is not None and not isinstance(tool_args, _JSON_TYPES):
        return None
    return StepRecord(
        kind=kind,
        content=content or "",
        agent=agent or "",
        role=role or "",
        tool_name=tool_name or "",
        tool_args=tool_args,
        tool_call_id=tool_call_id or "",
        timestamp=timestamp,
        parent=parent,
        tokens=tokens,
        duration_ms=duration_ms,
    )


def _checked_step(ctx: Ctx, raw: Any, i: int, n_steps: int) -> StepRecord:
    path = f"steps[{i}]"
    s = ctx.obj(raw, path)
    _check_keys(ctx, s, STEP_KEYS, path)
    kind = ctx.text(s, "kind", f"{path}.kind") or "message"
    if kind not in STEP_KINDS:
        raise ctx.error(f"{path}.kind", f"expected one of {', '.join(STEP_KINDS)}, got {kind!r}")
    parent = ctx.get(s, "parent", int, f"{path}.parent")
    if parent is not None and not (0 <= parent < n_steps and parent != i):
        raise ctx.error(
            f"{path}.parent", f"expected the index of another step (0..{n_steps - 1}), got {parent}"
        )
    tool_args = s.get("tool_args")
    if tool_args is not None and not isinstance(tool_args, dict | list | str | int | float | bool):
        raise ctx.error(f"{path}.tool_args", "expected JSON data")
    return StepRecord(
        kind=kind,
        content=ctx.text(s, "content", f"{path}.content"),
        agent=ctx.text(s, "agent", f"{path}.agent"),
        role=ctx.text(s, "role", f"{path}.role"),
        tool_name=ctx.text(s, "tool_name", f"{path}.tool_name"),
        tool_args=tool_args,
        tool_call_id=ctx.text(s, "tool_call_id", f"{path}.tool_call_id"),
        timestamp=ctx.get(s, "timestamp", str, f"{path}.timestamp"),
        parent=parent,
        tokens=ctx.get(s, "tokens", int, f"{path}.tokens"),
        duration_ms=ctx.get(s, "duration_ms", int, f"{path}.duration_ms"),
    )


def _annotation(ctx: Ctx, raw: Any, i: int, n_steps: int) -> AnnotationRecord:
    path = f"annotations[{i}]"
    a = ctx.obj(raw, path)
    _check_keys(ctx, a, ANNOTATION_KEYS, path)
    labels = []
    for j, lab in enumerate(ctx.get(a, "labels", list, f"{path}.labels") or []):
        lpath = f"{path}.labels[{j}]"
        lab = ctx.obj(lab, lpath)
        _check_keys(ctx, lab, LABEL_KEYS, lpath)
        steps = ctx.get(lab, "steps", list, f"{lpath}.steps") or []
        for k, idx in enumerate(steps):
            if isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < n_steps:
                raise ctx.error(f"{lpath}.steps[{k}]", f"expected a step index 0..{n_steps - 1}, got {idx!r}")
        labels.append(
            LabelRecord(
                mode=ctx.text(lab, "mode", f"{lpath}.mode", required=True),
                steps=list(steps),
                primary=bool(ctx.get(lab, "primary", bool, f"{lpath}.primary")),
                note=ctx.text(lab, "note", f"{lpath}.note"),
            )
        )
    return AnnotationRecord(
        annotator=ctx.text(a, "annotator", f"{path}.annotator", required=True),
        labels=labels,
        ambiguous=bool(ctx.get(a, "ambiguous", bool, f"{path}.ambiguous")),
        no_failure=bool(ctx.get(a, "no_failure", bool, f"{path}.no_failure")),
        note=ctx.text(a, "note", f"{path}.note"),
    )


def _keep(value: Any) -> bool:
    return value not in (None, "", [], {}, False)


def dump_native(record: TraceRecord) -> dict:
    """Canonical dict for ``record``: fixed key order, defaults omitted (except id and steps)."""
    out: dict[str, Any] = {"id": record.external_id}
    for key, value in (
        ("task", record.task),
        ("system", record.system),
        ("model", record.model),
        ("benchmark", record.benchmark),
        ("outcome", "" if record.outcome == "unknown" else record.outcome),
        ("score", record.score),
        ("metadata", record.metadata),
    ):
        if _keep(value) or (key == "score" and value is not None):
            out[key] = value
    out["steps"] = [_dump_step(s) for s in record.steps]
    if record.annotations:
        out["annotations"] = [_dump_annotation(a) for a in record.annotations]
    return out


def _dump_step(s: StepRecord) -> dict:
    out: dict[str, Any] = {}
    for key in STEP_KEYS:
        value = getattr(s, key)
        if key == "kind":
            if value != "message":
                out[key] = value
        elif key in ("tool_args", "parent", "tokens", "duration_ms"):
            # 0, {} and [] are meaningful here (root parent, tool without arguments).
            if value is not None:
                out[key] = value
        elif _keep(value):
            out[key] = value
    return out


def _dump_annotation(a: AnnotationRecord) -> dict:
    out: dict[str, Any] = {"annotator": a.annotator}
    if a.labels:
        out["labels"] = [
            {
                k: v
                for k, v in (
                    ("mode", lab.mode),
                    ("steps", lab.steps),
                    ("primary", lab.primary),
                    ("note", lab.note),
                )
                if k == "mode" or _keep(v)
            }
            for lab in a.labels
        ]
    for key in ("ambiguous", "no_failure", "note"):
        if _keep(getattr(a, key)):
            out[key] = getattr(a, key)
    return out


def write_native_jsonl(records: Any, path: Any) -> int:
    """Write records as canonical native JSONL; returns the number written."""
    import json

    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            fh.write(json.dumps(dump_native(rec), ensure_ascii=False))
            fh.write("\n")
            n += 1
    return n


__all__ = [
    "FORMAT",
    "LABEL",
    "TraceFormatError",
    "dump_native",
    "from_dict",
    "parse",
    "sniff",
    "write_native_jsonl",
]
