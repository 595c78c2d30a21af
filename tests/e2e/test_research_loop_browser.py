"""In Chromium, the research loop of issue 16 end to end, every step through the pages: an owner opens a
calibration round for two annotators, who label its traces blind and disagree on one mode of one trace
(one of them also records a failure the taxonomy lacks); the owner closes the round, the disagreement is
discussed and settled into a guideline the annotators then read while labelling; the proposal becomes a
new mode of a new taxonomy version the project moves to with a confirmed mapping (labels carried over with
their provenance, the new mode queued for re-checking); a second round is labelled and closed, and the
trend page compares both rounds mode by mode."""

from __future__ import annotations

import re

import pytest

from annotator.models import (
    Annotation,
    LabelApplication,
    LabelHistory,
    Membership,
    ModeProposal,
    ModeRecheck,
    Project,
)
from tests.e2e.test_annotate_browser import sign_in
from tests.factories import BatchFactory, UserFactory, trace_with_steps

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

GUIDELINE = "Count FM-1.3 only when the agent repeats a step it already completed."
PROPOSAL = "The agent calls the same search tool again and again with identical arguments"


@pytest.fixture
def world():
    """A MAST project (olivia owns it; ana and ben annotate) with two batches of three short traces."""
    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(slug="loop", name="Loop study", taxonomy_version=resolve_version("mast"))
    for name, role in (("olivia", "owner"), ("ana", "annotator"), ("ben", "annotator")):
        Membership.objects.create(project=project, user=UserFactory(username=name), role=role)
    for batch_name, prefix in (("first-pass", "r1"), ("second-pass", "r2")):
        batch = BatchFactory(name=batch_name)
        project.batches.add(batch)
        for letter in "abc":
            trace_with_steps(6, batch=batch, external_id=f"{prefix}-{letter}")
    return project


