"""Size and depth limits that every parser enforces, and the byte scanner that enforces them on JSON.

A hostile 200 KB file must not take a worker down: JSON nested 100,000 levels deep makes ijson's prefix
bookkeeping grow with the square of the depth and ``json.loads`` raise ``RecursionError``; a 1 MB zip can
inflate to gigabytes; one record can be larger than a database row may be. So the JSON bytes are scanned
*before* a parser builds values from them (depth and single-value length are known from the bytes alone),
zip members are read as bounded streams, and each finished record is measured once more before it may
become a row.

The limits are plain values so that this package stays free of Django; the traces app copies them from
settings at start-up (``IMPORT_MAX_*``) with :func:`configure`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import orjson

MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Limits:
    max_depth: int = 100  # nesting of arrays/objects in one record
    max_value_bytes: int = 32 * MB  # one string (or number) in the input
    max_record_bytes: int = 64 * MB  # one record (a JSONL line, a zip member, a trace row as JSON)
    max_archive_bytes: int = 2048 * MB  # all members of one zip archive, uncompressed
    max_zip_ratio: int = 200  # decoded / compressed size of one zip member, compressed file or parquet file
    max_memory_bytes: int = 0  # memory an import may add to its process (0: no ceiling)


_limits = Limits()


def current() -> Limits:
    return _limits


def configure(**values: int) -> Limits:
    """Replace some limits (settings at start-up); returns the previous ones."""
    global _limits
    previous = _limits
    _limits = replace(_limits, **{k: int(v) for k, v in values.items()})
    return previous


@contextmanager
def override(**values: int) -> Iterator[Limits]:
    """Temporarily different limits (tests, a CLI flag)."""
    previous = configure(**values)
    try:
        yield _limits
    finally:
        configure(**{k: getattr(previous, k) for k in previous.__dataclass_fields__})


class LimitExceeded(ValueError):
    """Input beyond one of the limits; parsers turn it into a TraceFormatError naming file and record."""


def _mb(n: int) -> str:
    return f"{n / MB:g} MB" if n >= MB else f"{n} bytes"


def too_deep(limits: Limits) -> LimitExceeded:
    return LimitExceeded(f"nested deeper than {limits.max_depth} levels (limit IMPORT_MAX_DEPTH)")


def value_too_long(limits: Limits) -> LimitExceeded:
    return LimitExceeded(
        f"a single value is longer than {_mb(limits.max_value_bytes)} (limit IMPORT_MAX_VALUE_MB)"
    )


def record_too_large(size: int, limits: Limits) -> LimitExceeded:
    return LimitExceeded(
        f"record is larger than {_mb(limits.max_record_bytes)} "
        f"({_mb(size) if size else 'at least that'}; limit IMPORT_MAX_RECORD_MB)"
    )


# Below this many decoded bytes the ratio is not checked: a tiny member or file compresses any way it likes.
RATIO_FLOOR = 64 * 1024


class DecodeBudget:
    """Decoded bytes one container (a zip archive, a compressed file, a parquet file) may still produce.

    The one bounded reader under every codec: whatever decodes (zip members, gzip/bz2/xz streams, parquet and
    Arrow column data) counts its decoded bytes here *as they come*, against the compressed size it read them
    from, so a bomb stops at the cap rather than at its end and before the values are materialised. Caps:
    all decoded bytes of the container (IMPORT_MAX_ARCHIVE_MB), one piece (IMPORT_MAX_RECORD_MB, for a zip
    member) and the ratio of decoded to compressed bytes (IMPORT_MAX_ZIP_RATIO, above RATIO_FLOOR).
    """

    def __init__(self, limits: Limits | None = None, container: str = "the file") -> None:
        self.limits = limits or _limits
        self.left = self.limits.max_archive_bytes
        self.container = container  # what the archive cap's error names

    def ratio_cap(self, compressed: int) -> int:
        return max(max(compressed, 1) * self.limits.max_zip_ratio, RATIO_FLOOR)

    def check(self, decoded: int, compressed: int, what: str = "the file") -> None:
        """`decoded` bytes so far came out of `compressed` bytes, and use up the budget's remainder."""
        if decoded > self.ratio_cap(compressed):
            raise too_compressed(what, self.limits)
        if decoded > self.left:
            raise archive_too_large(self.container, self.limits)

    def spend(self, decoded: int) -> None:
        self.left -= decoded

    def read(self, stream: Any, compressed: int, what: str, piece_cap: int | None = None) -> bytes:
        """A decoding stream read whole, never past the smallest cap (see the class doc); the stream's own
        claims of size are not trusted, the bytes actually decoded are counted."""
        by_ratio = self.ratio_cap(compressed)
        cap = min(self.left if piece_cap is None else piece_cap, self.left, by_ratio)
        chunks, size = [], 0
        while chunk := stream.read(min(MB, cap + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                if cap == by_ratio:
                    raise too_compressed(what, self.limits)
                if cap == self.left:
                    raise archive_too_large(self.container, self.limits)
                raise record_too_large(0, self.limits)
        self.spend(size)
        return b"".join(chunks)

    def drain(
        self, stream: Any, compressed: int, what: str, each: Callable[[bytes], None] | None = None
    ) -> int:
        """A decoding stream decoded to its end without keeping it (a dataset's compressed data, checked
        before the reader that keeps it is let in), each checked chunk handed to `each`; returns the decoded
        size."""
        size = 0
        while chunk := stream.read(MB):
            size += len(chunk)
            self.check(size, compressed, what)
            if each is not None:
                each(chunk)
        self.spend(size)
        return size


def too_compressed(what: str, limits: Limits) -> LimitExceeded:
    return LimitExceeded(
        f"{what} inflates more than {limits.max_zip_ratio} times its compressed size "
        "(a decompression bomb?; limit IMPORT_MAX_ZIP_RATIO)"
    )


def archive_too_large(what: str, limits: Limits) -> LimitExceeded:
    return LimitExceeded(
        f"{what} inflates to more than {_mb(limits.max_archive_bytes)} (limit IMPORT_MAX_ARCHIVE_MB)"
    )


def out_of_memory(limits: Limits | None = None) -> str:
    """The reason an import fails with when it reaches its memory ceiling (see memory_ceiling)."""
    bounds = limits or _limits
    if bounds.max_memory_bytes > 0:
        return (
            f"the import needed more than {_mb(bounds.max_memory_bytes)} of memory while decoding this file "
            "and was stopped (it ran out of memory under IMPORT_MAX_MEMORY_MB); nothing was imported"
        )
    return "the import ran out of memory while decoding this file and was stopped; nothing was imported"


def _data_bytes() -> int:
    """The process's private writable memory (VmData): what RLIMIT_DATA limits."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmData:"):
                return int(line.split()[1]) * 1024
    return 0


@contextmanager
def memory_ceiling(limits: Limits | None = None) -> Iterator[None]:
    """Run an import under a hard memory ceiling of its own: the process (and the workers it forks, which
    inherit it) may take at most `max_memory_bytes` more private memory than it holds now.

    RLIMIT_DATA rather than RLIMIT_AS: since Linux 4.7 it counts every private writable mapping (the heap,
    mimalloc's and jemalloc's arenas, thread stacks) but not the address space that glibc's per-thread arenas
    and pyarrow's pools only reserve, nor memory-mapped files, so the same ceiling holds whatever the number of
    threads. Past it, allocations fail: Python raises MemoryError and pyarrow ArrowMemoryError, which the
    import turns into an error naming the file (see out_of_memory). The bounded readers stop known bombs long
    before; this is for the codec nobody thought of. Nested calls keep the lower (outer) ceiling; elsewhere
    than Linux it does nothing.
    """
    bounds = limits or _limits
    if bounds.max_memory_bytes <= 0 or not sys.platform.startswith("linux"):
        yield
        return
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    ceiling = _data_bytes() + bounds.max_memory_bytes
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    if soft != resource.RLIM_INFINITY and soft <= ceiling:
        yield  # already under a ceiling at least as low
        return
    resource.setrlimit(resource.RLIMIT_DATA, (ceiling, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


_TOKENS = re.compile(rb'\\[\s\S]?|"|[\[\]{}]')  # a lone backslash ends a piece
_SLICE = 1024 * 1024
# bytes.translate tables (C speed): 1 for a quote; +1 for an opening bracket, -1 (255) for a closing one.
_QUOTE = bytes(1 if b == ord('"') else 0 for b in range(256))
_BRACKET = bytes(1 if b in b"[{" else 255 if b in b"]}" else 0 for b in range(256))
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")


class JsonScanner:
    """Tracks nesting depth and string length over JSON bytes fed in pieces, without parsing them.

    ``feed`` returns how many bytes of the piece are within the limits: all of it normally, or the
    offset of the first byte beyond a limit, so that a streaming parser can be handed everything before
    that byte (and so finish, and number, every record before the bad one) and then the error.
    Most pieces take the vectorised path; only the piece that breaks a limit is scanned token by token.
    """

    def __init__(self, limits: Limits | None = None) -> None:
        self.limits = limits or _limits
        self.depth = 0
        self.in_string = False
        self.run = 0  # bytes of the string being read so far
        self.escape_pending = False  # the previous piece ended inside an escape pair
        self.error: LimitExceeded | None = None

    def feed(self, data: bytes) -> int:
        for start in range(0, len(data), _SLICE):
            piece = data[start : start + _SLICE]
            ok = self._feed(piece)
            if ok < len(piece):
                return start + ok
        return len(data)

    def check(self, data: bytes) -> None:
        """Raise LimitExceeded when ``data`` (a whole document) breaks a limit."""
        self.feed(data)
        if self.error is not None:
            raise self.error

    def _feed(self, data: bytes) -> int:
        if self.error is not None:
            return 0
        state = (self.depth, self.in_string, self.run, self.escape_pending)
        if self._fast(data):
            return len(data)
        self.depth, self.in_string, self.run, self.escape_pending = state
        return self._slow(data)

    def _fast(self, data: bytes) -> bool:
        """Whole-piece check with C-speed operations; False when some limit is broken in it."""
        import numpy as np  # here, not at the top: only a large document needs it, and it is slow to load

        limits = self.limits
        if self.escape_pending:
            data = data[1:]
            self.escape_pending = False
        # Only escaped backslashes and quotes matter for finding strings; replacing them (rather than a
        # regex over every escape) keeps lengths and is several times faster on escape-heavy text.
        text = data.replace(b"\\\\", b"__").replace(b'\\"', b"__")
        if text.endswith(b"\\"):  # a lone backslash can only remain at the end: its pair is next
            self.escape_pending = True
            text = text[:-1]
        if not text:
            return True
        quote = np.frombuffer(text.translate(_QUOTE), dtype=np.uint8)
        # Inside a string after an odd number of quotes (counting the one that opened it, if any).
        inside = (np.cumsum(quote, dtype=np.int32) + self.in_string) & 1
        positions = np.flatnonzero(quote)
        if self.in_string:  # the open string began before this piece: a virtual quote for its run
            positions = np.concatenate(([-1 - self.run], positions))
        opened, closed = positions[0::2], positions[1::2]
        longest = int((closed - opened[: len(closed)] - 1).max()) if len(closed) else 0
        ends_inside = len(opened) > len(closed)
        run = len(text) - int(opened[-1]) - 1 if ends_inside else 0
        if max(longest, run) > limits.max_value_bytes:
            return False
        delta = np.frombuffer(text.translate(_BRACKET), dtype=np.int8)
        levels = np.cumsum(delta * (1 - inside), dtype=np.int32)
        if self.depth + int(levels.max()) > limits.max_depth:
            return False
        self.depth += int(levels[-1])
        self.in_string, self.run = bool(ends_inside), run
        return True

    def _slow(self, data: bytes) -> int:
        """Token by token, to find the first byte beyond a limit (only for the piece that has one)."""
        limits = self.limits
        pos = 0  # inside a string: where the uncounted part of it begins
        if self.escape_pending:
            pos, self.escape_pending = 1, False
        for m in _TOKENS.finditer(data, pos):
            token, at = m.group(), m.start()
            if self.in_string:
                self.run += (at if token == b'"' else m.end()) - pos
                if self.run > limits.max_value_bytes:
                    return self._fail(value_too_long(limits), at)
                pos = m.end()
                if token == b'"':
                    self.in_string, self.run = False, 0
                elif len(token) < 2:
                    self.escape_pending = True
            elif token == b'"':
                self.in_string, self.run, pos = True, 0, m.end()
            elif token[0] in _OPEN:
                if self.depth + 1 > limits.max_depth:
                    return self._fail(too_deep(limits), at)
                self.depth += 1
            elif token[0] in _CLOSE:
                self.depth -= 1
        if self.in_string:
            self.run += len(data) - pos
            if self.run > limits.max_value_bytes:
                return self._fail(value_too_long(limits), len(data))
        return len(data)

    def _fail(self, error: LimitExceeded, at: int) -> int:
        self.error = error
        return at


def check_json_bytes(data: bytes | str, limits: Limits | None = None) -> None:
    """Raise LimitExceeded when one JSON document is nested too deeply or holds too long a value."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    bounds = limits or _limits
    if len(data) <= bounds.max_value_bytes and (
        data.count(b"[") + data.count(b"{") <= bounds.max_depth or _nesting_within(data, bounds.max_depth)
    ):
        return  # too short to hold a too-long value, and not nested too deep
    JsonScanner(bounds).check(data)


def within(data: bytes) -> bool:
    """Whether JSON bytes (one document or several, one a line) are within the depth and value limits."""
    if len(data) <= _limits.max_value_bytes:
        return _nesting_within(data, _limits.max_depth)
    scanner = JsonScanner()
    return scanner.feed(data) == len(data) and scanner.error is None and not scanner.in_string


# Every byte but quotes and brackets, deleted to keep a document's skeleton; brackets of both kinds as one.
_NOT_SKELETON = bytes(b for b in range(256) if b not in b'"[]{}')
_PARENS = bytes.maketrans(b"[{]}", b"(())")
_QUOTED = re.compile(rb'"[^"]*"')


def _nesting_within(data: bytes, max_depth: int) -> bool:
    """Whether complete JSON documents nest at most `max_depth` deep, from their skeleton: False also when
    the bytes are not balanced (then the scanner looks at each document and says where and why).

    Bytes shorter than the value limit cannot hold too long a value, so only nesting is left to check, and
    it needs no pass over the bytes in Python: C-speed passes delete everything but quotes and brackets,
    drop adjacent quote pairs (empty strings in the skeleton: removing two adjacent quotes leaves every other
    byte on the same side of every string, so most strings go at no cost), cut the rare strings that hold
    brackets, and remove innermost bracket pairs one level per pass (``bytes.replace`` does not rescan what
    it replaced), so a skeleton that is empty after `max_depth` passes nests no deeper than that. Some 5-10
    times faster than the scanner's vectorised path on an import's pieces (issue 14)."""
    text = data.replace(b"\\\\", b"__").replace(b'\\"', b"__")
    if text.endswith(b"\\"):  # a lone backslash is only possible inside a string left open
        return False
    skeleton = text.translate(None, _NOT_SKELETON).replace(b'""', b"")
    if b'"' in skeleton:
        if skeleton.count(b'"') % 2:
            return False  # a string is left open
        skeleton = _QUOTED.sub(b"", skeleton)
    nest = skeleton.translate(_PARENS)
    for _ in range(max_depth):
        if not nest:
            return True
        inner = nest.replace(b"()", b"")
        if len(inner) == len(nest):
            return False  # unbalanced brackets: malformed, for the careful path to report
        nest = inner
    return not nest


def check_record(raw: Any, extra_bytes: int = 0, limits: Limits | None = None) -> bytes:
    """The last gate before a record becomes rows: its JSON must fit in a row. Returns that JSON (UTF-8),
    which the import stores as is, so the record is serialised once.

    Depth was checked on the bytes as they were parsed (and JSON found inside fields by ``json_loads``);
    dataset rows have the depth their schema gives them. Serialising here also proves the record can be
    stored as JSON at all.
    """
    limits = limits or _limits
    try:
        text = dump_json(raw)
    except RecursionError:
        raise too_deep(limits) from None
    size = len(text) + extra_bytes
    if size > limits.max_record_bytes:
        raise record_too_large(size, limits)
    return text


# Dates and dataclasses go to default=str, as json wrote them (orjson has its own forms for them).
_ORJSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dump_json(value: Any) -> bytes:
    """``value`` as compact JSON (UTF-8 bytes) for storage: orjson, several times faster than ``json``.
    What orjson refuses (an integer beyond 64 bits, nesting beyond its own limit) goes through ``json``,
    which writes the same JSON data; values that are not JSON become their text, as ``default=str`` did."""
    try:
        return orjson.dumps(value, default=str, option=_ORJSON_OPTIONS)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )


def json_loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads`` for JSON found inside a field (tool arguments, a metadata column): scanned first,
    so a deeply nested value raises LimitExceeded (a ValueError, like malformed JSON) instead of
    ``RecursionError``."""
    check_json_bytes(text)
    try:
        return fast_loads(text, **kwargs)
    except RecursionError:
        raise too_deep(_limits) from None


def fast_loads(text: str | bytes, **kwargs: Any) -> Any:
    """``json.loads(text, **kwargs)``, through orjson (several times faster) whenever it gives the same
    value: orjson refuses what only ``json`` accepts (NaN and Infinity, integers beyond 64 bits, lone
    surrogates, UTF-16, a BOM) and malformed JSON, and all of those go to ``json``, which decides (and
    words the error) as before. Keyword arguments (parse_constant) only matter for NaN and Infinity."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    # orjson turns an integer beyond 64 bits into a float (json keeps it exact): 19 digits in a row send
    # the text to json. The digit test runs on a translated copy (C speed, no regex backtracking).
    if _LONG_DIGITS not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text, **kwargs)


_DIGITS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))  # each digit -> "0", anything else -> " "
_LONG_DIGITS = b"0" * 19
