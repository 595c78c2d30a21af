"""Nothing stuck, nothing lost: heartbeats for running jobs and the periodic reconciliation.

Every background job (import, export, LLM run, agreement report) is a `Job` row. A worker claims it
(`Job.claim`), beats while it works (`heartbeat`, a thread with its own database connection, so the beat
is visible even while the job's own work sits in an uncommitted transaction), and ends it with a status
and a reason. If the worker dies (killed, out of memory, machine lost) the beat stops.

`do_reconcile` runs every JOB_RECONCILE_SECONDS from Celery beat and repairs what a failure left behind:

- a job still queued after JOB_RESEND_AFTER (its message was lost, or the broker was down when it was
  sent) is sent again; tasks claim atomically, so a duplicate message is harmless;
- a running job silent for JOB_HEARTBEAT_TIMEOUT lost its worker: it is queued and sent again (all of
  its work is idempotent: an import is all-or-nothing, a report recomputes, an export rebuilds, an LLM run
  skips finished traces), or failed with a reason once it has been claimed JOB_MAX_ATTEMPTS times (a job
  that kills its worker every time must not take the next one down too);
- a trace whose required annotations are all submitted but that has no adjudication item (the check
  after a submit could not be sent) is checked again;
- traces still waiting for their full-text search rows (the indexing task after an import was lost) are
  indexed (annotator.search.indexing).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.db.models import Count
from django.utils import timezone

from annotator.models import (
    AdjudicationItem,
    AgreementReport,
    Annotation,
    Assignment,
    DiscoveryRun,
    Export,
    ImportJob,
    LLMRun,
    Project,
    TraceRepresentation,
)
from annotator.models.jobs import FINAL_STATUSES, Job, JobStatus
from annotator.search.indexing import pending_count, schedule_indexing
from annotator.services.comparison import eligible_annotator_ids
from annotator.services.enqueue import ENQUEUE_FAILED, enqueue, is_eager
from annotator.similar.freshness import UPDATE_TASK, projects_missing_vectors

log = logging.getLogger(__name__)

# Each job model, the task that runs it (one id argument), and the reason a lost job ends with.
JOB_TASKS: dict[type[Job], str] = {
    ImportJob: "annotator.run_import_job",
    Export: "annotator.exports.run",
    LLMRun: "annotator.llm.run",
    DiscoveryRun: "annotator.llm.discovery",
    AgreementReport: "annotator.agreement.compute_report",
    TraceRepresentation: "annotator.similar.build",
}

WORKER_LOST = (
    "The worker running this job stopped {attempts} times (killed or out of memory) before it finished; "
    "nothing from it was kept. Try again, or with a smaller input."
)


def stale_before() -> datetime:
    """A running job whose last heartbeat is older than this has lost its worker."""
    return timezone.now() - timedelta(seconds=settings.JOB_HEARTBEAT_TIMEOUT)


def send_job(model: type[Job], pk: int, *, after_commit: bool = True) -> None:
    """Send the job's task; if the broker is down the job fails with a reason its page shows."""
    enqueue(
        JOB_TASKS[model],
        pk,
        after_commit=after_commit,
        on_failure=lambda error: fail_job(model, pk, ENQUEUE_FAILED),
    )


def fail_job(model: type[Job], pk: int, reason: str) -> bool:
    """End an active job as failed with `reason` (and free what it held); False if it had ended."""
    failed = model.fail(pk, reason)
    if failed and model is ImportJob:
        remove_uploads(ImportJob.objects.get(pk=pk))
    return failed


def remove_uploads(job: ImportJob) -> None:
    """Delete an import's stored files (and their folder): they are kept only while the job may run."""
    root = Path(settings.UPLOAD_DIR).resolve()
    folders = set()
    for item in job.files:
        path = Path(item["path"]).resolve()
        if not path.is_relative_to(root):
            continue  # only ever delete what the upload page stored
        path.unlink(missing_ok=True)
        folders.add(path.parent)
    for folder in folders - {root}:
        with suppress(OSError):  # not empty, or already gone
            folder.rmdir()


