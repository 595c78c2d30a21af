"""A chunk of prepared traces written to the database: as COPY text streamed by a thread on PostgreSQL,
with bulk_create elsewhere. Called by `traces.batching`, which de-duplicates the chunk first (the import verb,
`traces.services`, owns the transaction); the COPY text itself is made by `traces.rows`."""

from __future__ import annotations

import threading

from django.db import connection
from django.utils import timezone

from traces.answer_key import answer_key_of, public_metadata
from traces.importers.records import TraceRecord
from traces.models import Batch, Step, Trace
from traces.rows import Prepared, step_rows

STEP_COLUMNS = ("trace_id", *Step.DATA_FIELDS)


def copy_chunk(writer: CopyWriter, batch: Batch, items: list[Prepared]) -> list[int]:
    """Reserve ids for `items` and hand their rows to `writer` (PostgreSQL); returns the ids, in order."""
    trace_ids = _next_trace_ids(len(items))
    # Each row is its id, then the batch and creation time, then its tail: pieces joined once (the tails are
    # most of a chunk's bytes, and formatting each row first would copy them twice).
    shared = b"\t%d\t%s" % (batch.pk, timezone.now().isoformat().encode())
    rows: list[bytes] = []
    for trace_id, item in zip(trace_ids, items, strict=True):
        rows += (b"%d" % trace_id, shared, item.trace_tail)
    writer.submit(b"".join(rows), _step_pieces(trace_ids, [item.step_body for item in items]))
    return trace_ids


def bulk_chunk(batch: Batch, items: list[tuple[Prepared, str]]) -> list[int]:
    """Insert `items` ((prepared trace, its file's format) pairs) with bulk_create; returns their ids."""
    rows = [_trace_values(item.record, item.digest, item.step_count, fmt) for item, fmt in items]
    trace_ids = [t.pk for t in Trace.objects.bulk_create([Trace(batch=batch, **row) for row in rows])]
    Step.objects.bulk_create(
        [
            Step(trace_id=trace_id, **dict(zip(Step.DATA_FIELDS, values, strict=True)))
            for trace_id, (item, _) in zip(trace_ids, items, strict=True)
            for values in item.steps
        ],
        batch_size=2000,
    )
    return trace_ids


class CopyWriter:
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


def _step_pieces(trace_ids: list[int], bodies: list[bytes]) -> list[bytes]:
    """The chunk's step rows in pieces of about a megabyte (COPY takes them as they come)."""
    pieces, piece, size = [], [], 0
    for trace_id, body in zip(trace_ids, bodies, strict=True):
        piece += step_rows(trace_id, body)
        size += len(body)
        if size >= 1 << 20:
            pieces.append(b"".join(piece))
            piece, size = [], 0
    if piece:
        pieces.append(b"".join(piece))
    return pieces


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


# The COPY text of the rows is made by traces.rows.
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


def _next_trace_ids(count: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence('traces_trace', 'id')) FROM generate_series(1, %s)",
            [count],
        )
        return [row[0] for row in cursor.fetchall()]
