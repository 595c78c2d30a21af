"""Processing an LLM run: label its pending traces with up to `concurrency` requests in flight, until it is
done, stopped, failed or out of time (`do_process_run`; the verbs that start, stop and resume a run are in
annotator.services.llm.runs).

Idempotent and resumable: a trace is done once its `LLMTraceResult` row exists (unique per run and trace,
written in the same transaction as the labels and the run's counters), so a crashed or redelivered run skips
finished traces and never stores labels twice. One worker at a time per run (a cache lock that expires if it
dies).

Concurrency: a run keeps up to `concurrency` requests in flight (the endpoint snapshot's value; the
settings page's, or `llm_annotate --concurrency`) in the flight loop every model run shares
(annotator.services.llm.flight). The run's own thread reads each
trace (`Labeller.prepare`, the ORM) and records each outcome as it arrives (`_record`, one transaction); the
pool's threads only ask (`Labeller.ask`: HTTP and parsing, no ORM). What still holds:

- the rate (requests_per_minute) and a Retry-After pause are shared through the cache by every thread and
  worker of the endpoint (annotator.llm.client.RateLimiter);
- the token cap is checked before each trace is sent, so the requests already in flight may take the run past
  the cap by at most `concurrency` requests; the run then ends as "stopped: token cap reached";
- the stop button stops sending at once: attempts not yet sent are cancelled (their traces stay pending for a
  resume) and the answers of requests already on the wire are recorded as they arrive (they are paid for).
  Each trace is recorded at most once, whole or not at all;
- UNAVAILABLE_LIMIT consecutive answers (in the order they arrive) that found the endpoint unavailable, or an
  LLMConfigError, end the run as failed (and cancel what was not sent yet);
- a `budget_seconds` slice stops sending at its end and waits for its requests in flight before returning.

A worker killed mid-run loses only the requests it had in flight: their traces have no result row, so the next
claim (a redelivered task, or `llm_annotate --resume`) asks for exactly those and the ones never sent.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass

from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from annotator.llm.client import ChatClient, LLMCancelled, LLMConfigError
from annotator.llm.secrets import SecretUnreadable
from annotator.models import Annotation, LLMRun, LLMTraceResult, Project
from annotator.services.followups import schedule_report_refresh
from annotator.services.jobs import heartbeat
from annotator.services.label_import import LabelImportError
from annotator.services.llm.config import add_llm_member
from annotator.services.llm.flight import TOKEN_CAP_REACHED, Flight
from annotator.services.llm.labeller import Labeller, Outcome, make_client, store_answer
from taxonomy.models import FailureMode
from traces.models import Trace

log = logging.getLogger(__name__)

CHUNK = 10


MAX_VIEW_RUN = 50_000  # the trace ids a view run keeps (in its row's JSON)


def run_traces(run: LLMRun) -> QuerySet | list[int]:
    """The ids of the traces `run` covers, in the order it asks: its batch's, or its view's as taken when
    it started (`LLMRun.scope`)."""
    if run.scope:
        ids = sorted(int(pk) for pk in run.scope.get("ids") or [])
        return ids[: run.limit] if run.limit else ids
    return run_selection(run.project, run.batch_id, run.limit)


def run_selection(project: Project, batch_id: int, limit: int | None) -> QuerySet:
    """The ids of the traces a run over the batch covers, in the order it asks (the estimate counts these):
    the project's traces of the batch (a project may hold only part of a batch)."""
    traces = (
        Trace.objects.in_project(project)
        .filter(batch_id=batch_id)
        .order_by("id")
        .values_list("id", flat=True)
    )
    return traces[:limit] if limit else traces


