"""The owner's LLM page: access (outsider 404, other roles 403), settings, the key never shown, prompt versions."""

from __future__ import annotations

import pytest

from annotator.models import LLMConfig, LLMRun, PromptTemplate

HX = {"HTTP_HX_REQUEST": "true"}
SECRET = "sk-test-SECRET-4242"


def page(project, tail=""):
    return f"/p/{project.slug}/llm/{tail}"


@pytest.mark.parametrize("tail", ["", "agreement/"])
def test_outsiders_get_404_and_other_roles_403(client, project, outsider, annotator_a, adjudicator, tail):
    client.force_login(outsider)
    assert client.get(page(project, tail)).status_code == 404
    assert client.post(page(project, "config/"), {"model": "x"}).status_code == 404
    for user in (annotator_a, adjudicator):
        client.force_login(user)
        assert client.get(page(project, tail)).status_code == 403
        assert client.post(page(project, "key/"), {"api_key": SECRET}).status_code == 403
        assert client.post(page(project, "runs/"), {"batch": "run-1"}).status_code == 403


def test_the_page_shows_empty_states_and_the_default_prompt(client, project, owner):
    client.force_login(owner)
    html = client.get(page(project)).content.decode()
    assert 'id="llm-config"' in html and 'id="llm-prompt"' in html and 'id="llm-runs"' in html
    assert (
        "No runs yet" in html
        and "Attach a batch of traces" in html
        and "No traces in this project yet" in html
    )
    assert "version 1" in html and "expert annotator of AI-agent execution traces" in html


def test_a_stored_key_is_encrypted_and_never_shown(client, project, owner, traces):
    client.force_login(owner)
    response = client.post(page(project, "key/"), {"api_key": SECRET, "action": "store"}, **HX)
    assert response.status_code == 200 and "a key is stored" in response.content.decode()
    config = LLMConfig.objects.get(project=project)
    assert SECRET not in config.api_key_encrypted and config.api_key() == SECRET
    html = client.get(page(project)).content.decode()
    assert SECRET not in html and "a key is stored (encrypted)" in html
    client.post(page(project, "key/"), {"action": "forget"}, **HX)
    config.refresh_from_db()
    assert config.api_key_encrypted == "" and config.key_source().startswith("no key")


def test_settings_are_validated_and_saved(client, project, owner, settings):
    # A compose service on a private network, allowed by the administrator, and the key variable they list.
    settings.LLM_ALLOWED_BASE_URLS = ["http://vllm:8000/v1"]
    settings.LLM_KEY_ENVS = ["OLLAMA_KEY"]
    client.force_login(owner)
    data = {"base_url": "ftp://x", "model": "m", "api_key_env": "MY KEY", "temperature": "5", "max_tokens": "512",
            "requests_per_minute": "30", "token_cap": "1000", "timeout_seconds": "30", "max_trace_chars": "50000", "long_traces": "windows", "window_overlap_steps": "2"}  # fmt: skip
    response = client.post(page(project, "config/"), data, **HX)
    html = response.content.decode()
    assert response.status_code == 422 and 'id="llm-config"' in html
    assert "http:// or https://" in html and "Select a valid choice" in html and "From 0 to 2" in html
    data.update(base_url="http://vllm:8000/v1/chat/completions", api_key_env="OLLAMA_KEY", temperature="0.2")
    assert client.post(page(project, "config/"), data, **HX).status_code == 200
    config = LLMConfig.objects.get(project=project)
    assert (config.base_url, config.api_key_env, config.requests_per_minute) == (
        "http://vllm:8000/v1",
        "OLLAMA_KEY",
        30,
    )
    assert client.post(page(project, "config/"), data).status_code == 302  # without JavaScript


def test_editing_the_prompt_creates_a_version_and_runs_record_theirs(
    client, project, owner, traces, settings
):
    settings.LLM_ALLOWED_BASE_URLS = ["http://127.0.0.1:11434/v1"]  # the default base URL: a local Ollama
    client.force_login(owner)
    response = client.post(page(project, "prompt/"), {"instructions": "Label strictly."}, **HX)
    assert response.status_code == 200 and "Saved as prompt version 2" in response.content.decode()
    assert (
        client.post(page(project, "prompt/"), {"instructions": "Label strictly.\r\n"}, **HX)
        .content.decode()
        .count("No change")
        == 1
    )
    assert client.post(page(project, "prompt/"), {"instructions": "  "}, **HX).status_code == 422
    assert list(PromptTemplate.objects.filter(project=project).values_list("number", flat=True)) == [2, 1]
    html = client.get(page(project)).content.decode()
    assert "Label strictly." in html and "The full prompt for trace" in html and "### Step 0" in html
    LLMConfig.objects.filter(project=project).update(model="m")
    response = client.post(page(project, "runs/"), {"batch": "run-1", "limit": "2"}, **HX)
    assert response.status_code == 200 and "Run " in response.content.decode()
    run = LLMRun.objects.get()
    assert (run.prompt.number, run.limit, run.status, run.rater.username) == (2, 2, "queued", "llm:m")


def test_starting_a_run_explains_what_is_missing(client, project, owner, batch):
    client.force_login(owner)
    response = client.post(page(project, "runs/"), {"batch": "run-1"}, **HX)
    assert response.status_code == 422 and "Set the model name" in response.content.decode()
    response = client.post(page(project, "runs/"), {"batch": "nope", "model": "m"}, **HX)
    assert (
        response.status_code == 422
        and "No batch" in response.content.decode()
        and "run-1" in response.content.decode()
    )
    assert not LLMRun.objects.exists()


def test_run_status_stop_and_resume(client, project, owner, traces, llm_config):
    from annotator.services.llm.runs import do_start_run

    run = do_start_run(project, batch_name="run-1", enqueue=False)
    client.force_login(owner)
    fragment = client.get(page(project, f"runs/{run.pk}/"), **HX).content.decode()
    assert f'id="llm-run-{run.pk}"' in fragment and 'hx-trigger="every 2s"' in fragment
    assert "<html" in client.get(page(project, f"runs/{run.pk}/")).content.decode()
    stopped = client.post(page(project, f"runs/{run.pk}/stop/"), **HX).content.decode()
    assert "stopped: stopped by the owner" in stopped and "Resume" in stopped
    resumed = client.post(page(project, f"runs/{run.pk}/resume/"), **HX).content.decode()
    assert "queued" in resumed


def test_the_runs_card_says_a_thing_once_not_again_in_every_run(client, project, owner, batch, llm_config):
    client.force_login(owner)
    html = client.post(page(project, "runs/"), {"batch": "run-1"}, **HX).content.decode()
    assert html.count("Run ") >= 1 and html.count(" queued.") == 1
    # A refused second start: its reason once, at the form, not inside the run already listed.
    html = client.post(page(project, "runs/"), {"batch": "nope"}, **HX).content.decode()
    assert html.count("No batch") == 1 and 'id="llm-run-' in html
