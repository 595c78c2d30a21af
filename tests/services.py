"""Skip-or-fail for tests that need a real service: on a laptop they skip and say how to enable them;
in CI (CI=true) a missing service fails the run loudly."""

from __future__ import annotations

import os
import shutil

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")


def missing(what: str, how: str) -> None:
    message = f"{what} is not available. {how}"
    if IN_CI:
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


def require_chromium() -> str:
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        missing("Chromium", "Install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH.")
    return CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")


def require_worker() -> None:
    """A real Celery worker on Redis must answer a ping."""
    from django.conf import settings

    if not settings.REDIS_URL:
        missing("Redis", "Set REDIS_URL=redis://127.0.0.1:6379/0 and start `make worker`.")
    from annotator.services.enqueue import celery_app

    app = celery_app()

    try:
        replies = app.control.ping(timeout=2.0)
    except Exception as error:  # the broker itself is down
        missing("Redis", f"Could not reach {settings.REDIS_URL}: {error}")
    if not replies:
        missing("A Celery worker", "Start one with `make worker` (same DATABASE_URL as the tests).")


def datasets_dir():
    from pathlib import Path

    # DATASETS_DIR: for a checkout that is not beside ../shared (e.g. a git worktree elsewhere).
    path = Path(
        os.environ.get("DATASETS_DIR") or Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
    )
    if not path.is_dir():
        missing("../shared/datasets", "Real-trace tests read the public datasets from ../shared/datasets/.")
    return path
