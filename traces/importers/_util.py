"""Small validation and conversion helpers shared by the parsers.

Field errors must name the exact field path (``steps[3].kind``) so that a user can fix the
record; :class:`Ctx` carries the file and record/line so each check stays a one-liner.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from .limits import json_loads
from .records import TraceFormatError

_MISSING = object()


class Ctx:
    """Where we are in the input: used to build precise :class:`TraceFormatError` messages."""

    __slots__ = ("filename", "line", "record")

    def __init__(self, filename: str, record: int | None = None, line: int | None = None) -> None:
        self.filename = filename
        self.record = record
        self.line = line

    def error(self, field: str, message: str) -> TraceFormatError:
        return TraceFormatError(message, file=self.filename, record=self.record, line=self.line, field=field)

    def obj(self, value: Any, field: str = "") -> dict:
        if not isinstance(value, dict):
            raise self.error(field, f"expected an object, got {type_name(value)}")
        return value

    def get(
        self, d: dict, key: str, types: type | tuple[type, ...], path: str, *, required: bool = False
    ) -> Any:
        """Return ``d[key]`` checked against ``types``; None when absent/null and not required."""
        value = d.get(key, _MISSING)
        if value is _MISSING or value is None:
            if required:
                raise self.error(
                    path, "required field is missing" if value is _MISSING else "must not be null"
                )
            return None
        # bool is an int subclass; a boolean where a number is expected is a data error.
        if isinstance(value, bool) and bool not in _as_tuple(types):
            raise self.error(path, f"expected {_names(types)}, got {type_name(value)}")
        if not isinstance(value, types):
            raise self.error(path, f"expected {_names(types)}, got {type_name(value)}")
        return value

    def text(self, d: dict, key: str, path: str, *, required: bool = False) -> str:
        value = self.get(d, key, str, path, required=required)
        return value if value is not None else ""


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _names(types: type | tuple[type, ...]) -> str:
    names = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean"}
    names |= {"list": "a list", "dict": "an object"}
    return " or ".join(dict.fromkeys(names.get(t.__name__, t.__name__) for t in _as_tuple(types)))


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "list",
        dict: "object",
    }.get(type(value), type(value).__name__)


def text_of(content: Any) -> str:
    """Flatten chat content (string, list of blocks, dict) to readable text.

    Sources disagree on shape (OpenAI blocks, Inspect blocks, AG2 line lists); annotators
    need one readable string, while the exact shape survives in ``TraceRecord.raw``.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        if all(isinstance(x, str) for x in content):
            return "\n".join(content)
        return "\n".join(t for t in (text_of(x) for x in content) if t)
    if isinstance(content, dict):
        for key in ("text", "content", "value", "output", "reasoning", "summary"):
            if key in content and content[key] is not None:
                return text_of(content[key])
        if content.get("type") in ("image", "image_url", "input_image"):
            return "[image]"
        return json.dumps(content, ensure_ascii=False)
    return str(content)


def maybe_json(value: Any) -> Any:
    """Parse a JSON-encoded string (OpenAI tool arguments); keep the text when it is not JSON."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):
            try:
                return json_loads(stripped)
            except ValueError:
                return value
    return value


def as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def as_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        f = float(value)
        return f if math.isfinite(f) else None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def outcome_from_reward(reward: Any) -> tuple[str, float | None]:
    """Reward >= 1 means the episode fully succeeded (tau-bench convention); no reward, unknown."""
    score = as_float(reward)
    if score is None:
        return "unknown", None
    return ("success" if score >= 1 else "failure"), score


def iso_from_epoch(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def iso_from_nanos(nanos: Any) -> str | None:
    n = as_int(nanos)
    if not n:
        return None
    dt = datetime.fromtimestamp(n // 1_000_000_000, tz=UTC)
    frac = n % 1_000_000_000
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def compact(d: dict) -> dict:
    """Drop empty values so metadata stays small and readable."""
    return {k: v for k, v in d.items() if v not in (None, "", [], {})}
