"""What an annotator sends: one plain, immutable value parsed from the page's form or the API's JSON.

Parsing checks shape only (types, sizes); whether the modes and steps exist is the service's business
(`annotator.services.annotations.check_payload`), because that needs the project and the trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from traces.importers import limits

MAX_QUOTE = 2_000
MAX_NOTE = 10_000
MAX_LABELS = 100
MAX_EVIDENCE = 50
# A single save adds at most this much time: a tab left open overnight must not book ten hours.
MAX_ELAPSED_PER_SAVE = 2 * 3600


class PayloadError(ValueError):
    """The request itself is malformed (not a validation opinion about the labels)."""

    def __init__(self, messages: list[str] | str):
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


@dataclass(frozen=True)
class Evidence:
    step: int
    quote: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"step": self.step, "quote": self.quote} if self.quote else {"step": self.step}


@dataclass(frozen=True)
class LabelInput:
    mode: str  # the failure mode's code, e.g. "FM-1.3"
    primary: bool = False
    evidence: tuple[Evidence, ...] = ()
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "primary": self.primary,
            "evidence": [item.as_json() for item in self.evidence],
            "note": self.note,
        }


@dataclass(frozen=True)
class AnnotationPayload:
    labels: tuple[LabelInput, ...] = ()
    no_failure: bool = False
    ambiguous: bool = False
    confidence: int | None = None
    note: str = ""
    elapsed_seconds: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "labels": [label.as_json() for label in self.labels],
            "no_failure": self.no_failure,
            "ambiguous": self.ambiguous,
            "confidence": self.confidence,
            "note": self.note,
        }

    @property
    def codes(self) -> list[str]:
        return [label.mode for label in self.labels]

    def label(self, code: str) -> LabelInput | None:
        return next((label for label in self.labels if label.mode == code), None)


def _text(value: Any, what: str, limit: int = MAX_NOTE) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PayloadError(f"{what} must be text")
    if len(value) > limit:
        raise PayloadError(f"{what} is too long ({len(value):,} characters; at most {limit:,})")
    return value.strip()


def _step(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise PayloadError(f"{what}: a step number is needed")
    try:
        step = int(value)
    except ValueError:
        raise PayloadError(f"{what}: {value!r} is not a step number") from None
    if step < 0:
        raise PayloadError(f"{what}: step numbers start at 0")
    return step


def _evidence(item: Any, what: str) -> Evidence:
    if isinstance(item, int | str) and not isinstance(item, bool):
        return Evidence(step=_step(item, what))
    if not isinstance(item, dict):
        raise PayloadError(f"{what}: expected {{'step': N, 'quote': '...'}}")
    return Evidence(
        step=_step(item.get("step"), what), quote=_text(item.get("quote"), f"{what} quote", MAX_QUOTE)
    )


def _confidence(value: Any) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise PayloadError("Confidence must be a number from 1 to 5") from None


def _elapsed(value: Any) -> int:
    try:
        seconds = int(float(value or 0))
    except (TypeError, ValueError, OverflowError):  # OverflowError: "1e999" is infinite
        return 0  # the clock is a convenience; a garbled value must not block a save
    return min(max(seconds, 0), MAX_ELAPSED_PER_SAVE)


def _bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("1", "true", "on", "yes")
    return bool(value)


def payload_from_json(data: Any) -> AnnotationPayload:
    """The API's body: {"labels": [{"mode", "primary", "evidence": [{"step", "quote"}], "note"}], ...}."""
    if not isinstance(data, dict):
        raise PayloadError("Expected a JSON object")
    raw_labels = data.get("labels") or []
    if not isinstance(raw_labels, list) or len(raw_labels) > MAX_LABELS:
        raise PayloadError(f"labels must be a list of at most {MAX_LABELS} items")
    labels = []
    for i, item in enumerate(raw_labels):
        if not isinstance(item, dict) or not isinstance(item.get("mode"), str):
            raise PayloadError(f"labels[{i}]: expected an object with a 'mode' code")
        evidence = item.get("evidence") or []
        if not isinstance(evidence, list) or len(evidence) > MAX_EVIDENCE:
            raise PayloadError(f"labels[{i}].evidence must be a list of at most {MAX_EVIDENCE} items")
        labels.append(
            LabelInput(
                mode=item["mode"].strip(),
                primary=_bool(item.get("primary")),
                evidence=tuple(_evidence(e, f"labels[{i}].evidence[{j}]") for j, e in enumerate(evidence)),
                note=_text(item.get("note"), f"labels[{i}].note"),
            )
        )
    return AnnotationPayload(
        labels=tuple(labels),
        no_failure=_bool(data.get("no_failure")),
        ambiguous=_bool(data.get("ambiguous")),
        confidence=_confidence(data.get("confidence")),
        note=_text(data.get("note"), "note"),
        elapsed_seconds=_elapsed(data.get("elapsed_seconds")),
    )


def payload_from_form(post) -> AnnotationPayload:
    """The annotation page's form: `labels` (codes), `primary`, `evidence:<code>` (JSON per pin),
    `label_note:<code>`, `no_failure`, `ambiguous`, `confidence`, `note`, `elapsed`."""
    codes = [code for code in post.getlist("labels") if code]
    primary = post.get("primary", "")
    if primary and primary not in codes:
        codes.append(primary)  # choosing a primary label implies choosing the label
    labels = []
    for code in dict.fromkeys(codes):
        evidence = []
        for j, raw in enumerate(post.getlist(f"evidence:{code}")):
            try:
                item = limits.json_loads(raw)  # a form field could be nested deep enough to recurse out
            except ValueError:
                raise PayloadError(f"Evidence {j + 1} of {code} is malformed; pin the step again") from None
            evidence.append(_evidence(item, f"{code} evidence {j + 1}"))
        labels.append(
            LabelInput(
                mode=code,
                primary=code == primary,
                evidence=tuple(evidence[:MAX_EVIDENCE]),
                note=_text(post.get(f"label_note:{code}"), f"the note on {code}"),
            )
        )
    return AnnotationPayload(
        labels=tuple(labels[:MAX_LABELS]),
        no_failure=_bool(post.get("no_failure")),
        ambiguous=_bool(post.get("ambiguous")),
        confidence=_confidence(post.get("confidence")),
        note=_text(post.get("note"), "the note"),
        elapsed_seconds=_elapsed(post.get("elapsed")),
    )


def version_from(value: Any) -> int:
    """The annotation version a save is based on (0: there was no annotation yet)."""
    try:
        version = int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: 1e999
        raise PayloadError("The form is missing its version; reload the page") from None
    if not 0 <= version <= 2**31 - 1:
        raise PayloadError("The version must be a whole number from 0 to 2,147,483,647")
    return version
