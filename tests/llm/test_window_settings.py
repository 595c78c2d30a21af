"""The long-trace settings and the prices, on the settings page and through the API, under one rule set."""

from __future__ import annotations

from decimal import Decimal

from annotator.models import LLMConfig

HX = {"HTTP_HX_REQUEST": "true"}


def settings_form(**changes) -> dict:
    data = {"base_url": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": "", "temperature": "0",
            "max_tokens": "512", "requests_per_minute": "30", "token_cap": "1000", "timeout_seconds": "30",
            "max_trace_chars": "50000", "long_traces": "windows", "window_overlap_steps": "2"}  # fmt: skip
    return {**data, **changes}


def test_the_page_saves_the_long_trace_choice_the_overlap_and_the_prices(client, project, owner, settings):
    settings.LLM_ALLOWED_BASE_URLS = ["http://127.0.0.1:8000/v1"]
    client.force_login(owner)
    page = client.get(f"/p/{project.slug}/llm/").content.decode()
    for name in (
        "long_traces",
        "window_overlap_steps",
        "prompt_price_per_million",
        "completion_price_per_million",
    ):
        assert f'name="{name}"' in page
    form = settings_form(
        long_traces="cut",
        window_overlap_steps="4",
        prompt_price_per_million="0.15",
        completion_price_per_million="0.6",
    )
    assert client.post(f"/p/{project.slug}/llm/config/", form, **HX).status_code == 200
    config = LLMConfig.objects.get(project=project)
    assert (config.long_traces, config.window_overlap_steps) == ("cut", 4)
    assert (config.prompt_price_per_million, config.completion_price_per_million) == (
        Decimal("0.15"),
        Decimal("0.6"),
    )
    for bad in (
        {"window_overlap_steps": "21"},
        {"long_traces": "drop"},
        {"prompt_price_per_million": "-1"},
    ):
        refused = client.post(f"/p/{project.slug}/llm/config/", settings_form(**bad), **HX)
        assert refused.status_code == 422
    assert LLMConfig.objects.get(project=project).window_overlap_steps == 4


def test_the_api_reads_and_patches_them(client, project, owner, llm_config):
    client.force_login(owner)
    url = f"/api/projects/{project.slug}/llm-settings/"
    body = client.get(url).json()
    assert (body["long_traces"], body["window_overlap_steps"]) == ("windows", 2)
    assert body["prompt_price_per_million"] is None and body["completion_price_per_million"] is None
    changed = client.patch(
        url, {"long_traces": "cut", "prompt_price_per_million": "2.5", "completion_price_per_million": 10},
        content_type="application/json",
    )  # fmt: skip
    assert changed.status_code == 200
    assert (changed.json()["long_traces"], changed.json()["prompt_price_per_million"]) == ("cut", "2.5000")
    assert changed.json()["completion_price_per_million"] == "10.0000"
    refused = client.patch(url, {"window_overlap_steps": 99}, content_type="application/json")
    assert refused.status_code == 400 and "window_overlap_steps" in refused.json()["fields"]
    cleared = client.patch(url, {"prompt_price_per_million": None}, content_type="application/json")
    assert cleared.status_code == 200 and cleared.json()["prompt_price_per_million"] is None
