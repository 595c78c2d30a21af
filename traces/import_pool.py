"""A large import's files parsed on every core: worker processes parse, validate, key and render traces as
COPY text, and hand them back in file order; the importing process only de-duplicates and writes.

Pure (no Django): the workers are forked from the importing process and never touch its database
connection. A JSONL file whose every line is a trace (``splits_by_line``) is cut into pieces of whole lines
by the importing process, which counts lines and traces so each piece is parsed with its true numbers (an
error names the same line, a trace without an id gets the same name, as in one pass). Other files go to a
worker whole, a few at a time (a folder of SWE-agent runs). At most `IN_FLIGHT` pieces are read ahead and
not yet consumed, so memory stays flat whatever the files' size.

`events` yields, in file order: ("file", i, format) when file i starts (format "" if it is not known),
("trace", i, Prepared), ("error", i, message) when file i fails (nothing more comes from it), and
("end", i, None) when it is done.
"""

from __future__ import annotations

import io
import multiprocessing
import multiprocessing.pool
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

from traces import importers
from traces.importers import limits
from traces.importers.records import TraceFormatError
from traces.rows import Prepared, prepare

PIECE_BYTES = 1 << 20  # lines per piece of a JSONL file, by size
PIECE_TRACES = 200
FILES_BYTES = 1 << 20  # whole files per task
WHOLE_FILE_MAX = 8 << 20  # a larger file that cannot be cut by lines is read in the importing process
IN_FLIGHT = 4


def can_fork() -> bool:
    """Workers are forked: only from a process with no other thread (a thread holding a lock at the fork
    would leave it held in the child) and where forking is possible."""
    return (
        (os.cpu_count() or 1) > 1
        and "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        and not multiprocessing.current_process().daemon
    )


class _Pool(multiprocessing.pool.Pool):
    """A process pool whose worker-handling thread sleeps until a worker exits or the pool changes state.

    multiprocessing's own also wakes when the results pipe is readable, and does not read it (the result
    thread does): while results wait to be read it wakes again at once, and in an import it spun for 0.27 s
    of CPU, taking the lock of the interpreter from the thread that stores the traces. ThreadPool already
    waits on exactly these sentinels; the pool still wakes when its task cache empties, closes or ends."""

    def _get_sentinels(self):
        return [self._change_notifier._reader]


def start(workers: int | None = None):
    pool = _Pool(workers or min(os.cpu_count() or 1, 2), context=multiprocessing.get_context("fork"))
    pool.first_workers = _worker_pids(pool)
    return pool


def _worker_pids(pool) -> frozenset[int]:
    return frozenset(process.pid for process in pool._pool)


def events(
    pool,
    files: list[tuple[Path, str, int]],
    fmt: str | None,
    keep_annotations: bool,
    on_read: Callable[[int, int], None],
) -> Iterator[tuple[str, int, object]]:
    """The traces of `files` ((path, display name, size) triples), in order, as events (see the module's
    doc). `on_read(file index, bytes)` reports bytes read of the file being cut into pieces, and of each whole
    file once it is handed out."""
    queue: deque = deque()
    for item in _tasks(pool, files, fmt, keep_annotations, on_read):
        queue.append(item)
        if len(queue) >= IN_FLIGHT:
            yield from _results(queue.popleft(), pool)
    while queue:
        yield from _results(queue.popleft(), pool)


WORKER_LOST = (
    "a worker process reading this file stopped without an answer (killed, or out of memory under "
    "IMPORT_MAX_MEMORY_MB); nothing was imported"
)


def _results(item, pool) -> Iterator[tuple[str, int, object]]:
    kind, value = item
    if kind == "ready":
        yield from value
        return
    result, i = value
    # A worker that dies (killed, or crashed by an allocation its code could not survive) is replaced by the
    # pool, and its task is never answered: waiting on it would hang the import for ever.
    while not result.ready():
        result.wait(1.0)
        if not result.ready() and _worker_pids(pool) != getattr(pool, "first_workers", _worker_pids(pool)):
            yield "error", i, WORKER_LOST
            return
    yield from result.get()


def _tasks(pool, files, fmt, keep, on_read):
    """("ready", events) and ("async", result of events) items in file order."""
    batch: list[tuple[int, Path, str]] = []
    batch_bytes = 0

    def send_batch():
        nonlocal batch, batch_bytes
        job, batch, batch_bytes = batch, [], 0
        return "async", (pool.apply_async(run_files, (job, fmt, keep)), job[0][0])

    for i, (path, name, size) in enumerate(files):
        if size > PIECE_BYTES:
            # Worth a look here: a JSONL file of traces is cut into pieces, a large file of another kind
            # is streamed here (handed whole to a worker, all its traces would wait in memory at once).
            head = importers.read_head(path)
            try:
                fmt_of = importers.file_format(head, name, fmt)
            except TraceFormatError as error:
                if batch:
                    yield send_batch()
                yield "ready", [("file", i, fmt or ""), ("error", i, str(error))]
                continue
            splits = getattr(importers.FORMATS[fmt_of], "splits_by_line", None)
            if splits is not None and splits(head):
                if batch:
                    yield send_batch()
                yield "ready", [("file", i, fmt_of)]
                yield from _pieces(pool, i, path, name, head, fmt_of, keep, on_read)
                continue
            if size > WHOLE_FILE_MAX:
                if batch:
                    yield send_batch()
                yield "ready", _streamed(i, path, name, head, fmt_of, keep, on_read)
                continue
        batch.append((i, path, name))
        batch_bytes += size
        on_read(i, size)
        if batch_bytes >= FILES_BYTES or len(batch) >= 64:
            yield send_batch()
    if batch:
        yield send_batch()


