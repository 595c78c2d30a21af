"""Trace importers: pure parsers from agent-trace files to plain :class:`TraceRecord` objects.

``FORMATS`` lists the parser modules in detection priority order: the most specific
signatures first (ZIP magic, distinctive top-level keys), the generic chat format last, so a
file that also contains chat ``messages`` (Inspect samples, tau2 simulations) is not taken
for plain OpenAI chat.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from . import (
    codex,
    inspect_ai,
    mast_full,
    mast_labelled,
    native,
    openai_chat,
    openhands,
    otel,
    swe_agent,
    tau2_bench,
    who_and_when,
)
from ._json import HEAD_SIZE
from .records import (
    OUTCOMES,
    STEP_KINDS,
    AnnotationRecord,
    LabelRecord,
    StepRecord,
    TraceFormatError,
    TraceRecord,
)

FORMATS: dict[str, ModuleType] = {
    m.FORMAT: m
    for m in (
        inspect_ai,
        codex,
        otel,
        native,
        tau2_bench,
        swe_agent,
        openhands,
        who_and_when,
        mast_labelled,
        mast_full,
        openai_chat,
    )
}


def _known() -> str:
    return ", ".join(FORMATS)


def read_head(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(HEAD_SIZE)


def detect_head(head: bytes, filename: str) -> str:
    """Format name for a file's first bytes and name; TraceFormatError when nothing matches."""
    for name, module in FORMATS.items():
        if module.sniff(head, filename):
            return name
    raise TraceFormatError(
        f"unknown format: the file matches none of the known formats ({_known()}); "
        "pass the format explicitly if you know it",
        file=filename,
    )


def detect_format(path: Path) -> str:
    path = Path(path)
    return detect_head(read_head(path), str(path))


def get_format(fmt: str) -> ModuleType:
    try:
        return FORMATS[fmt]
    except KeyError:
        raise TraceFormatError(f"unknown format {fmt!r}; choose one of {_known()}") from None


def iter_records(path: Path, fmt: str | None = None) -> Iterator[TraceRecord]:
    """Stream the traces in ``path``; ``fmt`` forces a format instead of detecting it."""
    path = Path(path)
    module = get_format(fmt) if fmt else FORMATS[detect_format(path)]
    with open(path, "rb") as fh:
        yield from module.parse(fh, str(path))


__all__ = [
    "FORMATS",
    "OUTCOMES",
    "STEP_KINDS",
    "AnnotationRecord",
    "LabelRecord",
    "StepRecord",
    "TraceFormatError",
    "TraceRecord",
    "detect_format",
    "detect_head",
    "get_format",
    "iter_records",
]
