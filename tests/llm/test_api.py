"""The LLM run API: owners start and follow runs; outsiders 404, other roles 403; documented in OpenAPI."""

from __future__ import annotations

import pytest

from annotator.models import LLMRun

SECRET = "sk-test-SECRET-4242"


def runs_url(project, tail=""):
    return f"/api/projects/{project.slug}/llm-runs/{tail}"


def test_an_owner_starts_a_run_and_reads_its_status(
    client, project, owner, traces, llm_config, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("annotator.api.llm.runs.is_eager", lambda: False)  # a worker takes the run
    monkeypatch.setattr(
        "annotator.tasks.run_llm_job.apply_async", lambda args, **kwargs: sent.append((tuple(args), kwargs))
    )
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            runs_url(project), {"batch": "run-1", "limit": 2}, content_type="application/json"
        )
    assert response.status_code == 202
    body = response.json()
    assert (body["status"], body["total"], body["model"], body["rater"], body["prompt_version"]) == (
        "queued",
        2,
        "qwen2.5-7b",
        "llm:qwen2.5-7b",
        1,
    )
    run = LLMRun.objects.get()
    assert sent == [((run.pk,), {})]  # only the run id travels to the worker
    detail = client.get(runs_url(project, f"{run.pk}/")).json()
    assert detail["id"] == run.pk and detail["endpoint"]["base_url"] == llm_config.base_url
    assert [item["id"] for item in client.get(runs_url(project)).json()] == [run.pk]


def test_bad_requests_say_what_is_wrong(client, project, owner, batch, llm_config):
    client.force_login(owner)
    response = client.post(runs_url(project), {"batch": "missing"}, content_type="application/json")
    assert response.status_code == 400 and "No batch 'missing'" in response.json()["detail"]
    assert (
        client.post(
            runs_url(project), {"batch": "run-1", "limit": 0}, content_type="application/json"
        ).status_code
        == 400
    )
    assert client.post(runs_url(project, "999/resume/")).status_code == 404


@pytest.mark.parametrize("tail", ["", "1/", "1/resume/"])
def test_outsiders_get_404_and_other_roles_403(
    client, project, outsider, annotator_a, adjudicator, traces, llm_config, tail
):
    from annotator.services.llm.runs import do_start_run

    run = do_start_run(project, batch_name="run-1", enqueue=False)
    tail = tail.replace("1", str(run.pk))
    method = client.post if tail.endswith("resume/") else client.get
    client.force_login(outsider)
    assert method(runs_url(project, tail)).status_code == 404
    for user in (annotator_a, adjudicator):
        client.force_login(user)
        assert method(runs_url(project, tail)).status_code == 403
    client.force_login(annotator_a)
    assert (
        client.post(runs_url(project), {"batch": "run-1"}, content_type="application/json").status_code == 403
    )
    assert client.get(f"/api/projects/{project.slug}/llm-agreement/").status_code == 403


def test_the_endpoints_are_in_the_openapi_schema(client, owner):
    client.force_login(owner)
    schema = client.get("/api/schema/").content.decode()
    for path in ("/api/projects/{slug}/llm-runs/:", "/api/projects/{slug}/llm-runs/{run_id}/:", "/api/projects/{slug}/llm-agreement/:",
                 "/api/projects/{slug}/assignments/{assignment_id}/llm-labels/:", "RunStatus"):  # fmt: skip
        assert path in schema
