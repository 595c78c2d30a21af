"""README's screenshots, taken from the real pages of the demo (`make screenshots`, with `make run` serving).

    python -m tests.e2e.readme_screenshots [BASE_URL] [OUT_DIR]

Signs in as the demo personas (annotator.services.demo.DEMO_USERS) with Debian's Chromium and saves the
project page, the annotation page, an adjudication item, the failure signatures and the agreement report to
docs/screenshots/. Not a test: the pages' own browser tests check them; this only photographs them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

from tests.e2e.conftest import CHROMIUM_ARGS


def _passwords() -> dict[str, str]:
    from annotator.services.demo import DEMO_USERS

    return {username: password for username, password, _ in DEMO_USERS}


def _page(browser, base: str, username: str, width: int, height: int):
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", _passwords()[username])
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    return page


def take(base: str, out: Path) -> list[Path]:
    from annotator.services.demo import DEMO_PROJECT

    out.mkdir(parents=True, exist_ok=True)
    project = f"{base}/p/{DEMO_PROJECT}"
    saved = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        owner = _page(browser, base, "owner", 1440, 1000)
        owner.goto(f"{project}/")
        owner.screenshot(path=str(out / "project.png"))
        saved.append(out / "project.png")
        owner.goto(f"{project}/signatures/")
        owner.screenshot(path=str(out / "signatures-top.png"))
        saved.append(out / "signatures-top.png")
        owner.goto(f"{project}/agreement/")
        owner.wait_for_selector("#agreement-report, .agreement", timeout=30_000)
        owner.screenshot(path=str(out / "agreement.png"), full_page=True)
        saved.append(out / "agreement.png")

        alice = _page(browser, base, "alice", 1400, 900)
        alice.goto(f"{project}/mine/?show=drafts")
        if not alice.locator("#my-assignments a").count():
            alice.goto(f"{project}/mine/?show=todo")
        alice.locator("#my-assignments td a").first.click()
        alice.wait_for_selector("#label-form")
        alice.screenshot(path=str(out / "annotate.png"))
        saved.append(out / "annotate.png")

        carol = _page(browser, base, "carol", 1480, 900)
        carol.goto(f"{project}/adjudication/")
        carol.locator("table a[href*='/adjudication/']").first.click()
        carol.wait_for_selector(".adjudicate-panel")
        carol.screenshot(path=str(out / "adjudication.png"))
        saved.append(out / "adjudication.png")
        browser.close()
    return saved


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotator.settings")
    django.setup()
    base_url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    folder = (
        Path(sys.argv[2])
        if len(sys.argv) > 2
        else Path(__file__).resolve().parents[2] / "docs" / "screenshots"
    )
    for path in take(base_url.rstrip("/"), folder):
        print(path)
