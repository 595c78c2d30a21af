"""Gold labels: a separate layer with provenance; raw annotations are never changed."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AdjudicationItemQuerySet(models.QuerySet):
    def in_list_order(self, status: str) -> AdjudicationItemQuerySet:
        """Open items in queue order (most severe first, fatal modes weigh most); decided ones newest first
        (what was just done is what one looks for). The page, the API and claim-next share it."""
        if status == AdjudicationItem.Status.OPEN:
            return self.order_by("-severity", "id")
        return self.order_by("-updated_at", "-id")


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
    # Single-primary taxonomies: the annotators named different primary labels (the sets may still agree).
    primary_disputed = models.BooleanField(default=False)
    # The annotations compared, in the order shown as A, B, ... (annotator username order), and a
    # fingerprint of their ids and versions: re-running the check on unchanged input changes nothing.
    annotation_ids = models.JSONField(default=list, blank=True)
    inputs_fingerprint = models.CharField(max_length=64, blank=True)
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

    objects = AdjudicationItemQuerySet.as_manager()

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


class GoldHistory(models.Model):
    """Append-only record of every change to a trace's gold labels: automatic agreement, re-evaluation,
    an adjudicator's decision, a reopening. `before`/`after` are gold snapshots; `after` of a decision
    also keeps every per-mode decision, including "not present" ones that leave no GoldLabel row.

    Points at the project and trace (not only the item) so the history outlives an item that is removed
    because its trace no longer has enough annotations."""

    class Action(models.TextChoices):
        AGREED = "agreed", "Agreed automatically"
        REEVALUATED = "reevaluated", "Re-evaluated after an annotation changed"
        QUEUED = "queued", "Queued for adjudication"
        DECIDED = "decided", "Decided by an adjudicator"
        REOPENED = "reopened", "Reopened"
        WITHDRAWN = "withdrawn", "Withdrawn (too few annotations)"
        MIGRATED = "migrated", "Moved to a new taxonomy version"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="gold_history")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(
        AdjudicationItem, on_delete=models.SET_NULL, null=True, blank=True, related_name="history"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    action = models.CharField(max_length=12, choices=Action.choices)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    note = models.TextField(blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "-at", "-id"]
        verbose_name_plural = "gold history"
        indexes = [
            models.Index(fields=["project", "actor", "-at"], name="gold_history_actor_idx"),
            # "which traces' gold changed since" (the incremental signature refresh): one short range
            models.Index(fields=["project", "at"], name="gold_history_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} on trace {self.trace_id} at {self.at:%Y-%m-%d %H:%M}"
