"""Trace importers: pure parsers from agent-trace files to plain :class:`TraceRecord` objects.

``FORMATS`` lists the parser modules in detection priority order: the most specific
signatures first (ZIP magic, distinctive top-level keys), the generic chat format last, so a
file that also contains chat ``messages`` (Inspect samples, tau2 simulations) is not taken
for plain OpenAI chat.

``SOURCE_FORMATS`` read whole *sources* rather than one stream: a dataset folder or an
``hf://owner/name`` repo (their modules add ``parse_source(source, **options)``). A folder is one
source when it holds a dataset (see :func:`detect_source`), otherwise a pile of trace files.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

from . import (
    codex,
    hf_dataset,
    hf_export,
    inspect_ai,
    limits,
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
from ._hf_rows import HF_PREFIX, looks_like_dataset_folder
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
        hf_dataset,  # parquet magic bytes: matches nothing else, so its place does not matter
    )
}


# Formats that read a folder or a Hub repo as one source (hf_export first: it is the more specific).
SOURCE_FORMATS: dict[str, ModuleType] = {m.FORMAT: m for m in (hf_export, hf_dataset)}
ALL_FORMATS: tuple[str, ...] = tuple(dict.fromkeys([*FORMATS, *SOURCE_FORMATS]))


def _known() -> str:
    return ", ".join(ALL_FORMATS)


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
        return FORMATS.get(fmt) or SOURCE_FORMATS[fmt]
    except KeyError:
        raise TraceFormatError(f"unknown format {fmt!r}; choose one of {_known()}") from None


def iter_records(path: Path, fmt: str | None = None) -> Iterator[TraceRecord]:
    """Stream the traces in ``path``; ``fmt`` forces a format instead of detecting it."""
    path = Path(path)
    module = get_format(fmt) if fmt else FORMATS[detect_format(path)]
    with open(path, "rb") as fh:
        yield from module.parse(fh, str(path))


def _position(record: TraceRecord) -> str:
    return f"line {record.line_no}" if record.line_no is not None else f"record {record.record_no}"


def guarded(records: Iterable[TraceRecord], filename: str) -> Iterator[TraceRecord]:
    """The records of one file, each checked before it may become rows: no larger than the record
    limit (its JSON is what the database stores; depth was checked as the bytes were parsed), and no
    trace id used twice in the file (the second would be a different trace under the same name, or the
    same one counted twice).

    The import service applies it; the parsers alone stay constant-memory (the ids seen are not).
    """
    first_seen: dict[str, str] = {}
    for record in records:
        here = _position(record)
        line = record.line_no
        number = None if line is not None else (record.record_no or None)
        extra = 0 if record.raw is not None else sum(len(step.content) for step in record.steps)
        try:
            limits.check_record(record.raw, extra_bytes=extra)
        except limits.LimitExceeded as exc:
            raise TraceFormatError(str(exc), file=filename, record=number, line=line) from None
        first = first_seen.setdefault(record.external_id, here)
        if first != here:
            raise TraceFormatError(
                f"duplicate trace id {record.external_id!r}: {here} repeats the id of {first}; "
                "every trace in a file needs its own id",
                file=filename,
                record=number,
                line=line,
            )
        yield record


def is_source(path: Path | str) -> bool:
    """A folder or an ``hf://owner/name`` repo id: read whole by a source format, not streamed as a file."""
    return str(path).startswith(HF_PREFIX) or Path(path).is_dir()


def detect_source(source: Path | str) -> str | None:
    """The source format of a folder or repo: our own export, any other dataset, or None (a folder of
    trace files). For a Hub repo this asks the Hub for its configs; unreachable means hf_dataset, which
    then reports why it cannot read it."""
    text = str(source)
    if text.startswith(HF_PREFIX):
        return hf_export.FORMAT if hf_export.is_export_repo(text) else hf_dataset.FORMAT
    if hf_export.looks_like(Path(source)):
        return hf_export.FORMAT
    if looks_like_dataset_folder(Path(source)):
        return hf_dataset.FORMAT
    return None


def iter_source(source: Path | str, fmt: str | None = None, **options) -> Iterator[TraceRecord]:
    """Stream the traces of a whole source; ``options`` are the reader's (columns, split, config)."""
    fmt = fmt or detect_source(source)
    module = SOURCE_FORMATS.get(fmt or "")
    if module is None:
        raise TraceFormatError(
            f"not a dataset: {fmt or 'this folder'} cannot be read as one source "
            f"(source formats: {', '.join(SOURCE_FORMATS)})",
            file=str(source),
        )
    yield from module.parse_source(str(source), **options)


__all__ = [
    "ALL_FORMATS",
    "FORMATS",
    "OUTCOMES",
    "SOURCE_FORMATS",
    "STEP_KINDS",
    "AnnotationRecord",
    "LabelRecord",
    "StepRecord",
    "TraceFormatError",
    "TraceRecord",
    "detect_format",
    "detect_head",
    "detect_source",
    "get_format",
    "guarded",
    "is_source",
    "iter_records",
    "iter_source",
]
