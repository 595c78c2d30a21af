"""Every string of a record is one the database can store, or the record is refused naming the field.

PostgreSQL's text and jsonb cannot hold U+0000 (NUL), and a lone surrogate (U+D800 to U+DFFF without its
pair) is not Unicode text at all: it cannot be encoded as UTF-8. JSON can spell both (``"a\\u0000b"``,
``"\\ud800"``), and dataset columns can hold them, so a parser can hand either to the import. The choice
made here is to refuse such a record with an error naming the file, the record and the field, rather than
to store a changed value: an import keeps what the file says or says why it cannot (nothing invented,
nothing lost), and the file's owner knows best what the character meant. SQLite could hold both; the rule
is the same on every database so that a file imports, or not, the same way everywhere.

The check is cheap by construction: the import already renders each trace as one text (the COPY rows,
`traces.rows`), where a NUL shows as itself or as JSON's ``\\u0000`` escape and a lone surrogate makes the
UTF-8 encoding fail. So only a trace that trips one of those C-speed tests is walked here, field by field,
to name where the bad character is (:func:`check`). Paths without that text (bulk inserts on SQLite) walk
every record.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .records import TraceFormatError, TraceRecord

NUL = "\x00"


def problem_of(text: str) -> str:
    """What makes `text` unstorable, in words, or "" when it is fine."""
    if NUL in text:
        return "holds a NUL character (U+0000), which the database cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        return f"holds a lone surrogate (U+{code:04X}), which is not valid Unicode text"
    return ""


def shown(text: str) -> str:
    """`text` made storable to be quoted in a message (which is stored too): a NUL as ␀ (U+2400), a lone
    surrogate as its escape (\\ud800)."""
    if NUL in text:
        text = text.replace(NUL, "\u2400")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def find(value: Any, path: str) -> tuple[str, str] | None:
    """(the field, the problem) of the first unstorable string in `value` (keys included), or None."""
    for where, text, is_key in _strings(value, path):
        problem = problem_of(text)
        if problem:
            if is_key:
                return where, f'the key "{shown(text)}" {problem}'
            return where, problem
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str, bool]]:
    """Every string in a JSON-like value with the path that leads to it; keys come with their object's path."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item, False
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str):
                    yield where or "(top level)", key, True
            for key, child in reversed(list(item.items())):  # popped in the file's order
                stack.append((_child_path(where, key), child))
        elif isinstance(item, (list, tuple)):
            for i in range(len(item) - 1, -1, -1):
                stack.append((f"{where}[{i}]", item[i]))


def _child_path(where: str, key: object) -> str:
    """`where.key`, or `where["key"]` for a key that is not a plain name."""
    text = str(key)
    if text.isidentifier():
        return f"{where}.{text}" if where else text
    return f'{where}["{shown(text)}"]'


def record_problem(record: TraceRecord) -> tuple[str, str] | None:
    """(field, problem) of the first unstorable string of the trace `record` (its labels aside). The original
    record (`raw`) comes first, so the field is named as the file names it; then every parsed field, for
    values the parser made (JSON found inside a string, a dataset's columns)."""
    found = find(record.raw, "") if record.raw is not None else None
    if found:
        return found
    for name in ("external_id", "task", "system", "model", "benchmark", "outcome"):
        found = find(getattr(record, name), name)
        if found:
            return found
    for i, step in enumerate(record.steps):
        for name in ("agent", "role", "kind", "content", "tool_name", "tool_call_id", "timestamp"):
            found = find(getattr(step, name), f"steps[{i}].{name}")
            if found:
                return found
        found = find(step.tool_args, f"steps[{i}].tool_args")
        if found:
            return found
    return find(record.metadata, "metadata")


def labels_problem(record: TraceRecord) -> tuple[str, str] | None:
    """(field, problem) of the first unstorable string in the labels that came with `record`."""
    for i, annotation in enumerate(record.annotations):
        where = f"annotations[{i}]"
        for name in ("annotator", "note", "missing"):
            found = find(getattr(annotation, name), f"{where}.{name}")
            if found:
                return found
        for j, label in enumerate(annotation.labels):
            for name in ("mode", "note", "attribution"):
                found = find(getattr(label, name), f"{where}.labels[{j}].{name}")
                if found:
                    return found
    return None


def check(record: TraceRecord, filename: str, *, trace: bool = True, labels: bool = False) -> None:
    """Raise TraceFormatError naming file, record and field when `record` (the trace, and with `labels` the
    labels that came with it) holds an unstorable string."""
    found = (record_problem(record) if trace else None) or (labels_problem(record) if labels else None)
    if found is None:
        return
    field, problem = found
    line = record.line_no
    raise TraceFormatError(
        f"{problem}; remove it from the file, or replace it, and import again",
        file=filename,
        record=None if line is not None else (record.record_no or None),
        line=line,
        field=field,
    )


def text_may_be_unstorable(data: bytes) -> bool:
    """A C-speed first look at a trace's COPY text: a NUL, or JSON's escape of one. False positives (a
    value holding the six characters ``\\u0000``) only cost the walk of :func:`check`."""
    return b"\x00" in data or b"\\u0000" in data
