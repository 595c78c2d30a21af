"""Moving a project to a new taxonomy version: the migration (changes, previewed mapping, confirmed mapping)
and the re-checks it queues, one per annotation and mode that a split or a new mode asks to look at again."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.models.projects import Project


class TaxonomyMigration(models.Model):
    class Status(models.TextChoices):
        PREVIEWED = "previewed", "Previewed (not applied)"
        APPLIED = "applied", "Applied"
        DISCARDED = "discarded", "Discarded"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="taxonomy_migrations")
    from_version = models.ForeignKey("taxonomy.TaxonomyVersion", on_delete=models.PROTECT, related_name="+")
    to_version = models.ForeignKey("taxonomy.TaxonomyVersion", on_delete=models.PROTECT, related_name="+")
    # The to-version's content hash at preview time: if the version is rewritten before the owner confirms
    # (an unused version can be), the preview no longer describes it and must be made again.
    to_hash = models.CharField(max_length=64)
    changes = models.JSONField(default=list)
    # Old code -> list of new codes ([] = retired). `mapping` is what the changes imply (the preview);
    # `applied_mapping` is what the owner confirmed, which is what moved the labels.
    mapping = models.JSONField(default=dict)
    applied_mapping = models.JSONField(null=True, blank=True)
    # New code -> ids of the proposals it was made from.
    proposals = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PREVIEWED)
    summary = models.JSONField(default=dict, blank=True, help_text="What applying changed, counted")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.project} v{self.from_version.number} -> v{self.to_version.number} ({self.status})"


class ModeRecheck(models.Model):
    """ "Re-check FM-2.7 on trace T": the annotator's annotation predates this mode (a split or a new mode),
    so it says nothing about it yet. Resolved when the annotator submits that annotation again."""

    migration = models.ForeignKey(TaxonomyMigration, on_delete=models.CASCADE, related_name="rechecks")
    annotation = models.ForeignKey("annotator.Annotation", on_delete=models.CASCADE, related_name="rechecks")
    mode = models.ForeignKey("taxonomy.FailureMode", on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["annotation", "mode__order"]
        constraints = [models.UniqueConstraint(fields=["annotation", "mode"], name="recheck_once_per_mode")]
        indexes = [
            models.Index(
                fields=["annotation"], condition=Q(resolved_at__isnull=True), name="recheck_open_idx"
            )
        ]

    def __str__(self) -> str:
        return f"re-check {self.mode_id} on annotation {self.annotation_id}"
