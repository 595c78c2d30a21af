"""An annotator does a gold calibration item in Chromium: no gold answer while labelling, the gold answer
with the adjudicator's reasons right after submitting."""

from __future__ import annotations

import re

import pytest

from annotator.models import AdjudicationItem, Membership, Project
from annotator.services.adjudication import do_check_trace
from annotator.services.calibration import do_add_items, do_configure
from annotator.services.gold import Decision, ModeDecision, do_decide
from tests.e2e.test_annotate_browser import SCREENSHOTS, sign_in
from tests.factories import BatchFactory, UserFactory, trace_with_steps
from tests.labels import submit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    """A MAST project with one adjudicated gold trace (FM-1.1 present, with a reason) and a newcomer, Carl,
    who must do one calibration item before real work."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(slug="gold", name="Gold study", taxonomy_version=resolve_version("mast"))
    batch = BatchFactory(name="gold-e2e")
    project.batches.add(batch)
    users = {name: UserFactory(username=name) for name in ("olivia", "ana", "ben", "ada", "carl")}
    Membership.objects.create(project=project, user=users["olivia"], role="owner")
    Membership.objects.create(project=project, user=users["ada"], role="adjudicator")
    for name in ("ana", "ben"):
        Membership.objects.create(project=project, user=users[name], role="annotator")
    trace = trace_with_steps(6, batch=batch)
    submit(project, trace, users["ana"], {"FM-1.1": [2]})
    submit(project, trace, users["ben"], {"FM-1.2": [3]})
    item = do_check_trace(project.pk, trace.pk)
    assert item.status == AdjudicationItem.Status.OPEN
    do_decide(
        item,
        Decision(
            modes=(
                ModeDecision("FM-1.1", "a", reason_code="evidence", note="Step 2 restates the task"),
                ModeDecision("FM-1.2", "absent", reason_code="definition", note="No role was set"),
            )
        ),
        actor=users["ada"],
        base_version=item.version,
    )
    Membership.objects.create(project=project, user=users["carl"], role="annotator")
    do_add_items(project, all_gold=True)
    do_configure(project, qualification_size=1)
    return project


def test_an_annotator_sees_the_gold_answer_only_after_submitting_a_calibration_item(
    browser, live_server, world
):
    from playwright.sync_api import expect

    project = world
    page, dialogs = sign_in(browser, live_server, "carl")
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("button", name="Start next trace →").click()
    expect(page.locator("#label-form")).to_be_visible()
    expect(page.locator("#gold-feedback")).to_have_count(0)
    expect(page.locator("body")).not_to_contain_text("Step 2 restates the task")
    page.locator('.mode-row[data-mode="FM-1.1"] > .mode-line label.mode-label').click()
    page.locator('.mode-row[data-mode="FM-1.2"] > .mode-line label.mode-label').click()
    page.get_by_role("button", name=re.compile("^Submit")).click()
    feedback = page.locator("#gold-feedback")
    expect(feedback).to_be_visible()
    expect(feedback.locator('tbody[data-mode="FM-1.1"]')).to_contain_text("Step 2 restates the task")
    expect(feedback.locator('tbody[data-mode="FM-1.1"]')).to_have_class(re.compile("match"))
    miss = feedback.locator('tbody[data-mode="FM-1.2"]')
    expect(miss).to_have_class(re.compile("miss"))
    expect(miss).to_contain_text("No role was set")
    expect(miss).to_contain_text("The mode's definition decides it")
    expect(feedback).to_contain_text("13 of 14")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    feedback.screenshot(path=str(SCREENSHOTS / "calibration-gold.png"))
    assert dialogs == []

    # The owner reads Carl's scores on the Calibration page.
    page, _ = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("link", name="Gold calibration", exact=True).click()
    expect(page.locator("#scores-carl")).to_contain_text("1 calibration item")
    # One item, one miss: kappa 0, and no zero-width interval pretending to be certain.
    expect(page.locator('table.calibration-scores tr[data-mode="FM-1.2"]')).to_contain_text("(no interval)")
    page.screenshot(path=str(SCREENSHOTS / "calibration-page.png"), full_page=True)