@contextmanager
def heartbeat(model: type[Job], pk: int) -> Iterator[None]:
    """Beat `model` row `pk` every JOB_HEARTBEAT_SECONDS while the block runs (on a worker only: an
    inline job runs inside the request that started it and has no worker to lose)."""
    if is_eager():
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        try:
            while not stop.wait(settings.JOB_HEARTBEAT_SECONDS):
                try:
                    model.beat(pk)
                except Exception:  # a missed beat is retried at the next tick; never kill the job for it
                    log.warning("heartbeat of %s %s failed", model.__name__, pk, exc_info=True)
        finally:
            connections.close_all()

    thread = threading.Thread(target=beat, name=f"heartbeat-{model.__name__}-{pk}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


@dataclass
class Reconciled:
    resent: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    checked_traces: int = 0
    unindexed_traces: int = 0

    def as_dict(self) -> dict:
        return {
            "resent": self.resent,
            "resumed": self.resumed,
            "failed": self.failed,
            "checked_traces": self.checked_traces,
            "unindexed_traces": self.unindexed_traces,
        }


def do_reconcile() -> Reconciled:
    """One pass over every job model and every project (see the module docstring). Idempotent."""
    done = Reconciled()
    now = timezone.now()
    for model in JOB_TASKS:
        _resend_queued(model, now, done)
        _recover_lost(model, now, done)
    for job in ImportJob.objects.filter(status__in=FINAL_STATUSES, finished_at__gte=now - timedelta(days=1)):
        remove_uploads(job)  # a worker that died between ending the job and deleting its files
    for project_id in Project.objects.values_list("pk", flat=True):
        trace_ids = traces_missing_adjudication(project_id)
        if trace_ids:
            enqueue("annotator.adjudication.check_traces", project_id, trace_ids, after_commit=False)
            done.checked_traces += len(trace_ids)
    for project_id in projects_missing_vectors():  # similar traces: an update lost after an import
        enqueue(UPDATE_TASK, project_id, after_commit=False)
    done.unindexed_traces = pending_count()
    if done.unindexed_traces:  # an indexing task lost with its worker or its message
        schedule_indexing(after_commit=False)
    if done.resent or done.resumed or done.failed or done.checked_traces:
        log.warning("reconciled jobs: %s", done.as_dict())
    return done


def _resend_queued(model: type[Job], now: datetime, done: Reconciled) -> None:
    cutoff = now - timedelta(seconds=settings.JOB_RESEND_AFTER)
    for pk in model.objects.filter(status=JobStatus.QUEUED, heartbeat_at__lt=cutoff).values_list(
        "pk", flat=True
    ):
        # Touch first, so the next pass waits another JOB_RESEND_AFTER before sending again.
        if model.objects.filter(pk=pk, status=JobStatus.QUEUED).update(heartbeat_at=now):
            send_job(model, pk, after_commit=False)
            done.resent.append(f"{model.__name__} {pk}")


def _recover_lost(model: type[Job], now: datetime, done: Reconciled) -> None:
    lost = model.objects.filter(status=JobStatus.RUNNING, heartbeat_at__lt=stale_before())
    for pk, attempts in lost.values_list("pk", "attempts"):
        # An LLM run is never failed for this: between two slices it is "running" with its next slice
        # waiting in the queue, which a busy queue can make look like a lost worker. Resuming it is
        # harmless (finished traces are skipped, and one worker at a time holds the run's lock).
        if attempts >= settings.JOB_MAX_ATTEMPTS and model is not LLMRun:
            if fail_job(model, pk, WORKER_LOST.format(attempts=attempts)):
                done.failed.append(f"{model.__name__} {pk}")
            continue
        requeued = model.objects.filter(
            pk=pk, status=JobStatus.RUNNING, heartbeat_at__lt=stale_before()
        ).update(status=JobStatus.QUEUED, heartbeat_at=now)
        if requeued:
            send_job(model, pk, after_commit=False)
            done.resumed.append(f"{model.__name__} {pk}")


def traces_missing_adjudication(project_id: int) -> list[int]:
    """Traces whose required annotations are all submitted but that have no adjudication item yet."""
    project = (
        Project.objects.filter(pk=project_id)
        .only("pk", "overlap", "imported_labels_count_toward_overlap")
        .first()
    )
    if project is None:
        return []
    checked = AdjudicationItem.objects.filter(project_id=project_id).values("trace_id")
    return list(
        Annotation.objects.filter(
            assignment__project_id=project_id,
            assignment__purpose=Assignment.Purpose.WORK,
            assignment__annotator_id__in=eligible_annotator_ids(project),
            status=Annotation.Status.SUBMITTED,
        )
        .exclude(assignment__trace_id__in=checked)
        .values("assignment__trace_id")
        .annotate(n=Count("id"))
        .filter(n__gte=project.overlap)
        .order_by("assignment__trace_id")
        .values_list("assignment__trace_id", flat=True)[:5000]
    )
