"""Browser tests: Playwright's sync API drives Debian's Chromium against pytest-django's live_server."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def allow_orm_beside_playwright(monkeypatch):
    # Playwright's sync API runs an event loop in this thread; Django's ORM would refuse to run beside it.
    # Set per test (not at import) so it never leaks into other tests' subprocesses (`check --deploy`).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    from tests.services import require_chromium

    executable = require_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()
