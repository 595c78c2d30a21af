"""In Chromium: every error reaches the person who caused it, where they are looking (the message is in
the viewport and holds the focus), and the keyboard reaches every mode, the next trace and adjudication."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel, Membership, Project
from annotator.services.annotations import do_save_draft
from annotator.services.assignment import do_assign
from annotator.services.payload import AnnotationPayload, Evidence, LabelInput
from tests.factories import PASSWORD, BatchFactory, UserFactory, trace_with_steps

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


def snap(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


@pytest.fixture
def world():
    """A MAST project (14 modes) with two 16-step traces; ana and ben annotate, ada adjudicates."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(slug="pilot", name="Pilot", taxonomy_version=resolve_version("mast"))
    batch = BatchFactory(name="pilot-1")
    project.batches.add(batch)
    traces = [trace_with_steps(16, batch=batch) for _ in range(2)]
    users = {name: UserFactory(username=name) for name in ("olivia", "ana", "ben", "ada")}
    for name, role in (
        ("olivia", "owner"),
        ("ana", "annotator"),
        ("ben", "annotator"),
        ("ada", "adjudicator"),
    ):
        Membership.objects.create(project=project, user=users[name], role=role)
    do_assign(project)
    return project, traces, users


def sign_in(browser, live_server, username, viewport=(1480, 900)):
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page


def open_next(page, live_server, project):
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("button", name="Start next trace →").click()
    expect(page.locator("#label-form")).to_be_visible()
    # The page's script has attached its keys: a key pressed before that would be lost.
    expect(page.locator('[data-annotate][data-keys="ready"]')).to_have_count(1)


def seen(page, locator):
    """Visible, inside the viewport, and on top (not scrolled away, not under the sticky Submit bar)."""
    from playwright.sync_api import expect

    expect(locator).to_be_visible()
    expect(locator).to_be_in_viewport()
    top = locator.evaluate(
        "el => { const r = el.getBoundingClientRect(); const hit = document.elementFromPoint(r.x + 8, r.y + 8);"
        " return el.contains(hit); }"
    )
    assert top, "the message is covered by something else"


