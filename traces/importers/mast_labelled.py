"""MAST human-labelled file (``MAD_human_labelled_dataset.json``): a JSON array of
``{round, mas_name, benchmark_name, trace_id, trace: "<raw log>", annotations: [{"failure mode":
"<code> <name>\\n\\n<definition>", "annotator_1": bool, "annotator_2": bool, "annotator_3": bool}]}``.

Each annotator becomes one :class:`AnnotationRecord` so inter-annotator agreement can be
computed later. A label's ``mode`` is the first line of the "failure mode" text (code plus
name, e.g. ``"1.5 Unaware of stopping conditions"``) exactly as in the file: the taxonomy
changed between rounds, so mapping to the final MAST codes is left to the alias service.
A missing vote (bare ``NaN`` in the file) is neither a yes nor a no: it is listed in the
annotation note instead of being guessed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, BinaryIO

from ._json import first_char, has_key, iter_array
from ._util import Ctx
from .mast_full import build_record
from .records import AnnotationRecord, LabelRecord, TraceRecord

FORMAT = "mast_labelled"
LABEL = "MAST / MAD human-labelled dataset (per-annotator labels)"

_MODE_KEY = "failure mode"


def sniff(head: bytes, filename: str) -> bool:
    return first_char(head) == "[" and has_key(head, "mas_name", "round")


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    for n, obj in iter_array(stream, filename):
        yield _record(obj, Ctx(filename, record=n), n)


def mode_name(text: str) -> str:
    """First line of the "failure mode" text: code and name, without the definition."""
    return text.strip().split("\n", 1)[0].strip()


def _record(obj: Any, ctx: Ctx, n: int) -> TraceRecord:
    d = ctx.obj(obj)
    text = ctx.get(d, "trace", str, "trace", required=True)
    entries = ctx.get(d, "annotations", list, "annotations", required=True)
    rec = build_record(d, text, ctx, n)
    rec.metadata["round"] = ctx.text(d, "round", "round")
    modes: list[str] = []
    votes: dict[str, list[tuple[str, bool | None]]] = {}
    for i, raw in enumerate(entries):
        entry = ctx.obj(raw, f"annotations[{i}]")
        mode_text = ctx.text(entry, _MODE_KEY, f"annotations[{i}].{_MODE_KEY}", required=True)
        mode = mode_name(mode_text)
        modes.append(mode_text)
        for key, value in entry.items():
            if key == _MODE_KEY:
                continue
            if value is not None and not isinstance(value, bool):
                raise ctx.error(f"annotations[{i}].{key}", f"expected true/false, got {value!r}")
            votes.setdefault(key, []).append((mode, value))
    rec.metadata["failure_modes"] = modes
    rec.annotations = [_annotation(name, vs) for name, vs in votes.items()]
    return rec


def _annotation(annotator: str, votes: list[tuple[str, bool | None]]) -> AnnotationRecord:
    labels = [LabelRecord(mode=mode) for mode, v in votes if v]
    missing = [mode for mode, v in votes if v is None]
    note = f"no value in the source for: {'; '.join(missing)}" if missing else ""
    return AnnotationRecord(
        annotator=annotator, labels=labels, no_failure=not labels and not missing, note=note, missing=missing
    )
