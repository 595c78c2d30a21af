"""Saved views in Chromium: filter, save the filters with the keyboard (htmx swaps the panel with the view
and its count), a duplicate name's message shown in the panel, open the view (the list with its filters)."""

from __future__ import annotations

import pytest

from tests.e2e.pages import signed_in
from tests.search.conftest import world  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_save_and_open_a_view_in_the_browser(browser, live_server, world, owner):  # noqa: F811
    page, errors = signed_in(browser, live_server, owner)

    page.goto(f"{live_server.url}/p/demo-project/traces/")
    assert "No saved views yet" in page.locator("#saved-views").inner_text()
    page.select_option("#f-outcome", "failure")
    page.click("#trace-filter button[type=submit]")
    page.wait_for_url("**outcome=failure**")
    page.locator("#view-save-name").focus()
    page.keyboard.type("Failures")
    page.keyboard.press("Enter")
    row = page.locator("#saved-views tbody tr", has_text="Failures")
    row.wait_for()
    assert "2" in row.locator("td.num").inner_text()

    page.locator("#view-save-name").focus()
    page.keyboard.type("failures")
    page.keyboard.press("Enter")
    page.locator("#saved-views [role=alert]").wait_for()
    assert "already a view" in page.locator("#saved-views [role=alert]").inner_text()

    page.goto(f"{live_server.url}/p/demo-project/traces/")
    page.locator("#saved-views a", has_text="Failures").first.click()
    page.wait_for_url("**outcome=failure**")
    assert "2 traces match" in page.locator("#trace-count").inner_text()
    assert errors == []
