"""The import verb: stream records from files into one batch, all-or-nothing, de-duplicated, in bulk.

Parsing is done by `traces.importers` (no Django, in worker processes for a large import:
`traces.import_pool`); this module reads the files, reports each one and owns the transaction. The records
are gathered into chunks and de-duplicated by `traces.batching`, so memory is bounded by the chunk, not the
file, and `traces.chunks` writes each chunk (COPY on PostgreSQL, bulk_create elsewhere).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.db import connection, transaction
from django.db.models import F, QuerySet

from traces import batching, chunks, import_groups, import_pool, importers
from traces.importers import limits, storable
from traces.importers.records import AnnotationRecord, TraceFormatError, TraceRecord
from traces.models import Batch, Trace
from traces.rows import content_hash as content_hash
from traces.rows import prepare, step_values

# Below this many bytes of files an import runs in its own process: starting worker processes would cost
# more than they save.
PARALLEL_MIN_BYTES = 1 << 20

ProgressCallback = Callable[[int, int], None]  # (bytes read so far, records so far)


@dataclass
class FileResult:
    name: str
    format: str = ""
    traces: int = 0
    steps: int = 0
    duplicates: int = 0
    error: str = ""


@dataclass
class ImportResult:
    # None when nothing was added: an import that adds no trace creates no batch.
    batch: Batch | None
    files: list[FileResult] = field(default_factory=list)
    # (trace id, its external id, the labels that came inside the file, the file's name) for the annotator
    # layer to store.
    annotations: list[tuple[int, str, list[AnnotationRecord], str]] = field(default_factory=list)
    keep_annotations: bool = True
    # Existing batches (other than the target) holding traces this import found already imported: id -> count.
    duplicate_batches: Counter = field(default_factory=Counter)
    # The ids of the traces this import found already imported (in its scope or its target batch): a project
    # import adds exactly these and its new traces to the project.
    duplicate_traces: list[int] = field(default_factory=list)
    # Already imported traces a project import added to the project (they were not in it yet).
    added_to_project: int = 0
    # The batch was made by this import (it holds exactly this import's new traces), and the smallest id of
    # those new traces: the target batch is locked while the import runs and ids only grow, so this import's
    # traces in the batch are those from this id on.
    new_batch: bool = False
    first_trace_id: int | None = None
    # Traces stored so far, counted as they are written: progress reports read it, and summing the files on
    # every report made a folder of 2,000 runs cost 2,000 x 2,000 additions (a fifth of its import).
    traces: int = 0

    @property
    def steps(self) -> int:
        return sum(f.steps for f in self.files)

    @property
    def duplicates(self) -> int:
        return sum(f.duplicates for f in self.files)

    @property
    def errors(self) -> list[str]:
        return [
            f"{f.name}: {f.error}" if not f.error.startswith(f.name) else f.error
            for f in self.files
            if f.error
        ]

    def as_dict(self) -> dict:
        return {
            "batch": self.batch.name if self.batch else None,
            "traces": self.traces,
            "steps": self.steps,
            "duplicates": self.duplicates,
            "already_imported_added_to_project": self.added_to_project,
            "files": [vars(f) for f in self.files],
        }


class ImportFailed(Exception):
    """The import was rolled back; `result.files` says which file failed and why."""

    def __init__(self, result: ImportResult):
        self.result = result
        super().__init__("; ".join(result.errors))


# The content key and the step values live with the rows (traces.rows); kept here under their old names.
_step_values = step_values


class _CountingReader:
    """Wraps a binary file to report bytes read (progress) without buffering the file."""

    def __init__(self, raw: BinaryIO, on_read: Callable[[int], None]):
        self._raw, self._on_read, self.count = raw, on_read, 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        self._on_read(self.count)
        return data

    def readline(self, size: int = -1) -> bytes:
        data = self._raw.readline(size)
        self.count += len(data)
        self._on_read(self.count)
        return data

    def __iter__(self) -> Iterator[bytes]:
        while line := self.readline():
            yield line

    def __getattr__(self, name):
        return getattr(self._raw, name)


def do_import_files(
    files: Iterable[tuple[Path | str, str]],
    *,
    batch_name: str,
    fmt: str | None = None,
    user=None,
    progress: ProgressCallback | None = None,
    keep_annotations: bool = True,
    source_options: Mapping | None = None,
    scope: QuerySet[Batch] | None = None,
    named_in: QuerySet[Batch] | None = None,
    held: QuerySet[Trace] | None = None,
) -> ImportResult:
    """Import `files` ((path, display name) pairs) into the batch `batch_name`, all or nothing.

    `scope` is the batches the importing user may see (None: all, for the operator at the command line):
    `batch_name` extends a batch of that scope only (else a new batch is made, when a trace is added), and
    a trace is a duplicate only of a trace in that scope, so an import says nothing about other projects.
    `named_in` narrows where `batch_name` is looked up (a project import: its own batches and unattached ones).
    `held` are traces that count as already imported wherever they sit (a project import: the project's own,
    which may lie in a batch the user cannot see as a batch).

    A path may also be a whole source (a dataset folder, or an ``hf://owner/name`` string): it is read
    by its source format with `source_options` (columns, split, config) instead of being streamed.
    With keep_annotations the labels found inside the files are returned (for a project to store);
    without, they are not held in memory.

    Raises ImportFailed (database unchanged) when any file is malformed; the other files are still
    parsed so that every file's error is reported at once.
    """
    files = list(files)
    source_options = {k: v for k, v in (source_options or {}).items() if v} or None
    result = ImportResult(batch=None, keep_annotations=keep_annotations)
    total_before = 0
    scope = Batch.objects.all() if scope is None else scope
    try:
        # Under a memory ceiling of the import's own (IMPORT_MAX_MEMORY_MB; the pool's workers inherit it).
        with limits.memory_ceiling(), transaction.atomic():
            target = batching.ImportTarget(
                name=batch_name,
                user=user,
                fmt=fmt or "",
                scope=scope,
                held=held,
                batch=Batch.objects.select_for_update()
                .filter(pk__in=(scope if named_in is None else named_in).filter(name=batch_name).values("pk"))
                .order_by("-created_at", "-pk")
                .first(),
            )
            existed = target.batch
            seen = batching.Seen()
            # Shared by the files: a folder of one-trace files (SWE-agent, Who&When) goes in by the
            # chunk, not one round of queries and COPYs per file.
            pending = batching.Pending(writer=chunks.CopyWriter())
            failed = False  # a file had an error: the others are only checked, to report all errors at once
            # OpenTelemetry files are read as one: a trace's spans and log events may be in several of them.
            otel_group, files = import_groups.split(files, fmt, source_options)
            # One system call a file: a folder of thousands of runs was looked at a dozen times per file.
            sizes = [importers.file_size(path) for path, _ in files]
            try:
                parallel = _parallel(sizes, fmt, source_options)
                if parallel is not None:
                    failed = _import_parallel(
                        parallel, files, sizes, fmt, target, seen, pending, result, progress
                    )
                for (path, name), size in [] if parallel is not None else zip(files, sizes, strict=True):
                    file_result = FileResult(name=name)
                    result.files.append(file_result)
                    if failed:
                        _validate_only(path, name, fmt, file_result, source_options)
                        continue
                    try:
                        _import_one(
                            path,
                            name,
                            fmt,
                            target,
                            seen,
                            pending,
                            file_result,
                            result,
                            total_before,
                            progress,
                            source_options,
                        )
                    except (TraceFormatError, MemoryError) as error:
                        file_result.error = storable.shown(str(import_pool.file_error(error, name)))
                        failed = True
                    total_before += size or 0
                if otel_group:
                    failed = (
                        import_groups.import_group(
                            otel_group,
                            target,
                            seen,
                            pending,
                            result,
                            FileResult,
                            validate_only=failed,
                            on_read=(lambda n: progress(total_before + n, result.traces))
                            if progress
                            else None,
                        )
                        or failed
                    )
                if failed:
                    raise ImportFailed(result)
                batching.flush(pending, target, result)
            except BaseException:
                # The import is failing and rolls back: the chunk in flight must finish with the
                # connection first (its own error, if any, is moot).
                pending.writer.wait(quiet=True)
                raise
            pending.writer.wait()
            # The existing batch when there was one; a new one exists only if a trace was added.
            result.new_batch = existed is None and target.batch is not None
            batch = result.batch = target.batch
            if batch is None or not result.traces:
                return result
            formats = sorted({f.format for f in result.files if f.format})
            sources = [storable.shown(f.name) for f in result.files]  # a file name can be any bytes
            Batch.objects.filter(pk=batch.pk).update(
                trace_count=F("trace_count") + result.traces,
                step_count=F("step_count") + result.steps,
                format=",".join(sorted(set(filter(None, [*batch.format.split(","), *formats])))),
                source="; ".join(filter(None, [batch.source, *sources]))[:5000],
            )
            batch.refresh_from_db()
    except ImportFailed:
        result.batch = None
        raise
    except Exception as error:  # the COPY thread's error is psycopg's own, not Django's DatabaseError
        refused = storable.database_refusal(error)
        if refused is None:
            raise
        # Defence in depth: the rows are checked before they are written (traces.rows.prepare), so this
        # means a check is missing; still, the user learns it was their data, and which files.
        result.batch = None
        names = [f.name for f in result.files] or [name for _, name in files]
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        result.files.append(
            FileResult(name=storable.shown(shown), error=f"the database refused a value: {refused}")
        )
        raise ImportFailed(result) from error
    return result


def _validate_only(
    path: Path | str, name: str, fmt: str | None, file_result: FileResult, options: Mapping | None
) -> None:
    try:
        file_result.format = fmt or _detect(path, name)
        with _records(path, name, file_result.format, None, options) as records:
            for _ in records:
                pass
    except (TraceFormatError, MemoryError) as error:
        file_result.error = storable.shown(str(import_pool.file_error(error, name)))


def _detect(path: Path | str, name: str) -> str:
    if not importers.is_source(path):
        # Sniff and report under the display name: an uploaded file's server path is nobody's business.
        return importers.detect_head(importers.read_head(Path(path)), name)
    fmt = importers.detect_source(path)
    if fmt is None:
        raise TraceFormatError(
            "a folder of trace files is imported file by file, not as a dataset", file=name
        )
    return fmt


@contextmanager
def _records(
    path: Path | str,
    name: str,
    fmt: str,
    on_read: Callable[[int], None] | None,
    options: Mapping | None,
) -> Iterator[Iterator[TraceRecord]]:
    """The seam between files and sources: a file streams through its parser (bytes counted for
    progress); a source (dataset folder, hf:// repo), or a file read with column options, goes to its
    format's ``parse_source``. Either way every record passes the row-size and duplicate-id checks."""
    module = _parser(fmt, name)
    if importers.is_source(path) or (options and hasattr(module, "parse_source")):
        if not hasattr(module, "parse_source"):
            raise TraceFormatError(f"format {fmt!r} reads files, not folders or Hub repos", file=name)
        yield importers.guarded(module.parse_source(str(path), **(options or {})), name, unique_ids=False)
        return
    if options:
        raise TraceFormatError(f"format {fmt!r} takes no column mapping, split or config", file=name)
    head = importers.read_head(Path(path))
    with Path(path).open("rb") as raw:
        # parse_file fails loudly: an empty file, a format that does not fit, or no trace at all; guarded
        # bounds every record (size, ids repeated within the file).
        yield importers.guarded(
            importers.parse_file(_CountingReader(raw, on_read) if on_read else raw, name, head, fmt), name
        )


def _import_one(
    path: Path | str,
    name: str,
    fmt: str | None,
    target: batching.ImportTarget,
    seen: batching.Seen,
    pending: batching.Pending,
    file_result: FileResult,
    result: ImportResult,
    offset: int,
    progress: ProgressCallback | None,
    options: Mapping | None = None,
) -> None:
    file_result.format = fmt or _detect(path, name)
    records_done = 0

    def on_read(count: int) -> None:
        if progress is not None:
            progress(offset + count, result.traces + records_done)

    counts_bytes = not importers.is_source(path)
    unique_ids = counts_bytes and not options  # a dataset source may repeat ids (importers.guarded)
    with _records(path, name, file_result.format, on_read, options) as records:
        for record in records:
            records_done += 1
            if not counts_bytes and records_done % 100 == 0:
                on_read(0)  # a source has no byte count: report the records read
            item = prepare(
                record,
                file_result.format,
                name,
                copy_text=connection.vendor == "postgresql",
                keep_annotations=result.keep_annotations,
            )
            batching.add(item, file_result, seen, pending, target, result, unique_ids=unique_ids)


def _parallel(sizes: list[int | None], fmt: str | None, options: Mapping | None):
    """A pool of worker processes when this import (files of `sizes`, None for a source) is large enough to
    gain from one and may start it."""
    if connection.vendor != "postgresql" or options or (fmt and fmt not in importers.FORMATS):
        return None
    if None in sizes:  # a source is read whole by its format
        return None
    if sum(sizes) < PARALLEL_MIN_BYTES or not import_pool.can_fork():
        return None
    return import_pool.start()


def _import_parallel(
    pool,
    files: list[tuple[Path | str, str]],
    sizes: list[int],
    fmt: str | None,
    target: batching.ImportTarget,
    seen: batching.Seen,
    pending: batching.Pending,
    result: ImportResult,
    progress: ProgressCallback | None,
) -> bool:
    """The files read by worker processes (traces.import_pool), their traces stored here in file order;
    True when a file failed (then the others are only checked, as in one pass)."""
    file_results = [FileResult(name=name) for _, name in files]
    result.files.extend(file_results)
    offsets, total = [], 0
    for size in sizes:
        offsets.append(total)
        total += size
    first_seen: list[dict[str, str]] = [{} for _ in files]
    failed = False

    def on_read(i: int, count: int) -> None:
        if progress is not None:
            progress(offsets[i] + count, result.traces + len(pending.items))

    try:
        with pool:
            events = import_pool.events(
                pool,
                [
                    (p if isinstance(p, Path) else Path(p), n, size)
                    for (p, n), size in zip(files, sizes, strict=True)
                ],
                fmt,
                result.keep_annotations,
                on_read,
            )
            for kind, i, value in events:
                file_result = file_results[i]
                if file_result.error:
                    continue  # a failed file is read no further
                try:
                    if kind == "file":
                        file_result.format = value
                    elif kind == "trace":
                        importers.check_unique_id(
                            first_seen[i], value.external_id, value.line_no, value.record_no, file_result.name
                        )
                        if not failed:
                            batching.add(value, file_result, seen, pending, target, result)
                    elif kind == "unique?":
                        importers.check_unique_id(first_seen[i], *value, file_result.name)
                    elif kind == "error":
                        raise TraceFormatError(value)
                    elif kind == "end":
                        first_seen[i] = {}
                except TraceFormatError as error:
                    file_result.error = storable.shown(str(error))
                    failed = True
    finally:
        pool.terminate()
    return failed


def _parser(fmt: str, name: str):
    module = importers.FORMATS.get(fmt) or importers.SOURCE_FORMATS.get(fmt)
    if module is None:
        known = ", ".join(importers.ALL_FORMATS)
        raise TraceFormatError(f"unknown format {fmt!r}; known formats: {known}", file=name)
    return module
