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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