def _record(
    run: LLMRun, trace: Trace, outcome: Outcome, modes: dict[str, FailureMode], *, in_flight: int = 0
) -> bool:
    """Store the outcome (labels, result row, counters, and the requests still in flight) in one
    transaction; False if already recorded."""
    counter = {"done": "done", "failed": "failed", "skipped": "skipped"}[outcome.status]
    with transaction.atomic():
        try:
            with transaction.atomic():
                result = LLMTraceResult.objects.create(
                    run=run,
                    trace=trace,
                    status=outcome.status,
                    attempts=outcome.attempts,
                    prompt_tokens=outcome.tokens[0],
                    completion_tokens=outcome.tokens[1],
                    total_tokens=outcome.tokens[2],
                    windows=outcome.windows,
                    raw_output="" if outcome.status == LLMTraceResult.Status.DONE else outcome.raw[:20_000],
                    error=outcome.error[:2_000],
                    # Kept with the result (not the annotation): it is the model's, read by the triage order.
                    confidence=outcome.answer.confidence if outcome.answer is not None else None,
                )
        except IntegrityError:
            return False  # another worker (a redelivered task) recorded this trace first
        if outcome.answer is not None:
            try:
                result.annotation = store_answer(run, trace, outcome.answer, modes)
            except LabelImportError as error:
                result.status, result.error, counter = LLMTraceResult.Status.FAILED, str(error), "failed"
            else:
                # The rater joins the project with its first label: a run that labels nothing adds no
                # member (and no empty row in the agreement tables).
                add_llm_member(run.project_id, run.rater)
            result.save(update_fields=["annotation", "status", "error"])
        windowed = outcome.windows > 1
        LLMRun.objects.filter(pk=run.pk).update(
            **{counter: F(counter) + 1},
            tokens_used=F("tokens_used") + outcome.tokens[2],
            in_flight=in_flight,
            windowed_traces=F("windowed_traces") + int(windowed),
            window_requests=F("window_requests") + (outcome.windows if windowed else 0),
        )
    return True


def _begin(run_id: int, concurrency: int | None = None) -> LLMRun | None:
    """Claim the run (under the caller's lock). A killed worker's requests in flight are lost: the count
    restarts at 0. A new claim (start or resume) restarts the pace the time-left estimate uses."""
    with transaction.atomic():
        run = (
            LLMRun.objects.select_for_update(of=("self",))
            .select_related("project__taxonomy_version__taxonomy", "prompt", "rater", "batch")
            .get(pk=run_id)
        )
        if run.status not in LLMRun.ACTIVE_STATUSES:
            return None
        now = timezone.now()
        if run.status == LLMRun.Status.QUEUED or run.pace_since is None:
            run.pace_since, run.pace_base = now, run.processed
        if run.status == LLMRun.Status.QUEUED:
            run.attempts += 1  # a new claim (a slice of a running run is not one)
        if concurrency is not None:
            run.endpoint = {**run.endpoint, "concurrency": concurrency}  # recorded: what this run used
        run.status = LLMRun.Status.RUNNING
        run.started_at = run.started_at or now
        run.heartbeat_at = now
        run.total = len(run_traces(run)) if run.scope else run_traces(run).count()
        run.in_flight = 0
        run.save(
            update_fields=[
                "status",
                "started_at",
                "heartbeat_at",
                "attempts",
                "total",
                "in_flight",
                "pace_since",
                "pace_base",
                "endpoint",
            ]
        )
    return run


def finish_run(run: LLMRun, status: str, *, reason: str = "", error: str = "") -> None:
    """End the run; the agreement report then refreshes (debounced) to include the model's new labels."""
    LLMRun.objects.filter(pk=run.pk, status=LLMRun.Status.RUNNING).update(
        status=status, stop_reason=reason, error=error[:2_000], finished_at=timezone.now()
    )
    log.info("LLM run %d ended: %s %s %s", run.pk, status, reason, error[:200])
    if LLMRun.objects.filter(pk=run.pk, done__gt=0).exists():
        transaction.on_commit(lambda: schedule_report_refresh(run.project_id))


