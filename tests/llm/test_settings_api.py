"""The LLM rater's settings through the API, under the page's rules: keys only from LLM_KEY_ENVS or stored
encrypted (never returned), base URLs checked, a changed base URL forgets the stored key; prompt versions;
stopping a run. Owners only: outsiders 404, other roles 403."""

from __future__ import annotations

import pytest

from annotator.models import LLMConfig, LLMRun, PromptTemplate

SECRET = "sk-test-SECRET-4242"


def u(project, tail=""):
    return f"/api/projects/{project.slug}/{tail}"


def test_an_owner_reads_and_changes_the_settings_never_seeing_the_key(client, project, owner, llm_config):
    client.force_login(owner)
    stored = client.post(
        u(project, "llm-settings/key/"), {"api_key": SECRET}, content_type="application/json"
    )
    assert stored.status_code == 200 and stored.json()["has_stored_key"] is True
    body = client.get(u(project, "llm-settings/")).json()
    assert body["model"] == "qwen2.5-7b" and body["base_url"] == llm_config.base_url
    changed = client.patch(
        u(project, "llm-settings/"),
        {"temperature": 0.5, "model": "other-model"},
        content_type="application/json",
    )
    assert changed.status_code == 200
    assert (changed.json()["temperature"], changed.json()["model"], changed.json()["has_stored_key"]) == (
        0.5,
        "other-model",
        True,
    )
    for response in (stored, changed, client.get(u(project, "llm-settings/"))):
        assert SECRET not in response.content.decode()
    assert SECRET not in LLMConfig.objects.get(project=project).api_key_encrypted
    forgotten = client.delete(u(project, "llm-settings/key/"))
    assert forgotten.json()["has_stored_key"] is False


def test_a_new_base_url_forgets_the_stored_key(client, project, owner, llm_config, settings):
    settings.LLM_ALLOWED_BASE_URLS = [llm_config.base_url, "http://127.0.0.1:9/v1"]
    client.force_login(owner)
    client.post(u(project, "llm-settings/key/"), {"api_key": SECRET}, content_type="application/json")
    moved = client.patch(
        u(project, "llm-settings/"), {"base_url": "http://127.0.0.1:9/v1"}, content_type="application/json"
    )
    assert moved.status_code == 200
    assert moved.json()["key_forgotten"] is True and moved.json()["has_stored_key"] is False


def test_unsafe_base_urls_and_unlisted_key_variables_are_refused(
    client, project, owner, llm_config, settings
):
    settings.LLM_KEY_ENVS = ["OPENAI_API_KEY"]
    client.force_login(owner)
    local = client.patch(
        u(project, "llm-settings/"),
        {"base_url": "http://169.254.169.254/v1"},
        content_type="application/json",
    )
    assert local.status_code == 400 and "base_url" in local.json()["fields"]
    env = client.patch(u(project, "llm-settings/"), {"api_key_env": "HOME"}, content_type="application/json")
    assert env.status_code == 400 and "api_key_env" in env.json()["fields"]
    allowed = client.patch(
        u(project, "llm-settings/"), {"api_key_env": "OPENAI_API_KEY"}, content_type="application/json"
    )
    assert allowed.status_code == 200 and allowed.json()["allowed_key_envs"] == ["OPENAI_API_KEY"]
    assert LLMConfig.objects.get(project=project).base_url == llm_config.base_url
    spaced = client.post(
        u(project, "llm-settings/key/"), {"api_key": "two words"}, content_type="application/json"
    )
    assert spaced.status_code == 400


def test_the_prompt_is_versioned(client, project, owner):
    client.force_login(owner)
    first = client.get(u(project, "llm-settings/prompt/")).json()
    assert first["number"] == 1
    saved = client.put(
        u(project, "llm-settings/prompt/"),
        {"instructions": "Label tersely."},
        content_type="application/json",
    )
    assert saved.json() == {"number": 2, "instructions": "Label tersely.", "created": True}
    same = client.put(
        u(project, "llm-settings/prompt/"),
        {"instructions": "Label tersely."},
        content_type="application/json",
    )
    assert same.json()["created"] is False and PromptTemplate.objects.filter(project=project).count() == 2


def test_an_owner_stops_a_run(client, project, owner, traces, llm_config, monkeypatch):
    monkeypatch.setattr("annotator.tasks.run_llm_job.apply_async", lambda *args, **kwargs: None)
    client.force_login(owner)
    run_id = client.post(u(project, "llm-runs/"), {"batch": "run-1"}, content_type="application/json").json()[
        "id"
    ]
    stopped = client.post(u(project, f"llm-runs/{run_id}/stop/"))
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    assert LLMRun.objects.get(pk=run_id).status == "stopped"
    assert client.post(u(project, f"llm-runs/{run_id}/stop/")).status_code == 409


@pytest.mark.parametrize("tail", ["llm-settings/", "llm-settings/prompt/"])
def test_outsiders_get_404_and_other_roles_403(client, project, annotator_a, adjudicator, outsider, tail):
    client.force_login(outsider)
    assert client.get(u(project, tail)).status_code == 404
    for member in (annotator_a, adjudicator):
        client.force_login(member)
        assert client.get(u(project, tail)).status_code == 403
        assert client.patch(u(project, tail), {}, content_type="application/json").status_code in (403, 405)
