"""Computed artefacts: agreement reports and dataset exports, each a job row with status and results."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.jobs import Job, JobStatus

__all__ = ["AgreementReport", "Export", "JobStatus"]


class AgreementReport(Job):
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="reports")
    filters = models.JSONField(default=dict, blank=True, help_text="batch, annotators, date range")
    # Fingerprint of the inputs (submitted annotations + filters): an unchanged input is not recomputed.
    fingerprint = models.CharField(max_length=64, blank=True)
    # Hash of the canonical filters: "the latest report for these filters" is one indexed lookup.
    filters_key = models.CharField(max_length=64, blank=True)
    results = models.JSONField(null=True, blank=True)
    requested_at = models.DateTimeField(auto_now_add=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta(Job.Meta):
        ordering = ["project", "-requested_at"]
        indexes = [
            *Job.Meta.indexes,
            models.Index(fields=["project", "filters_key", "-requested_at"], name="report_filters_idx"),
        ]

    def __str__(self) -> str:
        return f"agreement report {self.pk} for {self.project} ({self.status})"


class Export(Job):
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="exports")
    options = models.JSONField(default=dict, blank=True)
    target_repo = models.CharField(max_length=200, blank=True)
    progress = models.PositiveSmallIntegerField(default=0)
    log = models.TextField(blank=True)
    path = models.CharField(max_length=500, blank=True)
    commit_url = models.URLField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(Job.Meta):
        ordering = ["project", "-created_at"]

    def __str__(self) -> str:
        return f"export {self.pk} of {self.project} ({self.status})"