def test_submit_with_nothing_chosen_says_so_next_to_submit(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, _ = world
    page = sign_in(browser, live_server, "ana", viewport=(1920, 1080))
    open_next(page, live_server, project)
    page.keyboard.press("s")
    check = page.locator("#client-check")
    expect(check).to_contain_text("Choose at least one failure mode")
    seen(page, check)
    expect(check).to_be_focused()
    snap(page, "submit-check")
    assert not Annotation.objects.filter(status="submitted").exists()


def test_an_evidence_step_beyond_the_trace_is_refused_before_sending(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, _ = world
    page = sign_in(browser, live_server, "ana")
    open_next(page, live_server, project)
    row = page.locator('.mode-row[data-mode="FM-1.3"]')
    row.locator("> .mode-line label.mode-label").click()
    row.locator(".pin-number").fill("999")
    row.locator('[data-action="pin-number"]').click()
    check = page.locator("#client-check")
    expect(check).to_contain_text("Step 999 does not exist: this trace's steps are #0 to #15")
    seen(page, check)
    expect(row.locator(".pin")).to_have_count(0)


def test_a_stale_save_shows_the_conflict_where_the_user_looks(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, users = world
    page = sign_in(browser, live_server, "ana")
    open_next(page, live_server, project)
    assignment = Assignment.objects.get(annotator=users["ana"], reserved_until__isnull=False)
    assignment.project = project
    # Another tab saves first: this page's version is now stale.
    other = AnnotationPayload(labels=(LabelInput(mode="FM-2.1", evidence=(Evidence(1),)),))
    do_save_draft(assignment, other, actor=users["ana"], base_version=0)
    page.keyboard.press("3")  # FM-1.3: the autosave is refused with 409
    conflict = page.locator("#save-status .conflict")
    expect(conflict).to_contain_text("changed in another tab")
    seen(page, conflict)


def test_failed_requests_reach_the_alert_region(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, _ = world
    page = sign_in(browser, live_server, "ana")
    open_next(page, live_server, project)
    # The network goes away: the autosave cannot be sent.
    page.route("**/save/", lambda route: route.abort())
    page.keyboard.press("3")
    alert = page.locator("#site-alert")
    expect(alert).to_contain_text("Could not reach the server")
    seen(page, alert)
    expect(alert).to_be_focused()
    page.unroute("**/save/")
    # The server fails: the reason in plain words, not the page.
    page.route(
        "**/save/",
        lambda route: route.fulfill(
            status=500, content_type="text/html", body="<html><body>boom</body></html>"
        ),
    )
    page.keyboard.press("4")
    expect(alert).to_contain_text("The server failed to finish this (error 500)")
    snap(page, "site-alert")


def test_own_error_pages_with_navigation(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, _ = world
    page = sign_in(browser, live_server, "ana")
    response = page.goto(f"{live_server.url}/p/no-such-project/")
    assert response.status == 404
    expect(page.locator("h1")).to_have_text("Nothing here")
    expect(page.get_by_role("link", name="← Your projects")).to_be_visible()
    response = page.goto(f"{live_server.url}/p/{project.slug}/export/")
    assert response.status == 403
    expect(page.locator("[data-error-message]")).to_contain_text(
        "Your role in this project does not allow this"
    )


def test_import_export_and_llm_errors_are_shown(browser, live_server, world, tmp_path):
    from playwright.sync_api import expect

    project, _, _ = world
    page = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/import/")
    upload = tmp_path / "empty.jsonl"
    upload.write_text("")
    page.set_input_files("#files", str(upload))
    page.fill("#batch", "   ")
    page.get_by_role("button", name="Import").click()
    error = page.locator("#import-error")
    expect(error).to_contain_text("Name the batch")
    seen(page, error)
    # Named, the empty file fails: the message names the uploaded file, not where the server stored it.
    page.fill("#batch", "pilot-2")
    page.get_by_role("button", name="Import").click()
    problems = page.locator("#import-result ul.errors")
    expect(problems).to_contain_text("empty.jsonl: the file is empty")
    assert "/" not in problems.inner_text()
    expect(page.locator("#recent-imports")).to_contain_text("pilot-2")  # the list refreshed by itself

    page.goto(f"{live_server.url}/p/{project.slug}/export/")
    page.fill('input[name="repo_id"]', "team/pilot")
    page.locator("#export-form button[type=submit]").first.click()
    result = page.locator("#export-result [role=alert]")
    expect(result).to_contain_text("Publishing needs a Hugging Face token")
    seen(page, result)

    page.goto(f"{live_server.url}/p/{project.slug}/llm/")
    page.get_by_role("button", name="Start run").click()
    refusal = page.locator("#llm-runs [role=alert]")
    expect(refusal).to_contain_text("Set the model name")
    seen(page, refusal)
    expect(refusal).to_be_focused()


def test_a_mode_beyond_the_ninth_by_keyboard(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, _ = world
    page = sign_in(browser, live_server, "ana")
    open_next(page, live_server, project)
    chip = page.locator('.mode-row[data-mode="FM-3.1"] .mode-key')
    expect(chip).to_have_text("12")
    snap(page, "mode-chips")
    page.keyboard.press("1")
    page.keyboard.press("2")
    expect(page.locator('input[name="labels"][value="FM-3.1"]')).to_be_checked()
    expect(page.locator('input[name="labels"][value="FM-1.1"]')).not_to_be_checked()
    expect(page.locator('input[name="labels"][value="FM-1.2"]')).not_to_be_checked()
    page.keyboard.press("7")  # below ten's first digit range: at once
    expect(page.locator('input[name="labels"][value="FM-2.2"]')).to_be_checked()
    expect(page.locator("#save-status")).to_contain_text("Draft saved")


def test_g_asks_to_keep_the_draft_or_release_the_trace(browser, live_server, world):
    from playwright.sync_api import expect

    project, _, users = world
    page = sign_in(browser, live_server, "ana")
    open_next(page, live_server, project)
    first = Assignment.objects.get(annotator=users["ana"], reserved_until__isnull=False)
    page.keyboard.press("g")
    dialog = page.locator("#next-dialog")
    expect(dialog).to_be_visible()
    page.keyboard.press("r")
    page.wait_for_url(lambda url: f"/a/{first.pk}/" not in url)  # on to another trace
    expect(page.locator("#label-form")).to_be_visible()
    first.refresh_from_db()
    assert first.reserved_until is None  # released: back in the queue

    # Keep: the draft is stored and the trace waits under Drafts.
    page.keyboard.press("5")
    page.keyboard.press("g")
    expect(dialog).to_be_visible()
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/a/{first.pk}/$"))
    page.get_by_role("button", name=re.compile("^Next trace")).click()  # the mouse asks too
    expect(dialog).to_be_visible()
    second = Assignment.objects.exclude(pk=first.pk).get(annotator=users["ana"])
    assert second.status == Assignment.Status.IN_PROGRESS and second.reserved_until is not None
    page.goto(f"{live_server.url}/p/{project.slug}/")
    expect(page.locator("body")).to_contain_text(second.trace.external_id)


def test_adjudicating_by_keyboard_alone(browser, live_server, world):
    from playwright.sync_api import expect

    from tests.labels import submit

    project, traces, users = world
    trace = traces[0]
    submit(project, trace, users["ana"], {"FM-1.3": [2], "FM-3.3": [5], "FM-2.2": [4]})
    submit(project, trace, users["ben"], {"FM-1.3": [3]})
    item = AdjudicationItem.objects.get(trace=trace)
    assert sorted(item.disputed) == ["FM-2.2", "FM-3.3"]

    page = sign_in(browser, live_server, "ada")
    page.goto(f"{live_server.url}/p/{project.slug}/adjudication/{item.pk}/")
    expect(page.locator("#decision-form")).to_be_visible()
    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_contain_text("Accept annotator A")
    page.keyboard.press("Escape")
    page.keyboard.press("m")
    expect(page.locator('tr.decision-row.is-current-decision[data-decision="FM-2.2"]')).to_be_visible()
    page.keyboard.press("d")
    expect(page.locator("#row-FM-2\\.2 details.mode-def p").first).to_be_visible()
    page.keyboard.press("s")  # nothing decided yet: said where the user looks, nothing sent
    expect(page.locator("#site-alert")).to_contain_text("choose an answer and a reason for FM-2.2, FM-3.3")
    page.keyboard.press("a")
    page.keyboard.press("1")  # reason 1: the trace shows it; moves on to FM-3.3
    expect(page.locator('tr.decision-row.is-current-decision[data-decision="FM-3.3"]')).to_be_visible()
    page.keyboard.press("x")
    page.keyboard.press("2")
    snap(page, "adjudicate-keys")
    page.keyboard.press("s")
    page.wait_for_url(lambda url: f"/adjudication/{item.pk}/" not in url)  # saved, on to the next one
    item.refresh_from_db()
    assert item.status == "resolved" and item.resolved_by == users["ada"]
    gold = {g.mode.code: g.source for g in GoldLabel.objects.filter(item=item)}
    assert gold == {"FM-1.3": "agreed", "FM-2.2": "accept_a"}
