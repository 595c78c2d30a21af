"""The cost of a run before spending: the price math, the page's "Estimate" button (and its errors), the
dry-run endpoint and `llm_annotate --dry-run`."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotator.models import LLMRun
from annotator.services.llm.estimate import RunEstimate, estimate_run
from tests.factories import trace_with_steps

HX = {"HTTP_HX_REQUEST": "true"}


def estimate(**changes) -> RunEstimate:
    values = {
        "model": "m",
        "batch": "b",
        "prompt_version": 1,
        "traces": 10,
        "skipped": 0,
        "requests": 12,
        "windowed_traces": 1,
        "prompt_tokens": 1_234_567,
        "max_completion_tokens": 12 * 1_024,
        "max_tokens": 1_024,
        "prompt_price_per_million": Decimal("2.50"),
        "completion_price_per_million": Decimal("10"),
    }
    return RunEstimate(**{**values, **changes})


def test_the_cost_is_the_prompt_estimate_plus_the_completions_upper_bound():
    priced = estimate()
    assert priced.prompt_cost == Decimal("3.0864")  # 1,234,567 x 2.50 / 1e6 = 3.0864175
    assert priced.max_completion_cost == Decimal("0.1229")  # 12,288 x 10 / 1e6 = 0.12288
    assert priced.max_cost == Decimal("3.2093")
    free = estimate(prompt_price_per_million=Decimal(0), completion_price_per_million=Decimal(0))
    assert free.max_cost == Decimal("0.0000")
    for unpriced in (estimate(prompt_price_per_million=None), estimate(completion_price_per_million=None)):
        assert (unpriced.prompt_cost, unpriced.max_completion_cost, unpriced.max_cost) == (None, None, None)


def test_a_limit_counts_only_the_first_traces_and_nothing_is_written(
    project, traces, llm_config, chat_server
):
    result = estimate_run(project, "run-1", 2, None)
    assert (result.traces, result.requests, result.windowed_traces, result.skipped) == (2, 2, 0, 0)
    assert result.prompt_tokens > 0 and result.max_completion_tokens == 2 * 1_024
    assert chat_server.requests == [] and not LLMRun.objects.exists()
    assert not get_user_model().objects.filter(username__startswith="llm:").exists()  # no rater created


def test_the_page_shows_the_estimate_with_the_cost(client, project, owner, traces, llm_config):
    llm_config.prompt_price_per_million = Decimal("2.5")
    llm_config.completion_price_per_million = Decimal("10")
    llm_config.save()
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/llm/").content.decode()
    assert 'id="llm-estimate"' in page and 'hx-post="/p/demo-project/llm/estimate/"' in page
    response = client.post(f"/p/{project.slug}/llm/estimate/", {"batch": "run-1"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="llm-estimate"' in html and "<html" not in html
    expected = estimate_run(project, "run-1", None, None)
    assert f'<b class="estimate-requests">{expected.requests} requests</b> for 3 traces' in html
    assert f'<b class="estimate-prompt-tokens">{expected.prompt_tokens:,}</b>' in html
    assert f'<b class="estimate-cost">{expected.max_cost}</b>' in html
    assert "A second request after a malformed answer is not included" in html
    assert not LLMRun.objects.exists()


def test_without_prices_the_page_says_how_to_see_the_cost_and_plain_posts_render_the_page(
    client, project, owner, traces, llm_config
):
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/llm/estimate/", {"batch": "run-1", "limit": "1"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html
    assert '<b class="estimate-requests">1 request</b> for 1 trace' in html
    assert "Enter both prices per million tokens" in html
    assert 'value="1"' in html  # the form keeps what was typed


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"batch": "nope"}, "No batch &#x27;nope&#x27; in this project (its batches: run-1)"),
        ({"batch": "run-1", "limit": "0"}, "Choose a batch"),
    ],
)
def test_a_bad_request_shows_a_clear_error_in_the_estimates_place(
    client, project, owner, traces, llm_config, data, message
):
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/llm/estimate/", data, **HX)
    html = response.content.decode()
    assert response.status_code == 422 and 'id="llm-estimate"' in html and 'role="alert"' in html
    assert message in html
    plain = client.post(f"/p/{project.slug}/llm/estimate/", data)
    assert (
        plain.status_code == 422 and message in plain.content.decode() and "<html" in plain.content.decode()
    )


def test_no_model_is_an_error_too(client, project, owner, batch):
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/llm/estimate/", {"batch": "run-1"}, **HX)
    assert response.status_code == 422 and "Set the model name" in response.content.decode()


def test_the_dry_run_endpoint_carries_the_estimate(client, project, owner, traces, llm_config):
    llm_config.prompt_price_per_million = Decimal("1")
    llm_config.completion_price_per_million = Decimal("4")
    llm_config.save()
    client.force_login(owner)
    body = client.post(
        f"/api/projects/{project.slug}/llm-runs/preview/", {"batch": "run-1"}, content_type="application/json"
    ).json()
    expected = estimate_run(project, "run-1", None, None)
    assert body["windows"] == 1 and body["messages"][1]["role"] == "user"
    assert body["estimate"]["requests"] == expected.requests == 3
    assert body["estimate"]["prompt_tokens"] == expected.prompt_tokens
    assert body["estimate"]["max_cost"] == str(expected.max_cost)
    assert body["estimate"]["max_completion_tokens"] == 3 * 1_024


def test_dry_run_prints_the_estimate_then_the_first_windows_prompt(project, batch, llm_config, chat_server):
    llm_config.max_trace_chars = 20_000
    llm_config.prompt_price_per_million = Decimal("3")
    llm_config.completion_price_per_million = Decimal("15")
    llm_config.save()
    trace_with_steps(2_000, batch=batch)
    trace_with_steps(5, batch=batch)
    expected = estimate_run(project, "run-1", None, None)
    out = StringIO()
    call_command("llm_annotate", project.slug, "--batch", "run-1", "--dry-run", stdout=out)
    text = out.getvalue()
    assert f"# Estimate: {expected.requests:,} requests for 2 traces, 1 judged in windows" in text
    assert f"prompt tokens: about {expected.prompt_tokens:,}" in text
    assert f"= at most {expected.max_cost}" in text and "not included: a second request" in text
    assert "window 1 of" in text and "This is window 1 of" in text and "===== system =====" in text
    assert chat_server.requests == [] and not LLMRun.objects.exists()
