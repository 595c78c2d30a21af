"""What the incremental refresh of the failure signatures needs that no other row records."""

from __future__ import annotations

from django.db import models


class AnnotationDeletion(models.Model):
    """One submitted annotation deleted: the trace whose figures it moved.

    Written only by a database trigger on the annotation table (migration 0023), whoever deletes (the app,
    the admin, a shell, raw SQL): a deleted row leaves no ``updated_at`` behind, and the signature refresh
    reloads the traces changed since its stored figures. ``project_id``/``trace_id`` are None when the
    annotation's assignment was already gone; the refresh then recomputes in full."""

    project_id = models.BigIntegerField(null=True)
    trace_id = models.BigIntegerField(null=True)
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["project_id", "at"], name="annotation_deletion_at_idx")]

    def __str__(self) -> str:
        return f"submitted annotation of trace {self.trace_id} deleted at {self.at}"
