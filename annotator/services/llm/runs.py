"""LLM runs: the ORM bridge between a project's traces and annotator.llm (prompt, client, parse).

Verbs:

- `check_run_request` / `do_start_run`: validate (a model, a batch of the project), create the run row and,
  after commit, enqueue the Celery task (`annotator.run_llm_job`, which only takes the run id: no key ever
  travels in a task argument).
- `do_process_run`: label pending traces until done, stopped or out of time. Idempotent and resumable: a
  trace is done once its `LLMTraceResult` row exists (unique per run and trace, written in the same
  transaction as the labels and the run's counters), so a crashed or redelivered run skips finished traces
  and never stores labels twice. One worker at a time per run (a cache lock that expires if it dies).
- `do_stop_run` / `do_resume_run`.

Per trace: one request, or one per window when it is longer than the budget (annotator.llm.windows, merged
into one annotation; the run counts the windowed traces and their requests); a malformed answer is retried
once with the reason shown to the model, then recorded as a failure with the raw answer kept (never as
labels). Valid labels become a submitted Annotation by the rater user `llm:<model>` through the label
importer's store (LabelHistory action "llm").
The token cap is checked before each trace: the run then ends as "stopped: token cap reached".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connections, transaction
from django.db.models import F, QuerySet
from django.utils import timezone

from annotator.llm.client import LLMConfigError
from annotator.llm.secrets import SecretUnreadable
from annotator.llm.urlguard import UnsafeBaseURL, check_base_url
from annotator.models import Annotation, LLMConfig, LLMRun, LLMTraceResult, Project, SavedView
from annotator.search.filters import FilterError
from annotator.search.scope import as_pairs, scope_trace_ids
from annotator.services.followups import schedule_report_refresh
from annotator.services.jobs import heartbeat, send_job
from annotator.services.label_import import LabelImportError
from annotator.services.llm.config import add_llm_member, current_prompt, get_config, llm_rater
from annotator.services.llm.labeller import Labeller, Outcome, make_client, store_answer
from taxonomy.models import FailureMode
from traces.models import Batch, Trace

log = logging.getLogger(__name__)

CHUNK = 10
# Consecutive traces that found the endpoint unavailable before the run gives up (instead of failing every
# remaining trace one by one while the server is down).
UNAVAILABLE_LIMIT = 3
TOKEN_CAP_REACHED = "token cap reached"


class LLMRunError(ValueError):
    """Why a run cannot start; shown to the owner as it is."""


def check_run_request(
    project: Project, *, batch_name: str, limit: int | None, model: str | None, check_url: bool = True
):
    """(batch, config, model) for a valid request, else LLMRunError naming what to fix. `check_url=False`
    skips the base-URL rule (annotator.llm.urlguard) for a dry run, which calls nothing."""
    config, model = check_run_settings(project, limit=limit, model=model, check_url=False)
    batch = Batch.objects.filter(name=(batch_name or "").strip(), projects=project).first()
    if batch is None:
        names = ", ".join(project.batches.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
        raise LLMRunError(f"No batch {batch_name!r} in this project (its batches: {names}).")
    if check_url:
        check_run_settings(project, limit=limit, model=model, check_url=True)
    return batch, config, model


def check_run_settings(project: Project, *, limit: int | None, model: str | None, check_url: bool = True):
    """(config, model): what every run needs whatever it covers (a batch or a saved view)."""
    if project.archived_at is not None:
        raise LLMRunError("This project is archived: it takes no new runs (an owner can unarchive it).")
    config = get_config(project)
    model = (model or config.model or "").strip()
    if not model:
        raise LLMRunError("Set the model name on the project's LLM settings page (or pass --model).")
    if limit is not None and not 1 <= limit <= 2**31 - 1:
        raise LLMRunError("The limit must be a whole number from 1 to 2,147,483,647.")
    try:
        if check_url:
            check_base_url(config.base_url, settings.LLM_ALLOWED_BASE_URLS)
    except UnsafeBaseURL as error:
        raise LLMRunError(f"Fix the base URL on the project's LLM settings page: {error}") from None
    return config, model


def endpoint_snapshot(config: LLMConfig, model: str) -> dict:
    """What a run records about its endpoint: everything that shapes the labels, never the key."""
    return {
        "base_url": config.base_url,
        "model": model,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "timeout_seconds": config.timeout_seconds,
        "json_mode": config.json_mode,
        "requests_per_minute": config.requests_per_minute,
        "max_trace_chars": config.max_trace_chars,
        "long_traces": config.long_traces,
        "window_overlap_steps": config.window_overlap_steps,
    }


def do_start_run(
    project: Project,
    *,
    batch_name: str = "",
    view: SavedView | None = None,
    limit: int | None = None,
    model: str | None = None,
    actor=None,
    enqueue: bool = True,
    background: bool = False,
) -> LLMRun:
    """Start a run over a batch, or over a saved view's traces (`view`, found by the caller as its
    member may see it; the traces are taken now and kept with the run)."""
    if view is not None:
        return _start_view_run(
            project, view, limit=limit, model=model, actor=actor, enqueue=enqueue, background=background
        )
    batch, config, model = check_run_request(project, batch_name=batch_name, limit=limit, model=model)
    with transaction.atomic():
        run = LLMRun.objects.create(
            project=project,
            batch=batch,
            prompt=current_prompt(project),
            rater=llm_rater(project, model),
            model=model,
            endpoint=endpoint_snapshot(config, model),
            limit=limit,
            token_cap=config.token_cap,
            total=run_selection(batch.pk, limit).count(),
            created_by=actor,
        )
        if enqueue:
            _enqueue_on_commit(run.pk, background=background)
    log.info("project %s: LLM run %d of %s on batch %s queued", project.slug, run.pk, model, batch.name)
    return run


def _start_view_run(
    project: Project, view: SavedView, *, limit, model, actor, enqueue: bool, background: bool
) -> LLMRun:
    config, model = check_run_settings(project, limit=limit, model=model)
    ids = view_run_ids(project, view, limit)
    if not ids:
        raise LLMRunError(f"The saved view {view.name!r} holds no trace.")
    with transaction.atomic():
        run = LLMRun.objects.create(
            project=project,
            batch=None,
            view_name=view.name,
            scope={"params": [list(pair) for pair in as_pairs(view.params)], "ids": ids},
            prompt=current_prompt(project),
            rater=llm_rater(project, model),
            model=model,
            endpoint=endpoint_snapshot(config, model),
            limit=limit,
            token_cap=config.token_cap,
            total=len(ids),
            created_by=actor,
        )
        if enqueue:
            _enqueue_on_commit(run.pk, background=background)
    log.info("project %s: LLM run %d of %s on view %s queued", project.slug, run.pk, model, view.name)
    return run


def _enqueue_on_commit(run_id: int, *, background: bool = False) -> None:
    """`background`: without a worker (eager Celery, the embedded default) the web request would run the
    whole batch before answering; a daemon thread in this process runs it instead and the page polls its
    progress. Only for the single-process default: with a worker, the queue does this."""
    if background:
        transaction.on_commit(lambda: _run_in_thread(run_id))
    else:
        send_job(LLMRun, run_id)


def _run_in_thread(run_id: int) -> threading.Thread:
    def work() -> None:
        try:
            while do_process_run(run_id).more:
                pass
        except Exception as error:  # the run must still end in a final state with its reason
            log.exception("LLM run %d failed in the background", run_id)
            run = LLMRun.objects.filter(pk=run_id).first()
            if run is not None:
                _finish(run, LLMRun.Status.FAILED, error=f"internal error: {type(error).__name__}")
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name=f"llm-run-{run_id}", daemon=True)
    thread.start()
    return thread


def do_stop_run(run: LLMRun, *, reason: str = "stopped by the owner") -> bool:
    """Ask an active run to stop; the worker notices before its next trace. False if it was not active."""
    return bool(
        LLMRun.objects.filter(pk=run.pk, status__in=LLMRun.ACTIVE_STATUSES).update(
            status=LLMRun.Status.STOPPED, stop_reason=reason, finished_at=timezone.now()
        )
    )


def do_resume_run(run: LLMRun, *, enqueue: bool = True, background: bool = False) -> bool:
    """Queue a stopped or failed run again (finished traces are skipped); the token cap is re-read from the
    settings, so raising the cap and resuming continues a capped run. False if it cannot be resumed."""
    if run.status in LLMRun.ACTIVE_STATUSES or run.status == LLMRun.Status.SUCCEEDED:
        return False
    with transaction.atomic():
        LLMRun.objects.filter(pk=run.pk).update(
            status=LLMRun.Status.QUEUED,
            stop_reason="",
            error="",
            finished_at=None,
            heartbeat_at=timezone.now(),  # queued now: the reconciliation re-sends it only if it waits long
            token_cap=get_config(run.project).token_cap,
        )
        if enqueue:
            _enqueue_on_commit(run.pk, background=background)
    return True


MAX_VIEW_RUN = 50_000  # the trace ids a view run keeps (in its row's JSON)


def run_traces(run: LLMRun) -> QuerySet | list[int]:
    """The ids of the traces `run` covers, in the order it asks: its batch's, or its view's as taken when
    it started (`LLMRun.scope`)."""
    if run.scope:
        ids = sorted(int(pk) for pk in run.scope.get("ids") or [])
        return ids[: run.limit] if run.limit else ids
    return run_selection(run.batch_id, run.limit)


def view_run_ids(project: Project, view: SavedView, limit: int | None) -> list[int]:
    """The ids of a saved view's traces a run over it would cover (id order, the first `limit`)."""
    try:
        traces = Trace.objects.in_project(project).filter(
            pk__in=scope_trace_ids(project, as_pairs(view.params))
        )
    except FilterError as error:
        raise LLMRunError(
            f"The saved view {view.name!r} no longer reads: {error.param}: {error.message}"
        ) from None
    ids = list(traces.order_by("id").values_list("id", flat=True)[: MAX_VIEW_RUN + 1])
    if len(ids) > MAX_VIEW_RUN and not (limit and limit <= MAX_VIEW_RUN):
        raise LLMRunError(f"A run over a view covers at most {MAX_VIEW_RUN:,} traces: give a limit.")
    return ids[:limit] if limit else ids


