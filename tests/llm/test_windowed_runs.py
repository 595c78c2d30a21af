"""Long traces end to end through the real client and the local stand-in: a 2,000-step trace judged in
windows whose evidence lands on step 1,900; evidence outside a window retried; a failed window fails the
trace; the "cut" option; and the estimate against the requests a run really sends."""

from __future__ import annotations

import re

import pytest

from annotator.llm.client import estimate_tokens, message_chars
from annotator.models import Annotation, LLMTraceResult
from annotator.services.llm.config import current_prompt
from annotator.services.llm.estimate import estimate_run
from annotator.services.llm.labeller import windows_for
from annotator.services.llm.runs import do_process_run, do_start_run, run_progress
from tests.factories import trace_with_steps
from tests.llm.conftest import MODEL, RATER
from tests.llm.fake_server import answer

NONE = {"modes": {}, "summary": "No failure in these steps"}
WINDOW = re.compile(r"This is window (\d+) of (\d+): steps (\d+) to (\d+)\.")


def found(code: str, *steps: int, reason: str = "gives up") -> dict:
    return {"modes": {code: {"present": True, "steps": list(steps), "reason": reason}}, "summary": reason}


@pytest.fixture
def long_trace(batch, llm_config):
    """2,000 steps of about 60 characters each against a 20,000-character budget: about 7 windows."""
    llm_config.max_trace_chars = 20_000
    llm_config.save()
    return trace_with_steps(2_000, batch=batch)


def plan(project, trace, config):
    return windows_for(project, trace, template=current_prompt(project), config=config)


def run(project, clock):
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    return do_process_run(started.pk, sleep=clock.sleep, clock=clock).run


def sent_windows(chat_server) -> list[tuple[int, int, int, int]]:
    return [
        tuple(int(g) for g in WINDOW.search(seen.body["messages"][1]["content"]).groups())
        for seen in chat_server.requests
    ]


