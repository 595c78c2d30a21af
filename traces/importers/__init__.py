"""Trace importers: pure parsers from agent-trace files to plain :class:`TraceRecord` objects.

``FORMATS`` lists the parser modules in detection priority order: the most specific
signatures first (ZIP magic, distinctive top-level keys), the generic chat format last, so a
file that also contains chat ``messages`` (Inspect samples, tau2 simulations) is not taken
for plain OpenAI chat.

Formats fail loudly (:func:`parse_file`): an empty file, a forced format that another format recognises
and this one does not, or a file that yields no trace is an error naming what the parser expected and what
it found, never an import of 0 traces.

``SOURCE_FORMATS`` read whole *sources* rather than one stream: a dataset folder or an
``hf://owner/name`` repo (their modules add ``parse_source(source, **options)``). A folder is one
source when it holds a dataset (see :func:`detect_source`), otherwise a pile of trace files.
"""

from __future__ import annotations

import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

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
    storable,
    swe_agent,
    tau2_bench,
    who_and_when,
)
from ._hf_rows import HF_PREFIX, looks_like_dataset_folder
from ._json import HEAD_SIZE, first_char, first_line
from .records import (
    OUTCOMES,
    STEP_KINDS,
    TOOL_AGENT,
    AnnotationRecord,
    LabelRecord,
    StepRecord,
    TraceFormatError,
    TraceRecord,
)

log = logging.getLogger(__name__)

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


def _sniffed(head: bytes, filename: str) -> str | None:
    return next((name for name, module in FORMATS.items() if module.sniff(head, filename)), None)


def _is_empty(head: bytes) -> bool:
    """Nothing but blanks (or a BOM) in a head shorter than HEAD_SIZE: the whole file is blank."""
    return len(head) < HEAD_SIZE and not head.lstrip(b"\xef\xbb\xbf \t\r\n")


def detect_head(head: bytes, filename: str) -> str:
    """Format name for a file's first bytes and name; TraceFormatError when nothing matches."""
    if _is_empty(head):
        raise TraceFormatError("the file is empty: there are no traces in it", file=filename)
    found = _sniffed(head, filename)
    if found is None:
        raise TraceFormatError(
            f"unknown format: the file is {describe_head(head, filename)}, which matches none of the "
            f"known formats ({_known()}); choose its format if you know it (the Format list when uploading, "
            "--format on the command line)",
            file=filename,
        )
    return found


def describe_head(head: bytes, filename: str) -> str:
    """What a file looks like, in words, for errors that must say what was found."""
    if _is_empty(head):
        return "empty"
    found = _sniffed(head, filename)
    if found is not None:
        return f"a file of format {found} ({FORMATS[found].LABEL})"
    char = first_char(head)
    if char == "{":
        line = first_line(head)
        keys = list(line) if isinstance(line, dict) else _leading_keys(head)
        shown = ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")
        return f"a JSON object with keys {shown}" if keys else "a JSON object"
    if char == "[":
        return "a JSON list of unrecognised records"
    return "not JSON" if char.isprintable() else "a binary file that is not a known container"


def _leading_keys(head: bytes) -> list[str]:
    """The top-level keys in the first bytes of one big JSON object (a best effort: nested keys are skipped
    by tracking depth, and the scan stops at the end of the head)."""
    keys: list[str] = []
    depth, in_string, escaped, start = 0, False, False, -1
    text = head.decode("utf-8", "replace")
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                if depth == 1 and re.match(r"\s*:", text[i + 1 : i + 40]):
                    keys.append(text[start + 1 : i])
        elif ch == '"':
            in_string, start = True, i
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
    return list(dict.fromkeys(keys))


def check_forced_format(head: bytes, filename: str, fmt: str) -> None:
    """A forced format must fit the file: an empty file, or a file that another format recognises and the
    forced one does not, is an error naming both (a file no format recognises is left to the parser)."""
    if _is_empty(head):
        raise TraceFormatError("the file is empty: there are no traces in it", file=filename)
    module = FORMATS[fmt]
    if module.sniff(head, filename):
        return
    found = _sniffed(head, filename)
    if found is not None:
        raise TraceFormatError(
            f"wrong format: expected {fmt} ({module.LABEL}), found {describe_head(head, filename)}; "
            "choose that format or let it be detected",
            file=filename,
        )


def require_records(
    records: Iterable[TraceRecord], filename: str, fmt: str, head: bytes
) -> Iterator[TraceRecord]:
    """Pass the records through; a file that yields none is an error saying what the parser expected and
    what the file holds (so a wrong format can never import 0 traces and call it a success)."""
    count = 0
    for record in records:
        count += 1
        yield record
    if count == 0:
        module = FORMATS[fmt]
        found = describe_head(head, filename)
        raise TraceFormatError(
            f"no traces found: expected {fmt} ({module.LABEL}), found "
            + (
                "a file of that format with no traces in it"
                if found.startswith(f"a file of format {fmt} ")
                else found
            ),
            file=filename,
        )