def run_selection(batch_id: int, limit: int | None) -> QuerySet:
    """The ids of the traces a run over the batch covers, in the order it asks (the estimate counts these)."""
    traces = Trace.objects.filter(batch_id=batch_id).order_by("id").values_list("id", flat=True)
    return traces[:limit] if limit else traces


def _record(run: LLMRun, trace: Trace, outcome: Outcome, modes: dict[str, FailureMode]) -> bool:
    """Store the outcome (labels, result row, counters) in one transaction; False if already recorded."""
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
            windowed_traces=F("windowed_traces") + int(windowed),
            window_requests=F("window_requests") + (outcome.windows if windowed else 0),
        )
    return True


def _begin(run_id: int) -> LLMRun | None:
    with transaction.atomic():
        run = (
            LLMRun.objects.select_for_update(of=("self",))
            .select_related("project__taxonomy_version__taxonomy", "prompt", "rater", "batch")
            .get(pk=run_id)
        )
        if run.status not in LLMRun.ACTIVE_STATUSES:
            return None
        if run.status == LLMRun.Status.QUEUED:
            run.attempts += 1  # a new claim (a slice of a running run is not one)
        run.status = LLMRun.Status.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.heartbeat_at = timezone.now()
        run.total = len(run_traces(run)) if run.scope else run_selection(run.batch_id, run.limit).count()
        run.save(update_fields=["status", "started_at", "heartbeat_at", "attempts", "total"])
    return run


