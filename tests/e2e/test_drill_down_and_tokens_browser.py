"""In Chromium: a cell of the agreement report opens the list of its traces; the token page creates a key
that works once with the API, revokes it, and the API then refuses it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from tests.e2e.pages import signed_in
from tests.labels import project_trace, submit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def labelled(project, annotator_a, annotator_b):
    """Six traces both annotators submitted: they disagree on FM-3.1 three times."""
    for k in range(6):
        trace = project_trace(project)
        submit(project, trace, annotator_a, {"FM-1.1": [1], **({"FM-3.1": [2]} if k % 2 else {})})
        submit(project, trace, annotator_b, {"FM-1.1": [1]})
    return project


def test_an_agreement_cell_opens_its_traces(browser, live_server, labelled, owner):
    page, errors = signed_in(browser, live_server, owner)
    page.goto(f"{live_server.url}/p/{labelled.slug}/agreement/")
    cell = page.locator('a[data-drill="mode"][href*="disputed_mode=FM-3.1"]')
    cell.wait_for()
    assert cell.inner_text() == "3"
    cell.click()
    page.wait_for_url(f"{live_server.url}/p/{labelled.slug}/traces/**")
    assert page.locator("#trace-count strong").inner_text() == "3"
    assert page.locator("#f-disputed").input_value() == "FM-3.1"
    assert page.locator("#f-pair").input_value() == "ana-annotator,ben-annotator"
    assert errors == []


def _api(live_server, key: str) -> int:
    request = urllib.request.Request(
        f"{live_server.url}/api/tokens/", headers={"Authorization": f"Token {key}"}
    )
    try:
        with urllib.request.urlopen(request) as response:
            json.load(response)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_token_is_created_used_revoked_and_refused(browser, live_server, annotator_a):
    page, errors = signed_in(browser, live_server, annotator_a)
    page.click("a[href='/account/tokens/']")
    page.wait_for_url(f"{live_server.url}/account/tokens/")
    form = page.locator("#my-tokens form.token-create")
    form.locator("input[name=name]").fill("laptop script")
    form.locator("select[name=expires_in_days]").select_option("30")
    form.locator("button[type=submit]").click()
    key_box = page.locator("#my-tokens [data-token-key]")
    key_box.wait_for()
    key = key_box.input_value()
    assert len(key) == 40
    row = page.locator("#my-tokens tr[data-token-id]")
    assert row.count() == 1 and "laptop script" in row.inner_text() and key[:8] in row.inner_text()

    assert _api(live_server, key) == 200

    page.on("dialog", lambda dialog: dialog.accept())
    row.locator("button", has_text="Revoke").click()
    page.locator("#my-tokens [role=status]", has_text="Revoked").wait_for()
    assert page.locator("#my-tokens tr[data-token-id]").count() == 0
    assert page.locator("#my-tokens [data-token-key]").count() == 0  # the key is not shown again
    assert _api(live_server, key) == 401
    assert errors == []


def test_a_token_form_error_shows_in_the_form(browser, live_server, annotator_a):
    page, errors = signed_in(browser, live_server, annotator_a)
    page.goto(f"{live_server.url}/account/tokens/")
    page.locator("#my-tokens input[name=name]").evaluate("el => el.removeAttribute('required')")
    page.locator("#my-tokens button[type=submit]", has_text="Create a token").click()
    alert = page.locator("#my-tokens [role=alert]")
    alert.wait_for()
    assert "Give the token a name" in alert.inner_text()
    assert errors == []
