"""LLM run statuses tell the truth: "succeeded" only when every trace was labelled, "finished with N failures"
or "failed" with the reason up front otherwise; the rater joins the project with its first label; without
a worker, Start run answers at once and the run goes on in the background."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model

from annotator.models import LLMRun, Membership
from annotator.services.enqueue import is_eager
from annotator.services.llm import runs as llm_runs
from annotator.services.llm.runs import do_process_run, do_start_run
from tests.llm.conftest import RATER
from tests.llm.fake_server import answer

GOOD = {"modes": {"FM-1.3": {"present": True, "steps": [1], "reason": "loops"}}, "summary": "loops"}


def run(project, clock):
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    return do_process_run(started.pk, sleep=clock.sleep, clock=clock).run


def card(client, project, run_):
    return client.get(f"/p/{project.slug}/llm/runs/{run_.pk}/", HTTP_HX_REQUEST="true").content.decode()


@pytest.mark.django_db
def test_a_run_where_every_trace_failed_is_failed_with_the_reason(
    client, project, owner, traces, llm_config, chat_server, clock
):
    chat_server.push(*[answer("not json at all")] * 6)  # each trace: one retry, then failed
    done = run(project, clock)
    assert (done.status, done.done, done.failed) == ("failed", 0, 3)
    assert done.error.startswith("every trace failed (3); the first:")
    client.force_login(owner)
    html = card(client, project, done)
    assert '<span class="pill bad run-verdict">failed</span>' in html and "succeeded" not in html
    assert html.index("every trace failed") < html.index("<progress")  # the reason comes first
    # Nothing was labelled: the rater is no member, so no empty row in the agreement tables.
    rater = get_user_model().objects.get(username=RATER)
    assert not Membership.objects.filter(project=project, user=rater).exists()


@pytest.mark.django_db
def test_a_run_with_some_failures_says_how_many(
    client, project, owner, traces, llm_config, chat_server, clock
):
    chat_server.push(answer(GOOD), *[answer("not json at all")] * 4)
    done = run(project, clock)
    assert (done.status, done.done, done.failed) == ("succeeded", 1, 2)
    client.force_login(owner)
    html = card(client, project, done)
    assert "finished with 2 failures" in html and ">succeeded<" not in html
    rater = get_user_model().objects.get(username=RATER)
    assert Membership.objects.filter(project=project, user=rater, role="annotator").exists()


@pytest.mark.django_db
def test_a_clean_run_is_succeeded(client, project, owner, traces, llm_config, chat_server, clock):
    chat_server.push(*[answer(GOOD)] * 3)
    done = run(project, clock)
    client.force_login(owner)
    assert '<span class="pill good run-verdict">succeeded</span>' in card(client, project, done)


@pytest.fixture
def held_run(chat_server, monkeypatch):
    """No worker, as in the default install; the run, once started in the background, waits for
    `release` (so the request must answer before any trace is labelled) and sets `finished` when done."""
    assert is_eager()
    release, finished = threading.Event(), threading.Event()
    real = llm_runs.do_process_run

    def held(run_id, **options):
        release.wait(timeout=30)
        try:
            return real(run_id, **options)
        finally:
            finished.set()

    monkeypatch.setattr(llm_runs, "do_process_run", held)
    chat_server.push(*[answer(GOOD)] * 3)
    return release, finished


@pytest.mark.django_db(transaction=True)
def test_without_a_worker_start_run_answers_at_once_and_runs_in_the_background(
    client, project, owner, traces, llm_config, held_run
):
    release, finished = held_run
    client.force_login(owner)
    response = client.post(f"/p/{project.slug}/llm/runs/", {"batch": "run-1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    started = LLMRun.objects.get()
    assert started.status == "queued" and "queued" in response.content.decode()
    assert f'hx-get="/p/{project.slug}/llm/runs/{started.pk}/"' in response.content.decode()  # it polls
    release.set()
    assert finished.wait(timeout=60)
    started.refresh_from_db()
    assert (started.status, started.done) == ("succeeded", 3)


@pytest.mark.django_db(transaction=True)
def test_without_a_worker_the_api_starts_a_run_that_goes_on_in_the_background(
    client, project, owner, traces, llm_config, held_run
):
    release, finished = held_run
    client.force_login(owner)
    response = client.post(
        f"/api/projects/{project.slug}/llm-runs/", {"batch": "run-1"}, content_type="application/json"
    )
    assert response.status_code == 202 and response.json()["status"] == "queued"
    started = LLMRun.objects.get()
    release.set()
    assert finished.wait(timeout=60)
    started.refresh_from_db()
    assert (started.status, started.done) == ("succeeded", 3)
