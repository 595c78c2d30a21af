"""The import verb: stream records from files into one batch, all-or-nothing, de-duplicated, in bulk.

Parsing is done by `traces.importers` (no Django); this module turns records into rows. Steps go in with
COPY on PostgreSQL (bulk_create elsewhere) in chunks, so memory is bounded by the chunk, not the file.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from django.db import connection, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from traces import importers
from traces.answer_key import answer_key_of, public_metadata
from traces.importers import limits
from traces.importers.records import STEP_KINDS, AnnotationRecord, TraceFormatError, TraceRecord
from traces.models import Batch, Step, Trace

# Records wait in memory until their chunk is written: these bound an import's memory, whatever the file's
# size (a chunk is four statements, so smaller chunks cost little).
TRACES_PER_CHUNK = 200
STEPS_PER_CHUNK = 20_000
STEP_COLUMNS = ("trace_id", *Step.DATA_FIELDS)

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
    # Names of the existing batches a project import attached because they hold its duplicates.
    attached: list[str] = field(default_factory=list)

    @property
    def traces(self) -> int:
        return sum(f.traces for f in self.files)

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
            "batches_attached": self.attached,
            "files": [vars(f) for f in self.files],
        }


class ImportFailed(Exception):
    """The import was rolled back; `result.files` says which file failed and why."""

    def __init__(self, result: ImportResult):
        self.result = result
        super().__init__("; ".join(result.errors))


def content_hash(record: TraceRecord) -> str:
    """Identity of a trace's content, whatever container it came in (the de-duplication key).

    The key is the trace as it is stored: its id, task, system, model, benchmark, outcome and score, and
    every step's stored columns (index, parent, agent, role, kind, content, tool name, arguments and call id,
    timestamp, tokens, duration), with the same length limits as the rows. Left out: the format name, the
    metadata (each container keeps extra fields its own way), the raw original record and the labels. So
    a trace exported (``export_traces``, ``export_dataset``) and imported again is the same trace.
    """
    return _content_hash(record, list(_step_values(record)))


def _content_hash(record: TraceRecord, steps: list[tuple]) -> str:
    """content_hash from the step values already computed for the rows (one pass over the steps)."""
    identity = {
        "id": record.external_id[:255],
        "task": record.task,
        "system": record.system[:120],
        "model": record.model[:120],
        "benchmark": record.benchmark[:120],
        "outcome": record.outcome,
        "score": record.score,
        # The stored columns, with the arguments as an object (sorted by the dump below): PostgreSQL's jsonb
        # keeps its own key order, so the order of keys in a file is not part of the identity.
        # Tuples are written as JSON arrays: the same text as lists, so the same digests as before.
        "steps": steps,
    }
    # json, not orjson: its exact text (separators, number forms) is what every stored digest was made
    # from, and de-duplication against traces imported earlier depends on it.
    canonical = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


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
) -> ImportResult:
    """Import `files` ((path, display name) pairs) into the batch `batch_name`, all or nothing.

    `scope` is the batches the importing user may see (None: all, for the operator at the command line):
    `batch_name` extends a batch of that scope only (else a new batch is made, when a trace is added), and
    a trace is a duplicate only of a trace in that scope, so an import says nothing about other projects.
    `named_in` narrows where `batch_name` is looked up (a project import: its own batches and unattached ones).

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
        with transaction.atomic():
            target = _Target(
                name=batch_name,
                user=user,
                fmt=fmt or "",
                scope=scope,
                batch=Batch.objects.select_for_update()
                .filter(pk__in=(scope if named_in is None else named_in).filter(name=batch_name).values("pk"))
                .order_by("-created_at", "-pk")
                .first(),
            )
            seen: set[str] = set()
            # Shared by the files: a folder of one-trace files (SWE-agent, Who&When) goes in by the
            # chunk, not one round of queries and COPYs per file.
            pending = _Pending(writer=_CopyWriter())
            failed = False  # a file had an error: the others are only checked, to report all errors at once
            try:
                for path, name in files:
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
                    except TraceFormatError as error:
                        file_result.error = str(error)
                        failed = True
                    total_before += _size(path)
                if failed:
                    raise ImportFailed(result)
                _flush(pending, target, result)
            except BaseException:
                # The import is failing and rolls back: the chunk in flight must finish with the
                # connection first (its own error, if any, is moot).
                pending.writer.wait(quiet=True)
                raise
            pending.writer.wait()
            # The existing batch when there was one; a new one exists only if a trace was added.
            batch = result.batch = target.batch
            if batch is None or not result.traces:
                return result
            formats = sorted({f.format for f in result.files if f.format})
            sources = [f.name for f in result.files]
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
    return result


