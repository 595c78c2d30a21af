"""An import's traces gathered into chunks: each prepared trace waits with its chunk unless the import already
has its content, and a full chunk is checked against the traces already stored (in the user's scope or the
target batch) and handed to `traces.chunks` to write. Used by `traces.services`, which owns the
transaction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet

from traces import chunks
from traces.importers.records import TraceFormatError
from traces.models import Batch, Trace
from traces.rows import Prepared

if TYPE_CHECKING:
    from traces.services import FileResult, ImportResult

# Records wait in memory until their chunk is written: these bound an import's memory, whatever the file's
# size. The first chunk is small, so PostgreSQL starts storing soon; each next one doubles up to the bounds,
# because every chunk costs a pause in the COPY (its duplicates looked up, its ids drawn) and a run of the
# statement trigger: chunks of 200 runs cost a 10,000-run import about 0.3 s more than chunks of 600 (issue 14).
FIRST_CHUNK_TRACES = 100
TRACES_PER_CHUNK = 500
STEPS_PER_CHUNK = 50_000
BYTES_PER_CHUNK = 4 << 20  # of COPY text


@dataclass
class ImportTarget:
    """The batch an import adds to: found in the user's scope, or created when the first trace is added."""

    name: str
    user: object
    fmt: str
    scope: QuerySet[Batch]
    batch: Batch | None = None
    # Traces that are duplicates wherever they sit (a project import: the project's own traces).
    held: QuerySet[Trace] | None = None

    def get(self) -> Batch:
        if self.batch is None:
            self.batch = Batch.objects.create(name=self.name, imported_by=self.user, format=self.fmt)
        return self.batch

    def duplicates_of(self, digests: list[str]) -> dict[str, tuple[int, int]]:
        """Content hash -> (trace id, batch id) of the first trace in scope (or in the target, or held) with it."""
        where = Q(batch__in=self.scope) | (Q(batch=self.batch) if self.batch else Q(pk__in=[]))
        if self.held is not None:
            # Probed per candidate row (the content hash finds a handful): never the whole held set.
            where |= Exists(self.held.filter(pk=OuterRef("pk")))
        found: dict[str, tuple[int, int]] = {}
        rows = Trace.objects.filter(where, content_hash__in=digests).order_by("pk")
        for digest, pk, batch_id in rows.values_list("content_hash", "pk", "batch_id"):
            found.setdefault(digest, (pk, batch_id))
        return found


@dataclass
class Seen:
    """What an import has read so far, across all its files: the content keys (a trace read twice is
    stored once and counted as a duplicate) and the trace ids by benchmark, with the file each came from
    (the same id of the same benchmark on different content in two files is refused, as it is within one
    file; two benchmarks may both number a task "5-0")."""

    digests: set[str] = field(default_factory=set)
    ids: dict[tuple[str, str], FileResult] = field(default_factory=dict)


def add(
    item: Prepared,
    file_result: FileResult,
    seen: Seen,
    pending: Pending,
    target: ImportTarget,
    result: ImportResult,
    *,
    unique_ids: bool = True,
) -> None:
    """A prepared trace waits for its chunk, unless the import already has its content. With `unique_ids`
    (files; a dataset source may repeat ids) its id must not name another trace of this import."""
    if item.digest in seen.digests:
        file_result.duplicates += 1
        return
    if unique_ids:
        first = seen.ids.setdefault((item.benchmark, item.external_id), file_result)
        if first is not file_result:
            line = item.line_no
            of = f" of benchmark {item.benchmark!r}" if item.benchmark else ""
            raise TraceFormatError(
                f"duplicate trace id {item.external_id!r}: the file {first.name} of this import holds a different "
                f"trace{of} with this id; every trace in an import needs its own id (identical traces are "
                "skipped as duplicates)",
                file=file_result.name,
                record=None if line is not None else (item.record_no or None),
                line=line,
            )
    seen.digests.add(item.digest)
    pending.items.append((item, file_result))
    pending.steps += item.step_count
    pending.bytes += len(item.trace_tail or b"") + len(item.step_body or b"")
    if (
        len(pending.items) >= pending.limit
        or pending.steps >= STEPS_PER_CHUNK
        or pending.bytes >= BYTES_PER_CHUNK
    ):
        flush(pending, target, result)


@dataclass
class Pending:
    """Traces prepared and not yet written, with their file's result, and the writer still sending the
    chunk before them."""

    writer: chunks.CopyWriter
    items: list[tuple[Prepared, FileResult]] = field(default_factory=list)
    steps: int = 0
    bytes: int = 0
    limit: int = field(default_factory=lambda: min(FIRST_CHUNK_TRACES, TRACES_PER_CHUNK))


def flush(pending: Pending, target: ImportTarget, result: ImportResult) -> None:
    chunk, pending.items, pending.steps, pending.bytes = pending.items, [], 0, 0
    pending.limit = min(pending.limit * 2, TRACES_PER_CHUNK)
    if not chunk:
        return
    pending.writer.wait()  # the connection is the writer's until its chunk is stored
    existing = target.duplicates_of([item.digest for item, _ in chunk])
    fresh = [(item, file_result) for item, file_result in chunk if item.digest not in existing]
    for item, file_result in chunk:
        if item.digest in existing:
            trace_id, batch_id = existing[item.digest]
            file_result.duplicates += 1
            result.duplicate_traces.append(trace_id)
            if target.batch is None or batch_id != target.batch.pk:
                result.duplicate_batches[batch_id] += 1
            if item.annotations and result.keep_annotations:
                result.annotations.append((trace_id, item.external_id, item.annotations, file_result.name))
    if not fresh:
        return
    batch = target.get()
    if connection.vendor == "postgresql":
        trace_ids = chunks.copy_chunk(pending.writer, batch, [item for item, _ in fresh])
    else:
        trace_ids = chunks.bulk_chunk(batch, [(item, file_result.format) for item, file_result in fresh])
    if trace_ids and result.first_trace_id is None:
        result.first_trace_id = min(trace_ids)
    for trace_id, (item, file_result) in zip(trace_ids, fresh, strict=True):
        if item.annotations and result.keep_annotations:
            result.annotations.append((trace_id, item.external_id, item.annotations, file_result.name))
        file_result.traces += 1
        file_result.steps += item.step_count
    result.traces += len(fresh)
