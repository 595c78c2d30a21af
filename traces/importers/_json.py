"""Streaming JSON helpers shared by the parsers.

Every parser must keep memory bounded by one record, whatever the file size, so whole-file
``json.load`` is off limits. These helpers wrap ``ijson`` (arrays, nested paths) and line
iteration (JSONL) and turn every low-level failure into a :class:`TraceFormatError` that names
the file and the record or line.
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

import ijson

from . import limits
from .records import TraceFormatError

HEAD_SIZE = 64 * 1024
_CHUNK = 64 * 1024
# Longest token that may straddle two reads: "-Infinity" (9 bytes); an escape pair is 2.
_HOLD = 9
_SCAN = re.compile(rb'\\[\s\S]|"|NaN|-?Infinity')
_ESCAPES = re.compile(rb"\\[\s\S]")


class NanFilter:
    """File-like wrapper that rewrites bare ``NaN``/``Infinity`` tokens to ``null``.

    Python's ``json.dump`` writes them by default (the real MAST file has ``NaN``) but ijson
    rejects them. Tokens inside strings must stay untouched, so the wrapper tracks whether it
    is inside a string across reads; it keeps the last few bytes of each read for the next one
    so that a token or escape pair split between two reads is still seen whole.
    """

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._carry = b""
        self._in_string = False
        self._eof = False
        self.bytes_read = 0
        self._scanner = limits.JsonScanner()

    def read(self, size: int = -1) -> bytes:
        if size == 0:  # ijson probes read(0) to tell bytes from text streams
            return b""
        if self._scanner.error is not None:
            raise self._scanner.error
        return self._bounded(self._read(size))

    def _bounded(self, out: bytes) -> bytes:
        """Pass on the bytes within the limits; the error comes with the next read, once the parser
        has finished (and counted) every record before the offending byte."""
        ok = self._scanner.feed(out)
        if ok < len(out):
            if ok == 0:
                raise self._scanner.error
            return out[:ok]
        return out

    def _read(self, size: int) -> bytes:
        while True:
            if self._eof:
                out, self._carry = self._carry, b""
                return out
            chunk = self._raw.read(_CHUNK if size is None or size < 0 else max(size, _CHUNK))
            if isinstance(chunk, str):  # a text stream slipped through; be forgiving
                chunk = chunk.encode("utf-8")
            self.bytes_read += len(chunk)
            buf = self._carry + chunk
            if not chunk:
                self._eof = True
                cut = len(buf)
            else:
                cut = max(len(buf) - _HOLD, 0)
            out, cut = self._rewrite(buf, cut)
            self._carry = buf[cut:]
            if self._eof:
                # Whatever was held back is complete now: rewrite it as well.
                tail, _ = self._rewrite(self._carry, len(self._carry))
                self._carry = b""
                return out + tail
            if out:
                return out

    def _rewrite(self, buf: bytes, cut: int) -> tuple[bytes, int]:
        region = buf[:cut]
        window = buf[: cut + 8]  # a token starting before the cut may end up to 8 bytes after it
        if b"NaN" not in window and b"Infinity" not in window:
            # Fast path (almost every chunk): only the inside-a-string state has to be carried.
            trailing = len(region) - len(region.rstrip(b"\\"))
            if trailing % 2 and cut < len(buf):
                cut += 1  # never split an escape pair such as \" between two reads
                region = buf[:cut]
            if _ESCAPES.sub(b"", region).count(b'"') % 2:
                self._in_string = not self._in_string
            return region, cut
        parts: list[bytes] = []
        last = 0
        for m in _SCAN.finditer(buf):
            if m.start() >= cut:
                break
            token = m.group()
            if token == b'"':
                self._in_string = not self._in_string
            elif token[:1] != b"\\" and not self._in_string:
                parts.append(buf[last : m.start()])
                parts.append(b"null")
                last = m.end()
            cut = max(cut, m.end())
        parts.append(buf[last:cut])
        return b"".join(parts), cut


def _json_error(exc: Exception, filename: str, record: int | None) -> TraceFormatError:
    if isinstance(exc, limits.LimitExceeded):
        return TraceFormatError(str(exc), file=filename, record=record)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "premature EOF" in text:
        text = f"truncated JSON ({text})"
    return TraceFormatError(f"malformed JSON: {text}", file=filename, record=record)


def iter_array(stream: BinaryIO, filename: str, prefix: str = "item") -> Iterator[tuple[int, Any]]:
    """Yield ``(record_no, value)`` for each element of the array at ``prefix``, one at a time."""
    source = NanFilter(stream)
    count = 0
    try:
        for value in ijson.items(source, prefix, use_float=True):
            count += 1
            yield count, value
    except UnicodeDecodeError as exc:
        raise TraceFormatError(not_utf8(exc), file=filename, record=count + 1) from None
    except (ijson.JSONError, ValueError) as exc:  # ValueError: limits, or an integer too long to convert
        raise _json_error(exc, filename, count + 1) from None


def iter_paths(
    stream: BinaryIO, filename: str, paths: Iterable[str], *, multiple_values: bool = False
) -> Iterator[tuple[str, int, Any]]:
    """Yield ``(path, n, value)`` for every value found at one of ``paths`` (ijson prefixes).

    One pass over the file serves several prefixes (e.g. ``tasks.item`` then ``simulations.item``),
    which ``ijson.items`` cannot do; ``n`` counts values per path, 1-based, for error messages.
    With `multiple_values` the file may hold several documents one after another (JSONL whatever the length
    of its lines), each searched for the same paths.
    """
    wanted = set(paths)
    counts: dict[str, int] = dict.fromkeys(wanted, 0)
    builder: ijson.ObjectBuilder | None = None
    building = ""
    depth = 0
    current = ""
    try:
        for prefix, event, value in ijson.parse(
            NanFilter(stream), use_float=True, multiple_values=multiple_values
        ):
            if builder is not None:
                builder.event(event, value)
                if event in ("start_map", "start_array"):
                    depth += 1
                elif event in ("end_map", "end_array"):
                    depth -= 1
                if depth == 0:
                    yield building, counts[building], builder.value
                    builder = None
                continue
            if prefix in wanted and event not in ("map_key", "end_map", "end_array"):
                counts[prefix] += 1
                current = prefix
                if event in ("start_map", "start_array"):
                    builder = ijson.ObjectBuilder()
                    builder.event(event, value)
                    building, depth = prefix, 1
                else:
                    yield prefix, counts[prefix], value
    except UnicodeDecodeError as exc:
        raise TraceFormatError(not_utf8(exc), file=filename, record=counts.get(current, 0) or None) from None
    except (ijson.JSONError, ValueError) as exc:
        record = counts.get(current, 0) or None
        raise _json_error(exc, filename, record) from None


def not_utf8(exc: UnicodeDecodeError) -> str:
    """The words for bytes that do not decode. ijson turns a JSON escape of a lone surrogate ("\\ud800")
    into the bytes ED A0..BF xx, which no UTF-8 decoder takes: say so, rather than blame the file's encoding."""
    pair = bytes(exc.object[exc.start : exc.start + 2])
    if len(pair) == 2 and pair[0] == 0xED and 0xA0 <= pair[1] <= 0xBF:
        return "a string holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not valid Unicode text"
    return f"not UTF-8 text ({exc.reason})"


