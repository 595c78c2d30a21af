"""In Chromium: the LLM page's "Estimate cost" button shows what a run would cost under the start-run form,
its errors in the same place, and starts nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotator.models import LLMConfig, LLMRun, Membership, Project
from tests.e2e.test_errors_and_keys_browser import seen, sign_in
from tests.factories import BatchFactory, UserFactory, trace_with_steps

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_estimate_button_shows_requests_tokens_and_cost(browser, live_server):
    from playwright.sync_api import expect

    from taxonomy.services import load_builtin_taxonomies, resolve_version

    load_builtin_taxonomies()
    project = Project.objects.create(slug="pilot", name="Pilot", taxonomy_version=resolve_version("mast"))
    batch = BatchFactory(name="pilot-1")
    project.batches.add(batch)
    for _ in range(3):
        trace_with_steps(16, batch=batch)
    Membership.objects.create(project=project, user=UserFactory(username="olivia"), role="owner")
    LLMConfig.objects.create(
        project=project, prompt_price_per_million=Decimal("2.5"), completion_price_per_million=Decimal("10")
    )
    page = sign_in(browser, live_server, "olivia")
    page.goto(f"{live_server.url}/p/{project.slug}/llm/")
    button = page.get_by_role("button", name="Estimate cost")
    button.click()  # no model anywhere yet: the reason, where the estimate goes
    refusal = page.locator("#llm-estimate [role=alert]")
    expect(refusal).to_contain_text("Set the model name")
    seen(page, refusal)
    page.fill("#llm-model", "qwen2.5-7b")
    button.click()
    estimate = page.locator("#llm-estimate")
    expect(estimate.locator(".estimate-requests")).to_have_text("3 requests")
    expect(estimate).to_contain_text("prompt tokens")
    expect(estimate.locator(".estimate-cost")).to_be_visible()
    expect(page.locator("#llm-model")).to_have_value("qwen2.5-7b")  # the form is left as typed
    assert not LLMRun.objects.exists()
