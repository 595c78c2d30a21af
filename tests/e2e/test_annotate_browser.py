"""Two annotators label the same real Who&When trace differently in Chromium, one pinning evidence with
the keyboard; the owner then sees both annotations side by side."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from annotator.models import Annotation, Membership, Project
from annotator.services.assignment import do_assign
from tests.factories import PASSWORD, UserFactory
from tests.services import datasets_dir

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TRACE_FILE = "who_and_when/Algorithm-Generated/10.json"
SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


@pytest.fixture
def world():
    """A MAST project with one real Who&When trace, assigned to two annotators."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.services import do_import_files

    path = datasets_dir() / TRACE_FILE
    load_builtin_taxonomies()
    result = do_import_files([(path, TRACE_FILE)], batch_name="who-and-when-e2e")
    project = Project.objects.create(
        slug="ww", name="Who&When study", taxonomy_version=resolve_version("mast")
    )
    project.batches.add(result.batch)
    users = {name: UserFactory(username=name) for name in ("olivia", "ana", "ben")}
    Membership.objects.create(project=project, user=users["olivia"], role="owner")
    Membership.objects.create(project=project, user=users["ana"], role="annotator")
    Membership.objects.create(project=project, user=users["ben"], role="annotator")
    assert do_assign(project) == 2
    trace = result.batch.traces.get()
    assert trace.step_count >= 5
    return project, trace


def sign_in(browser, live_server, username):
    context = browser.new_context(viewport={"width": 1480, "height": 900})
    page = context.new_page()
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.accept()))
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page, dialogs


