"""Shared fixtures for the importer tests: where the real third-party datasets live.

The datasets are never copied into the repository; they sit next to it in ``../shared``.
Locally a missing folder skips the tests that need it; in CI (``CI=true``) it fails them,
because CI promises the folder and a silent skip would hide a broken checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATASETS = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def need(path: Path) -> Path:
    """``path`` if it exists; otherwise skip (locally) or fail (``CI=true``) with a clear message."""
    if not path.exists():
        message = f"real trace dataset not found at {path} (expected ../shared/datasets next to the repo)"
        if _in_ci():
            pytest.fail(f"CI=true and {message}", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    return need(DATASETS)


def truncate(src: Path, dst: Path) -> Path:
    """Copy the first half of ``src`` to ``dst``: a download cut off mid-record."""
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst
