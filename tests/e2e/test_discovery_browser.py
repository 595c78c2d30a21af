"""In Chromium: an owner asks what a discovery run would cost, starts it from the page against the
deterministic stand-in model, watches its progress, opens a candidate's example at its step in the trace
viewer, and sends the passing candidates to the proposals page."""

from __future__ import annotations

import pytest

from annotator.discovery.synthetic import planted_traces, store_traces
from annotator.models import DiscoveryRun, LLMConfig, Membership, ModeProposal, Project
from tests.discovery.standin import DiscoveryModel, DiscoveryStandIn
from tests.e2e.test_adjudication_browser import sign_in
from tests.factories import BatchFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def standin(settings):
    # Slow enough that the progress bar is seen, fast enough for a test.
    with DiscoveryStandIn(DiscoveryModel(latency=0.15)) as server:
        settings.LLM_ALLOWED_BASE_URLS = [server.base_url]
        yield server


def test_an_owner_runs_discovery_from_the_page_and_sends_the_passing_candidates(
    browser, live_server, standin
):
    from playwright.sync_api import expect

    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(slug="pilot", name="Pilot", taxonomy_version=resolve_version("mast"))
    olivia = UserFactory(username="olivia")
    Membership.objects.create(project=project, user=olivia, role="owner")
    batch = BatchFactory(name="synthetic")
    project.batches.add(batch)
    store_traces(batch, planted_traces(90, per_pattern=14, seed=3))
    LLMConfig.objects.create(
        project=project,
        base_url=standin.base_url,
        model="namer",
        requests_per_minute=100_000,
        concurrency=4,
        token_cap=0,
    )

    page = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/")
    page.get_by_role("link", name="Discover modes").click()
    page.get_by_label("Scope").first.fill("batch:synthetic")
    page.get_by_label("Induction sample").fill("60")
    page.get_by_label("Gate sample").first.fill("30")
    page.get_by_label("Gate raters").fill("rater-a,rater-b,rater-c")
    page.get_by_role("button", name="Estimate cost").click()
    expect(page.locator("#discovery-estimate")).to_contain_text("Before it starts")
    assert standin.requests == 0 and not DiscoveryRun.objects.exists()

    page.get_by_role("button", name="Start discovery").click()
    progress = page.locator("progress.discovery-progress")
    expect(progress).to_be_visible(timeout=15_000)
    expect(page.locator("#candidates-title")).to_be_visible(timeout=90_000)
    expect(page.locator("#discovery-run .run-status")).to_have_text("succeeded")
    expect(page.locator(".candidate.passes")).to_have_count(3)
    expect(page.locator(".methods")).to_contain_text("Fleiss' kappa")

    example = page.locator("#candidate-PAGINATION a.example").first
    step = example.get_attribute("href").split("#step-")[1]
    example.click()
    expect(page.locator(f"#step-{step}")).to_contain_text("Fetched page 1 of 7")
    page.go_back()

    page.get_by_role("button", name="Send passing candidates to proposals").click()
    page.wait_for_url(f"{live_server.url}/p/{project.slug}/proposals/")
    expect(page.locator(".badge", has_text="discovered")).to_have_count(3)
    assert ModeProposal.objects.filter(discovery_run__isnull=False, status="open").count() == 3
