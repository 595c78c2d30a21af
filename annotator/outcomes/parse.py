"""Results files -> outcome records, with no Django: every problem names its line or record and why.

Accepted shapes (the format is told by the file name, else by the content):

- SWE-bench's run report (`<model>.<run_id>.json`): a JSON object with `resolved_ids`, `unresolved_ids`,
  `error_ids`, `empty_patch_ids` (and counts, `completed_ids`, `submitted_ids`, `incomplete_ids`, ...).
  Resolved is a success; unresolved, empty patch and error are failures, as SWE-bench scores them (the list
  an id came from is kept as metadata `swebench_status`); ids only submitted or incomplete are not touched.
- SWE-bench's per-instance `report.json`: `{instance_id: {"resolved": bool, ...}}` (one or many instances);
  its scalar fields besides `resolved` go to metadata (`tests_status` and other nested values do not).
- CSV with a header, or JSONL (or a JSON array) of objects: `external_id` (or `instance_id`), `outcome`
  (success, failure or unknown), `score` (a finite number), and any other column or key, which goes to the
  trace's metadata (a `metadata` object is merged in as it is). An empty outcome or score leaves it as is.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from traces.importers.limits import MB, LimitExceeded, Limits, check_json_bytes

OUTCOMES = ("success", "failure", "unknown")
ID_KEYS = ("external_id", "instance_id")
MAX_BYTES = 50 * 1024 * 1024
MAX_RECORDS = 500_000
MAX_DEPTH = 32
MAX_ID_CHARS = 255  # Trace.external_id
MAX_METADATA_BYTES = 64 * 1024  # the metadata one record adds
MAX_PROBLEMS = 50  # listed; the count says how many more
_LIMITS = Limits(max_depth=MAX_DEPTH, max_value_bytes=MB)

# SWE-bench run report lists, in the order an id is looked for, and what each means here.
SWEBENCH_LISTS = (
    ("resolved_ids", "success", "resolved"),
    ("unresolved_ids", "failure", "unresolved"),
    ("empty_patch_ids", "failure", "empty_patch"),
    ("error_ids", "failure", "error"),
)


@dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """One trace's new values; None leaves a value as it is."""

    where: str  # "line 3", "record 'django__django-11099'"
    external_id: str
    outcome: str | None = None
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ParsedFile:
    format: str  # "swebench-report", "swebench-instances", "csv", "jsonl"
    records: tuple[OutcomeRecord, ...]  # the good ones
    problems: tuple[str, ...] = ()  # the bad ones (only with strict=False)


