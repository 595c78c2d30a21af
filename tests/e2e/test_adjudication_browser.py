"""In Chromium: two annotators disagree on one mode, the trace appears in the adjudication queue, an
adjudicator resolves it, the gold labels reflect the decision and both raw annotations are unchanged.
Then the agreement report page. Screenshots go to var/screenshots/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from annotator.models import AdjudicationItem, Annotation, GoldLabel, Membership, Project
from annotator.services.assignment import do_assign
from tests.factories import PASSWORD, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


@pytest.fixture
def world(settings, tmp_path):
    """A MAST project with one generated multi-agent trace, assigned to two annotators, and an adjudicator."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version
    from traces.importers.synthetic import native_lines, synthetic_traces
    from traces.services import do_import_files

    load_builtin_taxonomies()
    project = Project.objects.create(
        slug="pilot", name="Pilot study", taxonomy_version=resolve_version("mast")
    )
    users = {name: UserFactory(username=name) for name in ("olivia", "ana", "ben", "ada")}
    for name, role in (
        ("olivia", "owner"),
        ("ana", "annotator"),
        ("ben", "annotator"),
        ("ada", "adjudicator"),
    ):
        Membership.objects.create(project=project, user=users[name], role=role)
    path = tmp_path / "one.jsonl"
    path.write_text("".join(line + "\n" for line in native_lines(synthetic_traces(1, steps=16, seed=11))))
    # Labels shipped in the file are left out: this trace is for our two annotators only.
    result = do_import_files([(path, path.name)], batch_name="pilot-1", keep_annotations=False)
    project.batches.add(result.batch)
    assert do_assign(project) == 2
    return project, result.batch.traces.get(), users


def sign_in(browser, live_server, username):
    context = browser.new_context(viewport={"width": 1480, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page


def label(page, live_server, project, modes: dict[str, int]):
    """Open the next trace, tick each mode and pin its step by number, submit."""
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("button", name="Start next trace →").click()
    expect(page.locator("#label-form")).to_be_visible()
    for code, step in modes.items():
        row = page.locator(f'.mode-row[data-mode="{code}"]')
        row.locator("> .mode-line label.mode-label").click()
        row.locator(".pin-number").fill(str(step))
        row.locator('[data-action="pin-number"]').click()
        expect(row.locator(".pin")).to_have_text(re.compile(f"step {step}"))
    page.get_by_role("button", name=re.compile("^Submit")).click()
    page.wait_for_url(f"{live_server.url}/p/{project.slug}/")


def snapshot(annotation: Annotation) -> tuple:
    annotation.refresh_from_db()
    return (
        annotation.version,
        annotation.status,
        sorted((la.mode.code, tuple(la.evidence_steps)) for la in annotation.labels.select_related("mode")),
    )


def test_a_disagreement_goes_through_the_queue_to_gold(browser, live_server, world):
    from playwright.sync_api import expect

    project, trace, users = world
    label(sign_in(browser, live_server, "ana"), live_server, project, {"FM-1.3": 2, "FM-3.3": 5})
    label(sign_in(browser, live_server, "ben"), live_server, project, {"FM-1.3": 3})
    ana = Annotation.objects.get(assignment__annotator=users["ana"])
    ben = Annotation.objects.get(assignment__annotator=users["ben"])
    before = {"ana": snapshot(ana), "ben": snapshot(ben)}
    assert before["ana"][2] == [("FM-1.3", (2,)), ("FM-3.3", (5,))]

    # The submit hook queued the trace: one disputed mode, FM-3.3 (fatal, so it is listed as such).
    page = sign_in(browser, live_server, "ada")
    page.goto(f"{live_server.url}/p/{project.slug}/adjudication/")
    row = page.locator("table.queue-table tbody tr", has_text=trace.external_id)
    expect(row).to_contain_text("FM-3.3")
    expect(row.locator(".pill.bad")).to_have_text("1 fatal")
    page.get_by_role("button", name="Start next disagreement →").click()
    expect(page.locator(".claim-line")).to_contain_text("Claimed by you")
    disputed = page.locator("#row-FM-3\\.3")
    expect(disputed).to_contain_text("step 5")
    expect(page.locator('input[name="choice-FM-1.3"]')).to_have_count(0)  # agreed: carries over
    expect(page.locator("#step-5 .pill.mark")).to_have_text("FM-3.3 · A")
    expect(page.locator("#step-2 .pill.mark")).to_have_text("FM-1.3 · A")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "adjudication.png"))

    page.locator('input[name="choice-FM-3.3"][value="a"]').check()
    page.locator('select[name="reason-FM-3.3"]').select_option("evidence")
    page.locator('input[name="note-FM-3.3"]').fill("Step 5 reports success without running the tests")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messages")).to_contain_text("Decision saved")
    expect(page.locator(".claim-line")).to_contain_text("Decided by ada")
    gold_table = page.locator("table.compare")
    expect(gold_table.locator("tr", has_text="FM-3.3")).to_contain_text("Adjudicator accepted annotator A")
    expect(gold_table.locator("tr", has_text="FM-1.3")).to_contain_text("All annotators agreed")
    page.screenshot(path=str(SCREENSHOTS / "adjudication-resolved.png"))

    item = AdjudicationItem.objects.get(trace=trace)
    assert item.status == "resolved" and item.resolved_by == users["ada"]
    gold = {g.mode.code: (g.source, g.evidence, g.reason_code) for g in GoldLabel.objects.filter(item=item)}
    assert gold == {
        "FM-1.3": ("agreed", [{"step": 2}, {"step": 3}], ""),
        "FM-3.3": ("accept_a", [{"step": 5}], "evidence"),
    }
    assert {"ana": snapshot(ana), "ben": snapshot(ben)} == before  # raw annotations untouched

    # Once every required annotation is in, the annotator cannot change theirs (agreed or not).
    page = sign_in(browser, live_server, "ben")
    page.goto(f"{live_server.url}/p/{project.slug}/a/{ben.assignment_id}/")
    expect(page.locator("body")).to_contain_text(re.compile("[Aa]djudication"))


def test_the_agreement_report_page(browser, live_server, world):
    """A second, larger batch labelled by both annotators (through the service), then the report."""
    from playwright.sync_api import expect

    from tests.labels import project_trace, submit

    project, _, users = world
    import numpy as np

    codes = list(project.taxonomy_version.modes.order_by("order").values_list("code", flat=True))
    rng = np.random.default_rng(7)
    prevalence = np.linspace(0.04, 0.45, len(codes))
    prevalence[6] = 0  # a mode nobody chose: its kappa is undefined, and the page says why
    for _ in range(40):
        trace = project_trace(project, n_steps=20)
        truth = rng.random(len(codes)) < prevalence
        for name in ("ana", "ben"):
            chosen = (truth ^ (rng.random(len(codes)) < 0.07)) & (prevalence > 0)
            submit(
                project,
                trace,
                users[name],
                {codes[k]: [int(rng.integers(0, 20))] for k in np.flatnonzero(chosen)},
            )
    page = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/agreement/")
    report = page.locator("#agreement-report")
    expect(report.locator("table.report-table")).to_contain_text("FM-1.1")
    expect(report).to_contain_text("undefined: no variation")
    expect(report.locator("table.heatmap")).to_contain_text("ana")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "agreement.png"), full_page=True)
    with page.expect_download() as download:
        report.get_by_role("link", name="CSV").click()
    assert download.value.suggested_filename.endswith(".csv")
