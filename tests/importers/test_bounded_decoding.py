"""Every decoder bounded: parquet, Arrow, gzip and zip are decoded under one budget (decoded bytes, ratio,
value and record sizes) and stop before a bomb's values exist; the import's memory ceiling stops the rest."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import bombs
from traces.importers import hf_dataset, limits
from traces.importers._hf_rows import check_data_files
from traces.importers.records import TraceFormatError

MB = limits.MB


@contextmanager
def ceiling(mb: int) -> Iterator[None]:
    """The import's memory ceiling at `mb` MB over what the test process holds now."""
    with limits.override(max_memory_bytes=mb * MB), limits.memory_ceiling():
        yield


def parse_parquet(data: bytes, name: str = "t.parquet") -> list:
    return list(hf_dataset.parse(io.BytesIO(data), name))


def test_the_issue_bomb_is_refused_from_the_parquet_footer_before_any_value_is_read():
    data = bombs.parquet_bomb()
    assert len(data) < 4096
    # Under a ceiling far below one of its values: nothing of it is decoded.
    with ceiling(64), pytest.raises(TraceFormatError) as error:
        parse_parquet(data, "bomb.parquet")
    assert str(error.value) == (
        "bomb.parquet: the file inflates more than 200 times its compressed size "
        "(a decompression bomb?; limit IMPORT_MAX_ZIP_RATIO)"
    )


@pytest.mark.parametrize("compression", ["zstd", "gzip", "snappy", "brotli", "lz4", "none"])
def test_an_ordinary_parquet_file_reads_back_equal_whatever_its_codec(compression):
    data, rows = bombs.parquet_traces(5, compression)
    records = parse_parquet(data)
    assert [r.external_id for r in records] == [row["id"] for row in rows]
    assert [[s.content for s in r.steps] for r in records] == [
        [m["content"] for m in row["messages"]] for row in rows
    ]


def test_a_value_repeated_by_reference_stops_at_the_ratio_as_it_is_decoded():
    """The footer is honest (the value does not compress); the rows referring to it are what inflates."""
    data = bombs.parquet_dictionary_bomb()
    with (
        ceiling(256),
        pytest.raises(TraceFormatError, match=r"d\.parquet, record \d+: the file inflates more than 200"),
    ):
        parse_parquet(data, "d.parquet")


def test_a_parquet_value_or_row_beyond_the_limits_names_its_record():
    data, _ = bombs.parquet_traces(3)
    with limits.override(max_value_bytes=10), pytest.raises(TraceFormatError) as error:
        parse_parquet(data, "v.parquet")
    assert "v.parquet, record 1: a single value is longer than 10 bytes (limit IMPORT_MAX_VALUE_MB)" in str(
        error.value
    )
    with limits.override(max_record_bytes=40), pytest.raises(TraceFormatError) as error:
        parse_parquet(data, "r.parquet")
    assert "r.parquet, record 1: record is larger than 40 bytes" in str(error.value)


def test_a_file_that_decodes_past_the_archive_limit_is_refused_from_its_footer():
    data, _ = bombs.parquet_traces(50)
    with limits.override(max_archive_bytes=1000), pytest.raises(TraceFormatError) as error:
        parse_parquet(data, "a.parquet")
    assert "the file inflates to more than 1000 bytes (limit IMPORT_MAX_ARCHIVE_MB)" in str(error.value)


def test_garbage_after_the_parquet_magic_is_an_error_naming_the_file():
    with pytest.raises(TraceFormatError, match=r"^g\.parquet: not a readable parquet file"):
        parse_parquet(b"PAR1" + b"\x00" * 100 + b"PAR1", "g.parquet")


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("train.jsonl.gz", bombs.gzip_bomb, "the file inflates more than 200 times"),
        ("data-00000-of-00001.arrow", bombs.arrow_bomb, "the file inflates more than 200 times"),
        ("train.parquet", bombs.parquet_bomb, "the file inflates more than 200 times"),
        ("train.zip", bombs.zip_bomb, "member train.jsonl inflates more than 200 times"),
    ],
)
def test_a_dataset_folder_bomb_is_stopped_before_datasets_reads_it(tmp_path: Path, name, make, reason):
    path = bombs.write(tmp_path / "ds" / name, make())
    with ceiling(128), pytest.raises(TraceFormatError) as error:
        check_data_files(tmp_path / "ds")
    assert str(error.value).startswith(str(path)) and reason in str(error.value)


def test_deep_json_in_a_dataset_folder_is_refused_before_datasets_parses_it(tmp_path: Path):
    deep = "[" * 10_000 + "]" * 10_000
    bombs.write(tmp_path / "ds" / "train.jsonl", f'{{"id": "a", "steps": {deep}}}\n'.encode())
    with pytest.raises(TraceFormatError, match="nested deeper than 100 levels"):
        check_data_files(tmp_path / "ds")


def test_the_memory_ceiling_turns_a_runaway_allocation_into_a_memory_error_and_is_lifted_after():
    import resource

    before = resource.getrlimit(resource.RLIMIT_DATA)
    with limits.override(max_memory_bytes=64 * MB):
        with limits.memory_ceiling(), pytest.raises(MemoryError):
            bytearray(512 * MB)
        assert "more than 64 MB of memory while decoding" in limits.out_of_memory()
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    assert len(bytearray(128 * MB)) == 128 * MB


def test_a_nested_bomb_that_arrow_expands_while_decoding_meets_the_memory_ceiling():
    """References in a nested column are expanded by Arrow's decoder itself: the ceiling stops it."""
    with ceiling(256), pytest.raises(MemoryError):
        parse_parquet(bombs.parquet_nested_bomb(), "n.parquet")
