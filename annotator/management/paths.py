"""Folders everywhere: every command that reads files also takes folders, walked the same way."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from django.core.management.base import CommandError

# Inside a folder only these are taken (a README or PROVENANCE.md beside the traces is not a trace file);
# files named explicitly are always tried.
TRACE_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".traj", ".eval"})


def files_in(folder: Path, suffixes: Collection[str]) -> list[Path]:
    """Every file under ``folder`` (recursively) with one of ``suffixes``, hidden files and folders skipped,
    in a stable order (sorted by path), so the same folder always imports the same way."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.suffix.lower() in suffixes
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def expand_paths(paths: Iterable[Path | str], suffixes: Collection[str]) -> Iterator[Path]:
    """Files as given, folders as their files (see :func:`files_in`); a missing path or a folder holding no
    such file is a command error (exit 2)."""
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = files_in(path, suffixes)
            if not found:
                raise CommandError(
                    f"{path}: no {', '.join(sorted(suffixes))} files in this folder", returncode=2
                )
            yield from found
        elif path.exists():
            yield path
        else:
            raise CommandError(f"{path}: no such file or folder", returncode=2)
