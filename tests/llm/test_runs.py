"""LLM runs end to end through the real client and a local stand-in server: labels stored as a rater's
annotations, malformed answers retried once then failed, 429 and timeouts, the token cap, resuming."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotator.models import Annotation, Assignment, LabelHistory, LLMRun, LLMTraceResult, Membership
from annotator.raters import llm_q
from annotator.services.assignment import annotator_ids, do_assign
from annotator.services.llm.runs import do_process_run, do_resume_run, do_start_run
from tests.llm.conftest import MODEL, RATER
from tests.llm.fake_server import Reply, answer


def labels(*codes, steps=(2,), summary="It keeps searching"):
    return {
        "modes": {
            code: {"present": True, "steps": list(steps), "reason": f"reason for {code}"} for code in codes
        }
        | {"FM-2.2": {"present": False}},
        "summary": summary,
    }


def run(project, clock, **options):
    started = do_start_run(project, batch_name="run-1", enqueue=False, **options)
    return do_process_run(started.pk, sleep=clock.sleep, clock=clock).run


def test_a_run_stores_labels_as_submitted_annotations_of_an_llm_rater(
    project, traces, llm_config, chat_server, clock
):
    chat_server.push(answer(labels("FM-1.3"), prompt_tokens=500, completion_tokens=40), answer(labels("FM-1.1", "FM-3.3")),
                     answer({"modes": {}, "summary": "No failure"}))  # fmt: skip
    done = run(project, clock)
    assert (done.status, done.total, done.done, done.failed, done.skipped) == ("succeeded", 3, 3, 0, 0)
    assert done.tokens_used == 540 + 120 + 120
    rater = get_user_model().objects.get(username=RATER)
    assert not rater.is_active and not rater.has_usable_password()
    assert Membership.objects.filter(project=project, user=rater, role="annotator").exists()
    first = Annotation.objects.get(assignment__annotator=rater, assignment__trace=traces[0])
    assert first.status == "submitted" and first.note == "It keeps searching" and not first.no_failure
    label = first.labels.get()
    assert (label.mode.code, label.evidence, label.note) == ("FM-1.3", [{"step": 2}], "reason for FM-1.3")
    assert Assignment.objects.get(annotation=first).status == "submitted"
    assert LabelHistory.objects.filter(annotation=first, action="llm").exists()
    last = Annotation.objects.get(assignment__annotator=rater, assignment__trace=traces[2])
    assert last.no_failure and not last.labels.exists()
    result = LLMTraceResult.objects.get(run=done, trace=traces[0])
    assert (
        result.status,
        result.attempts,
        result.prompt_tokens,
        result.completion_tokens,
        result.total_tokens,
    ) == ("done", 1, 500, 40, 540)
    assert done.model == MODEL and done.prompt.number == 1 and "api_key" not in str(done.endpoint)
    assert "FM-1.3: " in chat_server.requests[0].body["messages"][0]["content"]


def test_a_malformed_answer_is_retried_once_then_recorded_as_a_failure_without_labels(
    project, traces, llm_config, chat_server, clock
):
    chat_server.push(
        answer("I think it is FM-1.3"), answer(labels("FM-9.9")),  # trace 1: malformed twice
        answer("```json\nnope"), answer(labels("FM-1.3")),  # trace 2: malformed, then fine
        answer(labels("FM-1.1")),
    )  # fmt: skip
    done = run(project, clock)
    assert (done.status, done.done, done.failed) == ("succeeded", 2, 1)
    failed = LLMTraceResult.objects.get(run=done, trace=traces[0])
    assert failed.status == "failed" and failed.attempts == 2 and failed.annotation is None
    assert (
        failed.raw_output
        == '{"modes": {"FM-9.9": {"present": true, "steps": [2], "reason": "reason for FM-9.9"}, "FM-2.2": {"present": false}}, "summary": "It keeps searching"}'
    )
    assert "malformed answer, twice" in failed.error and "'FM-9.9' is not a mode code" in failed.error
    assert not Annotation.objects.filter(
        assignment__trace=traces[0], assignment__annotator__username=RATER
    ).exists()
    assert failed.total_tokens == 240  # both attempts are paid for
    retried = LLMTraceResult.objects.get(run=done, trace=traces[1])
    assert retried.status == "done" and retried.attempts == 2
    correction = chat_server.requests[3].body["messages"]
    assert correction[-2] == {"role": "assistant", "content": "```json\nnope"}
    assert "cannot be used" in correction[-1]["content"]


def test_429_and_timeouts_follow_the_retry_policy(project, traces, llm_config, chat_server, clock):
    llm_config.timeout_seconds = 0.3
    llm_config.save()
    chat_server.push(
        Reply(429, {"error": "rate"}, headers={"Retry-After": "3"}), answer(labels("FM-1.3")),
        *[Reply(delay=1.0, body={})] * 5,  # trace 2: every attempt times out
        answer(labels("FM-1.1")),
    )  # fmt: skip
    done = run(project, clock)
    assert (done.status, done.done, done.failed) == ("succeeded", 2, 1)
    assert clock.sleeps[0] == 3.0  # Retry-After honoured (without really sleeping)
    timed_out = LLMTraceResult.objects.get(run=done, trace=traces[1])
    assert timed_out.status == "failed" and "timeout" in timed_out.error and timed_out.attempts == 0


def test_the_token_cap_stops_the_run_cleanly_and_resuming_duplicates_nothing(
    project, traces, llm_config, chat_server, clock
):
    llm_config.token_cap = 200
    llm_config.save()
    chat_server.push(*[answer(labels("FM-1.3"))] * 2)
    capped = run(project, clock)
    assert capped.status_label == "stopped: token cap reached"
    assert (capped.done, capped.tokens_used) == (2, 240)
    llm_config.token_cap = 0
    llm_config.save()
    assert do_resume_run(capped, enqueue=False)
    chat_server.push(answer(labels("FM-1.3")))
    finished = do_process_run(capped.pk, sleep=clock.sleep, clock=clock).run
    assert (finished.status, finished.done, finished.total) == ("succeeded", 3, 3)
    assert len(chat_server.requests) == 3
    assert Annotation.objects.filter(assignment__annotator__username=RATER).count() == 3


class Crash(Exception):
    pass


def test_a_crashed_run_resumes_where_it_stopped(project, traces, llm_config, chat_server, clock):
    chat_server.push(*[answer(labels("FM-1.3"))] * 3)
    started = do_start_run(project, batch_name="run-1", enqueue=False)

    def crash(progress):
        raise Crash

    with pytest.raises(Crash):
        do_process_run(started.pk, on_progress=crash, sleep=clock.sleep, clock=clock)
    assert LLMRun.objects.get(pk=started.pk).status == "running" and LLMTraceResult.objects.count() == 1
    again = do_process_run(started.pk, sleep=clock.sleep, clock=clock).run  # the redelivered task
    assert (again.status, again.done) == ("succeeded", 3)
    assert len(chat_server.requests) == 3
    second = do_start_run(project, batch_name="run-1", enqueue=False)  # same model again: nothing to redo
    assert do_process_run(second.pk).run.skipped == 3 and len(chat_server.requests) == 3


def test_llm_slots_never_fill_human_overlap_or_receive_human_work(
    project, batch, traces, llm_config, chat_server, clock, annotator_a, annotator_b
):
    chat_server.push(*[answer(labels("FM-1.3"))] * 3)
    run(project, clock)  # the model labels before any human assignment exists
    rater = get_user_model().objects.get(username=RATER)
    assert rater.pk not in annotator_ids(project)
    do_assign(project)
    for trace in traces:
        humans = set(
            Assignment.objects.filter(project=project, trace=trace)
            .exclude(annotator=rater)
            .values_list("annotator__username", flat=True)
        )
        assert humans == {annotator_a.username, annotator_b.username}  # overlap 2 is all human
    assert (
        Annotation.objects.exclude(llm_q("assignment__annotator")).filter(assignment__annotator=rater).count()
        == 0
    )
    assert Annotation.objects.llm().count() == 3


def test_a_settings_error_fails_the_run_at_once_with_a_clear_message(
    project, traces, llm_config, chat_server, clock
):
    chat_server.push(Reply(404, {"error": {"message": "model 'qwen2.5-7b' not found"}}))
    failed = run(project, clock)
    assert failed.status == "failed" and "HTTP 404" in failed.error and "model" in failed.error
    assert len(chat_server.requests) == 1 and failed.done == 0


def test_deleting_the_project_takes_its_runs_and_prompt_versions(project, traces, llm_config):
    from annotator.models import PromptTemplate

    do_start_run(project, batch_name="run-1", enqueue=False)
    project.delete()
    assert not LLMRun.objects.exists() and not PromptTemplate.objects.exists()
