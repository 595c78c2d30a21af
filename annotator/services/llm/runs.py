"""LLM runs: the ORM bridge between a project's traces and annotator.llm (prompt, client, parse).

Verbs:

- `check_run_request` / `do_start_run`: validate (a model, a batch of the project), create the run row and,
  after commit, enqueue the Celery task (`annotator.run_llm_job`, which only takes the run id: no key ever
  travels in a task argument).
- `do_process_run` (annotator.services.llm.process): label pending traces until done, stopped or out of time.
- `do_stop_run` / `do_resume_run`.

Per trace: one request, or one per window when it is longer than the budget (annotator.llm.windows, merged
into one annotation; the run counts the windowed traces and their requests); a malformed answer is retried
once with the reason shown to the model, then recorded as a failure with the raw answer kept (never as
labels). Valid labels become a submitted Annotation by the rater user `llm:<model>` through the label
importer's store (LabelHistory action "llm").

The processing (the thread pool, the lock, recording outcomes) is annotator.services.llm.process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import connections, transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotator.llm.urlguard import UnsafeBaseURL, check_base_url
from annotator.models import LLMConfig, LLMRun, LLMTraceResult, Project, SavedView
from annotator.models.llm import MAX_CONCURRENCY
from annotator.search.filters import FilterError
from annotator.search.scope import as_pairs, scope_trace_ids
from annotator.services.jobs import send_job
from annotator.services.llm.config import current_prompt, get_config, llm_rater
from annotator.services.llm.process import MAX_VIEW_RUN, do_process_run, finish_run, run_selection
from traces.models import Batch, Trace

log = logging.getLogger(__name__)


class LLMRunError(ValueError):
    """Why a run cannot start; shown to the owner as it is."""


def check_run_request(
    project: Project, *, batch_name: str, limit: int | None, model: str | None, check_url: bool = True
):
    """(batch, config, model) for a valid request, else LLMRunError naming what to fix. `check_url=False`
    skips the base-URL rule (annotator.llm.urlguard) for a dry run, which calls nothing."""
    config, model = check_run_settings(project, limit=limit, model=model, check_url=False)
    held = Batch.objects.in_project(project)
    batch = held.filter(name=(batch_name or "").strip()).order_by("pk").first()
    if batch is None:
        names = ", ".join(held.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
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


def check_concurrency(value: int | None) -> int | None:
    """`value` if it is an allowed number of requests in flight (None: the settings decide), else
    LLMRunError saying the range."""
    if value is not None and not 1 <= value <= MAX_CONCURRENCY:
        raise LLMRunError(f"Concurrency must be from 1 to {MAX_CONCURRENCY} requests at once (got {value}).")
    return value


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
        "concurrency": config.concurrency,
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
    total = run_selection(project, batch.pk, limit).count()
    run = _create_run(project, config, model, limit, actor, enqueue, background, batch=batch, total=total)
    log.info("project %s: LLM run %d of %s on batch %s queued", project.slug, run.pk, model, batch.name)
    return run


def _start_view_run(
    project: Project, view: SavedView, *, limit, model, actor, enqueue: bool, background: bool
) -> LLMRun:
    config, model = check_run_settings(project, limit=limit, model=model)
    ids = view_run_ids(project, view, limit)
    if not ids:
        raise LLMRunError(f"The saved view {view.name!r} holds no trace.")
    scope = {"params": [list(pair) for pair in as_pairs(view.params)], "ids": ids}
    run = _create_run(
        project,
        config,
        model,
        limit,
        actor,
        enqueue,
        background,
        view_name=view.name,
        scope=scope,
        total=len(ids),
    )
    log.info("project %s: LLM run %d of %s on view %s queued", project.slug, run.pk, model, view.name)
    return run


def _create_run(project: Project, config: LLMConfig, model: str, limit, actor, enqueue, background, **scope):
    """The run row (over a batch, or a view's traces: `scope`), queued after commit when `enqueue`."""
    with transaction.atomic():
        run = LLMRun.objects.create(
            project=project,
            prompt=current_prompt(project),
            rater=llm_rater(project, model),
            model=model,
            endpoint=endpoint_snapshot(config, model),
            limit=limit,
            token_cap=config.token_cap,
            created_by=actor,
            **scope,
        )
        if enqueue:
            _enqueue_on_commit(run.pk, background=background)
    return run


def enqueue_on_commit(
    model, run_id: int, in_thread: Callable[[int], object], *, background: bool = False
) -> None:
    """Queue a run of `model` (an LLM run, a discovery run) once the transaction commits. `background`:
    without a worker (eager Celery, the embedded default) the web request would run the whole batch before
    answering; `in_thread(run_id)` runs it in a daemon thread of this process instead and the page polls its
    progress. Only for the single-process default: with a worker, the queue does this."""
    if background:
        transaction.on_commit(lambda: in_thread(run_id))
    else:
        send_job(model, run_id)


def run_in_thread(name: str, process: Callable[[], object], fail: Callable[[str], None]) -> threading.Thread:
    """`process()` in a daemon thread named `name`; any exception still ends the run, through `fail(reason)`."""

    def work() -> None:
        try:
            process()
        except Exception as error:  # the run must still end in a final state with its reason
            log.exception("%s failed in the background", name)
            fail(f"internal error: {type(error).__name__}")
        finally:
            connections.close_all()

    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    return thread


def _enqueue_on_commit(run_id: int, *, background: bool = False) -> None:
    enqueue_on_commit(LLMRun, run_id, _run_in_thread, background=background)


def _run_in_thread(run_id: int) -> threading.Thread:
    def process() -> None:
        while do_process_run(run_id).more:
            pass

    def fail(error: str) -> None:
        run = LLMRun.objects.filter(pk=run_id).first()
        if run is not None:
            finish_run(run, LLMRun.Status.FAILED, error=error)

    return run_in_thread(f"llm-run-{run_id}", process, fail)


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
        "in_flight": run.in_flight,
        "concurrency": run.endpoint.get("concurrency", 1),
        "percent": run.percent,
        "seconds_left": run.seconds_left,
        "time_left": run.time_left,
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