class OutcomeFileError(ValueError):
    """The file cannot be applied; `problems` lists each bad record (where and why)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:MAX_PROBLEMS]
        more = len(problems) - len(shown)
        super().__init__("; ".join(shown) + (f"; and {more} more problem(s)" if more else ""))


def parse_outcomes(data: bytes, filename: str = "", *, strict: bool = True) -> ParsedFile:
    """The records of a results file; OutcomeFileError naming every bad record (nothing is partly read).
    `strict=False`: bad records come back as `problems` beside the good ones, for a caller that checks
    the good ones further and reports every problem at once; a file that cannot be read still raises."""
    if len(data) > MAX_BYTES:
        raise OutcomeFileError([f"the file is {len(data):,} bytes; at most {MAX_BYTES:,}"])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise OutcomeFileError([f"the file is not UTF-8 text (byte {error.start})"]) from None
    name = filename.lower()
    if name.endswith(".csv"):
        records, fmt = _csv(text), "csv"
    elif name.endswith(".jsonl") or name.endswith(".ndjson"):
        records, fmt = _jsonl(text), "jsonl"
    else:
        records, fmt = _sniffed(text, name)
    problems = [problem for problem in records if isinstance(problem, str)]
    good = [record for record in records if isinstance(record, OutcomeRecord)]
    problems += _duplicates(good)
    if problems and strict:
        raise OutcomeFileError(problems)
    if not good and not problems:
        raise OutcomeFileError(["the file holds no records"])
    return ParsedFile(fmt, tuple(good), tuple(problems))


def parse_outcome_files(files: Sequence[tuple[str, bytes]]) -> ParsedFile:
    """Several results files read as one (a SWE-bench run's per-instance report.json files, a folder of
    CSVs), as `parse_outcomes(strict=False)` reads one: each record's place is prefixed with its file's name,
    and an id given in two files is a problem, as one given twice in a file is. At most MAX_BYTES in all."""
    if len(files) == 1:
        name, data = files[0]
        return parse_outcomes(data, name, strict=False)
    total = sum(len(data) for _, data in files)
    if total > MAX_BYTES:
        raise OutcomeFileError([f"the files hold {total:,} bytes; at most {MAX_BYTES:,} in all"])
    records: list[OutcomeRecord] = []
    problems: list[str] = []
    formats: list[str] = []
    first: dict[str, str] = {}
    for name, data in files:
        try:
            parsed = parse_outcomes(data, name, strict=False)
        except OutcomeFileError as error:
            problems += [f"{name}: {problem}" for problem in error.problems]
            continue
        formats += [parsed.format] if parsed.format not in formats else []
        problems += [f"{name}: {problem}" for problem in parsed.problems]
        for record in parsed.records:
            where = f"{name}: {record.where}"
            if first.get(record.external_id, name) != name:
                problems.append(
                    f"{where}: {record.external_id!r:.80} is given again (first: {first[record.external_id]})"
                )
                continue
            first.setdefault(record.external_id, name)
            records.append(replace(record, where=where))
    if not records and not problems:
        raise OutcomeFileError(["the files hold no records"])
    return ParsedFile("+".join(formats), tuple(records), tuple(problems))


def _sniffed(text: str, name: str) -> tuple[list, str]:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return _csv(text), "csv"
    try:
        document = _json(stripped)
    except OutcomeFileError:
        if name.endswith(".json") or stripped.startswith("["):
            raise
        return _jsonl(text), "jsonl"  # several objects, one a line
    if isinstance(document, list):
        return _objects(((f"record {n}", item) for n, item in enumerate(document, 1))), "jsonl"
    if isinstance(document, dict) and any(key in document for key, _, _ in SWEBENCH_LISTS):
        return _swebench_report(document), "swebench-report"
    reports = isinstance(document, dict) and document and all(isinstance(v, dict) for v in document.values())
    if reports and all("resolved" in v for v in document.values()):
        return _swebench_instances(document), "swebench-instances"
    if isinstance(document, dict):
        return _objects([("record 1", document)]), "jsonl"
    raise OutcomeFileError(["the JSON is neither an object nor an array of objects"])


def _json(text: str) -> Any:
    try:  # the nesting and value sizes are measured on the bytes before json builds anything from them
        check_json_bytes(text, _LIMITS)
    except LimitExceeded as error:
        raise OutcomeFileError([f"the JSON is {error}".replace(" (limit IMPORT_MAX_DEPTH)", "")]) from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        line = getattr(error, "lineno", None)
        raise OutcomeFileError(
            [f"line {line}: not valid JSON ({error})" if line else "not valid JSON"]
        ) from None


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _swebench_report(document: dict) -> list:
    out: list = []
    seen: dict[str, str] = {}
    for key, outcome, status in SWEBENCH_LISTS:
        ids = document.get(key, [])
        if not isinstance(ids, list):
            out.append(f"`{key}` is not a list of instance ids")
            continue
        for n, instance in enumerate(ids, 1):
            where = f"{key}[{n}]"
            if not isinstance(instance, str) or not instance.strip():
                out.append(f"{where}: an instance id must be a non-empty string, not {instance!r:.80}")
            elif instance in seen:
                out.append(f"{where}: {instance!r:.80} is also in {seen[instance]}")
            else:
                seen[instance] = key
                out.append(
                    _checked(f"{where} ({instance!r:.80})", {"external_id": instance}, outcome, status)
                )
    if len(out) > MAX_RECORDS:
        return [f"the file holds {len(out):,} records; at most {MAX_RECORDS:,}"]
    return out


def _swebench_instances(document: dict) -> list:
    if len(document) > MAX_RECORDS:
        return [f"the file holds {len(document):,} records; at most {MAX_RECORDS:,}"]
    out: list = []
    for instance, report in document.items():
        where = f"record {instance!r:.80}"
        if not isinstance(report["resolved"], bool):
            out.append(f"{where}: `resolved` must be true or false, not {report['resolved']!r:.80}")
            continue
        extra = {
            k: v for k, v in report.items() if k != "resolved" and isinstance(v, str | int | float | bool)
        }
        outcome = "success" if report["resolved"] else "failure"
        out.append(_checked(where, {"external_id": instance, **extra}, outcome, None))
    return out


def _objects(items) -> list:
    out: list = []
    for n, (where, item) in enumerate(items, 1):
        if n > MAX_RECORDS:
            return [f"the file holds more than {MAX_RECORDS:,} records"]
        if not isinstance(item, dict):
            out.append(f"{where}: not an object")
            continue
        out.append(_record(where, item))
    return out


def _jsonl(text: str) -> list:
    def items() -> Iterator[tuple[str, Any]]:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                yield f"line {n}", _json(line)
            except OutcomeFileError as error:
                yield f"line {n}", f"line {n}: {error.problems[0].removeprefix('line 1: ')}"

    out: list = []
    for where, item in items():
        out.extend([item] if isinstance(item, str) else _objects([(where, item)]))
        if len(out) > MAX_RECORDS:
            return [f"the file holds more than {MAX_RECORDS:,} records"]
    return out


def _csv(text: str) -> list:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = reader.fieldnames or []
    if not any(key in columns for key in ID_KEYS):
        return [
            f"line 1: the header needs an `external_id` column (found: {', '.join(columns)[:200] or 'none'})"
        ]
    out: list = []
    try:
        for row in reader:
            if reader.line_num - 1 > MAX_RECORDS:
                return [f"the file holds more than {MAX_RECORDS:,} records"]
            if None in row:
                out.append(f"line {reader.line_num}: more cells than the header has columns")
                continue
            values = {key: value for key, value in row.items() if value not in (None, "")}
            out.append(_record(f"line {reader.line_num}", values))
    except csv.Error as error:
        out.append(f"line {reader.line_num}: {error}")
    return out


def _record(where: str, item: dict[str, Any]) -> OutcomeRecord | str:
    outcome = item.get("outcome")
    if outcome is not None and not isinstance(outcome, str):
        return f"{where}: outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r:.80}"
    return _checked(where, item, outcome.strip().lower() if outcome else None, None)


def _checked(
    where: str, item: dict[str, Any], outcome: str | None, status: str | None
) -> OutcomeRecord | str:
    key = next((key for key in ID_KEYS if key in item), None)
    external_id = item.get(key) if key else None
    if not isinstance(external_id, str) or not external_id.strip():
        return f"{where}: no external_id (a non-empty string naming the trace)"
    external_id = external_id.strip()
    if len(external_id) > MAX_ID_CHARS:
        return f"{where}: the external id is {len(external_id)} characters long; at most {MAX_ID_CHARS}"
    if outcome is not None and outcome not in OUTCOMES:
        return f"{where}: outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r:.80}"
    score = _score(item.get("score"))
    if isinstance(score, str):
        return f"{where}: {score}"
    metadata = {k: v for k, v in item.items() if k not in (*ID_KEYS, "outcome", "score", "metadata")}
    nested = item.get("metadata")
    if nested is not None and not isinstance(nested, dict):
        return f"{where}: `metadata` must be an object"
    metadata.update(nested or {})
    if status:
        metadata["swebench_status"] = status
    size = len(json.dumps(metadata, ensure_ascii=False, default=str))
    if size > MAX_METADATA_BYTES:
        return f"{where}: its metadata is {size:,} bytes; at most {MAX_METADATA_BYTES:,}"
    return OutcomeRecord(where, external_id, outcome, score, metadata)


def _score(value: Any) -> float | str | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return f"score must be a number, not {value!r}"
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        return f"score must be a number, not {value!r:.80}"
    if not math.isfinite(number):
        return f"score must be a finite number, not {value!r:.80}"
    return number


def _duplicates(records: list[OutcomeRecord]) -> list[str]:
    first: dict[str, str] = {}
    problems = []
    for record in records:
        if record.external_id in first:
            problems.append(
                f"{record.where}: {record.external_id!r:.80} is given again (first: {first[record.external_id]})"
            )
        else:
            first[record.external_id] = record.where
    return problems
