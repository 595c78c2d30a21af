"""The trace list in Chromium: "/" focuses the search, Enter swaps the results (marked hits, URL pushed),
a header click sorts, and a bad value shows its message where the results were."""

from __future__ import annotations

import pytest

from tests.e2e.pages import signed_in
from tests.search.conftest import world  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_search_sort_and_errors_in_the_browser(browser, live_server, world, owner):  # noqa: F811
    page, errors = signed_in(browser, live_server, owner)

    page.goto(f"{live_server.url}/p/demo-project/traces/")
    page.locator("#trace-count").wait_for()
    assert "4 traces" in page.locator("#trace-count").inner_text()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "f-q"
    page.keyboard.type("kubectl")
    page.keyboard.press("Enter")
    page.wait_for_url("**q=kubectl**")
    page.locator("#trace-results mark.hit").first.wait_for()
    assert "2 traces match" in page.locator("#trace-count").inner_text()
    # The markup inside the step is shown as text, never run as HTML.
    assert "<b>" in page.locator("#trace-results .match").first.inner_text()

    page.locator("#trace-results th a", has_text="Trace").click()
    page.wait_for_url("**ordering=external_id**")
    assert page.locator("#trace-results th[aria-sort=ascending]").count() == 1

    page.fill("#f-score-min", "lots")
    page.click("#trace-filter button[type=submit]")
    page.locator("#trace-results [role=alert]").wait_for()
    assert "score_min" in page.locator("#trace-results [role=alert]").inner_text()
    assert errors == []
