"""Turn a model's answer into labels, or say exactly why it cannot be used. Pure: no Django.

Lenient about the wrapping (code fences, prose around the object, a list instead of a mapping, steps as
"4"), strict about the meaning: an unknown mode code, a step the trace does not have, two primaries, or a
single-primary answer without its primary makes the whole answer malformed. A malformed answer is never
partly used: half a label set would bias agreement without anyone noticing.

The answer may carry one optional `confidence` (a number from 0 to 1) for the whole answer: how sure the
model is of its labels as a set. Absent or null it is unknown; anything else (a string, a boolean, a number
outside 0..1, NaN) makes the answer malformed like any other broken field, since a triage order built on a
nonsense number would send people to the wrong traces.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"^\s*```[\w-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
REASON_LIMIT = 500


class MalformedAnswer(ValueError):
    """The answer cannot become labels; the message says why (it is shown to the model on the retry)."""


@dataclass(frozen=True, slots=True)
class ParsedLabel:
    code: str
    steps: tuple[int, ...] = ()
    primary: bool = False
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    labels: tuple[ParsedLabel, ...]
    summary: str = ""
    confidence: float | None = None  # the model's own 0..1 certainty of the whole answer; None: not given

    @property
    def no_failure(self) -> bool:
        return not self.labels

    @property
    def note(self) -> str:
        """The annotation's note: the summary, else the labels' one-line reasons."""
        if self.summary:
            return self.summary
        return "; ".join(f"{label.code}: {label.reason}" for label in self.labels if label.reason)


def extract_json(text: str) -> Any:
    """The JSON value in `text`: code fences stripped, and prose around a single object ignored."""
    body = (text or "").strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise MalformedAnswer("the answer is empty")
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(body[start : end + 1])
            except json.JSONDecodeError as error:
                raise MalformedAnswer(
                    f"the answer is not valid JSON ({error.msg} at char {error.pos})"
                ) from None
        raise MalformedAnswer("the answer contains no JSON object") from None


def _one_line(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedAnswer(f"{field} must be a string")
    line = value.strip().splitlines()[0].strip() if value.strip() else ""
    return line[:REASON_LIMIT]


def _steps(value: Any, code: str, n_steps: int) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int | str) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise MalformedAnswer(f'"steps" of {code} must be a list of step numbers')
    steps: list[int] = []
    for item in value:
        if isinstance(item, str) and item.strip().isdigit():
            item = int(item.strip())
        if isinstance(item, bool) or not isinstance(item, int):
            raise MalformedAnswer(f'"steps" of {code} must hold step numbers, not {item!r}')
        if not 0 <= item < n_steps:
            raise MalformedAnswer(
                f"step {item} cited for {code} does not exist (the trace has {n_steps} steps, 0 to {n_steps - 1})"
            )
        if item not in steps:
            steps.append(item)
    return tuple(sorted(steps))


def _confidence(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise MalformedAnswer(f'"confidence" must be a number from 0 to 1, not {value!r}')
    if not 0 <= value <= 1:
        raise MalformedAnswer(f'"confidence" must be from 0 to 1, not {value}')
    return float(value)


def _entries(modes: Any) -> list[tuple[str, Any]]:
    if isinstance(modes, dict):
        return list(modes.items())
    if isinstance(modes, list):
        entries = []
        for item in modes:
            if not isinstance(item, dict):
                raise MalformedAnswer('"modes" must map mode codes to objects')
            code = item.get("code", item.get("mode"))
            if not isinstance(code, str):
                raise MalformedAnswer('every entry of "modes" needs its "code"')
            entries.append((code, item))
        return entries
    raise MalformedAnswer('the answer needs a "modes" object')


def _present(entry: Any, code: str) -> tuple[bool, dict]:
    if isinstance(entry, bool):
        return entry, {}
    if not isinstance(entry, dict):
        raise MalformedAnswer(f"the entry for {code} must be an object")
    present = entry.get("present", True)
    if not isinstance(present, bool):
        raise MalformedAnswer(f'"present" of {code} must be true or false')
    return present, entry


def parse_answer(text: str, *, codes: Sequence[str], n_steps: int, single_primary: bool) -> ParsedAnswer:
    """Validate an answer against the taxonomy's `codes` and the trace's `n_steps` (steps 0..n-1)."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise MalformedAnswer("the answer must be a JSON object")
    known = set(codes)
    seen: set[str] = set()
    labels: list[ParsedLabel] = []
    for code, entry in _entries(data.get("modes")):
        code = code.strip()
        if code not in known:
            listed = ", ".join(list(codes)[:20])
            raise MalformedAnswer(f"{code!r} is not a mode code of this taxonomy (use one of {listed})")
        if code in seen:
            raise MalformedAnswer(f"{code} appears twice")
        seen.add(code)
        present, fields = _present(entry, code)
        if not present:
            continue
        primary = fields.get("primary", False)
        if not isinstance(primary, bool):
            raise MalformedAnswer(f'"primary" of {code} must be true or false')
        labels.append(
            ParsedLabel(
                code=code,
                steps=_steps(fields.get("steps"), code, n_steps),
                primary=primary,
                reason=_one_line(fields.get("reason"), f'"reason" of {code}'),
            )
        )
    primaries = [label.code for label in labels if label.primary]
    if len(primaries) > 1:
        raise MalformedAnswer(f"only one mode may be primary, not {len(primaries)} ({', '.join(primaries)})")
    if data.get("no_failure") is True and labels:
        raise MalformedAnswer('"no_failure" is true but modes are marked present')
    if single_primary and labels and not primaries:
        if len(labels) > 1:
            raise MalformedAnswer('mark exactly one present mode with "primary": true')
        labels[0] = ParsedLabel(labels[0].code, labels[0].steps, True, labels[0].reason)
    if not single_primary:
        labels = [ParsedLabel(label.code, label.steps, False, label.reason) for label in labels]
    return ParsedAnswer(
        labels=tuple(labels),
        summary=_one_line(data.get("summary"), '"summary"'),
        confidence=_confidence(data.get("confidence")),
    )