def _finish(run: LLMRun, status: str, *, reason: str = "", error: str = "") -> None:
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
    **client_options,
) -> RunSlice:
    """Label the run's pending traces until it is done, stopped, failed or `budget_seconds` have passed
    (then it stays "running" and `RunSlice.more` asks for the next slice).

    Takes a per-run cache lock (refreshed after each trace, expiring if the worker dies): a second worker
    handed the same run returns at once (`busy`) instead of paying for the same traces twice.
    `client_options` (sleep, clock, transport, max_retries) go to the HTTP client; tests inject them."""
    snapshot = LLMRun.objects.filter(pk=run_id).values_list("endpoint", flat=True).first() or {}
    lock_seconds = max(600, int(12 * float(snapshot.get("timeout_seconds", 120))))
    if not cache.add(_lock_key(run_id), "1", timeout=lock_seconds):
        log.info("LLM run %d is being processed elsewhere", run_id)
        return RunSlice(LLMRun.objects.get(pk=run_id), busy=True)
    try:
        run = _begin(run_id)
        if run is not None:
            with heartbeat(LLMRun, run.pk):
                _process(run, budget_seconds, on_progress, lock_seconds, client_options)
    finally:
        cache.delete(_lock_key(run_id))
    return RunSlice(LLMRun.objects.get(pk=run_id))


