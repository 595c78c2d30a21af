"""Signing in through the real login form, for browser tests."""

from __future__ import annotations

from tests.factories import PASSWORD


def signed_in(browser, live_server, user):
    """A new page signed in as `user` (factory password), and the list its JavaScript errors go to."""
    page = browser.new_context().new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page, errors
