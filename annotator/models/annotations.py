"""What an annotator said about one trace, and every change to it."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.raters import llm_q
from traces.models import in_project_q


class AnnotationQuerySet(models.QuerySet):
    def in_project(self, project) -> AnnotationQuerySet:
        """Annotations of the project on the project's traces (Trace.objects.in_project): what every report,
        export and queue reads, so they all count the same traces. Gold calibration answers are left out:
        they test an annotator, they are not data."""
        return self.filter(
            in_project_q(project, "assignment__trace"),
            assignment__project=project,
            assignment__purpose="work",
        )

    def submitted_in(self, project) -> AnnotationQuerySet:
        return self.in_project(project).filter(status=Annotation.Status.SUBMITTED)

    def llm(self) -> AnnotationQuerySet:
        """Annotations by language-model raters (``Rater.kind`` llm, see annotator.raters)."""
        return self.filter(llm_q("assignment__annotator"))


class Annotation(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"

    assignment = models.OneToOneField(
        "annotator.Assignment", on_delete=models.CASCADE, related_name="annotation"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    no_failure = models.BooleanField(default=False, help_text="Explicitly: no failure observed")
    ambiguous = models.BooleanField(default=False)
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    note = models.TextField(blank=True)
    time_spent_seconds = models.PositiveIntegerField(default=0)
    # Optimistic concurrency: a save carries the version it was based on; a stale one is refused.
    version = models.PositiveIntegerField(default=1)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Labels made elsewhere keep what the import knew and could not turn into labels: {"source": "MAD...",
    # "missing_modes": ["FM-3.2"] (no vote given: missing, never "not chosen"), "unknown_labels": [{"mode":
    # "...", "steps": [...]}] (modes the taxonomy lacks)}. Empty for labels made in this app.
    provenance = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | Q(confidence__gte=1, confidence__lte=5),
                name="annotation_confidence_1_to_5",
            ),
        ]

    def __str__(self) -> str:
        return f"annotation of {self.assignment}"


class LabelApplication(models.Model):
    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="labels")
    mode = models.ForeignKey("taxonomy.FailureMode", on_delete=models.PROTECT, related_name="applications")
    primary = models.BooleanField(default=False)
    # Evidence: [{"step": 12, "quote": "optional quoted span"}]; kept as one JSON list so a label and its
    # evidence are saved, versioned and compared together.
    evidence = models.JSONField(default=list, blank=True)
    note = models.TextField(blank=True)
    # A failure attribution that came with imported data, stored as given: {"agent", "step", "reason"}
    # (Who&When's mistake_agent / mistake_step / mistake_reason). Empty for labels made here. It sits on the
    # label, not on the trace, so only people who may see labels see it (annotator.access).
    attribution = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["annotation", "mode__order"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "mode"], name="label_unique_mode_per_annotation"),
            models.UniqueConstraint(
                fields=["annotation"], condition=Q(primary=True), name="label_one_primary_per_annotation"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.mode.code} on {self.annotation_id}"

    @property
    def evidence_steps(self) -> list[int]:
        return [item["step"] for item in self.evidence if isinstance(item, dict) and "step" in item]


class LabelHistory(models.Model):
    """Append-only record of every change to an annotation (who, when, before, after)."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="history")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    action = models.CharField(max_length=20)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["annotation", "at", "id"]
        verbose_name_plural = "label history"

    def __str__(self) -> str:
        return f"{self.action} by {self.actor} at {self.at:%Y-%m-%d %H:%M}"
