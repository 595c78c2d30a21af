"""Saved views: a named trace filter (the filter language of annotator/search/filters.py), shared in a
project. Only the parameters are stored; the traces and their count are computed each time they are asked
for, so a view follows the project as traces are added and labelled."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.projects import Project


class SavedView(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=100)
    # `TraceFilter.to_params()`: a list of [parameter, value] pairs (meta repeats), read back by `parse`.
    params = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["project", "name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="saved_view_name_unique_in_project"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.project})"