def test_two_annotators_label_a_real_trace_and_the_owner_sees_both(browser, live_server, world):
    from playwright.sync_api import expect

    project, trace = world

    # Ana works with the keyboard: read, toggle FM-1.3, pin the step in view, rate, note, submit.
    page, dialogs = sign_in(browser, live_server, "ana")
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("button", name="Start next trace →").click()
    expect(page.locator("#label-form")).to_be_visible()
    expect(page.locator('[data-annotate][data-keys="ready"]')).to_have_count(1)  # the keys are attached
    expect(page.locator("article.step.is-current")).to_have_attribute("data-step", "0")
    page.keyboard.press("j")
    page.keyboard.press("j")
    expect(page.locator("article.step.is-current")).to_have_attribute("data-step", "2")
    expect(page.locator('.mode-row[data-mode="FM-1.3"] .mode-key')).to_have_text("3")
    page.keyboard.press("3")
    expect(page.locator('input[name="labels"][value="FM-1.3"]')).to_be_checked()
    page.keyboard.press("p")
    pin = page.locator('.mode-row[data-mode="FM-1.3"] .pin')
    expect(pin).to_have_text(re.compile(r"step 2"))
    expect(page.locator("#step-2")).to_have_class(re.compile("is-pinned"))
    expect(page.locator("#save-status")).to_contain_text("Draft saved")
    # Search inside the trace, then walk the hits with n.
    from traces.viewer import StepFilter, search_steps

    hits, _ = search_steps(trace, StepFilter(q="Colville"))
    assert len(hits) >= 2
    page.keyboard.press("/")
    page.keyboard.type("Colville")
    page.keyboard.press("Enter")
    expect(page.locator(".hit-count")).to_contain_text(f"{len(hits)} hits")
    expect(page.locator("article.step.is-current")).to_have_attribute("data-step", str(hits[0]))
    expect(page.locator(f"#step-{hits[0]} mark.hit").first).to_have_text("Colville")
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    expect(page.locator("article.step.is-current")).to_have_attribute("data-step", str(hits[1]))
    # Filter by kind: only the terminal's observations are listed; then back to every step.
    page.select_option('#trace-tools select[name="kind"]', "observation")
    observations = trace.steps.filter(kind="observation").count()
    expect(page.locator(".step-link")).to_have_count(observations)
    expect(page.locator(".step-link.kind-observation")).to_have_count(observations)
    page.select_option('#trace-tools select[name="kind"]', "")
    expect(page.locator(".step-link")).to_have_count(trace.step_count)
    page.keyboard.press("?")
    expect(page.locator("#help-dialog")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#help-dialog")).to_be_hidden()
    page.locator(".confidence label", has_text="4").click()
    page.fill("#trace-note", "The expert repeats the same lookup instead of checking the sheet.")
    page.keyboard.press("Escape")
    expect(page.locator('#save-status input[name="version"]')).not_to_have_value("0")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.locator(".wb-panel").evaluate("panel => { panel.scrollTop = 0; }")
    page.evaluate("() => { document.getElementById('toast').hidden = true; }")
    page.screenshot(path=str(SCREENSHOTS / "annotate.png"))
    page.keyboard.press("s")
    page.wait_for_url(f"{live_server.url}/p/{project.slug}/")
    expect(page.locator(".messages")).to_contain_text("last trace in your queue")
    assert dialogs == []

    # Ben uses the mouse and labels the same trace differently.
    page, dialogs = sign_in(browser, live_server, "ben")
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("button", name="Start next trace →").click()
    expect(page.locator('input[name="labels"][value="FM-1.3"]')).not_to_be_checked()  # blind
    page.locator('.mode-row[data-mode="FM-3.3"] > .mode-line label.mode-label').click()
    page.locator('.mode-row[data-mode="FM-3.3"] .pin-number').fill("5")
    page.locator('.mode-row[data-mode="FM-3.3"] [data-action="pin-number"]').click()
    expect(page.locator('.mode-row[data-mode="FM-3.3"] .pin')).to_have_text(re.compile("step 5"))
    page.get_by_role("button", name=re.compile("^Submit")).click()
    page.wait_for_url(f"{live_server.url}/p/{project.slug}/")
    assert dialogs == []

    # The owner sees both, side by side, with the evidence steps marked in the trace.
    page, _ = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/t/{trace.pk}/review/")
    compare = page.locator("table.compare")
    expect(compare).to_contain_text("ana")
    expect(compare).to_contain_text("ben")
    expect(compare.locator("tr", has_text="FM-1.3")).to_contain_text("step 2")
    expect(compare.locator("tr", has_text="FM-3.3")).to_contain_text("step 5")
    expect(page.locator("#step-2 .pill.mark")).to_have_text("FM-1.3 · ana")
    expect(page.get_by_text("2 of 2 submitted")).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "review.png"))

    labels = {
        a.assignment.annotator.username: [(la.mode.code, la.evidence) for la in a.labels.all()]
        for a in Annotation.objects.filter(status="submitted")
    }
    assert labels == {"ana": [("FM-1.3", [{"step": 2}])], "ben": [("FM-3.3", [{"step": 5}])]}
    ana = Annotation.objects.get(assignment__annotator__username="ana")
    assert ana.confidence == 4 and ana.time_spent_seconds >= 0


def test_a_second_tab_gets_a_clear_conflict_and_keeps_its_answer(browser, live_server, world):
    from playwright.sync_api import expect

    project, _ = world
    first, _ = sign_in(browser, live_server, "ana")
    slot = project.assignments.get(annotator__username="ana")
    url = f"{live_server.url}/p/{project.slug}/a/{slot.pk}/"
    first.goto(url)
    second = first.context.new_page()
    second.goto(url)

    first.keyboard.press("1")
    expect(first.locator("#save-status")).to_contain_text("Draft saved")

    second.keyboard.press("2")  # based on version 0, which is gone
    conflict = second.locator("#save-status .conflict")
    expect(conflict).to_contain_text("changed in another tab")
    expect(conflict).to_contain_text("FM-1.2")  # the unsaved answer is echoed back
    expect(second.locator('input[name="labels"][value="FM-1.2"]')).to_be_checked()  # and still in the form
    conflict.get_by_role("button", name="Keep mine (save over it)").click()
    expect(second.locator("#save-status")).to_contain_text("Draft saved")
    annotation = Annotation.objects.get(assignment=slot)
    assert [label.mode.code for label in annotation.labels.all()] == ["FM-1.2"]
    assert annotation.history.count() == 2
