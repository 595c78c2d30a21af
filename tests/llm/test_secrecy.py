"""The API key never appears in a page, an API response, a log line, a result row or a task argument."""

from __future__ import annotations

import logging

from annotator.models import LLMConfig, LLMRun, LLMTraceResult
from annotator.services.llm.config import do_store_key
from annotator.services.llm.runs import do_process_run
from tests.llm.fake_server import Reply, answer

SECRET = "sk-test-SECRET-4242"


def test_the_key_is_sent_to_the_endpoint_and_nowhere_else(
    client,
    project,
    owner,
    traces,
    llm_config,
    chat_server,
    clock,
    caplog,
    django_capture_on_commit_callbacks,
    monkeypatch,
):
    caplog.set_level(logging.DEBUG)
    do_store_key(project, SECRET, actor=owner)
    sent = []
    monkeypatch.setattr("annotator.api.llm.runs.is_eager", lambda: False)  # a worker takes the run
    monkeypatch.setattr(
        "annotator.tasks.run_llm_job.apply_async", lambda args, **kwargs: sent.append((tuple(args), kwargs))
    )
    client.force_login(owner)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            f"/api/projects/{project.slug}/llm-runs/", {"batch": "run-1"}, content_type="application/json"
        )
    run = LLMRun.objects.get()
    # The server echoes the key in an error (as some do): bodies never reach a stored or logged error.
    chat_server.push(
        answer({"modes": {}}),
        Reply(400, {"error": f"bad request for key {SECRET}"}),
        Reply(503, {"error": f"{SECRET} overloaded"}),
        answer({"modes": {}}),
    )
    do_process_run(run.pk, sleep=clock.sleep, clock=clock)
    assert chat_server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    everything = [
        started.content.decode(),
        client.get(f"/api/projects/{project.slug}/llm-runs/{run.pk}/").content.decode(),
        client.get(f"/api/projects/{project.slug}/llm-runs/").content.decode(),
        client.get(f"/p/{project.slug}/llm/").content.decode(),
        client.get(f"/p/{project.slug}/llm/runs/{run.pk}/").content.decode(),
        caplog.text,
        repr(sent),
        repr(list(LLMTraceResult.objects.values())),
        repr(list(LLMRun.objects.values())),
        LLMConfig.objects.get(project=project).api_key_encrypted,
    ]
    assert sent == [((run.pk,), {})]
    for text in everything:
        assert SECRET not in text
    assert "HTTP 400" in LLMTraceResult.objects.get(run=run, status="failed").error
