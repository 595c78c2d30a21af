"""Inspect AI eval logs: the JSON log (``{version, status, eval, plan, results, stats,
samples[], reductions}``) and the ``.eval`` ZIP container (``header.json`` plus one
``samples/<id>_epoch_<n>.json`` per sample).

One trace per sample (id ``"<sample id>-e<epoch>"``), steps from the chat messages. Outcome
from the first score's value: "C"/1/True -> success, "I"/0/False -> failure, anything else
(partial credit, "N", missing) -> unknown, with the numeric value kept as ``score``.
"""

from __future__ import annotations

import re
import shutil
import struct
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO

import zstandard

from . import limits
from ._chat import chat_steps, first_text
from ._json import first_char, has_key, iter_paths, loads
from ._util import Ctx, as_float, compact, text_of
from .records import TraceFormatError, TraceRecord

FORMAT = "inspect_ai"
LABEL = "Inspect AI eval log (.json or .eval)"

ZIP_MAGIC = b"PK\x03\x04"
# What a damaged archive raises from zipfile (a bad CRC, a truncated member, an unknown version or method,
# a corrupt deflate stream).
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    zstandard.ZstdError,
    OSError,
    EOFError,
    NotImplementedError,
)
# Method 93 (APPNOTE 4.4.5): what inspect-ai writes by default. zipfile reads it only from Python 3.14.
ZIP_ZSTANDARD = 93
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")
_ZSTD_MAX_WINDOW = 1 << 27
_SAMPLE_NAME = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_VALUE_SCORES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def sniff(head: bytes, filename: str) -> bool:
    if head.startswith(ZIP_MAGIC):
        return filename.endswith(".eval") or b"header.json" in head or b"samples/" in head
    if first_char(head) != "{":
        return False
    return (
        has_key(head, "eval")
        and (has_key(head, "eval_id") or has_key(head, "task_id"))
        and has_key(head, "status")
    )


def parse(stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    first = stream.read(4)
    if first == ZIP_MAGIC:
        yield from _parse_zip(first, stream, filename)
        return
    source = _Prefixed(first, stream)
    eval_spec: dict = {}
    for path, n, value in iter_paths(source, filename, ("eval", "samples.item")):
        if path == "eval":
            eval_spec = value if isinstance(value, dict) else {}
        else:
            yield sample_record(value, eval_spec, Ctx(filename, record=n), n)


class _Prefixed:
    """Read-only stream that returns ``first`` before the rest of ``stream``."""

    def __init__(self, first: bytes, stream: BinaryIO) -> None:
        self._first, self._stream = first, stream

    def read(self, size: int = -1) -> bytes:
        if size == 0:
            return b""
        if self._first:
            data, self._first = self._first, b""
            more = self._stream.read(size - len(data)) if size and size > len(data) else b""
            return data + more
        return self._stream.read(size)


def _parse_zip(first: bytes, stream: BinaryIO, filename: str) -> Iterator[TraceRecord]:
    # zipfile needs random access; uploads may not be seekable, so spool them (to disk when big).
    with tempfile.SpooledTemporaryFile(max_size=32 * 1024 * 1024) as tmp:
        tmp.write(first)
        shutil.copyfileobj(stream, tmp)
        tmp.seek(0)
        try:
            zf = zipfile.ZipFile(tmp)
        except _ZIP_ERRORS as exc:
            raise TraceFormatError(f"not a valid .eval archive ({exc})", file=filename) from None
        with zf:
            names = zf.namelist()
            budget = limits.DecodeBudget(container="the archive")
            eval_spec: dict = {}
            if "header.json" in names:
                data = _read_member(zf, "header.json", budget, filename, 1)
                header = loads(data, f"{filename}:header.json", record=1)
                eval_spec = header.get("eval", {}) if isinstance(header, dict) else {}
            samples = [nm for nm in names if _SAMPLE_NAME.match(nm)]
            if not samples and "header.json" not in names:
                raise TraceFormatError("no header.json or samples/ in the .eval archive", file=filename)
            for n, name in enumerate(samples, start=1):
                data = _read_member(zf, name, budget, filename, n)
                sample = loads(data, f"{filename}:{name}", record=n)
                yield sample_record(sample, eval_spec, Ctx(f"{filename}:{name}", record=n), n)


def _read_member(zf: zipfile.ZipFile, name: str, budget: limits.DecodeBudget, filename: str, n: int) -> bytes:
    """One member, read as a stream through the archive's decode budget (never past the record limit, what
    the archive may still inflate to, or the compression-ratio cap; the sizes in the zip's directory are only
    claims)."""
    info = zf.getinfo(name)
    try:
        if info.compress_type == ZIP_ZSTANDARD:
            return _read_zstd_member(zf, info, budget)
        with zf.open(info) as member:
            return budget.read(member, info.compress_size, "member", budget.limits.max_record_bytes)
    except limits.LimitExceeded as exc:
        raise TraceFormatError(str(exc), file=f"{filename}:{name}", record=n) from None
    except _ZIP_ERRORS as exc:
        raise TraceFormatError(f"cannot read {name} ({exc})", file=filename, record=n) from None


def _read_zstd_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, budget: limits.DecodeBudget) -> bytes:
    """A zstd member, decoded as a stream through the same budget as a deflate one: its compressed bytes are
    found from its local header (as zipfile does) and read no further than the size the directory gives;
    the frame's own claim of its decoded size is not trusted, and the CRC is checked as zipfile would."""
    fp = zf.fp
    if fp is None:
        raise zipfile.BadZipFile("the archive is closed")
    fp.seek(info.header_offset)
    header = fp.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile(f"bad local header for {info.filename}")
    fields = _LOCAL_HEADER.unpack(header)
    fp.seek(fields[-2] + fields[-1], 1)  # the name and extra field
    compressed = _Bounded(fp, info.compress_size)
    # A frame asks for its window; at most 128 MB of it (libzstd's own default limit, said here).
    decoder = zstandard.ZstdDecompressor(max_window_size=_ZSTD_MAX_WINDOW)
    reader = decoder.stream_reader(compressed, read_across_frames=True)
    data = budget.read(reader, info.compress_size, "member", budget.limits.max_record_bytes)
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"Bad CRC-32 for file {info.filename!r}")
    return data


