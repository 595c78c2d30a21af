"""Rows to a dataset folder that `datasets` loads as it is: parquet configs, streamed in row groups.

Pure (no Django): dict rows in, parquet files out, so the layout can be tested and benchmarked alone.
Why pyarrow's ParquetWriter and not `datasets.Dataset.from_list`: a project may hold a million traces with
megabytes of text each; the writer appends one row group per chunk of rows and never holds more than one
chunk, whatever the project's size. A new shard starts every ``rows_per_file`` rows so no single file
grows past what the Hub and `datasets` handle comfortably; the card points at each config's shards with a
glob.

A config without rows is not written at all: `datasets` cannot read a parquet file with no row group,
and the card says the config is absent and why.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from traces.importers.hf_export import CONFIG_ANNOTATIONS, CONFIG_GOLD, CONFIG_TRACES

ROWS_PER_GROUP = 500
BYTES_PER_GROUP = 64 * 1024 * 1024
ROWS_PER_FILE = 100_000
SPLIT = "train"


@dataclass(frozen=True)
class ModeColumn:
    """A failure mode and its 0/1 column (``label_`` + the code made a safe column name)."""

    code: str
    name: str
    column: str


def mode_columns(modes: Iterable[tuple[str, str]]) -> list[ModeColumn]:
    """(code, name) pairs to columns; codes that sanitise alike (``FM-1.3``, ``FM_1_3``) get a suffix."""
    out: list[ModeColumn] = []
    used: set[str] = set()
    for code, name in modes:
        base = "label_" + (re.sub(r"[^0-9a-zA-Z]+", "_", code).strip("_").lower() or "mode")
        column, n = base, 2
        while column in used:
            column, n = f"{base}_{n}", n + 1
        used.add(column)
        out.append(ModeColumn(code=code, name=name, column=column))
    return out


STEP_TYPE = pa.struct(
    [
        ("index", pa.int32()),
        ("parent", pa.int32()),
        ("agent", pa.string()),
        ("role", pa.string()),
        ("kind", pa.string()),
        ("content", pa.string()),
        ("tool_name", pa.string()),
        ("tool_args", pa.string()),  # JSON text: arguments have no common shape across agents
        ("tool_call_id", pa.string()),
        ("timestamp", pa.string()),
        ("tokens", pa.int64()),
        ("duration_ms", pa.int64()),
    ]
)
TRACES_SCHEMA = pa.schema(
    [
        ("trace_uid", pa.string()),
        ("id", pa.string()),
        ("batch", pa.string()),
        ("benchmark", pa.string()),
        ("system", pa.string()),
        ("model", pa.string()),
        ("task", pa.string()),
        ("outcome", pa.string()),
        ("score", pa.float64()),
        ("step_count", pa.int32()),
        ("metadata", pa.string()),  # JSON text of the trace's metadata
        ("steps", pa.list_(STEP_TYPE)),
    ]
)


def annotations_schema(modes: Sequence[ModeColumn]) -> pa.Schema:
    detail = pa.struct(
        [
            ("mode", pa.string()),
            ("primary", pa.bool_()),
            ("steps", pa.list_(pa.int32())),
            ("quotes", pa.list_(pa.string())),
            ("note", pa.string()),
        ]
    )
    return pa.schema(
        [
            ("trace_uid", pa.string()),
            ("trace_id", pa.string()),
            ("annotator", pa.string()),
            ("annotator_kind", pa.string()),
            ("labels", pa.list_(pa.string())),
            ("primary_label", pa.string()),
            ("evidence_steps", pa.list_(pa.int32())),
            ("no_failure", pa.bool_()),
            ("ambiguous", pa.bool_()),
            ("confidence", pa.int8()),
            ("note", pa.string()),
            ("submitted_at", pa.string()),
            ("label_details", pa.list_(detail)),
            *[(m.column, pa.int8()) for m in modes],
        ]
    )


def gold_schema(modes: Sequence[ModeColumn]) -> pa.Schema:
    detail = pa.struct(
        [
            ("mode", pa.string()),
            ("primary", pa.bool_()),
            ("steps", pa.list_(pa.int32())),
            ("source", pa.string()),
            ("reason_code", pa.string()),
            ("note", pa.string()),
            ("decided_by", pa.string()),
        ]
    )
    return pa.schema(
        [
            ("trace_uid", pa.string()),
            ("trace_id", pa.string()),
            ("status", pa.string()),
            ("labels", pa.list_(pa.string())),
            ("primary_label", pa.string()),
            ("evidence_steps", pa.list_(pa.int32())),
            ("disputed", pa.list_(pa.string())),
            ("adjudicator", pa.string()),
            ("resolved_at", pa.string()),
            ("note", pa.string()),
            ("label_details", pa.list_(detail)),
            *[(m.column, pa.int8()) for m in modes],
        ]
    )


@dataclass
class ConfigFiles:
    """What was written for one config: its name, row count and shard files (relative to the folder)."""

    name: str
    rows: int = 0
    files: list[str] = field(default_factory=list)

    @property
    def pattern(self) -> str:
        return f"{self.name}/{SPLIT}-*.parquet"


class ConfigWriter:
    """Append rows; every ``rows_per_group`` rows (or ``bytes_per_group`` of text) become a row group."""

    def __init__(
        self,
        folder: Path,
        config: str,
        schema: pa.Schema,
        *,
        rows_per_group: int = ROWS_PER_GROUP,
        bytes_per_group: int = BYTES_PER_GROUP,
        rows_per_file: int = ROWS_PER_FILE,
    ) -> None:
        self.folder, self.schema = Path(folder), schema
        self.result = ConfigFiles(name=config)
        self.rows_per_group, self.bytes_per_group, self.rows_per_file = (
            rows_per_group,
            bytes_per_group,
            rows_per_file,
        )
        self._buffer: list[dict[str, Any]] = []
        self._buffer_bytes = 0
        self._writer: pq.ParquetWriter | None = None
        self._in_file = 0

    def write(self, row: dict[str, Any], size_hint: int = 0) -> None:
        self._buffer.append(row)
        self._buffer_bytes += size_hint
        if len(self._buffer) >= self.rows_per_group or self._buffer_bytes >= self.bytes_per_group:
            self._flush()

    def close(self) -> ConfigFiles:
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        return self.result

    def _flush(self) -> None:
        rows = self._buffer
        while rows:
            if self._writer is None or self._in_file >= self.rows_per_file:
                self._open_shard()
            take = rows[: self.rows_per_file - self._in_file]
            rows = rows[len(take) :]
            self._writer.write_table(pa.Table.from_pylist(take, schema=self.schema))
            self._in_file += len(take)
            self.result.rows += len(take)
        self._buffer, self._buffer_bytes = [], 0

    def _open_shard(self) -> None:
        if self._writer is not None:
            self._writer.close()
        relative = f"{self.result.name}/{SPLIT}-{len(self.result.files):05d}.parquet"
        path = self.folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(str(path), self.schema, compression="zstd")
        self.result.files.append(relative)
        self._in_file = 0


def write_config(
    folder: Path,
    config: str,
    schema: pa.Schema,
    rows: Iterable[dict[str, Any]],
    *,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    **sizes: int,
) -> ConfigFiles:
    """Stream ``rows`` into the config's shards; ``on_row`` sees each row first (tallies, progress),
    including its private ``_``-prefixed keys, which are then dropped (``_bytes`` sizes the row groups)."""
    writer = ConfigWriter(folder, config, schema, **sizes)
    try:
        for row in rows:
            if on_row is not None:
                on_row(row)
            size = row.pop("_bytes", 0)
            for key in [k for k in row if k.startswith("_")]:
                del row[key]
            writer.write(row, size_hint=size)
    finally:
        result = writer.close()
    return result


def zip_folder(folder: Path, target: Path) -> Path:
    """The folder as one zip (parquet is already compressed: stored, not deflated, except text files)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(p for p in Path(folder).rglob("*") if p.is_file()):
            method = zipfile.ZIP_STORED if path.suffix == ".parquet" else zipfile.ZIP_DEFLATED
            archive.write(path, path.relative_to(folder).as_posix(), compress_type=method)
    return target


CONFIG_ORDER = (CONFIG_TRACES, CONFIG_ANNOTATIONS, CONFIG_GOLD)