def _pending(run: LLMRun) -> list[int]:
    finished = set(run.results.values_list("trace_id", flat=True))
    return [pk for pk in run_traces(run) if pk not in finished]


def _already_labelled(run: LLMRun, trace_ids: list[int]) -> set[int]:
    return set(
        Annotation.objects.in_project(run.project)
        .filter(
            assignment__annotator=run.rater,
            assignment__trace_id__in=trace_ids,
            status=Annotation.Status.SUBMITTED,
        )
        .values_list("assignment__trace_id", flat=True)
    )


def _lock_key(run_id: int) -> str:
    return f"llm-run-lock:{run_id}"


@dataclass(frozen=True)
class RunSlice:
    run: LLMRun
    busy: bool = False  # another worker holds the run: this call did nothing

    @property
    def more(self) -> bool:
        """Traces remain and this slice ended on its time budget: the caller enqueues the next slice."""
        return not self.busy and self.run.status == LLMRun.Status.RUNNING


def do_process_run(
    run_id: int,
    *,
    budget_seconds: float | None = None,
    on_progress: Callable[[LLMRun], None] | None = None,
    concurrency: int | None = None,
    **client_options,
) -> RunSlice:
    """Label the run's pending traces until it is done, stopped, failed or `budget_seconds` have passed
    (then it stays "running" and `RunSlice.more` asks for the next slice).

    Takes a per-run cache lock (refreshed while it works, expiring if the worker dies): a second worker
    handed the same run returns at once (`busy`) instead of paying for the same traces twice.
    `concurrency` overrides the run's requests in flight from now on (recorded in its endpoint snapshot;
    check it with `check_concurrency`). `client_options` (sleep, clock, transport, max_retries) go to the HTTP
    client; tests inject them."""
    snapshot = LLMRun.objects.filter(pk=run_id).values_list("endpoint", flat=True).first() or {}
    lock_seconds = max(600, int(12 * float(snapshot.get("timeout_seconds", 120))))
    if not cache.add(_lock_key(run_id), "1", timeout=lock_seconds):
        log.info("LLM run %d is being processed elsewhere", run_id)
        return RunSlice(LLMRun.objects.get(pk=run_id), busy=True)
    try:
        run = _begin(run_id, concurrency)
        if run is not None:
            with heartbeat(LLMRun, run.pk):
                _process(run, budget_seconds, on_progress, lock_seconds, client_options)
    finally:
        cache.delete(_lock_key(run_id))
    return RunSlice(LLMRun.objects.get(pk=run_id))


def _process(run: LLMRun, budget_seconds, on_progress, lock_seconds: int, client_options: dict) -> None:
    deadline = None if budget_seconds is None else time.monotonic() + budget_seconds
    try:
        client = make_client(run, **client_options)
    except SecretUnreadable as error:
        finish_run(run, LLMRun.Status.FAILED, error=str(error))
        return
    with client:
        _Flight(run, client, deadline, on_progress, lock_seconds).run_slice()