class _Bounded:
    """The next `left` bytes of a file, and nothing after them."""

    def __init__(self, fp: Any, left: int) -> None:
        self._fp, self._left = fp, left

    def read(self, size: int = -1) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        data = self._fp.read(size) if size else b""
        self._left -= len(data)
        return data


def score_outcome(scores: Any) -> tuple[str, float | None]:
    if not isinstance(scores, dict) or not scores:
        return "unknown", None
    first = next(iter(scores.values()))
    value = first.get("value") if isinstance(first, dict) else first
    if isinstance(value, dict) and value:
        value = next(iter(value.values()))
    if value is True or value == "C" or (as_float(value) == 1.0 and not isinstance(value, str)):
        return "success", 1.0
    if value is False or value == "I" or (as_float(value) == 0.0 and not isinstance(value, str)):
        return "failure", 0.0
    if isinstance(value, str):
        return "unknown", _VALUE_SCORES.get(value, as_float(value))
    return "unknown", as_float(value)


def sample_record(obj: Any, eval_spec: dict, ctx: Ctx, n: int) -> TraceRecord:
    s = ctx.obj(obj, "sample")
    sid = ctx.get(s, "id", (str, int), "id", required=True)
    epoch = ctx.get(s, "epoch", int, "epoch")
    messages = ctx.get(s, "messages", list, "messages") or []
    steps = chat_steps(messages, ctx, "messages")
    inp = s.get("input")
    task = first_text(inp, "user") if isinstance(inp, list) else text_of(inp)
    outcome, score = score_outcome(s.get("scores"))
    meta = compact(
        {
            "target": s.get("target"),
            "scores": s.get("scores"),
            "sample_metadata": s.get("metadata"),
            "model_usage": s.get("model_usage"),
            "total_time": s.get("total_time"),
            "working_time": s.get("working_time"),
            "uuid": s.get("uuid"),
            "error": s.get("error"),
            "eval_id": eval_spec.get("eval_id"),
            "run_id": eval_spec.get("run_id"),
            "created": eval_spec.get("created"),
        }
    )
    return TraceRecord(
        external_id=f"{sid}-e{epoch if epoch is not None else 1}",
        steps=steps,
        task=task,
        system="Inspect AI",
        model=text_of(eval_spec.get("model")),
        benchmark=text_of(eval_spec.get("task")),
        outcome=outcome,
        score=score,
        metadata=meta,
        raw=s,
        record_no=n,
    )
