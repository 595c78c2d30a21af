"""Calibration rounds: a named set of traces that every chosen annotator labels (full overlap, blind), whose
agreement is computed and kept when the round closes, so a team sees which definitions converge."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.projects import Project


class CalibrationRound(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="rounds")
    name = models.CharField(max_length=100)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    # How the traces were chosen (picked ids, a seeded sample of a batch, or metadata conditions), so a
    # round can be described and reproduced.
    selection = models.JSONField(default=dict, blank=True)
    traces = models.ManyToManyField("traces.Trace", related_name="calibration_rounds")
    annotators = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="calibration_rounds")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    report = models.ForeignKey(
        "annotator.AgreementReport", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["project", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="round_name_unique_in_project"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.project})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN
