"""Rows of a Hugging Face dataset, wherever it lives, read lazily with `datasets`.

Why one helper: a dataset can be a Hub repo (``hf://owner/name``), a folder written by
``save_to_disk``, a folder of parquet/jsonl/arrow files (with or without a README that declares
configs) or a single data file. Each needs a different `datasets` call, but every importer wants the
same thing: an iterator of plain dict rows that never holds the whole dataset in memory (streaming
for files and the Hub, memory-mapped Arrow for ``save_to_disk`` folders) and failures turned into a
:class:`TraceFormatError` that names the source and the reason.

`datasets` is imported inside the functions: it takes most of a second to import, and the parser
registry is loaded by every process that never reads a dataset.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import limits
from .records import TraceFormatError

HF_PREFIX = "hf://"
_REPO_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
_DATA_SUFFIXES = {
    ".parquet": "parquet",
    ".jsonl": "json",
    ".json": "json",
    ".csv": "csv",
    ".arrow": "arrow",
}
DISK_MARKERS = ("state.json", "dataset_dict.json")


def repo_id_of(source: str) -> str | None:
    """``owner/name`` for an ``hf://owner/name`` source, None for a local path."""
    if not source.startswith(HF_PREFIX):
        return None
    repo = source[len(HF_PREFIX) :].strip("/")
    if not _REPO_ID.match(repo):
        raise TraceFormatError(f"{repo!r} is not a Hub dataset id; expected hf://owner/name", file=source)
    return repo


def is_remote(source: str) -> bool:
    return source.startswith(HF_PREFIX)


def looks_like_dataset_folder(folder: Path) -> bool:
    """A folder that `datasets` reads as one dataset rather than a pile of trace files."""
    if not folder.is_dir():
        return False
    if any((folder / marker).exists() for marker in (*DISK_MARKERS, "dataset_info.json")):
        return True
    if card_configs(folder):
        return True
    # Names first, from one listing a folder: a folder of thousands of trace files needs no stat (nor Path)
    # of each. Links to folders are not followed (as Path.rglob).
    for root, _, names in os.walk(folder):
        for name in names:
            if os.path.splitext(name)[1] in (".parquet", ".arrow") and os.path.isfile(
                os.path.join(root, name)
            ):
                return True
    return False


def card_front_matter(folder: Path) -> dict:
    """The YAML header of the folder's README.md (the dataset card), {} when absent or malformed."""
    import yaml

    readme = folder / "README.md"
    if not readme.is_file():
        return {}
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    if end < 0:
        return {}
    try:
        data = yaml.safe_load(text[3:end])
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def card_configs(folder: Path) -> list[str]:
    configs = card_front_matter(folder).get("configs")
    if not isinstance(configs, list):
        return []
    return [str(c.get("config_name")) for c in configs if isinstance(c, dict) and c.get("config_name")]


def config_names(source: str) -> list[str]:
    """Configs a dataset declares (from its card); [] when it declares none or cannot be asked."""
    repo = repo_id_of(source)
    if repo is None:
        return card_configs(Path(source))
    import datasets

    try:
        return list(datasets.get_dataset_config_names(repo))
    except Exception as error:  # offline, missing repo: the caller then reads the default config
        raise source_error(source, error) from error


def iter_rows(source: str, *, split: str | None = None, config: str | None = None) -> Iterator[dict]:
    """Stream the rows of one split of one config; errors while reading also name the source."""
    dataset = open_dataset(source, split=split, config=config)
    try:
        yield from dataset
    except TraceFormatError:
        raise
    except Exception as error:
        raise source_error(source, error) from error


def column_names(dataset: Any) -> list[str] | None:
    features = getattr(dataset, "features", None)
    if features:
        return list(features)
    names = getattr(dataset, "column_names", None)
    return list(names) if names else None


def open_dataset(source: str, *, split: str | None = None, config: str | None = None):
    """An iterable over the rows (a streaming IterableDataset, or a memory-mapped Dataset)."""
    import datasets

    repo = repo_id_of(source)
    try:
        if repo is not None:
            loaded = datasets.load_dataset(repo, name=config, split=split, streaming=True)
        else:
            path = Path(source)
            if not path.exists():
                raise TraceFormatError("no such file or folder", file=source)
            check_data_files(path)
            if path.is_dir() and any((path / m).exists() for m in DISK_MARKERS):
                loaded = datasets.load_from_disk(str(path))
            elif path.is_file():
                builder = _DATA_SUFFIXES.get(path.suffix.lower())
                if builder is None:
                    raise TraceFormatError(
                        f"cannot read {path.suffix or 'this file'} as a dataset; "
                        f"expected one of {', '.join(_DATA_SUFFIXES)}",
                        file=source,
                    )
                loaded = datasets.load_dataset(builder, data_files=str(path), split="train", streaming=True)
            else:
                loaded = datasets.load_dataset(str(path), name=config, split=split, streaming=True)
        return _pick_split(loaded, split, source)
    except TraceFormatError:
        raise
    except Exception as error:
        raise source_error(source, error) from error


