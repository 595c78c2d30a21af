"""Background jobs: one abstract row shape, one status enum, for imports, exports, LLM runs and reports.

Every job is claimed by a worker (`claim`), beats while it works (`beat`, from a thread, see
annotator.services.jobs.heartbeat), and ends in a final state with a reason a person can read (`error`).
The periodic reconciliation (annotator.services.jobs.do_reconcile) re-sends jobs left queued, and resumes
or fails jobs whose heartbeat stopped (their worker died), so no job stays "running" forever.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    STOPPED = "stopped", "Stopped"
    FAILED = "failed", "Failed"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)
FINAL_STATUSES = (JobStatus.SUCCEEDED, JobStatus.STOPPED, JobStatus.FAILED)


class Job(models.Model):
    """What every background job row has: status, the reason it ended, and signs of life."""

    Status = JobStatus
    ACTIVE_STATUSES = ACTIVE_STATUSES

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    # Why the job failed or stopped, shown to the person who started it (never a server path).
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # Last sign of life: set when queued, claimed and every few seconds while a worker runs it. A running
    # job whose heartbeat is older than JOB_HEARTBEAT_TIMEOUT lost its worker.
    heartbeat_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # How many times a worker claimed it; a job that keeps killing its worker is failed, not retried forever.
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        abstract = True
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="%(class)s_liveness_idx")]

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    @classmethod
    def claim(cls, pk: int, *, stale_before: datetime | None = None) -> bool:
        """Atomically take a queued job (or, with `stale_before`, a running one whose worker died, for a
        redelivered task). False when another worker has it or it has ended: the caller does nothing."""
        takeable = Q(status=JobStatus.QUEUED)
        if stale_before is not None:
            takeable |= Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale_before)
        now = timezone.now()
        return bool(
            cls.objects.filter(takeable, pk=pk).update(
                status=JobStatus.RUNNING,
                started_at=Coalesce(F("started_at"), now),
                heartbeat_at=now,
                attempts=F("attempts") + 1,
            )
        )

    @classmethod
    def beat(cls, pk: int) -> None:
        cls.objects.filter(pk=pk, status=JobStatus.RUNNING).update(heartbeat_at=timezone.now())

    @classmethod
    def fail(cls, pk: int, reason: str) -> bool:
        """End an active job as failed with `reason`; False if it had already ended."""
        return bool(
            cls.objects.filter(pk=pk, status__in=ACTIVE_STATUSES).update(
                status=JobStatus.FAILED, error=reason, finished_at=timezone.now()
            )
        )


class ImportJob(Job):
    """One upload or API import: its files, progress and the per-file errors users fix."""

    project = models.ForeignKey(
        "annotator.Project", on_delete=models.CASCADE, null=True, blank=True, related_name="import_jobs"
    )
    batch_name = models.CharField(max_length=200)
    format = models.CharField(max_length=40, blank=True, help_text="Empty: detect per file")
    files = models.JSONField(default=list, help_text="Stored paths and original names")
    options = models.JSONField(default=dict, blank=True)
    records_done = models.PositiveIntegerField(default=0)
    bytes_done = models.PositiveBigIntegerField(default=0)
    bytes_total = models.PositiveBigIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    batch = models.ForeignKey(
        "traces.Batch", on_delete=models.SET_NULL, null=True, blank=True, related_name="import_jobs"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Job.Meta):
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import {self.pk} into {self.batch_name} ({self.status})"