@dataclass
class _Target:
    """The batch an import adds to: found in the user's scope, or created when the first trace is added."""

    name: str
    user: object
    fmt: str
    scope: QuerySet[Batch]
    batch: Batch | None = None

    def get(self) -> Batch:
        if self.batch is None:
            self.batch = Batch.objects.create(name=self.name, imported_by=self.user, format=self.fmt)
        return self.batch

    def duplicates_of(self, digests: list[str]) -> dict[str, tuple[int, int]]:
        """Content hash -> (trace id, batch id) of the first trace in scope (or in the target) with it."""
        where = Q(batch__in=self.scope) | (Q(batch=self.batch) if self.batch else Q(pk__in=[]))
        found: dict[str, tuple[int, int]] = {}
        rows = Trace.objects.filter(where, content_hash__in=digests).order_by("pk")
        for digest, pk, batch_id in rows.values_list("content_hash", "pk", "batch_id"):
            found.setdefault(digest, (pk, batch_id))
        return found


def _validate_only(
    path: Path | str, name: str, fmt: str | None, file_result: FileResult, options: Mapping | None
) -> None:
    try:
        file_result.format = fmt or _detect(path, name)
        with _records(path, name, file_result.format, None, options) as records:
            for _ in records:
                pass
    except TraceFormatError as error:
        file_result.error = str(error)


def _size(path: Path | str) -> int:
    return 0 if importers.is_source(path) else Path(path).stat().st_size


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
    target: _Target,
    seen: set[str],
    pending: _Pending,
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
    with _records(path, name, file_result.format, on_read, options) as records:
        for record in records:
            records_done += 1
            if not counts_bytes and records_done % 100 == 0:
                on_read(0)  # a source has no byte count: report the records read
            _check_record(record, name)
            steps = list(_step_values(record))
            digest = _content_hash(record, steps)
            if digest in seen:
                file_result.duplicates += 1
                continue
            seen.add(digest)
            if record.raw_json is not None and connection.vendor == "postgresql":
                record.raw = None  # stored from its JSON text: the parsed copy need not wait in memory
            pending.items.append((record, digest, steps, file_result))
            pending.steps += len(steps)
            if len(pending.items) >= TRACES_PER_CHUNK or pending.steps >= STEPS_PER_CHUNK:
                _flush(pending, target, result)


def _parser(fmt: str, name: str):
    module = importers.FORMATS.get(fmt) or importers.SOURCE_FORMATS.get(fmt)
    if module is None:
        known = ", ".join(importers.ALL_FORMATS)
        raise TraceFormatError(f"unknown format {fmt!r}; known formats: {known}", file=name)
    return module


def _check_record(record: TraceRecord, name: str) -> None:
    """Defence in depth: every parser validates, but rows must never hold an unknown kind or a bad parent."""
    for i, step in enumerate(record.steps):
        if step.kind not in STEP_KINDS:
            raise TraceFormatError(
                f"unknown step kind {step.kind!r}",
                file=name,
                record=record.record_no,
                field=f"steps[{i}].kind",
            )
        if step.parent is not None and not 0 <= step.parent < len(record.steps):
            raise TraceFormatError(
                f"parent {step.parent} is not a step of this trace",
                file=name,
                record=record.record_no,
                field=f"steps[{i}].parent",
            )


@dataclass
class _Pending:
    """Records parsed and not yet written: (record, digest, its step values, its file's result), and the
    writer still sending the chunk before them."""

    writer: _CopyWriter
    items: list[tuple[TraceRecord, str, list[tuple], FileResult]] = field(default_factory=list)
    steps: int = 0


