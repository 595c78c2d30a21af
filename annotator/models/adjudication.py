"""Gold labels: a separate layer with provenance; raw annotations are never changed."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AdjudicationItem(models.Model):
    """One per fully annotated trace: agreed automatically, or queued until an adjudicator decides."""

    class Status(models.TextChoices):
        AGREED = "agreed", "Agreed (automatic gold)"
        OPEN = "open", "Waiting for adjudication"
        RESOLVED = "resolved", "Resolved"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="adjudications")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="adjudications")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    severity = models.PositiveIntegerField(default=0, help_text="Higher first: disputed modes, fatal first")
    disputed = models.JSONField(default=list, help_text="Mode codes the annotators disagree on")
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    claimed_until = models.DateTimeField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "-severity", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "trace"], name="adjudication_unique_trace"),
        ]
        indexes = [models.Index(fields=["project", "status", "-severity"], name="adjudication_queue_idx")]

    def __str__(self) -> str:
        return f"adjudication of {self.trace_id} ({self.status})"


class GoldLabel(models.Model):
    class Source(models.TextChoices):
        AGREED = "agreed", "All annotators agreed"
        ACCEPT_A = "accept_a", "Adjudicator accepted annotator A"
        ACCEPT_B = "accept_b", "Adjudicator accepted annotator B"
        ADJUDICATOR = "adjudicator", "Adjudicator's own decision"

    item = models.ForeignKey(AdjudicationItem, on_delete=models.CASCADE, related_name="gold_labels")
    mode = models.ForeignKey("taxonomy.FailureMode", on_delete=models.PROTECT, related_name="+")
    primary = models.BooleanField(default=False)
    evidence = models.JSONField(default=list, blank=True)
    source = models.CharField(max_length=12, choices=Source.choices)
    reason_code = models.CharField(max_length=40, blank=True)
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "mode__order"]
        constraints = [models.UniqueConstraint(fields=["item", "mode"], name="gold_unique_mode_per_item")]

    def __str__(self) -> str:
        return f"gold {self.mode.code} for {self.item.trace_id}"