def _pick_split(loaded: Any, split: str | None, source: str):
    """A DatasetDict (no split asked for, or a save_to_disk dict): the asked split, else train, else the
    first one."""
    if not hasattr(loaded, "keys"):
        return loaded
    names = list(loaded.keys())
    if split is not None:
        if split not in names:
            raise TraceFormatError(f"no split {split!r}; the dataset has {', '.join(names)}", file=source)
        return loaded[split]
    if not names:
        raise TraceFormatError("the dataset has no splits", file=source)
    return loaded["train" if "train" in names else names[0]]


def source_error(source: str, error: Exception) -> TraceFormatError:
    repo = repo_id_of(source) if is_remote(source) else None
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if repo is not None:
        if isinstance(error, ConnectionError | OSError) and "reach" in reason.lower():
            reason += (
                " (the Hub is not reachable from here: check the network, HF_ENDPOINT or HF_HUB_OFFLINE)"
            )
        return TraceFormatError(f"could not read the Hugging Face dataset {repo!r}: {reason}", file=source)
    return TraceFormatError(f"could not read the dataset: {reason}", file=source)


# Parquet and Arrow, decoded under a budget ------------------------------------------------------------------

_ROWS_AT_ONCE = 64  # rows decoded into one Arrow batch, at most (fewer when rows are large)


def parquet_rows(stream: Any, filename: str, budget: limits.DecodeBudget | None = None) -> Iterator[dict]:
    """The rows of one parquet file as plain dicts, decoded under `budget` (see parquet_batches)."""
    bounds = limits.current()
    row = 1
    for batch, decoded in parquet_batches(stream, filename, budget):
        try:
            if decoded <= bounds.max_record_bytes:
                yield from batch.to_pylist()
            else:  # each row is within the record limit; together they need not be
                for i in range(batch.num_rows):
                    yield from batch.slice(i, 1).to_pylist()
        except UnicodeDecodeError as error:  # text that is not UTF-8 (a damaged page without checksums)
            raise TraceFormatError(f"unreadable parquet data: {error}", file=filename, record=row) from None
        row += batch.num_rows


