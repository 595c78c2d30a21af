"""The normalised trace model: every importer produces Batches of Traces made of Steps.

Steps are rows (not one JSON blob per trace) so the viewer can page through a 10,000-step trace with an
index range scan and search inside it without loading the whole trace.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Outcome(models.TextChoices):
    SUCCESS = "success", "Success"
    FAILURE = "failure", "Failure"
    UNKNOWN = "unknown", "Unknown"


class StepKind(models.TextChoices):
    MESSAGE = "message", "Message"
    REASONING = "reasoning", "Reasoning"
    TOOL_CALL = "tool_call", "Tool call"
    TOOL_RESULT = "tool_result", "Tool result"
    OBSERVATION = "observation", "Observation"
    ERROR = "error", "Error"


class Batch(models.Model):
    name = models.CharField(max_length=200, unique=True)
    source = models.TextField(blank=True, help_text="Where the traces came from (file names, repo id)")
    format = models.CharField(max_length=40, blank=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    trace_count = models.PositiveIntegerField(default=0)
    step_count = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "batches"

    def __str__(self) -> str:
        return self.name


class Trace(models.Model):
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="traces")
    external_id = models.CharField(max_length=255)
    content_hash = models.CharField(max_length=64, unique=True)
    task = models.TextField(blank=True)
    system = models.CharField(max_length=120, blank=True)
    model = models.CharField(max_length=120, blank=True)
    benchmark = models.CharField(max_length=120, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.UNKNOWN)
    score = models.FloatField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Verdicts that came with the data (Who&When's attribution, MAST's failure modes): only people who may
    # see the trace's labels see them (annotator.access), so they are never mixed into `metadata`.
    answer_key = models.JSONField(default=dict, blank=True)
    raw = models.JSONField(null=True, blank=True, help_text="The original record, for lossless export")
    source_format = models.CharField(max_length=40, blank=True)
    step_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch", "id"]
        indexes = [
            models.Index(fields=["batch", "external_id"], name="trace_batch_external_idx"),
            models.Index(fields=["model"], name="trace_model_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.batch.name}/{self.external_id}"


class Step(models.Model):
    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    # Parent by index rather than by FK: bulk COPY needs no ids, and nesting is per trace anyway.
    parent_index = models.PositiveIntegerField(null=True, blank=True)
    depth = models.PositiveSmallIntegerField(default=0)
    agent = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=40, blank=True)
    kind = models.CharField(max_length=20, choices=StepKind.choices, default=StepKind.MESSAGE)
    content = models.TextField(blank=True)
    tool_name = models.CharField(max_length=200, blank=True)
    tool_args = models.JSONField(null=True, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    timestamp = models.CharField(max_length=64, blank=True, help_text="ISO 8601 as given by the source")
    tokens = models.PositiveIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)

    # A step's data columns in their canonical order: the COPY import, the API and the dataset export all
    # read this one list.
    DATA_FIELDS = (
        "index",
        "parent_index",
        "depth",
        "agent",
        "role",
        "kind",
        "content",
        "tool_name",
        "tool_args",
        "tool_call_id",
        "timestamp",
        "tokens",
        "duration_ms",
    )

    class Meta:
        ordering = ["trace", "index"]
        constraints = [
            models.UniqueConstraint(fields=["trace", "index"], name="step_index_unique_in_trace"),
        ]

    def __str__(self) -> str:
        return f"step {self.index} of trace {self.trace_id}"


class ImportJob(models.Model):
    """One import (CLI, upload or API): its files, progress and the per-file errors users fix."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    batch_name = models.CharField(max_length=200)
    format = models.CharField(max_length=40, blank=True, help_text="Empty: detect per file")
    files = models.JSONField(default=list, help_text="Stored paths and original names")
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED)
    records_done = models.PositiveIntegerField(default=0)
    bytes_done = models.PositiveBigIntegerField(default=0)
    bytes_total = models.PositiveBigIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    batch = models.ForeignKey(Batch, on_delete=models.SET_NULL, null=True, blank=True, related_name="jobs")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import {self.pk} into {self.batch_name} ({self.status})"

    @property
    def progress_percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.bytes_total:
            return 0
        return min(99, int(100 * self.bytes_done / self.bytes_total))