class _CopyWriter:
    """Sends a chunk's COPY data in a thread while the main thread parses the next chunk, so PostgreSQL
    stores one chunk while Python reads the next (the two cores of a small server both work). The thread
    uses the import's own connection, hence its transaction: all or nothing holds. Only one chunk is in
    flight, and the main thread waits for it before its next statement (``wait``), which also raises any
    error the COPY met, so a failure still rolls the whole import back."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, traces: bytes, steps: list[bytes]) -> None:
        self.wait()
        raw = connection.connection  # the psycopg connection under Django's, in this transaction

        def send() -> None:
            try:
                with raw.cursor() as cursor:
                    with cursor.copy(_TRACE_COPY_SQL) as copy:
                        copy.write(traces)
                    if steps:
                        with cursor.copy(_STEP_COPY_SQL) as copy:
                            for piece in steps:
                                copy.write(piece)
            except BaseException as error:  # handed to the main thread by wait()
                self._error = error

        self._thread = threading.Thread(target=send, name="import-copy", daemon=True)
        self._thread.start()

    def wait(self, *, quiet: bool = False) -> None:
        """Block until the chunk in flight is stored; raise its error (unless `quiet`: the import is
        failing anyway and rolls back)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None and not quiet:
            raise error


def _flush(pending: _Pending, target: _Target, result: ImportResult) -> None:
    chunk, pending.items, pending.steps = pending.items, [], 0
    if not chunk:
        return
    pending.writer.wait()  # the connection is the writer's until its chunk is stored
    existing = target.duplicates_of([d for _, d, _, _ in chunk])
    fresh = [item for item in chunk if item[1] not in existing]
    for record, digest, _, file_result in chunk:
        if digest in existing:
            trace_id, batch_id = existing[digest]
            file_result.duplicates += 1
            if target.batch is None or batch_id != target.batch.pk:
                result.duplicate_batches[batch_id] += 1
            if record.annotations and result.keep_annotations:
                result.annotations.append(
                    (trace_id, record.external_id, record.annotations, file_result.name)
                )
    if not fresh:
        return
    batch = target.get()
    rows = [_trace_values(record, digest, len(steps), file.format) for record, digest, steps, file in fresh]
    if connection.vendor == "postgresql":
        trace_ids = _next_trace_ids(len(rows))
        pending.writer.submit(
            _trace_copy_data(batch.pk, trace_ids, rows, [record.raw_json for record, _, _, _ in fresh]),
            list(_step_copy_data(trace_ids, [steps for _, _, steps, _ in fresh])),
        )
    else:
        trace_ids = [t.pk for t in Trace.objects.bulk_create([Trace(batch=batch, **row) for row in rows])]
        Step.objects.bulk_create(
            [
                Step(trace_id=trace_id, **dict(zip(Step.DATA_FIELDS, values, strict=True)))
                for trace_id, (_, _, steps, _) in zip(trace_ids, fresh, strict=True)
                for values in steps
            ],
            batch_size=2000,
        )
    for trace_id, (record, _, steps, file_result) in zip(trace_ids, fresh, strict=True):
        if record.annotations and result.keep_annotations:
            result.annotations.append((trace_id, record.external_id, record.annotations, file_result.name))
        file_result.traces += 1
        file_result.steps += len(steps)


def _trace_values(record: TraceRecord, digest: str, step_count: int, fmt: str) -> dict:
    """A trace row's stored values but its id, batch and creation time (length limits applied)."""
    return {
        "external_id": record.external_id[:255],
        "content_hash": digest,
        "task": record.task,
        "system": record.system[:120],
        "model": record.model[:120],
        "benchmark": record.benchmark[:120],
        "outcome": record.outcome,
        "score": record.score,
        "metadata": public_metadata(record.metadata),
        "answer_key": answer_key_of(record.metadata),
        "raw": record.raw,
        "source_format": fmt,
        "step_count": step_count,
    }


# PostgreSQL's COPY text format: a row per line, tab between columns, \N for NULL, and these four
# characters escaped in values. Rows are written as ready text rather than through write_row's per-value
# conversion.


def _esc(text: str) -> str:
    """`text` escaped for COPY. A search per character (C speed) finds most values need nothing;
    str.translate with a replacement table would look every character up in a dict, 30x slower."""
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if "\t" in text:
        text = text.replace("\t", "\\t")
    if "\r" in text:
        text = text.replace("\r", "\\r")
    return text