class _Flight(Flight[tuple[Trace, bool]]):
    """One slice of a run: each pending trace asked in the shared flight loop (annotator.services.llm.flight),
    each outcome recorded by this thread as it arrives. The rules a run keeps are in the module's docstring."""

    def __init__(self, run: LLMRun, client: ChatClient, deadline, on_progress, lock_seconds: int):
        super().__init__(
            concurrency=int(run.endpoint.get("concurrency") or 1),
            thread_name=f"llm-run-{run.pk}",
            clients=[client],
            lock_key=_lock_key(run.pk),
            lock_seconds=lock_seconds,
        )
        self.run, self.client, self.deadline, self.on_progress = run, client, deadline, on_progress
        self.labeller = Labeller(run, client)
        # (status, reason, error) this slice ends the run with, once decided (the first reason wins).
        self.ending: tuple[str, str, str] | None = None
        self.stopped_elsewhere = False  # the owner (or the reconciliation) ended the run meanwhile

    def run_slice(self) -> None:
        exhausted = self.fly(self._traces())
        if self.ending is not None:
            status, reason, error = self.ending
            finish_run(self.run, status, reason=reason, error=error)
        elif exhausted and not self.stopped_elsewhere:
            _finish_all(self.run)
        # else: out of time (the run stays running: the caller enqueues the next slice) or stopped meanwhile

    def _traces(self) -> Iterator[tuple[Trace, bool]]:
        """The pending traces in order, read a chunk at a time, each with whether the rater already labelled
        it (then it is skipped, not asked)."""
        pending = _pending(self.run)
        size = max(CHUNK, 2 * self.concurrency)
        for start in range(0, len(pending), size):
            chunk = pending[start : start + size]
            labelled = _already_labelled(self.run, chunk)
            for trace in Trace.objects.filter(pk__in=chunk).order_by("id"):
                yield trace, trace.pk in labelled

    def may_send(self) -> bool:
        """Whether one more request may go: the run is still running, under its token cap, in its time."""
        if not self.sending:
            return False
        status, tokens_used = LLMRun.objects.filter(pk=self.run.pk).values_list("status", "tokens_used").get()
        if status != LLMRun.Status.RUNNING:
            # Stopped by the owner: nothing more leaves; what is on the wire is still recorded.
            self.stopped_elsewhere = True
            self.stop_sending(cancel=True)
        elif self.run.token_cap and tokens_used >= self.run.token_cap:
            self._end(LLMRun.Status.STOPPED, reason=TOKEN_CAP_REACHED)
        elif self.deadline is not None and time.monotonic() > self.deadline:
            self.stop_sending()
        return self.sending

    def prepare(self, item: tuple[Trace, bool]):
        trace, labelled = item
        if labelled:
            skipped = Outcome(LLMTraceResult.Status.SKIPPED, error=f"already labelled by {self.run.rater}")
            self._store(trace, skipped)
            return None
        request = self.labeller.prepare(trace)
        return lambda: self.labeller.ask(request)

    def sent(self) -> None:
        LLMRun.objects.filter(pk=self.run.pk).update(in_flight=len(self.flying))

    def landed(self) -> None:
        LLMRun.objects.filter(pk=self.run.pk).update(in_flight=0)

    def _end(self, status: str, *, reason: str = "", error: str = "", cancel: bool = False) -> None:
        if self.ending is None:
            self.ending = (status, reason, error)
        self.stop_sending(cancel=cancel)

    def collect(self, item: tuple[Trace, bool], future: Future) -> None:
        trace, _ = item
        try:
            outcome = future.result()
        except LLMCancelled:
            return  # never sent: the trace stays pending
        except LLMConfigError as error:
            self._end(LLMRun.Status.FAILED, error=self.client.redact(str(error)), cancel=True)
            return
        self._store(trace, outcome)
        if self.count_unavailable(outcome.unavailable):
            reason = f"the endpoint is unavailable: {outcome.error}"
            self._end(LLMRun.Status.FAILED, error=reason, cancel=True)

    def _store(self, trace: Trace, outcome: Outcome) -> None:
        _record(self.run, trace, outcome, self.labeller.modes, in_flight=len(self.flying))
        self.touch()
        if self.on_progress:
            self.on_progress(LLMRun.objects.get(pk=self.run.pk))


def _finish_all(run: LLMRun) -> None:
    """Every trace was tried: succeeded when some were labelled (failures are counted and listed), failed
    with the first reason when none was."""
    done, failed = LLMRun.objects.filter(pk=run.pk).values_list("done", "failed").get()
    if failed and not done:
        first = run.results.filter(status=LLMTraceResult.Status.FAILED).order_by("id").first()
        reason = f"every trace failed ({failed}); the first: {first.error}" if first else "every trace failed"
        finish_run(run, LLMRun.Status.FAILED, error=reason)
    else:
        finish_run(run, LLMRun.Status.SUCCEEDED)