def open_round(page, live_server, name: str, batch: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/p/loop/")
    page.get_by_role("link", name="Calibration rounds").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("ana").check()
    page.get_by_label("ben").check()
    page.get_by_label("From batch").select_option(batch)
    page.get_by_role("button", name="Open round").click()
    expect(page.locator(".messages")).to_contain_text(f"Round “{name}” opened: 3 traces for 2 annotators.")
    expect(round_row(page, name)).to_contain_text("0 of 6")
    expect(round_row(page, name)).to_contain_text("Open")


def round_row(page, name: str):
    return page.locator("section[aria-labelledby=rounds-title] tbody tr", has_text=name)


def label_with_keys(page, modes: dict[str, int]) -> None:
    """Toggle each mode by the number on its chip and pin the step it is seen at (j walks the steps)."""
    from playwright.sync_api import expect

    expect(page.locator('[data-annotate][data-keys="ready"]')).to_have_count(1)
    current = 0
    for code, step in sorted(modes.items(), key=lambda item: item[1]):
        for _ in range(step - current):
            page.keyboard.press("j")
        current = step
        expect(page.locator("article.step.is-current")).to_have_attribute("data-step", str(step))
        row = page.locator(f'.mode-row[data-mode="{code}"]')
        for digit in row.locator(".mode-key").inner_text():  # mode 14 is "1" then "4"
            page.keyboard.press(digit)
        expect(page.locator(f'input[name="labels"][value="{code}"]')).to_be_checked()
        page.keyboard.press("p")
        expect(row.locator(".pin")).to_have_text(re.compile(f"step {step}"))
    expect(page.locator("#save-status")).to_contain_text("Draft saved")


def label_with_clicks(page, modes: dict[str, int]) -> None:
    from playwright.sync_api import expect

    for code, step in modes.items():
        row = page.locator(f'.mode-row[data-mode="{code}"]')
        row.locator("> .mode-line label.mode-label").click()
        row.locator(".pin-number").fill(str(step))
        row.locator('[data-action="pin-number"]').click()
        expect(row.locator(".pin")).to_have_text(re.compile(f"step {step}"))


def work_through_queue(
    page, live_server, plan: list[tuple[str, dict]], *, keys: bool, done: int = 0, on_trace=None
) -> None:
    """Start the queue on the project page and label its traces in order (trace id -> modes), submitting
    each; the last submit lands back on the project page. `done`: traces the annotator finished before."""
    from playwright.sync_api import expect

    total = done + len(plan)
    page.goto(f"{live_server.url}/p/loop/")
    expect(page.locator("#my-queue")).to_contain_text(f"{done} of {total} done")
    expect(page.locator("#my-queue")).to_contain_text(f"{len(plan)} to go")
    page.get_by_role("button", name="Start next trace →").click()
    for number, (trace_id, modes) in enumerate(plan, start=1):
        expect(page.locator(".crumbs")).to_contain_text(trace_id)
        expect(page.locator(".queue-position")).to_have_text(f"{done + number} of {total}")
        expect(page.locator('input[name="labels"]:checked')).to_have_count(0)  # blind: a fresh slot
        if keys:
            label_with_keys(page, modes)
        else:
            label_with_clicks(page, modes)
        if on_trace:
            on_trace(page, trace_id)
        if keys:
            page.keyboard.press("s")
        else:
            page.get_by_role("button", name=re.compile("^Submit")).click()
        if number < len(plan):
            expect(page.locator(".crumbs")).to_contain_text(plan[number][0])
    page.wait_for_url(f"{live_server.url}/p/loop/")
    expect(page.locator(".messages")).to_contain_text("last trace in your queue")
    expect(page.locator("#my-queue")).to_contain_text(f"{total} of {total} done")
    expect(page.locator("#my-queue")).to_contain_text("All done.")


def propose_a_mode(page, trace_id: str) -> None:
    """While labelling r1-b, ana records a failure the taxonomy lacks."""
    from playwright.sync_api import expect

    if trace_id != "r1-b":
        return
    page.get_by_text("A failure the taxonomy lacks?").click()
    box = page.locator("#proposals")
    box.get_by_label("What went wrong").fill(PROPOSAL)
    box.get_by_label("Suggested name").fill("Tool call loop")
    box.get_by_label("Evidence steps").fill("3, 4")
    box.get_by_role("button", name="Propose").click()
    expect(page.locator("#proposals")).to_contain_text("Recorded. Thank you.")
    expect(page.locator("#proposals")).to_contain_text("Tool call loop: The agent calls the same search tool")


def close_round(page, live_server, name: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/p/loop/rounds/")
    expect(round_row(page, name)).to_contain_text("6 of 6")
    round_row(page, name).get_by_role("button", name="Close and compute").click()
    expect(page.locator(".messages")).to_contain_text(f"Round “{name}” closed")
    expect(round_row(page, name)).to_contain_text("Closed")
    # The report is computed by Celery: inline in tests (tests/conftest.py makes it eager), and with a
    # worker the trend polls until the report is in; either way, wait for the round's column.
    trend = page.locator("section[aria-labelledby=trend-title]")
    expect(trend.locator("thead").first).to_contain_text(name)


def trend_cell(page, table: int, row_label: str, column: int):
    trend = page.locator("section[aria-labelledby=trend-title] table").nth(table)
    return trend.locator("tbody tr", has_text=row_label).first.locator("td").nth(column)


@pytest.mark.usefixtures("world")
def test_two_calibration_rounds_with_a_discussion_a_new_mode_and_a_trend(browser, live_server):
    from playwright.sync_api import expect

    # 1. Olivia opens round 1 on the first batch for both annotators.
    olivia, _ = sign_in(browser, live_server, "olivia")
    open_round(olivia, live_server, "Round 1", "first-pass")

    # 2. Ana (keyboard) and Ben (mouse) label the round blind; they disagree on FM-1.3 of r1-a only.
    #    Ana records a failure the taxonomy lacks while on r1-b.
    ana, ana_dialogs = sign_in(browser, live_server, "ana")
    work_through_queue(
        ana,
        live_server,
        [("r1-a", {"FM-1.1": 1, "FM-1.3": 2}), ("r1-b", {"FM-1.1": 3}), ("r1-c", {"FM-3.3": 5})],
        keys=True,
        on_trace=propose_a_mode,
    )
    ben, ben_dialogs = sign_in(browser, live_server, "ben")
    # Ben clicks Submit right after his last change: the autosave that change scheduled must not follow
    # the submit to the server (it would be refused as stale, 409, and flash a conflict).
    refused = []
    ben.on("response", lambda r: refused.append(r.url) if r.status == 409 else None)
    work_through_queue(
        ben,
        live_server,
        [("r1-a", {"FM-1.1": 1}), ("r1-b", {"FM-1.1": 3}), ("r1-c", {"FM-3.3": 5})],
        keys=False,
    )
    assert ana_dialogs == [] and ben_dialogs == []
    assert refused == []

    # 3. Olivia closes the round: its report is computed and the trend has its first column. Round 1:
    #    FM-1.1 and FM-3.3 agree everywhere (kappa 1); FM-1.3 is ana's alone on r1-a (kappa 0, since
    #    p_o = p_e = 2/3); the 11 modes nobody chose have no kappa. Mean over the defined ones: 2/3.
    close_round(olivia, live_server, "Round 1")
    expect(trend_cell(olivia, 0, "headline kappa", 0)).to_have_text("0.667")
    expect(trend_cell(olivia, 1, "FM-1.3", 0)).to_contain_text("0.000")
    expect(trend_cell(olivia, 1, "FM-1.1", 0)).to_contain_text("1.000")

    # 4. The disagreement opened one discussion, with what each annotator chose and where.
    round_row(olivia, "Round 1").get_by_role("link", name="disagreements").click()
    threads = olivia.locator("section.thread")
    expect(threads).to_have_count(1)
    thread = threads.first
    expect(thread.locator("h2")).to_contain_text("FM-1.3")
    expect(thread.locator("h2")).to_contain_text("on trace r1-a")
    expect(thread.locator(".positions")).to_contain_text("ana: chose it, evidence step #2")
    expect(thread.locator(".positions")).to_contain_text("ben: did not choose it")

    # 5. Both annotators find the round's disagreements from their queue and comment, pointing at steps;
    #    Olivia settles it with a clarified guideline.
    for page, text, step in (
        (ana, "It re-runs the flight search it finished at step 1.", "2"),
        (ben, "Step 2 refines the query, it is not a repetition.", "2"),
    ):
        page.goto(f"{live_server.url}/p/loop/")
        page.get_by_role("link", name="Round 1: 1 disagreement to discuss").click()
        thread = page.locator("section.thread")
        expect(thread.locator(".positions")).to_contain_text("ana: chose it, evidence step #2")
        thread.get_by_label("Comment").fill(text)
        thread.get_by_label("Step").fill(step)
        thread.get_by_role("button", name="Comment").click()
        expect(page.locator(".messages")).to_contain_text("Comment added.")
        expect(page.locator("section.thread .comments")).to_contain_text(text)
    olivia.reload()
    thread = olivia.locator("section.thread")
    expect(thread.locator(".comments li")).to_have_count(2)
    expect(thread.locator(".comments")).to_contain_text("ana · step #2")
    thread.get_by_label("Guideline clarified").check()
    thread.get_by_label("Guideline or definition text").fill(GUIDELINE)
    thread.get_by_role("button", name="Record decision").click()
    expect(olivia.locator(".messages")).to_contain_text("Decision recorded and added to the guidelines")
    expect(olivia.locator("section.thread .decision")).to_have_text(f"Guideline clarified: {GUIDELINE}")
    ana.goto(f"{live_server.url}/p/loop/")
    expect(ana.locator("#my-rounds-title + ul")).to_contain_text(
        "Round 1: 1 disagreement to discuss (0 undecided)"
    )

    # 6. Olivia turns ana's proposal into a new mode (and renames FM-1.1) in v2 of the codebook, checks
    #    where every mode goes, and moves the project with that mapping.
    olivia.goto(f"{live_server.url}/p/loop/")
    olivia.get_by_role("link", name="Proposed modes").click()
    group = olivia.locator("section.proposal-group")
    expect(group).to_have_count(1)
    expect(group.locator("h2")).to_contain_text("1 proposal")
    expect(group).to_contain_text("Suggested names: Tool call loop")
    expect(group).to_contain_text("Co-occurs with: FM-1.1 \u00d71")
    expect(group).to_contain_text(f"ana on trace r1-b (steps 3, 4): {PROPOSAL}")
    group.get_by_role("link", name="Draft a mode from these").click()
    changes = olivia.get_by_label("Changes (YAML)")
    draft = changes.input_value()
    assert "name: Tool call loop" in draft and "code: ''" in draft and "category: ''" in draft
    changes.fill(
        draft.replace("code: ''", "code: FM-2.7").replace("category: ''", "category: FC2")
        + "- op: rename\n  code: FM-1.1\n  new_code: FM-1.1a\n"
    )
    olivia.get_by_role("button", name="Preview").click()
    expect(olivia.get_by_role("heading", name="Where every mode goes")).to_be_visible()
    renamed = olivia.locator("tbody tr").filter(has=olivia.get_by_text("FM-1.1", exact=True))
    expect(renamed.locator("td").nth(0)).to_have_text("4")  # ana's and ben's labels on r1-a and r1-b
    expect(renamed.locator("td").nth(1)).to_have_text("renamed")
    expect(olivia.get_by_label("FM-1.1 goes to")).to_have_value("FM-1.1a")
    expect(olivia.get_by_label("FM-1.3 goes to")).to_have_value("FM-1.3")
    proposal = ModeProposal.objects.get()
    expect(olivia.locator("h3:has-text('New modes') + ul")).to_have_text(
        f"FM-2.7 Tool call loop from proposal {proposal.pk}"
    )
    olivia.get_by_label("I checked this mapping").check()
    olivia.get_by_role("button", name="Move the project to v2").click()
    expect(olivia.locator(".messages")).to_contain_text(
        "The project now uses v2: 4 annotations changed, 2 re-checks queued for annotators."
    )
    olivia.get_by_role("link", name="Proposed modes").click()
    expect(olivia.get_by_text("No open proposals.")).to_be_visible()
    olivia.get_by_role("link", name="Turned into a mode (1)").click()
    expect(olivia.locator("section.proposal-group")).to_contain_text(
        f"{PROPOSAL} · Turned into a mode (FM-2.7)"
    )

    # The annotators of r1-b are asked to re-check the new mode there, and only it; ana's labels carried
    # over with their provenance. Ana re-checks: the loop she proposed is on r1-b.
    ben.goto(f"{live_server.url}/p/loop/")
    expect(ben.get_by_role("link", name="Re-check FM-2.7 on trace r1-b")).to_be_visible()
    ana.goto(f"{live_server.url}/p/loop/")
    ana.get_by_role("link", name="Re-check FM-2.7 on trace r1-b").click()
    expect(ana.locator(".recheck")).to_contain_text("re-check FM-2.7 Tool call loop on this trace")
    ana.get_by_text("Your labels were carried over to a new taxonomy version").click()
    expect(ana.locator(".migrated")).to_contain_text("taxonomy v1 -> v2: FM-1.1 became FM-1.1a")
    expect(ana.locator('input[name="labels"][value="FM-1.1a"]')).to_be_checked()
    label_with_clicks(ana, {"FM-2.7": 3})
    ana.get_by_role("button", name=re.compile("^Save changes")).click()
    ana.wait_for_url(f"{live_server.url}/p/loop/")
    expect(ana.locator("#my-queue")).not_to_contain_text("Re-check FM-2.7")

    # 7. Round 2 on the second batch, in v2. Ana reads the clarified guideline while labelling; this time
    #    both annotators agree everywhere, on the new mode too.
    open_round(olivia, live_server, "Round 2", "second-pass")

    def read_the_guideline(page, trace_id: str) -> None:
        if trace_id == "r2-a":
            page.get_by_role("button", name="Guidelines").click()
            expect(page.locator("#guidelines-dialog")).to_contain_text("FM-1.3 Step repetition (clarified")
            expect(page.locator("#guidelines-dialog")).to_contain_text(GUIDELINE)
            page.keyboard.press("Escape")
            expect(page.locator("#guidelines-dialog")).to_be_hidden()

    plan = [("r2-a", {"FM-1.3": 2}), ("r2-b", {"FM-1.1a": 1}), ("r2-c", {"FM-2.7": 3})]
    work_through_queue(ana, live_server, plan, keys=True, done=3, on_trace=read_the_guideline)
    work_through_queue(ben, live_server, plan, keys=False, done=3)
    assert refused == []
    close_round(olivia, live_server, "Round 2")

    # 8. The trend compares both rounds: FM-1.3 went from 0 to 1 after the guideline; FM-1.1 is the same
    #    row as FM-1.1a (renamed); FM-2.7 did not exist in round 1; FM-3.3 nobody chose in round 2.
    expect(olivia.locator("section[aria-labelledby=trend-title] thead").first.locator("th")).to_have_text(
        ["Statistic", "Round 1", "Round 2"]
    )
    expect(trend_cell(olivia, 0, "headline kappa", 0)).to_have_text("0.667")
    expect(trend_cell(olivia, 0, "headline kappa", 1)).to_have_text("1.000")
    expect(trend_cell(olivia, 0, "mean pairwise Cohen's kappa", 1)).to_have_text("1.000")
    for code, first, second in (
        ("FM-1.3", "0.000", "1.000"),
        ("FM-1.1a", "1.000", "1.000"),
        ("FM-2.7", "—", "1.000"),
        ("FM-3.3", "1.000", "undefined"),
    ):
        expect(trend_cell(olivia, 1, code, 0)).to_contain_text(first)
        expect(trend_cell(olivia, 1, code, 1)).to_contain_text(second)
    # One row per mode of v2: round 1's FM-1.1 is the FM-1.1a row, not a row of its own.
    codes = olivia.locator("section[aria-labelledby=trend-title] table").nth(1).locator("tbody th code")
    expect(codes).to_have_count(15)
    assert "FM-1.1a" in codes.all_inner_texts() and "FM-1.1" not in codes.all_inner_texts()

    # Finally, the database agrees: round 1's FM-1.1 labels are v2's FM-1.1a with a history row naming the
    # migration; the re-check ana answered is resolved, ben's is still open.
    round_one = Annotation.objects.filter(assignment__calibration_round__name="Round 1")
    migrated = LabelApplication.objects.filter(annotation__in=round_one, mode__code="FM-1.1a")
    assert migrated.count() == 4 and {label.mode.version.number for label in migrated} == {2}
    assert not LabelApplication.objects.filter(annotation__in=round_one, mode__code="FM-1.1").exists()
    provenance = LabelHistory.objects.filter(annotation__in=round_one, action="taxonomy")
    assert provenance.count() == 4
    assert {entry.after["migration"] for entry in provenance} == {"taxonomy v1 -> v2: FM-1.1 became FM-1.1a"}
    rechecks = {
        (r.annotation.assignment.annotator.username, r.mode.code, r.resolved_at is not None)
        for r in ModeRecheck.objects.select_related("annotation__assignment__annotator", "mode")
    }
    assert rechecks == {("ana", "FM-2.7", True), ("ben", "FM-2.7", False)}
