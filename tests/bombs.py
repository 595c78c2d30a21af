"""Decompression bombs and their honest neighbours, generated for the tests (no data file is shipped).

Each bomb is small on disk and huge once decoded, built without ever holding the decoded bytes: a parquet
column stores one value once in its dictionary and refers to it from every row, gzip is fed in chunks.
"""

from __future__ import annotations

import gzip
import io
import os
from pathlib import Path

MB = 1024 * 1024


def parquet_bomb(rows: int = 64, value_mb: int = 30, compression: str = "zstd") -> bytes:
    """Issue 32's file: `rows` traces whose step text is one value of `value_mb` MB, stored once (a
    dictionary page) and compressed (zstd: a couple of KB on disk)."""
    import pyarrow as pa

    value = "a" * (value_mb * MB)
    messages = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([value]))
    return _parquet({"id": pa.array([f"t{i}" for i in range(rows)]), "messages": messages}, compression)


def parquet_dictionary_bomb(rows: int = 2000, value_kb: int = 512) -> bytes:
    """A value that does not compress (so the footer's ratio is honest), repeated by reference in every
    row: only the decoded bytes show the bomb."""
    import pyarrow as pa

    value = os.urandom(value_kb * 1024 // 2).hex()
    messages = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array([value]))
    return _parquet({"id": pa.array([f"t{i}" for i in range(rows)]), "messages": messages}, "zstd")


def parquet_nested_bomb(rows: int = 64, refs: int = 200, value_kb: int = 256) -> bytes:
    """Steps as a list column whose items all refer to one stored value: Arrow expands the references of a
    nested column as it decodes a batch, before any check can measure it (the memory ceiling's case)."""
    import pyarrow as pa

    value = os.urandom(value_kb * 1024 // 2).hex()
    items = pa.DictionaryArray.from_arrays(pa.array([0] * (rows * refs), pa.int32()), pa.array([value]))
    offsets = pa.array([i * refs for i in range(rows + 1)], pa.int32())
    steps = pa.ListArray.from_arrays(offsets, items)
    # Without Arrow's schema in the footer, as other writers leave it: the reader cannot know the values
    # were a dictionary and expands them.
    return _parquet(
        {"id": pa.array([f"t{i}" for i in range(rows)]), "steps": steps}, "zstd", store_schema=False
    )


def parquet_traces(rows: int = 3, compression: str = "zstd") -> tuple[bytes, list[dict]]:
    """An ordinary parquet file of chat traces, and the rows it holds."""
    import pyarrow as pa

    data = [
        {
            "id": f"ok-{i}",
            "messages": [
                {"role": "user", "content": f"task {i}"},
                {"role": "assistant", "content": f"answer {i} " + os.urandom(8).hex()},
            ],
        }
        for i in range(rows)
    ]
    return _parquet(pa.Table.from_pylist(data), compression), data


def gzip_bomb(decoded_mb: int = 64) -> bytes:
    """Spaces, gzip-compressed about a thousand times, fed in chunks."""
    out = io.BytesIO()
    chunk = b" " * MB
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as stream:
        for _ in range(decoded_mb):
            stream.write(chunk)
    return out.getvalue()


def zip_bomb(member: str = "train.jsonl", decoded_mb: int = 64) -> bytes:
    """A zip archive of one member of spaces, written in chunks."""
    import zipfile

    out = io.BytesIO()
    with (
        zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open(member, "w", force_zip64=True) as stream,
    ):
        for _ in range(decoded_mb):
            stream.write(b" " * MB)
    return out.getvalue()


def arrow_bomb(rows: int = 64, value_mb: int = 8, compression: str = "zstd") -> bytes:
    """An Arrow IPC file (a save_to_disk folder's data) whose buffers are zstd-compressed spaces."""
    import pyarrow as pa

    out = pa.BufferOutputStream()
    schema = pa.schema([("id", pa.string()), ("messages", pa.string())])
    options = pa.ipc.IpcWriteOptions(compression=compression)
    value = " " * (value_mb * MB)
    with pa.ipc.new_stream(out, schema, options=options) as writer:
        for i in range(rows):  # one row a batch: only one value is ever held here
            writer.write_batch(pa.record_batch([pa.array([f"t{i}"]), pa.array([value])], schema=schema))
    return out.getvalue().to_pybytes()


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _parquet(columns, compression: str, **options) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = columns if isinstance(columns, pa.Table) else pa.table(columns)
    out = io.BytesIO()
    pq.write_table(table, out, compression=compression, **options)
    return out.getvalue()
