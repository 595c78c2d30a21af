"""Files of one import that are read as one: OpenTelemetry files (``traces.importers.otel``), where a trace's
spans may be spread over several files (an exporter's batches, a collector's rotated files) and its GenAI
log events may be in a file of their own. Every other format is read file by file (traces.services).

The group's traces are stored like any file's; each is counted under the file where its trace id first
appeared, and an error is reported under the file it names.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from django.db import connection

from traces import batching, import_pool, importers
from traces.importers import otel, storable
from traces.importers.records import TraceFormatError
from traces.rows import prepare

# Enough of a file's start to see whether it is OpenTelemetry before its head is read and sniffed whole.
_PROBE = 4096
_MARKS = (b"resourceSpans", b"resourceLogs", b'"trace_id"')


def split(
    files: list[tuple[Path | str, str]], fmt: str | None, options: object
) -> tuple[list[tuple[Path | str, str]], list[tuple[Path | str, str]]]:
    """(the OpenTelemetry files to read as one, the other files): a group only when two or more files of the
    import are OpenTelemetry (one file is read as any other)."""
    if (fmt and fmt != otel.FORMAT) or options or len(files) < 2:
        return [], files
    group, rest = [], []
    for path, name in files:
        (group if _is_otel(path, name, fmt) else rest).append((path, name))
    if len(group) < 2:
        return [], files
    return group, rest


def _is_otel(path: Path | str, name: str, fmt: str | None) -> bool:
    if importers.is_source(path):
        return False
    try:
        with open(path, "rb") as fh:
            probe = fh.read(_PROBE)
        if not any(mark in probe for mark in _MARKS):
            return False
        return importers.file_format(importers.read_head(Path(path)), name, fmt) == otel.FORMAT
    except (OSError, TraceFormatError):
        return False  # read on its own, where the error is reported


def import_group(
    group: list[tuple[Path | str, str]],
    target: batching.ImportTarget,
    seen: batching.Seen,
    pending: batching.Pending,
    result,
    file_result_type: Callable,
    *,
    validate_only: bool,
    on_read: Callable[[int], None] | None = None,
) -> bool:
    """Read the group's files as one and add their traces (or, with `validate_only`, only check them);
    True when a file failed (its FileResult says why)."""
    file_results = {name: file_result_type(name=name, format=otel.FORMAT) for _, name in group}
    result.files.extend(file_results.values())
    first = next(iter(file_results.values()))
    count = 0
    try:
        with ExitStack() as stack:
            total = [0]
            streams = [
                (
                    _Counted(stack.enter_context(Path(p).open("rb")), total, on_read)
                    if on_read
                    else stack.enter_context(Path(p).open("rb")),
                    name,
                )
                for p, name in group
            ]
            label = ", ".join(name for _, name in group[:3]) + (" and more" if len(group) > 3 else "")
            for record in importers.read_safely(otel.parse_files(streams), label):
                count += 1
                name = (record.metadata.get("files") or [first.name])[0]
                importers.check_size(record, name)
                if validate_only:
                    continue
                item = prepare(
                    record,
                    otel.FORMAT,
                    name,
                    copy_text=connection.vendor == "postgresql",
                    keep_annotations=result.keep_annotations,
                )
                batching.add(item, file_results.get(name, first), seen, pending, target, result)
        if count == 0:
            raise TraceFormatError(
                f"no traces found: expected {otel.FORMAT} ({otel.LABEL}), found files of that format with no "
                "spans in them",
                file=first.name,
            )
    except TraceFormatError as error:
        (file_results.get(error.file) or first).error = storable.shown(str(error))
        return True
    except MemoryError as error:
        first.error = storable.shown(str(import_pool.file_error(error, first.name)))
        return True
    return False


class _Counted:
    """A file of the group whose bytes read add to the group's one progress count."""

    def __init__(self, raw, total: list[int], on_read: Callable[[int], None]) -> None:
        self._raw, self._total, self._on_read = raw, total, on_read

    def read(self, size: int = -1) -> bytes:
        return self._count(self._raw.read(size))

    def readline(self, size: int = -1) -> bytes:
        return self._count(self._raw.readline(size))

    def _count(self, data: bytes) -> bytes:
        self._total[0] += len(data)
        self._on_read(self._total[0])
        return data
