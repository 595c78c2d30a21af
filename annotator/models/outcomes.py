"""One row per applied outcomes file (annotator.outcomes): who set which traces' outcomes, when, from what.

The newest row's id is part of the failure signatures' data version (annotator.services.signatures.report):
an outcome changed after the figures were stored makes them computed again, in every project holding the
trace (a trace may be in several projects, so the newest import of any project counts).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class OutcomeImport(models.Model):
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="outcome_imports")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    filename = models.CharField(max_length=255, blank=True)
    format = models.CharField(max_length=20)
    traces = models.PositiveIntegerField(help_text="How many traces the file named")
    counts = models.JSONField(default=dict, help_text="Traces per outcome after the import, of those named")

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"Outcomes of {self.traces} traces ({self.filename or self.format})"