def parse_file(stream: BinaryIO, filename: str, head: bytes, fmt: str | None = None) -> Iterator[TraceRecord]:
    """The one way to read a file's traces: detect (or check the forced format) on ``head``, the file's
    first bytes, then stream ``stream`` through the parser, failing loudly on an empty or wrong file."""
    fmt = file_format(head, filename, fmt)
    yield from require_records(FORMATS[fmt].parse(stream, filename), filename, fmt, head)


def file_format(head: bytes, filename: str, fmt: str | None = None) -> str:
    """The format a file is read in: ``fmt`` checked against the file's first bytes, or detected."""
    if fmt:
        get_format(fmt)  # an unknown name: the error lists the known ones
        if fmt not in FORMATS:
            raise TraceFormatError(f"format {fmt!r} reads folders and Hub repos, not files", file=filename)
        check_forced_format(head, filename, fmt)
        return fmt
    return detect_head(head, filename)


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
    if fmt:
        get_format(fmt)  # an unknown name is reported before the file is opened
    head = read_head(path)
    with open(path, "rb") as fh:
        yield from parse_file(fh, str(path), head, fmt)


def guarded(
    records: Iterable[TraceRecord], filename: str, *, unique_ids: bool = True
) -> Iterator[TraceRecord]:
    """The records of one file, each checked before it may become rows: no larger than the record
    limit (its JSON is what the database stores; depth was checked as the bytes were parsed), and no
    trace id used twice in the file (the second would be a different trace under the same name, or the
    same one counted twice). A whole dataset (`unique_ids=False`) may repeat ids: a published dataset
    holds traces of several batches and formats, whose ids are unique only within their own file.

    The import service applies it; the parsers alone stay constant-memory (the ids seen are not).
    """
    first_seen: dict[str, str] = {}
    for record in read_safely(records, filename):
        check_size(record, filename)
        if unique_ids:
            check_unique_id(first_seen, record.external_id, record.line_no, record.record_no, filename)
        yield record


# What a parser raises when a value it did not expect slips past its checks: a bug to fix, logged, but for
# the user an error naming the file and the record like any other (never a traceback, never a crashed job).
_SLIPS = (TypeError, ValueError, AttributeError, KeyError, IndexError, UnicodeError, OverflowError)


def read_safely(
    records: Iterable[TraceRecord], filename: str, first_record: int = 1
) -> Iterator[TraceRecord]:
    """The parser's records, with any slip (see _SLIPS) turned into a TraceFormatError naming the file and
    the record being read."""
    number = first_record - 1
    iterator = iter(records)
    while True:
        try:
            record = next(iterator)
        except StopIteration:
            return
        except TraceFormatError:
            raise
        except _SLIPS as error:
            log.warning("parser slip in %s after record %s", filename, number, exc_info=True)
            reason = storable.shown(f"{type(error).__name__}: {error}")[:300]
            raise TraceFormatError(
                f"the record could not be read ({reason})", file=filename, record=number + 1
            ) from error
        number = record.record_no or number + 1
        yield record


def check_size(record: TraceRecord, filename: str) -> None:
    """The record fits in a row (see guarded); its JSON is kept on it (`raw_json`) to be stored as is."""
    line = record.line_no
    extra = 0 if record.raw is not None else sum(len(step.content) for step in record.steps)
    try:
        raw_json = limits.check_record(record.raw, extra_bytes=extra)
    except limits.LimitExceeded as exc:
        number = None if line is not None else (record.record_no or None)
        raise TraceFormatError(str(exc), file=filename, record=number, line=line) from None
    if record.raw is not None:
        record.raw_json = raw_json  # measured once, stored as is


def check_unique_id(
    first_seen: dict[str, str], external_id: str, line: int | None, record_no: int, filename: str
) -> None:
    """No trace id used twice in a file (see guarded); `first_seen` maps the ids seen to where."""
    here = f"line {line}" if line is not None else f"record {record_no}"
    first = first_seen.setdefault(external_id, here)
    if first != here:
        raise TraceFormatError(
            f"duplicate trace id {external_id!r}: {here} repeats the id of {first}; "
            "every trace in a file needs its own id",
            file=filename,
            record=None if line is not None else (record_no or None),
            line=line,
        )


def file_size(path: Path | str) -> int | None:
    """The bytes of a file, or None for a source (a folder, an ``hf://`` repo id): one system call, for
    imports of thousands of files."""
    if str(path).startswith(HF_PREFIX):
        return None
    status = os.stat(path)
    return None if stat.S_ISDIR(status.st_mode) else status.st_size


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
    "TOOL_AGENT",
    "AnnotationRecord",
    "LabelRecord",
    "StepRecord",
    "TraceFormatError",
    "TraceRecord",
    "check_forced_format",
    "check_size",
    "check_unique_id",
    "describe_head",
    "detect_format",
    "detect_head",
    "detect_source",
    "file_format",
    "get_format",
    "guarded",
    "is_source",
    "iter_records",
    "iter_source",
    "parse_file",
    "read_safely",
    "require_records",
]