def _process(run: LLMRun, budget_seconds, on_progress, lock_seconds: int, client_options: dict) -> None:
    started = time.monotonic()
    try:
        client = make_client(run, **client_options)
    except SecretUnreadable as error:
        _finish(run, LLMRun.Status.FAILED, error=str(error))
        return
    unavailable = 0
    with client:
        labeller = Labeller(run, client)
        pending = _pending(run)
        for start in range(0, len(pending), CHUNK):
            chunk = pending[start : start + CHUNK]
            labelled = _already_labelled(run, chunk)
            for trace in Trace.objects.filter(pk__in=chunk).order_by("id"):
                status, tokens_used = (
                    LLMRun.objects.filter(pk=run.pk).values_list("status", "tokens_used").get()
                )
                if status != LLMRun.Status.RUNNING:
                    return  # stopped by the owner meanwhile
                if run.token_cap and tokens_used >= run.token_cap:
                    _finish(run, LLMRun.Status.STOPPED, reason=TOKEN_CAP_REACHED)
                    return
                if trace.pk in labelled:
                    outcome = Outcome(LLMTraceResult.Status.SKIPPED, error=f"already labelled by {run.rater}")
                else:
                    try:
                        outcome = labeller.label(trace)
                    except LLMConfigError as error:
                        _finish(run, LLMRun.Status.FAILED, error=client.redact(str(error)))
                        return
                _record(run, trace, outcome, labeller.modes)
                cache.touch(_lock_key(run.pk), lock_seconds)
                unavailable = unavailable + 1 if outcome.unavailable else 0
                if on_progress:
                    on_progress(LLMRun.objects.get(pk=run.pk))
                if unavailable >= UNAVAILABLE_LIMIT:
                    _finish(run, LLMRun.Status.FAILED, error=f"the endpoint is unavailable: {outcome.error}")
                    return
            if budget_seconds is not None and time.monotonic() - started > budget_seconds:
                return
    _finish_all(run)


def _finish_all(run: LLMRun) -> None:
    """Every trace was tried: succeeded when some were labelled (failures are counted and listed), failed
    with the first reason when none was."""
    done, failed = LLMRun.objects.filter(pk=run.pk).values_list("done", "failed").get()
    if failed and not done:
        first = run.results.filter(status=LLMTraceResult.Status.FAILED).order_by("id").first()
        reason = f"every trace failed ({failed}); the first: {first.error}" if first else "every trace failed"
        _finish(run, LLMRun.Status.FAILED, error=reason)
    else:
        _finish(run, LLMRun.Status.SUCCEEDED)


def run_progress(run: LLMRun, *, failures: int = 20, hide: QuerySet | None = None) -> dict:
    """The run as JSON for the API and the status partial (no key: the endpoint snapshot never holds one).
    `hide`: trace ids whose failures are left out (a failure shows the model's raw output, i.e. its labels;
    annotator.access passes the traces the reader is still annotating)."""
    failed = run.results.filter(status=LLMTraceResult.Status.FAILED).select_related("trace").order_by("id")
    if hide is not None:
        failed = failed.exclude(trace_id__in=hide)
    return {
        "id": run.pk,
        "status": run.status,
        "status_label": run.status_label,
        "stop_reason": run.stop_reason,
        "model": run.model,
        "rater": run.rater.username,
        "batch": run.batch.name if run.batch_id else "",
        "view": run.view_name,
        "prompt_version": run.prompt.number,
        "limit": run.limit,
        "total": run.total,
        "done": run.done,
        "failed": run.failed,
        "skipped": run.skipped,
        "processed": run.processed,
        "percent": run.percent,
        "tokens_used": run.tokens_used,
        "token_cap": run.token_cap,
        "windowed_traces": run.windowed_traces,
        "window_requests": run.window_requests,
        "error": run.error,
        "endpoint": run.endpoint,
        "created_at": run.created_at,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "failures": [
            {
                "trace": r.trace.external_id,
                "trace_id": r.trace_id,
                "error": r.error,
                "raw_output": r.raw_output[:1_000],
            }
            for r in failed[:failures]
        ],
    }