def _streamed(i, path, name, head, fmt, keep, on_read) -> Iterator[tuple[str, int, object]]:
    """A large file that cannot be cut by lines, read here as in one pass (only when its turn comes)."""
    yield "file", i, fmt
    count = 0
    try:
        with path.open("rb") as raw:
            for record in importers.guarded(importers.parse_file(raw, name, head, fmt), name):
                count += 1
                yield "trace", i, prepare(record, fmt, name, copy_text=True, keep_annotations=keep)
    except (TraceFormatError, MemoryError) as error:
        yield "error", i, str(file_error(error, name))
        return
    on_read(i, path.stat().st_size)
    yield "end", i, count


def _pieces(pool, i, path, name, head, fmt, keep, on_read):
    """A JSONL file cut into pieces of whole lines, each parsed by a worker with its true numbers."""
    cap = limits.current().max_record_bytes
    line_no = record_no = 0
    lines: list[bytes] = []
    size = read = 0
    first_line = first_record = 1
    with path.open("rb") as raw:
        while line := raw.readline(cap + 1):
            line_no += 1
            read += len(line)
            if len(line) > cap and not line.endswith(b"\n"):
                if lines:
                    yield _piece(pool, i, fmt, name, lines, first_line, first_record, keep)
                error = TraceFormatError(
                    str(limits.record_too_large(0, limits.current())), file=name, line=line_no
                )
                yield "ready", [("error", i, str(error))]
                return
            if not lines:
                first_line, first_record = line_no, record_no + 1
            lines.append(line)
            size += len(line)
            if line.strip():
                record_no += 1
            if size >= PIECE_BYTES or record_no - first_record + 1 >= PIECE_TRACES:
                on_read(i, read)
                yield _piece(pool, i, fmt, name, lines, first_line, first_record, keep)
                lines, size = [], 0
    on_read(i, read)
    if lines:
        yield _piece(pool, i, fmt, name, lines, first_line, first_record, keep)
    if record_no == 0:
        try:
            list(importers.require_records([], name, fmt, head))
        except TraceFormatError as error:
            yield "ready", [("error", i, str(error))]
            return
    yield "ready", [("end", i, record_no)]


def file_error(error: TraceFormatError | MemoryError, name: str) -> TraceFormatError:
    """A file's error as the import reports it: a MemoryError (the import's memory ceiling, or the host's
    memory, reached while decoding) names the file and the ceiling instead of ending the import unexplained."""
    if isinstance(error, TraceFormatError):
        return error
    return TraceFormatError(limits.out_of_memory(), file=name)


def _piece(pool, i, fmt, name, lines, first_line, first_record, keep):
    return "async", (
        pool.apply_async(run_lines, (i, fmt, name, b"".join(lines), first_line, first_record, keep)),
        i,
    )


def run_lines(i, fmt, name, payload, first_line, first_record, keep) -> list[tuple[str, int, object]]:
    """In a worker: the events of a piece of a JSONL file. Ids repeated across pieces are the importing
    process's to find: a trace that failed after its size check comes with ("unique?", i, its place)."""
    out: list[tuple[str, int, object]] = []
    record = None
    sized = False
    try:
        # One scan of the piece for the depth and value limits, rather than one a line.
        parsed = importers.read_safely(
            importers.FORMATS[fmt].parse(
                io.BytesIO(payload),
                name,
                first_line=first_line,
                first_record=first_record,
                checked=limits.within(payload),
            ),
            name,
            first_record,
        )
        for record in parsed:
            sized = False
            importers.check_size(record, name)
            sized = True
            out.append(("trace", i, prepare(record, fmt, name, copy_text=True, keep_annotations=keep)))
    except (TraceFormatError, MemoryError) as error:
        if sized and record is not None:
            out.append(("unique?", i, (record.external_id, record.line_no, record.record_no)))
        out.append(("error", i, str(file_error(error, name))))
    return out


def run_files(job: list[tuple[int, Path, str]], fmt: str | None, keep: bool) -> list[tuple[str, int, object]]:
    """In a worker: the events of whole files, each read as in one pass (importers.guarded)."""
    out: list[tuple[str, int, object]] = []
    for i, path, name in job:
        head = importers.read_head(path)
        try:
            fmt_of = importers.file_format(head, name, fmt)
        except TraceFormatError as error:
            out += [("file", i, fmt or ""), ("error", i, str(error))]
            continue
        out.append(("file", i, fmt_of))
        traces: list[tuple[str, int, Prepared]] = []
        try:
            # A head shorter than HEAD_SIZE is the whole file (a run of a folder, mostly): read once.
            with io.BytesIO(head) if len(head) < importers.HEAD_SIZE else path.open("rb") as raw:
                for record in importers.guarded(importers.parse_file(raw, name, head, fmt_of), name):
                    traces.append(
                        ("trace", i, prepare(record, fmt_of, name, copy_text=True, keep_annotations=keep))
                    )
        except TraceFormatError as error:
            out += [*traces, ("error", i, str(error))]
            continue
        except MemoryError as error:
            traces.clear()  # the file fails: what it decoded so far goes before the error is reported
            out.append(("error", i, str(file_error(error, name))))
            continue
        out += [*traces, ("end", i, len(traces))]
    return out
