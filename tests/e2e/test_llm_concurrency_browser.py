"""In Chromium: an owner sets how many requests a run keeps in flight, starts a run against the local
stand-in (whose replies wait until the test releases them), watches the in-flight count in the run's
progress, stops the run and sees it stopped; the answers already on the wire are recorded once."""

from __future__ import annotations

import threading

import pytest

from annotator.models import LLMConfig, LLMRun, LLMTraceResult, Membership, Project
from tests.e2e.test_adjudication_browser import sign_in
from tests.factories import BatchFactory, UserFactory, trace_with_steps
from tests.llm.fake_server import FakeChatServer, Reply, answer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LABELS = {"modes": {"FM-1.3": {"present": True, "steps": [1], "reason": "loops"}}, "summary": "s"}


@pytest.fixture
def held_server(settings):
    server = FakeChatServer().start()
    settings.LLM_ALLOWED_BASE_URLS = [server.base_url]
    release = threading.Event()
    server.push(*[Reply(**{**vars(answer(LABELS)), "hold": release}) for _ in range(12)])
    yield server, release
    release.set()
    server.stop()


def test_an_owner_sets_concurrency_starts_a_run_watches_it_in_flight_and_stops_it(
    browser, live_server, held_server
):
    from playwright.sync_api import expect

    from taxonomy.services import load_builtin_taxonomies, resolve_version

    server, release = held_server
    load_builtin_taxonomies()
    project = Project.objects.create(slug="pilot", name="Pilot", taxonomy_version=resolve_version("mast"))
    olivia = UserFactory(username="olivia")
    Membership.objects.create(project=project, user=olivia, role="owner")
    batch = BatchFactory(name="pilot-1")
    project.batches.add(batch)
    for _ in range(12):
        trace_with_steps(4, batch=batch)
    LLMConfig.objects.create(
        project=project, base_url=server.base_url, model="qwen2.5-7b", requests_per_minute=1000, token_cap=0
    )

    page = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/llm/")
    page.get_by_label("Requests in flight at once").fill("3")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#llm-config [role=status]")).to_have_text("Settings saved.")
    assert LLMConfig.objects.get(project=project).concurrency == 3

    page.get_by_role("button", name="Start run").click()
    expect(page.locator("#llm-runs > p[role=status]")).to_contain_text("queued")
    run = LLMRun.objects.get(project=project)
    card = page.locator(f"#llm-run-{run.pk}")
    # The card polls itself: the three held requests appear as in flight.
    expect(card.locator(".run-in-flight")).to_have_text("3 in flight", timeout=15_000)
    expect(card).to_contain_text("(up to 3)")
    assert server.active == 3

    card.get_by_role("button", name="Stop").click()
    expect(card.locator(".run-verdict")).to_have_text("stopped: stopped by the owner")
    expect(card.get_by_role("button", name="Resume")).to_be_visible()

    # The answers already on the wire arrive after the stop: recorded once each, and nothing more is sent.
    worker = next(t for t in threading.enumerate() if t.name == f"llm-run-{run.pk}")
    release.set()
    worker.join(timeout=15)
    assert not worker.is_alive()
    run.refresh_from_db()
    assert (run.status, run.done, run.in_flight, len(server.requests)) == ("stopped", 3, 0, 3)
    assert LLMTraceResult.objects.filter(run=run).count() == 3
    page.reload()
    expect(page.locator(f"#llm-run-{run.pk}")).to_contain_text("3 of 12 traces · 3 labelled")
