"""Generated containers, honest and hostile, in every container the importers accept: a parquet file
(every codec), an Inspect ``.eval`` zip, and dataset folders holding gzip-compressed JSONL or Arrow IPC
(zstd/lz4 buffers). Hostile ones are decompression bombs (a value repeated by reference, a run of one byte),
truncated files and flipped bytes.

The promise, for each: the import either succeeds and the stored traces read back equal to what was
generated, or fails with an error that names the file, storing nothing; never a traceback (any exception but
the import's own failure fails the test); and memory stays bounded: every import runs with values of at most
1 MB and records of 2 MB, under a memory ceiling of 256 MB (IMPORT_MAX_MEMORY_MB) far below what the bombs
decode to (up to 64 MB a row), and no import may end on that ceiling, so the bounded readers stopped every
bomb before its values existed.
"""

from __future__ import annotations

import gzip
import io
import json
import tempfile
import zipfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from traces.importers import limits
from traces.models import Batch, Trace
from traces.services import ImportFailed, do_import_files

pytestmark = pytest.mark.django_db

MB = limits.MB
# Text the database holds (NUL and lone surrogates are another property's business).
TEXT = st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=40)
ROWS = st.lists(st.tuples(TEXT, st.lists(TEXT, min_size=1, max_size=3)), min_size=1, max_size=5)
# What goes wrong with a container: nothing, a bomb of some size, or damage at some place.
HOSTILE = st.one_of(
    st.just(("none", 0)),
    st.tuples(st.just("bomb"), st.integers(min_value=1, max_value=64)),
    st.tuples(st.sampled_from(["truncate", "flip"]), st.integers(min_value=0, max_value=10_000)),
)


def traces_of(rows: list[tuple[str, list[str]]]) -> dict[str, list[str]]:
    """Generated rows keyed by a unique id: the task, then the messages (never empty: an empty task is
    taken from the first message, an empty message is no step)."""
    return {
        f"t{i}": [f"task {task}", *(f"m{j} {text}" for j, text in enumerate(messages))]
        for i, (task, messages) in enumerate(rows)
    }


def chat(texts: list[str]) -> list[dict]:
    roles = ["user", "assistant"]
    return [{"role": roles[i % 2], "content": text} for i, text in enumerate(texts)]


def damaged(data: bytes, hostile: tuple[str, int]) -> bytes:
    kind, at = hostile
    if kind == "truncate":
        return data[: at % max(len(data), 1)]
    if kind == "flip" and data:
        at %= len(data)
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]
    return data


def faithful(expected: dict, hostile: tuple[str, int]) -> dict | None:
    return None if hostile[0] == "flip" else expected


def check_import(
    path: Path, name: str, expected: dict[str, list[str]] | None, mentions: str, honest: bool = False
) -> None:
    """The promise (see the module doc) for one import of `path`, shown to the user as `name`; `expected`
    None when a flipped byte may have made another valid file (a letter of a text, a member's name)."""
    with limits.override(max_value_bytes=MB, max_record_bytes=2 * MB, max_memory_bytes=256 * MB):
        try:
            result = do_import_files([(path, name)], batch_name="fuzz")
        except ImportFailed as failure:
            errors = failure.result.errors
            assert not honest, errors  # an undamaged file without a bomb imports
            assert errors, "a failed import says why"
            for error in errors:
                assert mentions in error, error
                assert "IMPORT_MAX_MEMORY_MB" not in error, error  # a bomb decoded: the readers missed it
            assert not Trace.objects.exists() and not Batch.objects.exists()  # never a partial import
            return
    try:
        stored = {
            trace.external_id: [trace.task, *(s.content for s in trace.steps.order_by("index"))]
            for trace in Trace.objects.all()
        }
        if expected is not None:
            assert result.traces == len(expected) and stored == expected
        else:
            assert result.traces == len(stored)
    finally:
        Batch.objects.all().delete()  # the next example starts from an empty database


