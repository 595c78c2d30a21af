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
    # The newest change to any of the project's annotations that this report has seen (or been checked
    # against): "is it current?" is then one indexed lookup for a newer one, whatever the project's size.
    data_updated_at = models.DateTimeField(null=True, blank=True)

    class Meta(Job.Meta):
        ordering = ["project", "-requested_at"]
        indexes = [
            *Job.Meta.indexes,
            models.Index(fields=["project", "filters_key", "-requested_at"], name="report_filters_idx"),
        ]

    def __str__(self) -> str:
        return f"agreement report {self.pk} for {self.project} ({self.status})"


class ReportRows(models.Model):
    """The unfiltered agreement report's input, reduced to distinct item rows with the row of every
    trace (see ``annotator.agreement.report.ItemRows``): what an incremental refresh updates.

    ``arrays`` is an ``.npz`` blob (trace ids, row of each trace, and the rows: ratings, primary,
    localisation codes). ``key`` says what the rows were computed for (taxonomy version, modes, windows);
    ``rater_ids`` the raters in the report's order; ``watermark`` when the snapshot they describe was
    taken. A mismatch of any of them means a full recomputation, never a wrong update."""

    project = models.OneToOneField("annotator.Project", on_delete=models.CASCADE, related_name="report_rows")
    key = models.CharField(max_length=64)
    rater_ids = models.JSONField(default=list)
    watermark = models.DateTimeField()
    full_at = models.DateTimeField(help_text="When the rows were last computed in full")
    arrays = models.BinaryField()
    # What incremental refreshes changed since `arrays` was written (an .npz: the changed traces' rows,
    # counts and versions, the rows they added, the aggregate), so that a refresh rewrites a few kilobytes
    # rather than every trace's row; folded into `arrays` once it grows. Empty: nothing changed.
    changes = models.BinaryField(default=b"", blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"agreement report rows of {self.project}"


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
