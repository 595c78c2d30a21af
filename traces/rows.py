"""A parsed trace turned into what the database stores: its step values, its content key and its rows as
ready COPY text. Pure (no Django), so it runs in the import's worker processes (traces.import_pool) as well
as in the importing process; `traces.chunks` writes what it returns.

PostgreSQL's COPY text format: a row per line, tab between columns, \\N for NULL, and backslash, newline,
tab and carriage return escaped in values. A trace's rows are made without its id (the importing process
reserves ids, and only for the traces it keeps once duplicates are known): each step line starts with the
tab that follows the trace id, and the trace line with the tab that follows (id, batch, creation time).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from traces.answer_key import answer_key_of, public_metadata
from traces.importers import limits, storable
from traces.importers.records import STEP_KINDS, AnnotationRecord, TraceFormatError, TraceRecord


@dataclass(slots=True)
class Prepared:
    """One trace ready to store: what de-duplication and the rows need, and nothing of the parse."""

    digest: str
    external_id: str
    step_count: int
    # Ids are unique per benchmark: two benchmarks in one import may both number their tasks "5-0".
    benchmark: str
    line_no: int | None
    record_no: int
    annotations: list[AnnotationRecord] | None = None
    # COPY text (UTF-8) of the trace row after its id, batch and creation time, and of its step rows
    # without the trace id; None when the rows are made from `record` (bulk_create, not PostgreSQL).
    trace_tail: bytes | None = None
    step_body: bytes | None = None
    record: TraceRecord | None = None
    steps: list[tuple] | None = None


def prepare(record: TraceRecord, fmt: str, name: str, *, copy_text: bool, keep_annotations: bool) -> Prepared:
    """`record` (parsed and guarded) of the file `name` checked, keyed and, with `copy_text`, rendered
    as COPY text. The one gate every import path passes: a record holding a string the database cannot
    store (a NUL, a lone surrogate: traces.importers.storable) is refused here, naming file, record and
    field, whatever its format."""
    check_rows(record, name)
    keep = keep_annotations and bool(record.annotations)
    try:
        prepared = _prepare(record, fmt, copy_text, keep)
    except UnicodeEncodeError:  # a lone surrogate somewhere: name where
        storable.check(record, name, labels=keep)
        raise
    except (TypeError, AttributeError):  # a parser let a value of the wrong type through: name it
        check_types(record, name)
        raise
    # The COPY text is looked at (C speed); without it (bulk_create) every string is walked. The labels
    # are not in that text (the annotator layer stores them): theirs are walked, they are few.
    walk = not copy_text or any(
        storable.text_may_be_unstorable(text) for text in (prepared.trace_tail, prepared.step_body)
    )
    if walk or keep:
        storable.check(record, name, trace=walk, labels=keep)
    return prepared


def _prepare(record: TraceRecord, fmt: str, copy_text: bool, keep_annotations: bool) -> Prepared:
    steps = step_values(record)
    prepared = Prepared(
        digest=content_hash_of(record, steps),
        external_id=record.external_id,
        step_count=len(steps),
        benchmark=record.benchmark[:120],
        line_no=record.line_no,
        record_no=record.record_no,
        annotations=record.annotations if keep_annotations else None,
    )
    if copy_text:
        prepared.trace_tail = trace_tail(record, prepared.digest, len(steps), fmt)
        prepared.step_body = step_body(steps)
    else:
        prepared.record, prepared.steps = record, steps
    return prepared


# PositiveIntegerField: PostgreSQL's integer, and a CHECK that it is not negative.
_MAX_COUNT = 2**31 - 1


def check_rows(record: TraceRecord, name: str) -> None:
    """Defence in depth: every parser validates, but rows must never hold an unknown kind, a bad parent, or
    a count the column cannot hold."""
    count = len(record.steps)
    for i, step in enumerate(record.steps):
        tokens, duration = step.tokens, step.duration_ms
        if (tokens is not None and (type(tokens) is not int or not 0 <= tokens <= _MAX_COUNT)) or (
            duration is not None and (type(duration) is not int or not 0 <= duration <= _MAX_COUNT)
        ):
            _bad_count(record, name, i)
        if step.kind not in STEP_KINDS:
            raise TraceFormatError(
                f"unknown step kind {step.kind!r}",
                file=name,
                record=record.record_no,
                field=f"steps[{i}].kind",
            )
        parent = step.parent
        if parent is not None and not 0 <= parent < count:
            raise TraceFormatError(
                f"parent {parent} is not a step of this trace",
                file=name,
                record=record.record_no,
                field=f"steps[{i}].parent",
            )


_TRACE_TEXT = ("external_id", "task", "system", "model", "benchmark", "outcome")
_STEP_TEXT = ("agent", "role", "content", "tool_name", "tool_call_id")


def _bad_count(record: TraceRecord, name: str, i: int) -> None:
    """Raise the error for the step count check_rows found out of range (the loop there stays lean)."""
    step = record.steps[i]
    for field in ("tokens", "duration_ms"):
        value = getattr(step, field)
        if value is not None and (type(value) is not int or not 0 <= value <= _MAX_COUNT):
            raise TraceFormatError(
                f"expected a whole number from 0 to {_MAX_COUNT}, got {value!r}",
                file=name,
                record=record.record_no,
                field=f"steps[{i}].{field}",
            )


def check_types(record: TraceRecord, name: str) -> None:
    """Name the field of `record` that is not of its type (a parser's slip; see prepare)."""
    fields = [(f, getattr(record, f)) for f in _TRACE_TEXT]
    for i, step in enumerate(record.steps):
        fields += [(f"steps[{i}].{f}", getattr(step, f)) for f in _STEP_TEXT]
        if step.timestamp is not None:
            fields.append((f"steps[{i}].timestamp", step.timestamp))
    for field, value in fields:
        if not isinstance(value, str):
            raise TraceFormatError(
                f"expected text, got {type(value).__name__}", file=name, record=record.record_no, field=field
            )
    if record.score is not None and not isinstance(record.score, int | float):
        raise TraceFormatError(
            f"expected a number, got {type(record.score).__name__}",
            file=name,
            record=record.record_no,
            field="score",
        )


def step_values(record: TraceRecord) -> list[tuple]:
    """Each step's stored values in Step.DATA_FIELDS order (length limits applied, arguments as objects):
    the one place that says what a stored step is, for the rows and for the content key."""
    depths: list[int] = []
    out: list[tuple] = []
    for index, step in enumerate(record.steps):
        parent = step.parent
        if parent is None:
            depth = 0
        elif parent < index:
            depth = depths[parent] + 1
        else:
            depth = 1
        depths.append(depth)
        timestamp = step.timestamp
        out.append(
            (
                index,
                parent,
                depth if depth < 32767 else 32767,
                step.agent[:200],
                step.role[:40],
                step.kind,
                step.content,
                step.tool_name[:200],
                step.tool_args,
                step.tool_call_id[:200],
                timestamp[:64] if timestamp else "",
                step.tokens,
                step.duration_ms,
            )
        )
    return out


def content_hash(record: TraceRecord) -> str:
    """Identity of a trace's content, whatever container it came in (the de-duplication key).

    The key is the trace as it is stored: its id, task, system, model, benchmark, outcome and score, and
    every step's stored columns (index, parent, agent, role, kind, content, tool name, arguments and call id,
    timestamp, tokens, duration), with the same length limits as the rows. Left out: the format name, the
    metadata (each container keeps extra fields its own way), the raw original record and the labels. So
    a trace exported (``export_traces``, ``export_dataset``) and imported again is the same trace.
    """
    return content_hash_of(record, step_values(record))


def content_hash_of(record: TraceRecord, steps: list[tuple]) -> str:
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


def esc(text: str) -> str:
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


NULL = "\\N"


def json_text(value) -> str:
    return esc(limits.dump_json(value).decode("utf-8", "surrogatepass"))


def trace_tail(record: TraceRecord, digest: str, step_count: int, fmt: str) -> bytes:
    """The COPY text of a trace row from external_id on (id, batch and creation time go before it). The raw
    record goes in as the JSON text the size check made of it (importers.guarded), not serialised again."""
    raw = record.raw_json
    if raw is not None:
        raw_text = esc(raw.decode("utf-8", "surrogatepass"))
    elif record.raw is None:
        raw_text = NULL
    else:
        raw_text = json_text(record.raw)
    score = record.score
    fields = (
        "",
        esc(record.external_id[:255]),
        digest,
        esc(record.task),
        esc(record.system[:120]),
        esc(record.model[:120]),
        esc(record.benchmark[:120]),
        record.outcome,
        NULL if score is None else repr(float(score)),
        json_text(public_metadata(record.metadata)),
        json_text(answer_key_of(record.metadata)),
        raw_text,
        fmt,
        str(step_count),
    )
    return ("\t".join(fields) + "\n").encode("utf-8")


# Stand-ins for a column break, a row break and a NULL while a trace's step rows are one string: the values
# are then escaped with one pass over the whole text instead of one call per value. A value holding one of
# these characters would be taken for a break; counting them afterwards tells (then each value is escaped
# on its own).
_COL, _ROW, _NUL = "\x1f", "\x1e", "\x1d"


def step_body(steps: list[tuple]) -> bytes:
    """The COPY text of a trace's step rows without the trace id: each line starts with the tab after it."""
    col, row, nul = _COL, _ROW, _NUL
    dumps = limits.dump_json
    parts = []
    nulls = 0
    for index, parent, depth, agent, role, kind, content, tool_name, args, call_id, ts, tokens, ms in steps:
        if parent is None:
            parent, nulls = nul, nulls + 1
        if args is None:
            args, nulls = nul, nulls + 1
        else:
            args = dumps(args).decode("utf-8", "surrogatepass")
        if tokens is None:
            tokens, nulls = nul, nulls + 1
        if ms is None:
            ms, nulls = nul, nulls + 1
        parts.append(
            f"{col}{index}{col}{parent}{col}{depth}{col}{agent}{col}{role}{col}{kind}{col}{content}"
            f"{col}{tool_name}{col}{args}{col}{call_id}{col}{ts}{col}{tokens}{col}{ms}{row}"
        )
    text = "".join(parts)
    n = len(steps)
    if text.count(col) != 13 * n or text.count(row) != n or text.count(nul) != nulls:
        return _step_body_by_value(steps)
    text = esc(text).replace(col, "\t").replace(row, "\n")
    if nulls:
        text = text.replace(nul, NULL)
    return text.encode("utf-8")


def _step_body_by_value(steps: list[tuple]) -> bytes:
    """step_body for the rare trace whose values hold one of the stand-in characters."""
    lines = []
    for index, parent, depth, agent, role, kind, content, tool_name, args, call_id, ts, tokens, ms in steps:
        fields = (
            "",
            str(index),
            NULL if parent is None else str(parent),
            str(depth),
            esc(agent),
            esc(role),
            kind,
            esc(content),
            esc(tool_name),
            NULL if args is None else json_text(args),
            esc(call_id),
            esc(ts),
            NULL if tokens is None else str(tokens),
            NULL if ms is None else str(ms),
        )
        lines.append("\t".join(fields) + "\n")
    return "".join(lines).encode("utf-8")


def step_rows(trace_id: int, body: bytes) -> tuple[bytes, bytes]:
    """A trace's step rows with its id put in front of each (one C-speed replace per trace), as two pieces
    to be joined with the others: the first row's id, and the rest. Joined once, the rows are copied once."""
    if not body:
        return b"", b""
    tid = b"%d" % trace_id
    return tid, body.replace(b"\n\t", b"\n" + tid + b"\t")
