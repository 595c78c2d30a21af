"""Discussion of a trace, or of one mode on a trace: comments pointing at steps, @mentions, and the decision
a disagreement ends with (a clarified guideline, a definition to change, or an annotator error)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotator.models.projects import Project


class Thread(models.Model):
    class Decision(models.TextChoices):
        GUIDELINE = "guideline", "Guideline clarified"
        DEFINITION = "definition", "Definition to change"
        ANNOTATOR_ERROR = "annotator_error", "Annotator error"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="threads")
    trace = models.ForeignKey("traces.Trace", on_delete=models.CASCADE, related_name="threads")
    # None: about the trace as a whole; else about this mode (a disputed mode, typically).
    mode = models.ForeignKey(
        "taxonomy.FailureMode", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Opened by a calibration round's closing, for a mode its annotators disagreed on.
    calibration_round = models.ForeignKey(
        "annotator.CalibrationRound", null=True, blank=True, on_delete=models.SET_NULL, related_name="threads"
    )
    decision = models.CharField(max_length=20, choices=Decision.choices, blank=True)
    decision_text = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "trace", "mode__order", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "trace", "mode"],
                condition=Q(mode__isnull=False),
                name="thread_one_per_mode",
            ),
            models.UniqueConstraint(
                fields=["project", "trace"], condition=Q(mode__isnull=True), name="thread_one_per_trace"
            ),
        ]

    def __str__(self) -> str:
        return f"thread on {self.trace_id}{f' / {self.mode}' if self.mode_id else ''}"


class Comment(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField()
    step = models.PositiveIntegerField(null=True, blank=True, help_text="The step the comment points at")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["thread", "created_at", "id"]

    def __str__(self) -> str:
        return f"comment by {self.author_id} on {self.thread}"


class Mention(models.Model):
    """An @username in a comment: an in-app notification until its reader opens it."""

    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="mentions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mentions")
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["comment", "user"], name="mention_once")]
        indexes = [models.Index(fields=["user", "read_at"], name="mention_unread_idx")]

    def __str__(self) -> str:
        return f"@{self.user_id} in {self.comment_id}"