_NULL = "\\N"
_TRACE_COPY_COLUMNS = (
    "id",
    "batch_id",
    "created_at",
    "external_id",
    "content_hash",
    "task",
    "system",
    "model",
    "benchmark",
    "outcome",
    "score",
    "metadata",
    "answer_key",
    "raw",
    "source_format",
    "step_count",
)


_TRACE_COPY_SQL = f"COPY traces_trace ({', '.join(_TRACE_COPY_COLUMNS)}) FROM STDIN"
_STEP_COPY_SQL = "COPY traces_step ({}) FROM STDIN".format(", ".join(f'"{c}"' for c in STEP_COLUMNS))


def _json_text(value) -> str:
    return _esc(limits.dump_json(value).decode("utf-8", "surrogatepass"))


def _next_trace_ids(count: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('traces_trace', 'id')) FROM generate_series(1, %s)",
            [count],
        )
        return [row[0] for row in cursor.fetchall()]


def _trace_copy_data(batch_id: int, ids: list[int], rows: list[dict], raw_json: list[bytes | None]) -> bytes:
    """The COPY text of the trace rows. The raw record goes in as the JSON text the size check made of it
    (importers.guarded), not serialised a second time."""
    now = timezone.now().isoformat()
    lines = []
    for trace_id, row, raw in zip(ids, rows, raw_json, strict=True):
        if raw is not None:
            raw_text = _esc(raw.decode("utf-8", "surrogatepass"))
        elif row["raw"] is None:
            raw_text = _NULL
        else:
            raw_text = _json_text(row["raw"])
        score = row["score"]
        fields = (
            str(trace_id),
            str(batch_id),
            now,
            _esc(row["external_id"]),
            row["content_hash"],
            _esc(row["task"]),
            _esc(row["system"]),
            _esc(row["model"]),
            _esc(row["benchmark"]),
            row["outcome"],
            _NULL if score is None else repr(float(score)),
            _json_text(row["metadata"]),
            _json_text(row["answer_key"]),
            raw_text,
            row["source_format"],
            str(row["step_count"]),
        )
        lines.append("\t".join(fields))
    return _copy_bytes(lines)


def _copy_bytes(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


def _step_copy_data(trace_ids: list[int], steps_of: list[list[tuple]]) -> Iterator[bytes]:
    """The COPY text of the step rows of these traces, in pieces of a few thousand rows."""
    null = _NULL
    lines: list[str] = []
    for trace_id, steps in zip(trace_ids, steps_of, strict=True):
        tid = str(trace_id)
        for (
            index,
            parent,
            depth,
            agent,
            role,
            kind,
            content,
            tool_name,
            args,
            call_id,
            ts,
            tokens,
            ms,
        ) in steps:
            lines.append(
                "\t".join(
                    (
                        tid,
                        str(index),
                        null if parent is None else str(parent),
                        str(depth),
                        _esc(agent),
                        _esc(role),
                        kind,
                        _esc(content),
                        _esc(tool_name),
                        null if args is None else _json_text(args),
                        _esc(call_id),
                        _esc(ts),
                        null if tokens is None else str(tokens),
                        null if ms is None else str(ms),
                    )
                )
            )
        if len(lines) >= 5_000:
            yield _copy_bytes(lines)
            lines = []
    if lines:
        yield _copy_bytes(lines)


def _step_values(record: TraceRecord) -> Iterator[tuple]:
    """Each step's stored values in Step.DATA_FIELDS order (length limits applied, arguments as objects):
    the one place that says what a stored step is, for the rows and for the content key."""
    depths: list[int] = []
    for index, step in enumerate(record.steps):
        parent = step.parent
        depth = (
            depths[parent] + 1 if parent is not None and parent < index else (1 if parent is not None else 0)
        )
        depths.append(depth)
        yield (
            index,
            parent,
            min(depth, 32767),
            step.agent[:200],
            step.role[:40],
            step.kind,
            step.content,
            step.tool_name[:200],
            step.tool_args,
            step.tool_call_id[:200],
            (step.timestamp or "")[:64],
            step.tokens,
            step.duration_ms,
        )