def _no_nan(token: str) -> None:
    # NaN/Infinity become null so every record stays strictly JSON-serialisable.
    return None


def loads(
    data: bytes | str,
    filename: str,
    *,
    record: int | None = None,
    line: int | None = None,
    checked: bool = False,
    parsed: Any = None,
) -> Any:
    """``json.loads`` for one record, with errors that point at the file/record/line.

    The bytes are scanned for depth and value length first (unless `checked`: they were, with others):
    ``json.loads`` recurses once per level. `parsed` is the value of `data` when it is already known (then
    only the scan runs).
    """
    try:
        if not checked:
            limits.check_json_bytes(data)
        if parsed is not None:
            return parsed
        return limits.fast_loads(data, parse_constant=_no_nan)
    except (limits.LimitExceeded, RecursionError) as exc:
        message = (
            str(exc) if isinstance(exc, limits.LimitExceeded) else str(limits.too_deep(limits.current()))
        )
        raise TraceFormatError(message, file=filename, record=record, line=line) from None
    except json.JSONDecodeError as exc:
        pos = f"column {exc.colno}" if line is not None else f"line {exc.lineno}, column {exc.colno}"
        msg = f"malformed JSON: {exc.msg} ({pos})"
        raise TraceFormatError(msg, file=filename, record=record, line=line) from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(not_utf8(exc), file=filename, record=record, line=line) from None