def parquet_batches(
    stream: Any, filename: str, budget: limits.DecodeBudget | None = None
) -> Iterator[tuple[Any, int]]:
    """(Arrow batch, its decoded bytes) of one parquet file, every limit checked before a value is
    materialised in Python.

    Before any value is read, the footer's column chunk sizes: everything the file decodes to
    (IMPORT_MAX_ARCHIVE_MB) and its ratio to the compressed bytes (IMPORT_MAX_ZIP_RATIO), whatever the codec
    (zstd, gzip, snappy, brotli, lz4). Then batches of a bounded number of rows (fewer than 64 when a row
    group's rows are large), with the text columns kept dictionary-encoded as stored, so that one stored value
    repeated in a million rows is decoded once; each batch's rows are measured from the Arrow buffers (the
    longest value, the row's bytes) and counted against the budget, which also stops a dictionary that
    expands past the ratio, before the caller turns a row into Python values."""
    import pyarrow.parquet as pq

    budget = budget or limits.DecodeBudget()
    bounds = budget.limits
    try:
        # pre_buffer off: a column chunk is read when its batch is, not a row group's worth ahead.
        parquet = pq.ParquetFile(stream, pre_buffer=False)
        meta = parquet.metadata
        compressed, per_row, dictionary = _parquet_sizes(parquet, filename, budget)
        if dictionary:
            parquet = pq.ParquetFile(stream, metadata=meta, read_dictionary=dictionary, pre_buffer=False)
    except TraceFormatError:
        raise
    except Exception as error:
        raise TraceFormatError(f"not a readable parquet file: {error}", file=filename) from error
    batch_size = max(1, min(_ROWS_AT_ONCE, bounds.max_record_bytes // max(per_row, 1)))
    decoded, row = 0, 1
    try:
        for batch in parquet.iter_batches(batch_size=batch_size, use_threads=False):
            size = _check_rows(batch, row, filename, bounds)
            decoded += size
            try:
                budget.check(decoded, compressed)
            except limits.LimitExceeded as exc:
                raise TraceFormatError(str(exc), file=filename, record=row) from None
            yield batch, size
            row += batch.num_rows
    except (TraceFormatError, MemoryError):
        raise
    except Exception as error:
        raise TraceFormatError(f"unreadable parquet data: {error}", file=filename) from error
    budget.spend(decoded)


def _parquet_sizes(parquet: Any, filename: str, budget: limits.DecodeBudget) -> tuple[int, int, list[str]]:
    """(compressed bytes, largest decoded bytes per row of a row group, the text columns stored with a
    dictionary), from the footer; the file's decoded size and ratio checked."""
    import pyarrow as pa

    meta = parquet.metadata
    compressed = uncompressed = per_row = 0
    dictionary: set[str] = set()
    # Arrow keeps a dictionary as stored for top-level text columns only (nested ones may come as chunks it
    # cannot convert); a nested column's repeats are bounded by the batch's rows and the memory ceiling.
    top_level = {
        field.name
        for field in parquet.schema_arrow
        if pa.types.is_string(field.type)
        or pa.types.is_large_string(field.type)
        or pa.types.is_binary(field.type)
        or pa.types.is_large_binary(field.type)
    }
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            compressed += chunk.total_compressed_size
            uncompressed += chunk.total_uncompressed_size
            if chunk.has_dictionary_page and chunk.path_in_schema in top_level:
                dictionary.add(chunk.path_in_schema)
        if group.num_rows:
            per_row = max(per_row, group.total_byte_size // group.num_rows)
    try:
        budget.check(uncompressed, compressed)
    except limits.LimitExceeded as exc:
        raise TraceFormatError(str(exc), file=filename) from None
    return compressed, per_row, sorted(dictionary)


def _check_rows(batch: Any, first_row: int, filename: str, bounds: limits.Limits) -> int:
    """The decoded bytes of a batch's rows; the first row with a value or a row beyond the limits fails,
    named by its number in the file."""
    import numpy as np

    sizes = np.zeros(batch.num_rows, dtype=np.int64)
    longest = np.zeros(batch.num_rows, dtype=np.int64)
    for column in batch.columns:
        size, big = _sizes(column)
        sizes += size
        np.maximum(longest, big, out=longest)
    for where, error in (
        (longest > bounds.max_value_bytes, limits.value_too_long(bounds)),
        (sizes > bounds.max_record_bytes, None),
    ):
        bad = np.flatnonzero(where)
        if len(bad):
            at = int(bad[0])
            error = error or limits.record_too_large(int(sizes[at]), bounds)
            raise TraceFormatError(str(error), file=filename, record=first_row + at)
    return int(sizes.sum())


def _sizes(array: Any) -> tuple[Any, Any]:
    """Per element of an Arrow array: (decoded bytes, longest single value), from the buffers alone."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(array)
    kind = array.type
    if pa.types.is_dictionary(kind):
        size, big = _sizes(array.dictionary)
        index = pc.fill_null(array.indices, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        valid = ~array.is_null().to_numpy(zero_copy_only=False)
        if not len(size):
            return np.zeros(n, np.int64), np.zeros(n, np.int64)
        return size[index] * valid, big[index] * valid
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    ):
        size = pc.fill_null(pc.binary_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        return size, size
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        # From the offsets (which a slice keeps absolute), so maps and lists of any size go the same way.
        offsets = array.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        start, end = int(offsets[0]), int(offsets[-1])
        size, big = _sizes(array.values.slice(start, end - start))
        lengths = np.diff(offsets)
        running = np.concatenate(([0], np.cumsum(size)))
        total = running[offsets[1:] - start] - running[offsets[:-1] - start]
        longest = np.zeros(n, np.int64)
        np.maximum.at(longest, np.repeat(np.arange(n), lengths), big)
        return total, longest
    if pa.types.is_struct(kind):
        total, longest = np.zeros(n, np.int64), np.zeros(n, np.int64)
        for child in array.flatten():
            size, big = _sizes(child)
            total += size
            np.maximum(longest, big, out=longest)
        return total, longest
    width = max(getattr(kind, "bit_width", 64) // 8, 1) if _has_width(kind) else 16
    return np.full(n, width, np.int64), np.zeros(n, np.int64)


def _has_width(kind: Any) -> bool:
    try:
        return kind.bit_width > 0
    except ValueError:
        return False


# The data files of a local dataset, decoded once under the limits before `datasets` reads them: it decodes
# whole files or large batches with nothing checked, so a bomb is stopped here (and what `datasets` then
# reads is known to decode within the limits). A Hub dataset streams through `datasets` alone; the import's
# memory ceiling (limits.memory_ceiling) bounds it.
_OPENERS = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".lzma": "lzma"}
_JSON_SUFFIXES = {".json", ".jsonl", ".ndjson"}


def check_data_files(path: Path) -> None:
    """Every data file of a dataset folder (or one data file) within the limits, or a TraceFormatError
    naming the file (and the row, for parquet and Arrow)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        name = str(file)
        suffixes = [s.lower() for s in file.suffixes[-2:]]
        last = suffixes[-1] if suffixes else ""
        try:
            if last == ".parquet":
                for _ in parquet_batches(name, name):  # a path: read by Arrow, not through Python
                    pass
            elif last == ".arrow":
                _check_arrow(file, name)
            elif last in _OPENERS:
                _check_compressed(file, name, json=len(suffixes) > 1 and suffixes[0] in _JSON_SUFFIXES)
            elif last == ".zip":
                _check_zip(file, name)
            elif last in _JSON_SUFFIXES:
                with file.open("rb") as stream:
                    scan = _json_scan()
                    while chunk := stream.read(limits.MB):
                        scan(chunk)
        except limits.LimitExceeded as exc:
            raise TraceFormatError(str(exc), file=name) from None
        except TraceFormatError:
            raise
        except (OSError, EOFError, ValueError) as exc:
            raise TraceFormatError(f"cannot read the file ({exc})", file=name) from None


def _json_scan() -> Callable[[bytes], None]:
    """A check of JSON bytes fed in order: depth and value lengths against the limits (limits.JsonScanner)."""
    scanner = limits.JsonScanner()

    def scan(chunk: bytes) -> None:
        if scanner.feed(chunk) < len(chunk):
            raise scanner.error or limits.value_too_long(scanner.limits)

    return scan


def _check_compressed(file: Path, name: str, *, json: bool) -> None:
    """A gzip, bz2 or xz file decoded to its end without keeping it: its decoded size and ratio (and, for
    JSON, its depth and value lengths) against the limits."""
    import importlib

    opener = importlib.import_module(_OPENERS[file.suffix.lower()])
    with opener.open(file, "rb") as stream:
        limits.DecodeBudget().drain(stream, file.stat().st_size, "the file", _json_scan() if json else None)


def _check_zip(file: Path, name: str) -> None:
    import zipfile

    budget = limits.DecodeBudget(container="the archive")
    try:
        with zipfile.ZipFile(file) as archive:
            for info in archive.infolist():
                with archive.open(info) as member:
                    budget.drain(member, info.compress_size, f"member {info.filename}")
    except zipfile.BadZipFile as exc:
        raise TraceFormatError(f"not a readable zip archive ({exc})", file=name) from None


_ARROW_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def _check_arrow(file: Path, name: str) -> None:
    """An Arrow IPC file or stream (a save_to_disk folder's data), batch by batch: its buffers may be
    compressed (LZ4, zstd), so rows and ratio are checked as for parquet."""
    import pyarrow as pa

    bounds = limits.current()
    budget = limits.DecodeBudget()
    compressed = file.stat().st_size
    decoded, row = 0, 1
    with pa.memory_map(str(file)) as source:
        try:
            reader = pa.ipc.open_file(source)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
        except pa.ArrowInvalid:
            # A stream cut at a batch boundary reads as a shorter stream: only its end marker says it is whole.
            source.seek(max(compressed - len(_ARROW_EOS), 0))
            if compressed < len(_ARROW_EOS) or source.read(len(_ARROW_EOS)) != _ARROW_EOS:
                raise TraceFormatError(
                    "the Arrow stream is truncated (no end-of-stream marker)", file=name
                ) from None
            source.seek(0)
            try:
                batches = pa.ipc.open_stream(source)
            except pa.ArrowInvalid as exc:
                raise TraceFormatError(f"not a readable Arrow file ({exc})", file=name) from None
        try:
            for batch in batches:
                decoded += _check_rows(batch, row, name, bounds)
                try:
                    budget.check(decoded, compressed)
                except limits.LimitExceeded as exc:
                    raise TraceFormatError(str(exc), file=name, record=row) from None
                row += batch.num_rows
        except pa.ArrowInvalid as exc:
            raise TraceFormatError(f"unreadable Arrow data ({exc})", file=name) from None
