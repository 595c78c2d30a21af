"""A team starts without a terminal: staff create a project in Chromium and invite an annotator by e-mail;
the annotator sets a password through the one-time link, signs in and labels a trace."""

from __future__ import annotations

import re

import pytest

from annotator.models import Annotation, Project
from tests.factories import PASSWORD, BatchFactory, UserFactory, trace_with_steps

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "a-long-pass-phrase-42"


@pytest.fixture
def world():
    from taxonomy.services import load_builtin_taxonomies

    load_builtin_taxonomies()
    staff = UserFactory(username="sam", is_staff=True)
    batch = BatchFactory(name="airline-run", imported_by=staff)
    trace_with_steps(6, batch=batch)
    return staff, batch


def sign_in(browser, live_server, username, password=PASSWORD):
    context = browser.new_context(viewport={"width": 1480, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page


def test_staff_create_a_project_invite_a_member_who_sets_a_password_and_labels(browser, live_server, world):
    from playwright.sync_api import expect

    from taxonomy.services import resolve_version

    staff, batch = world

    # Staff: New project on the home page, with a taxonomy, an overlap of 1 and the batch.
    page = sign_in(browser, live_server, staff.username)
    page.get_by_role("link", name="New project").click()
    page.fill("#id_name", "Airline failures")
    page.fill("#id_slug", "airline")
    page.select_option("#id_taxonomy_version", value=str(resolve_version("mast").pk))
    page.fill("#id_overlap", "1")
    page.select_option("#id_batches", label=batch.name)
    page.get_by_role("button", name="Create project").click()
    page.wait_for_url(f"{live_server.url}/p/airline/members/")
    expect(page.locator(".messages")).to_contain_text("you are its owner")

    # Invite by e-mail: the one-time set-password link is shown to copy.
    page.fill("#invite-email", "dana@example.org")
    page.get_by_role("button", name="Invite by e-mail").click()
    link_box = page.locator("#invite-link-url")
    expect(link_box).to_be_visible()
    link = link_box.input_value()
    assert link.startswith(f"{live_server.url}/accounts/set-password/")
    expect(page.locator("table.table").first).to_contain_text("dana")

    # The invited person: choose a password through the link, sign in, label the trace.
    invited = browser.new_context(viewport={"width": 1480, "height": 900}).new_page()
    invited.goto(link)
    expect(invited.get_by_role("heading", name="Choose your password")).to_be_visible()
    invited.fill("#id_new_password1", NEW_PASSWORD)
    invited.fill("#id_new_password2", NEW_PASSWORD)
    invited.get_by_role("button", name="Set password").click()
    expect(invited.get_by_role("heading", name="Your password is set")).to_be_visible()
    invited.goto(link)  # the link works once
    expect(invited.locator(".error")).to_contain_text("used already")

    page = sign_in(browser, live_server, "dana", NEW_PASSWORD)
    page.get_by_role("link", name="Airline failures").click()
    page.get_by_role("button", name="Start next trace →").click()
    expect(page.locator("#label-form")).to_be_visible()
    page.locator('.mode-row[data-mode="FM-1.3"] > .mode-line label.mode-label').click()
    page.locator('.mode-row[data-mode="FM-1.3"] .pin-number').fill("2")
    page.locator('.mode-row[data-mode="FM-1.3"] [data-action="pin-number"]').click()
    page.get_by_role("button", name=re.compile("^Submit")).click()
    page.wait_for_url(f"{live_server.url}/p/airline/")

    project = Project.objects.get(slug="airline")
    annotation = Annotation.objects.get(assignment__project=project)
    assert annotation.status == "submitted" and annotation.assignment.annotator.username == "dana"
    assert [label.mode.code for label in annotation.labels.all()] == ["FM-1.3"]