def iter_jsonl(
    stream: BinaryIO, filename: str, first_line: int = 1, *, checked: bool = False
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_no, value)`` per non-blank line; memory is one line at a time, and a line may be
    no longer than one record may be. `first_line`: the number of the stream's first line (a piece of a
    file read by an import worker). `checked`: the whole stream is within the depth and value limits
    (limits.within), so its lines need no scan of their own: a line that is read follows lines that were
    valid JSON, hence starts outside any string or bracket, and is no deeper than the whole."""
    cap = limits.current().max_record_bytes
    line_no = first_line - 1
    while raw := stream.readline(cap + 1):
        line_no += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            raise TraceFormatError(
                str(limits.record_too_large(0, limits.current())), file=filename, line=line_no
            )
        if not raw.strip():
            continue
        yield line_no, loads(raw, filename, line=line_no, checked=checked)


def load_single(stream: BinaryIO, filename: str) -> Any:
    """Load a file that holds exactly one record (a Who&When log, a ``.traj``).

    One record per file is the documented bound, so reading it whole (up to the record limit) is
    allowed here.
    """
    cap = limits.current().max_record_bytes
    data = stream.read(cap + 1)
    if len(data) > cap:
        raise TraceFormatError(str(limits.record_too_large(0, limits.current())), file=filename, record=1)
    if not data.strip():
        raise TraceFormatError("empty file", file=filename, record=1)
    return loads(data, filename, record=1, parsed=_parsed_by_sniffers(data))


def _parsed_by_sniffers(data: bytes) -> Any:
    """The record the sniffers already parsed, when `data` is the very head they read (a run shorter than its
    head is parsed from it: io.BytesIO hands back its own bytes when read whole) and its first line is all
    of it; else None, and the caller parses `data` itself."""
    kept = _last_line
    if kept[0] is data and kept[1] is not None:
        body = data.strip()
        if b"\n" not in body and b"\r" not in body:
            return kept[1]
    return None


class _Replay(io.RawIOBase):
    """Raw stream that replays bytes already read, then continues with the source."""

    def __init__(self, first: bytes, rest: BinaryIO) -> None:
        self._first, self._rest = first, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        if self._first:
            data, self._first = self._first[: len(buf)], self._first[len(buf) :]
        else:
            data = self._rest.read(len(buf))
        buf[: len(data)] = data
        return len(data)


def peek(stream: BinaryIO, size: int = HEAD_SIZE) -> tuple[bytes, BinaryIO]:
    """Read the first ``size`` bytes and return them with a stream that still starts at byte 0.

    Parsers get non-seekable streams (uploads), yet some must look at the start to choose
    between a JSON array and JSONL.
    """
    first = stream.read(size)
    return first, io.BufferedReader(_Replay(first, stream))


def first_char(head: bytes) -> str:
    """First non-blank character of the head, skipping a UTF-8 BOM."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return chr(text[0]) if text else ""


def has_key(head: bytes, *keys: str) -> bool:
    """True when every ``"key":`` appears unescaped, i.e. as a real JSON key, not inside a string."""
    for key in keys:
        quoted, pattern = _key_patterns(key)
        # The plain substring test (C speed) rules most keys out before the regex scans the head.
        if quoted not in head or pattern.search(head) is None:
            return False
    return True


@functools.lru_cache(maxsize=256)
def _key_patterns(key: str) -> tuple[bytes, re.Pattern[bytes]]:
    """The sniffers ask for the same few keys of every file of a folder: their patterns are made once."""
    k = key.encode()
    return b'"' + k + b'"', re.compile(rb'(?<![\\\w])"' + re.escape(k) + rb'"\s*:')


def first_line(head: bytes) -> Any:
    """Parse the first non-blank line of a JSONL head, or None when incomplete/invalid. Several sniffers ask
    for the same head in turn (a whole .traj file, for each file of a folder): the last answer is kept.
    Callers only read it."""
    global _last_line
    last = _last_line  # one read of the pair: another thread may replace it meanwhile
    if last[0] is head:
        return last[1]
    parsed = _first_line(head)
    _last_line = (head, parsed)
    return parsed


_last_line: tuple[bytes | None, Any] = (None, None)


def _first_line(head: bytes) -> Any:
    for raw in head.splitlines(keepends=True):
        if raw.strip():
            if not raw.endswith(b"\n") and len(head) >= HEAD_SIZE:
                return None
            try:
                # fast_loads: several sniffers parse the same head (a whole .traj file) for each file of a
                # folder, and json's own decoder cost a tenth of such an import.
                return limits.fast_loads(raw, parse_constant=_no_nan)
            except (ValueError, UnicodeDecodeError, RecursionError):  # the parser names the problem later
                return None
    return None
