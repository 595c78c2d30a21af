"""The generic annotations JSONL format (pure: bytes in, records out, errors that name the line).

One annotation per line:
    {"trace": "<external id>", "annotator": "alice",
     "labels": [{"mode": "FM-1.3", "steps": [12], "primary": false, "note": "..."}],
     "ambiguous": false, "no_failure": false, "note": "...", "confidence": 4}

A label may carry a failure attribution as the source gave it (Who&When style), stored unchanged:
    "attribution": {"agent": "WebSurfer", "step": 12, "reason": "..."}
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from traces.importers import limits
from traces.importers.records import AnnotationRecord, LabelRecord, TraceFormatError

_KEYS = {"trace", "annotator", "labels", "ambiguous", "no_failure", "note", "confidence"}
_LABEL_KEYS = {"mode", "steps", "primary", "note", "attribution"}
_ATTRIBUTION_KEYS = {"agent", "step", "reason"}


@dataclass(slots=True)
class LabelLine:
    trace: str
    annotation: AnnotationRecord
    confidence: int | None
    line: int


def parse_annotations_jsonl(stream: BinaryIO, filename: str) -> Iterator[LabelLine]:
    cap = limits.current().max_record_bytes  # the same bounds as trace files: line size and depth
    line_no = 0
    while raw := stream.readline(cap + 1):
        line_no += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            raise TraceFormatError(
                str(limits.record_too_large(0, limits.current())), file=filename, line=line_no
            )
        if not raw.strip():
            continue
        try:
            obj = limits.json_loads(raw)
        except limits.LimitExceeded as error:
            raise TraceFormatError(str(error), file=filename, line=line_no) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise TraceFormatError(f"not valid JSON ({error})", file=filename, line=line_no) from None
        yield _line(obj, filename, line_no)


def _fail(filename: str, line: int, field: str, message: str) -> TraceFormatError:
    return TraceFormatError(message, file=filename, line=line, field=field)


def _line(obj: object, filename: str, line: int) -> LabelLine:
    if not isinstance(obj, dict):
        raise _fail(filename, line, "", "expected a JSON object")
    unknown = set(obj) - _KEYS
    if unknown:
        raise _fail(filename, line, sorted(unknown)[0], f"unknown field; expected {', '.join(sorted(_KEYS))}")
    for key in ("trace", "annotator"):
        if not isinstance(obj.get(key), str | int) or str(obj.get(key)).strip() == "":
            raise _fail(filename, line, key, "required (a non-empty string)")
    labels = obj.get("labels", [])
    if not isinstance(labels, list):
        raise _fail(filename, line, "labels", "expected a list")
    for key in ("ambiguous", "no_failure"):
        if not isinstance(obj.get(key, False), bool):
            raise _fail(filename, line, key, "expected true or false")
    confidence = obj.get("confidence")
    if confidence is not None and (
        not isinstance(confidence, int) or isinstance(confidence, bool) or not 1 <= confidence <= 5
    ):
        raise _fail(filename, line, "confidence", "expected an integer from 1 to 5")
    _check_note(obj.get("note"), filename, line, "note")
    return LabelLine(
        trace=str(obj["trace"]),
        annotation=AnnotationRecord(
            annotator=str(obj["annotator"]).strip(),
            labels=[_label(item, filename, line, i) for i, item in enumerate(labels)],
            ambiguous=obj.get("ambiguous", False),
            no_failure=obj.get("no_failure", False),
            note=obj.get("note") or "",
        ),
        confidence=confidence,
        line=line,
    )


def _check_note(note: object, filename: str, line: int, path: str) -> None:
    # A note of another type would be stored as Python's text of it ("{'a': 1}"): refused, not invented.
    if note is not None and not isinstance(note, str):
        raise _fail(filename, line, path, "expected a string or null")


def _label(item: object, filename: str, line: int, i: int) -> LabelRecord:
    path = f"labels[{i}]"
    if not isinstance(item, dict):
        raise _fail(filename, line, path, "expected an object with a mode")
    unknown = set(item) - _LABEL_KEYS
    if unknown:
        raise _fail(filename, line, f"{path}.{sorted(unknown)[0]}", "unknown field")
    if not isinstance(item.get("mode"), str) or not item["mode"].strip():
        raise _fail(filename, line, f"{path}.mode", "required (a mode code, name or alias)")
    steps = item.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in steps):
        raise _fail(filename, line, f"{path}.steps", "expected a list of step numbers")
    if not isinstance(item.get("primary", False), bool):
        raise _fail(filename, line, f"{path}.primary", "expected true or false")
    _check_note(item.get("note"), filename, line, f"{path}.note")
    return LabelRecord(
        mode=item["mode"],
        steps=steps,
        primary=item.get("primary", False),
        note=item.get("note") or "",
        attribution=_attribution(item.get("attribution"), filename, line, f"{path}.attribution"),
    )


def _attribution(value: object, filename: str, line: int, path: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - _ATTRIBUTION_KEYS:
        raise _fail(filename, line, path, "expected an object with agent, step and reason")
    agent, step, reason = value.get("agent"), value.get("step"), value.get("reason", "")
    if not isinstance(agent, str) or not agent.strip():
        raise _fail(filename, line, f"{path}.agent", "required (the agent held responsible)")
    if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 0):
        raise _fail(filename, line, f"{path}.step", "expected a step number (from 0) or null")
    if not isinstance(reason, str):
        raise _fail(filename, line, f"{path}.reason", "expected a string")
    return {"agent": agent, "step": step, "reason": reason}
