"""Runs with many requests in flight, through the real client and the local stand-in: the endpoint sees N at
once, a stop leaves every trace recorded once and whole, a 429's Retry-After pauses every thread, and a run
whose worker was killed resumes with exactly the traces it lacks.

No sleeps: the stand-in holds replies until the test releases them (`Reply(hold=...)`), and the test waits for
conditions (`FakeChatServer.wait_until`, `ManualClock.wait_for_sleepers`) in a helper thread while the run
goes on in the test's own thread (the only one that touches the database)."""

from __future__ import annotations

import re
import threading
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotator.models import Annotation, LLMConfig, LLMRun, LLMTraceResult
from annotator.services.llm.runs import do_process_run, do_start_run, do_stop_run, run_progress
from tests.factories import trace_with_steps
from tests.llm.conftest import RATER
from tests.llm.fake_server import Reply, answer

WAIT = 10.0  # seconds a condition may take before the test fails (never slept)


def labels(code="FM-1.3"):
    return {"modes": {code: {"present": True, "steps": [1], "reason": "r"}}, "summary": "s"}


def many_traces(batch, n):
    return [trace_with_steps(3, batch=batch) for _ in range(n)]


def set_concurrency(config: LLMConfig, n: int) -> None:
    config.concurrency = n
    config.save()


def in_background(work) -> tuple[threading.Thread, dict]:
    """Run `work(found)` in a thread that only waits and releases (no database); `found` collects what it
    saw, and an exception there is kept to fail the test in its own thread."""
    found: dict = {}

    def target() -> None:
        try:
            work(found)
        except BaseException as error:  # surfaced by the test's assertions
            found["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, found


def traces_asked(server) -> list[str]:
    return [
        re.search(r"^Trace (\S+)", s.body["messages"][-1]["content"], re.M).group(1) for s in server.requests
    ]


def assert_recorded_once_and_whole(run: LLMRun) -> None:
    """No trace labelled twice or half-written: result rows, annotations and counters agree."""
    results = LLMTraceResult.objects.filter(run=run)
    assert len(set(results.values_list("trace_id", flat=True))) == results.count()
    done = results.filter(status="done")
    assert (run.done, run.failed, run.skipped) == (
        done.count(),
        results.filter(status="failed").count(),
        results.filter(status="skipped").count(),
    )
    annotations = Annotation.objects.filter(assignment__annotator__username=RATER)
    per_trace = Counter(annotations.values_list("assignment__trace_id", flat=True))
    assert all(n == 1 for n in per_trace.values())
    assert set(per_trace) == set(done.values_list("trace_id", flat=True))
    for result in done.select_related("annotation"):
        assert result.annotation.status == "submitted" and result.annotation.labels.count() == 1
    assert run.tokens_used == sum(results.values_list("total_tokens", flat=True))
    assert run.in_flight == 0


def test_the_endpoint_sees_concurrency_requests_at_once_and_never_more(
    project, batch, llm_config, chat_server
):
    traces = many_traces(batch, 12)
    set_concurrency(llm_config, 4)
    gate = threading.Event()
    chat_server.push(*[Reply(**{**vars(answer(labels())), "hold": gate}) for _ in range(12)])

    def release_when_four_wait(found):
        found["reached"] = chat_server.wait_until(lambda s: s.active == 4, WAIT)
        found["asked_then"] = len(chat_server.requests)
        gate.set()

    helper, found = in_background(release_when_four_wait)
    seen_in_flight = []
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    run = do_process_run(started.pk, on_progress=lambda r: seen_in_flight.append(r.in_flight)).run
    helper.join(WAIT)
    assert "error" not in found and found["reached"] and found["asked_then"] == 4
    assert chat_server.peak == 4 and len(chat_server.requests) == len(traces)
    assert max(seen_in_flight) == 3  # the first answer recorded while three others were still out
    assert (run.status, run.done, run.endpoint["concurrency"]) == ("succeeded", 12, 4)
    assert_recorded_once_and_whole(run)
    progress = run_progress(run)
    assert (progress["in_flight"], progress["concurrency"], progress["time_left"]) == (0, 4, "")


def test_a_stop_with_16_in_flight_records_each_answer_once_and_sends_nothing_more(
    project, batch, llm_config, chat_server
):
    traces = many_traces(batch, 40)
    set_concurrency(llm_config, 16)
    first, rest = threading.Event(), threading.Event()
    held = [Reply(**{**vars(answer(labels())), "hold": first if i == 0 else rest}) for i in range(16)]
    chat_server.push(*held)

    def release_one_when_sixteen_wait(found):
        found["reached"] = chat_server.wait_until(lambda s: s.active == 16, WAIT)
        first.set()

    helper, found = in_background(release_one_when_sixteen_wait)
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    in_flight_at_stop = []

    def stop_at_the_first_answer(progress: LLMRun) -> None:
        if not in_flight_at_stop:
            in_flight_at_stop.append(progress.in_flight)
            assert do_stop_run(progress)  # the owner presses Stop with 15 requests still out
            rest.set()  # ... and their answers arrive afterwards

    run = do_process_run(started.pk, on_progress=stop_at_the_first_answer).run
    helper.join(WAIT)
    assert "error" not in found and found["reached"] and in_flight_at_stop == [15]
    assert run.status_label == "stopped: stopped by the owner"
    assert len(chat_server.requests) == 16  # nothing was sent after the stop
    # The 15 answers already on the wire were paid for: recorded, each once.
    assert (run.done, run.processed) == (16, 16)
    assert_recorded_once_and_whole(run)

    chat_server.push(*[answer(labels())] * 24)
    from annotator.services.llm.runs import do_resume_run

    assert do_resume_run(run, enqueue=False)
    finished = do_process_run(run.pk).run
    assert (finished.status, finished.done, finished.total) == ("succeeded", 40, 40)
    assert Counter(traces_asked(chat_server)) == Counter(t.external_id for t in traces)  # each asked once
    assert_recorded_once_and_whole(finished)


class ManualClock:
    """time.time and time.sleep for threads: a sleep blocks until the test moves the clock past its end
    (never a real wait); `sleeps` records (thread, seconds)."""

    def __init__(self, start: float = 2_000_000.0):
        self.now = start
        self.sleeps: list[tuple[str, float]] = []
        self.sleeping = 0
        self._changed = threading.Condition()

    def __call__(self) -> float:
        with self._changed:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._changed:
            until = self.now + seconds
            self.sleeps.append((threading.current_thread().name, seconds))
            self.sleeping += 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.now >= until, timeout=WAIT)
            self.sleeping -= 1

    def advance(self, seconds: float) -> None:
        with self._changed:
            self.now += seconds
            self._changed.notify_all()

    def wait_for_sleepers(self, n: int) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self.sleeping == n, timeout=WAIT)