def test_evidence_on_step_1900_of_a_2000_step_trace_is_stored(
    client, owner, project, long_trace, llm_config, chat_server, clock
):
    windows = plan(project, long_trace, llm_config)
    assert len(windows) > 3
    holding = next(w for w in windows if w.first <= 1_900 <= w.last)
    chat_server.push(
        *[
            answer(found("FM-1.3", 1_900, 1_901, reason="stops at the end") if w is holding else NONE)
            for w in windows
        ]
    )
    done = run(project, clock)
    assert (done.status, done.done, done.failed) == ("succeeded", 1, 0)
    assert sent_windows(chat_server) == [(w.number, w.of, w.first, w.last) for w in windows]
    annotation = Annotation.objects.get(assignment__annotator__username=RATER, assignment__trace=long_trace)
    label = annotation.labels.get()
    assert (label.mode.code, label.evidence, label.note) == (
        "FM-1.3",
        [{"step": 1_900}, {"step": 1_901}],
        "stops at the end",
    )
    assert not annotation.no_failure
    result = LLMTraceResult.objects.get(run=done, trace=long_trace)
    assert (result.windows, result.attempts) == (len(windows), len(windows))
    assert (done.windowed_traces, done.window_requests) == (1, len(windows))
    progress = run_progress(done)
    assert (progress["windowed_traces"], progress["window_requests"]) == (1, len(windows))
    client.force_login(owner)
    card = client.get(f"/p/{project.slug}/llm/runs/{done.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert f'<span class="run-windows">1 long trace judged in {len(windows)} windowed requests</span>' in card


def test_evidence_outside_its_window_is_asked_again_once(project, long_trace, llm_config, chat_server, clock):
    windows = plan(project, long_trace, llm_config)
    chat_server.push(
        answer(found("FM-1.3", 1_900)),  # window 1 cites a step it does not show
        answer(found("FM-1.3", 3)),  # the retry cites its own step
        *[answer(NONE) for _ in windows[1:]],
    )
    done = run(project, clock)
    assert (done.done, done.failed) == (1, 0)
    retry = chat_server.requests[1].body["messages"]
    assert len(retry) == 4 and retry[:2] == chat_server.requests[0].body["messages"]
    assert (
        f"step 1900 cited for FM-1.3 is not in this window: cite only steps 0 to {windows[0].last}"
        in retry[3]["content"]
    )
    label = Annotation.objects.get(assignment__trace=long_trace).labels.get()
    assert label.evidence == [{"step": 3}]
    assert LLMTraceResult.objects.get(run=done).attempts == len(windows) + 1


def test_a_window_that_fails_fails_the_trace_with_no_partial_labels(
    project, long_trace, llm_config, chat_server, clock
):
    windows = plan(project, long_trace, llm_config)
    chat_server.push(
        answer(found("FM-1.3", 3)),  # window 1: fine
        answer("no JSON here"),
        answer(found("FM-1.3", 1_999)),  # window 2: malformed, then outside it
    )
    done = run(project, clock)
    assert (done.status, done.done, done.failed) == ("failed", 0, 1)
    assert len(chat_server.requests) == 3  # the windows after the failed one are not asked
    result = LLMTraceResult.objects.get(run=done)
    assert result.status == "failed" and result.annotation is None and result.windows == len(windows)
    assert result.error.startswith(
        f"window 2 of {len(windows)} (steps {windows[1].first}-{windows[1].last}): "
    )
    assert "malformed answer, twice" in result.error
    assert not Annotation.objects.filter(assignment__trace=long_trace).exists()


def test_the_cut_option_asks_once_with_the_middle_cut_as_before(
    project, long_trace, llm_config, chat_server, clock
):
    llm_config.long_traces = "cut"
    llm_config.save()
    chat_server.push(answer(found("FM-1.3", 1_900)))  # a cut trace may cite any of its steps, as before
    done = run(project, clock)
    assert (done.done, done.windowed_traces, done.window_requests) == (1, 0, 0)
    assert done.endpoint["long_traces"] == "cut" and done.endpoint["window_overlap_steps"] == 2
    (seen,) = chat_server.requests
    user = seen.body["messages"][1]["content"]
    assert re.search(r"\[\.\.\. steps \d+-\d+ omitted, [\d,]+ characters truncated \.\.\.\]", user)
    assert "This is window" not in user
    assert LLMTraceResult.objects.get(run=done).windows == 1


def test_a_run_started_before_windows_existed_keeps_cutting_when_resumed(
    project, long_trace, llm_config, chat_server, clock
):
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    snapshot = {k: v for k, v in started.endpoint.items() if k not in ("long_traces", "window_overlap_steps")}
    type(started).objects.filter(pk=started.pk).update(endpoint=snapshot)
    chat_server.push(answer(NONE))
    done = do_process_run(started.pk, sleep=clock.sleep, clock=clock).run
    assert done.done == 1 and len(chat_server.requests) == 1
    assert "omitted" in chat_server.requests[0].body["messages"][1]["content"]


def test_the_estimate_counts_the_requests_and_prompt_tokens_a_run_then_sends(
    project, batch, long_trace, llm_config, chat_server, clock
):
    short = [trace_with_steps(6, batch=batch) for _ in range(3)]
    estimate = estimate_run(project, "run-1", None, None)
    windows = len(plan(project, long_trace, llm_config))
    assert (estimate.traces, estimate.skipped, estimate.windowed_traces) == (4, 0, 1)
    assert estimate.requests == windows + len(short)
    assert estimate.max_completion_tokens == estimate.requests * llm_config.max_tokens
    chat_server.push(*[answer(NONE) for _ in range(estimate.requests)])
    done = run(project, clock)
    assert done.done == 4
    assert len(chat_server.requests) == estimate.requests
    sent = sum(estimate_tokens(message_chars(seen.body["messages"])) for seen in chat_server.requests)
    assert estimate.prompt_tokens == sent
    assert done.model == MODEL
    again = estimate_run(project, "run-1", None, None)  # the model has labelled them all: a run skips them
    assert (again.traces, again.skipped, again.requests, again.prompt_tokens) == (4, 4, 0, 0)
