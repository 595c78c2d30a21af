"""An LLM run over a saved view's traces instead of a batch: the traces taken when it starts, kept on resume,
through the service, the API and llm_annotate --view (the local stand-in server; no network)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.access import ProjectAccess
from annotator.models import LLMRun, LLMTraceResult
from annotator.search.filters import parse
from annotator.search.saved import do_save_view
from annotator.services.llm.process import do_process_run, run_traces
from annotator.services.llm.runs import LLMRunError, do_start_run
from tests.factories import BatchFactory, trace_with_steps
from tests.llm.fake_server import answer
from traces.models import Trace

NO_FAILURE = {"modes": {}, "summary": "No failure"}


@pytest.fixture
def failures(project, traces):
    """Two of the batch's three traces fail, and one trace of another batch does."""
    Trace.objects.filter(pk=traces[1].pk).update(outcome="success")
    Trace.objects.filter(pk__in=[traces[0].pk, traces[2].pk]).update(outcome="failure")
    other = BatchFactory(name="run-2")
    project.batches.add(other)
    extra = trace_with_steps(4, batch=other, outcome="failure")
    return [traces[0], traces[2], extra]


def _view(project, owner, name="Failures", **params):
    return do_save_view(ProjectAccess.of(owner, project), name, parse(params or {"outcome": "failure"}))


def test_a_run_over_a_view_labels_its_traces_only(project, owner, failures, llm_config, chat_server, clock):
    view = _view(project, owner)
    chat_server.push(*(answer(NO_FAILURE) for _ in range(3)))
    run = do_start_run(project, view=view, enqueue=False)
    assert run.batch is None and run.view_name == "Failures" and run.total == 3
    assert run.scope["params"] == [["outcome", "failure"]] and run.covers == "view Failures"
    done = do_process_run(run.pk, sleep=clock.sleep, clock=clock).run
    assert (done.status, done.done) == ("succeeded", 3)
    labelled = set(LLMTraceResult.objects.filter(run=done).values_list("trace_id", flat=True))
    assert labelled == {trace.pk for trace in failures}


def test_a_view_runs_traces_stay_those_taken_at_the_start(project, owner, failures, traces, llm_config):
    view = _view(project, owner)
    run = do_start_run(project, view=view, limit=2, enqueue=False)
    Trace.objects.filter(pk=traces[1].pk).update(outcome="failure")  # the view now selects one more
    assert list(run_traces(LLMRun.objects.get(pk=run.pk))) == sorted(t.pk for t in failures)[:2]
    empty = _view(project, owner, "Nothing", benchmark="none")
    with pytest.raises(LLMRunError, match="holds no trace"):
        do_start_run(project, view=empty, enqueue=False)


def test_batch_runs_still_work(project, traces, llm_config):
    run = do_start_run(project, batch_name="run-1", enqueue=False)
    assert run.batch.name == "run-1" and run.scope == {} and list(run_traces(run)) == [t.pk for t in traces]


def test_api_and_command_start_a_run_over_a_view(client, project, owner, failures, llm_config, chat_server):
    view = _view(project, owner)
    client.force_login(owner)
    url = "/api/projects/demo-project/llm-runs/"
    assert client.post(url, {}, content_type="application/json").status_code == 400
    both = client.post(url, {"batch": "run-1", "view": "Failures"}, content_type="application/json")
    assert both.status_code == 400
    started = client.post(url, {"view": view.pk, "limit": 1}, content_type="application/json")
    assert started.status_code == 202, started.content
    assert started.json()["view"] == "Failures" and started.json()["batch"] == ""
    chat_server.push(*(answer(NO_FAILURE) for _ in range(3)))
    out = StringIO()
    call_command("llm_annotate", "demo-project", "--view", "Failures", stdout=out)
    assert "on view Failures, 3 traces" in out.getvalue()
    with pytest.raises(CommandError, match="--view: no saved view"):
        call_command("llm_annotate", "demo-project", "--view", "Nope", stdout=StringIO())
    with pytest.raises(CommandError, match="--batch is required"):
        call_command("llm_annotate", "demo-project", stdout=StringIO())


def test_the_llm_page_starts_a_run_over_a_view(client, project, owner, failures, llm_config):
    _view(project, owner)
    client.force_login(owner)
    page = client.get("/p/demo-project/llm/").content.decode()
    assert '<select id="llm-view" name="view">' in page and "<option>Failures</option>" in page
    started = client.post(
        "/p/demo-project/llm/runs/", {"batch": "run-1", "view": "Failures"}, headers={"HX-Request": "true"}
    )
    assert started.status_code == 200 and "queued" in started.content.decode()
    run = LLMRun.objects.get()
    assert (
        run.view_name == "Failures" and run.total == 3 and "the view “Failures”" in started.content.decode()
    )
    missing = client.post(
        "/p/demo-project/llm/runs/", {"batch": "run-1", "view": "Nope"}, headers={"HX-Request": "true"}
    )
    assert "No saved view" in missing.content.decode()
