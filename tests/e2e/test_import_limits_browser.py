"""The import page in Chromium: files over the upload limit are refused before they are sent, and the server's
400 answers (a NUL in the batch name) appear where the result would, instead of being dropped by htmx."""

from __future__ import annotations

import pytest

from annotator.models import Membership, Project
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def owner_page(browser, live_server, settings):
    from taxonomy.services import load_builtin_taxonomies, resolve_version

    settings.IMPORT_MAX_UPLOAD_MB = 1
    load_builtin_taxonomies()
    project = Project.objects.create(slug="imports", name="Imports", taxonomy_version=resolve_version("mast"))
    Membership.objects.create(project=project, user=UserFactory(username="olivia"), role="owner")
    page = browser.new_context().new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "olivia")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/p/imports/import/")
    yield page
    assert not errors


def test_files_over_the_limit_are_refused_before_sending(owner_page):
    page = owner_page
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.method))
    page.set_input_files(
        "#files",
        files=[{"name": "big.jsonl", "mimeType": "application/jsonl", "buffer": b" " * (2 * 1024 * 1024)}],
    )
    page.fill("#batch", "big")
    page.click("#import-form button[type=submit]")
    alert = page.locator("#import-result [role=alert]")
    alert.wait_for()
    assert "at most 1 MB can be sent at once" in alert.inner_text()
    assert "POST" not in requests


def test_a_refused_upload_shows_the_servers_reason(owner_page):
    page = owner_page
    page.set_input_files(
        "#files",
        files=[
            {"name": "ok.jsonl", "mimeType": "application/jsonl", "buffer": b'{"id": "a", "steps": []}\n'}
        ],
    )
    page.fill("#batch", "bad\x00name")
    page.click("#import-form button[type=submit]")
    alert = page.locator("#import-result [role=alert]")
    alert.wait_for()
    assert "NUL character" in alert.inner_text()