def test_a_429_with_retry_after_pauses_every_thread_of_the_run(project, batch, llm_config, chat_server):
    many_traces(batch, 3)
    set_concurrency(llm_config, 2)
    clock = ManualClock()
    slow_down, answered = threading.Event(), threading.Event()
    chat_server.push(
        Reply(429, {"error": "rate"}, headers={"Retry-After": "30"}, hold=slow_down),
        Reply(**{**vars(answer(labels())), "hold": answered}),
        *[answer(labels())] * 2,  # the retry after the pause, and the third trace
    )

    def orchestrate(found):
        found["two_out"] = chat_server.wait_until(lambda s: s.active == 2, WAIT)
        slow_down.set()  # one thread hears 429, Retry-After: 30
        found["first_waits"] = clock.wait_for_sleepers(1)
        answered.set()  # the other thread's answer: the run sends its third trace ...
        found["both_wait"] = clock.wait_for_sleepers(2)  # ... which waits for the same pause
        found["asked_during_pause"] = len(chat_server.requests)
        clock.advance(30)

    helper, found = in_background(orchestrate)
    started = do_start_run(project, batch_name="run-1", enqueue=False)
    run = do_process_run(started.pk, sleep=clock.sleep, clock=clock).run
    helper.join(WAIT)
    assert "error" not in found, found.get("error")
    assert found["two_out"] and found["first_waits"] and found["both_wait"]
    assert found["asked_during_pause"] == 2  # nothing left while the endpoint asked for quiet
    assert [seconds for _, seconds in clock.sleeps] == [30.0, 30.0]
    assert len({thread for thread, _ in clock.sleeps}) == 2  # two threads, one pause
    assert (run.status, run.done, len(chat_server.requests)) == ("succeeded", 3, 4)


class Killed(Exception):
    pass


def test_resume_after_a_killed_worker_asks_exactly_the_traces_without_a_result(
    project, batch, llm_config, chat_server
):
    traces = many_traces(batch, 10)
    chat_server.push(*[answer(labels())] * 4)
    started = do_start_run(project, batch_name="run-1", enqueue=False)

    def killed_after_four(progress: LLMRun) -> None:
        if progress.processed == 4:
            raise Killed

    with pytest.raises(Killed):
        do_process_run(started.pk, on_progress=killed_after_four)
    # What a killed worker leaves: the run still "running", 4 results, a count of requests in flight that
    # will never be answered, and no lock (it expired).
    LLMRun.objects.filter(pk=started.pk).update(in_flight=3)
    assert LLMRun.objects.get(pk=started.pk).status == "running"
    chat_server.push(*[answer(labels())] * 6)
    out = StringIO()
    call_command("llm_annotate", project.slug, "--resume", str(started.pk), "--concurrency", "3", stdout=out)
    run = LLMRun.objects.get(pk=started.pk)
    assert (run.status, run.done, run.total, run.endpoint["concurrency"]) == ("succeeded", 10, 10, 3)
    assert Counter(traces_asked(chat_server)) == Counter(t.external_id for t in traces)  # none paid twice
    assert "up to 3 requests at once" in out.getvalue() and " in flight, " in out.getvalue()
    assert_recorded_once_and_whole(run)


def test_the_cli_takes_concurrency_for_one_run_and_refuses_what_is_out_of_range(
    project, batch, llm_config, chat_server
):
    many_traces(batch, 2)
    for bad in ("0", "65"):
        with pytest.raises(CommandError, match="Concurrency must be from 1 to 64 requests at once"):
            call_command("llm_annotate", project.slug, "--batch", "run-1", "--concurrency", bad)
    assert not LLMRun.objects.exists()
    chat_server.push(*[answer(labels())] * 2)
    out = StringIO()
    call_command("llm_annotate", project.slug, "--batch", "run-1", "--concurrency", "5", stdout=out)
    run = LLMRun.objects.get()
    assert run.endpoint["concurrency"] == 5 and LLMConfig.objects.get(pk=llm_config.pk).concurrency == 1
    assert "up to 5 requests at once" in out.getvalue() and ", time left: under a minute" in out.getvalue()
    assert re.search(r"2/2 traces: 2 labelled, 0 in flight, 0 failed, 0 skipped, 240 tokens", out.getvalue())