def parquet_bytes(rows: dict, compression: str, bomb: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist(
        [{"id": key, "task": texts[0], "messages": chat(texts[1:])} for key, texts in rows.items()]
    )
    if bomb:  # one value of `bomb` MB stored once and referred to by every row
        filler = pa.DictionaryArray.from_arrays(
            pa.array([0] * len(table), pa.int32()), pa.array(["x" * bomb * MB])
        )
        table = table.append_column("notes", filler)
    out = io.BytesIO()
    pq.write_table(table, out, compression=compression)
    return out.getvalue()


@given(
    rows=ROWS,
    compression=st.sampled_from(["zstd", "gzip", "snappy", "brotli", "lz4", "none"]),
    hostile=HOSTILE,
)
def test_a_parquet_file_imports_equal_or_fails_naming_it(rows, compression, hostile):
    expected = traces_of(rows)
    data = parquet_bytes(expected, compression, hostile[1] if hostile[0] == "bomb" else 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload-x.parquet"
        path.write_bytes(damaged(data, hostile))
        check_import(
            path, "traces.parquet", faithful(expected, hostile), "traces.parquet", hostile[0] == "none"
        )


def eval_bytes(rows: dict, bomb: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", json.dumps({"eval": {"task": "t", "model": "m"}}))
        for n, (key, texts) in enumerate(rows.items(), start=1):
            sample = {"id": key, "epoch": 1, "input": texts[0], "messages": chat(texts[1:])}
            if bomb:
                sample["pad"] = " " * (bomb * MB)
            archive.writestr(f"samples/{n}_epoch_1.json", json.dumps(sample))
    return out.getvalue()


@given(rows=ROWS, hostile=HOSTILE)
def test_an_eval_zip_imports_equal_or_fails_naming_it(rows, hostile):
    expected = traces_of(rows)
    data = eval_bytes(expected, hostile[1] if hostile[0] == "bomb" else 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "upload.eval"
        path.write_bytes(damaged(data, hostile))
        # Inspect names a sample "<id>-e<epoch>" and takes the task from its input.
        wanted = {f"{key}-e1": texts for key, texts in expected.items()}
        check_import(path, "run.eval", faithful(wanted, hostile), "run.eval", hostile[0] == "none")


def gzip_jsonl(rows: dict, bomb: int) -> bytes:
    lines = "".join(
        json.dumps({"id": key, "task": texts[0], "messages": chat(texts[1:])}) + "\n"
        for key, texts in rows.items()
    ).encode()
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb") as stream:
        stream.write(lines)
        for _ in range(bomb):  # blank lines, a thousand times smaller compressed
            stream.write(b"\n" * MB)
    return out.getvalue()


def arrow_ipc(rows: dict, compression: str, bomb: int) -> bytes:
    import pyarrow as pa

    table = pa.Table.from_pylist(
        [
            {"id": key, "task": texts[0], "messages": chat(texts[1:]), "notes": "x" * bomb * MB}
            for key, texts in rows.items()
        ]
    )
    out = pa.BufferOutputStream()
    with pa.ipc.new_stream(
        out, table.schema, options=pa.ipc.IpcWriteOptions(compression=compression)
    ) as writer:
        for batch in table.to_batches(max_chunksize=1):
            writer.write_batch(batch)
    return out.getvalue().to_pybytes()


@given(rows=ROWS, kind=st.sampled_from(["jsonl.gz", "arrow-zstd", "arrow-lz4"]), hostile=HOSTILE)
def test_a_dataset_folder_imports_equal_or_fails_naming_its_file(rows, kind, hostile):
    expected = traces_of(rows)
    bomb = hostile[1] if hostile[0] == "bomb" else 0
    if kind == "jsonl.gz":
        name, data = "train.jsonl.gz", gzip_jsonl(expected, bomb)
    else:
        name, data = "train.arrow", arrow_ipc(expected, kind.split("-")[1], min(bomb, 8))
    with tempfile.TemporaryDirectory() as folder:
        dataset = Path(folder) / "dataset"
        (dataset / "data").mkdir(parents=True)
        (dataset / "dataset_info.json").write_text("{}")  # a dataset, not a folder of trace files
        (dataset / "data" / name).write_bytes(damaged(data, hostile))
        check_import(dataset, "dataset", faithful(expected, hostile), "dataset", hostile[0] == "none")
