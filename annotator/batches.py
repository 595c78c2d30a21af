"""Batches belong to someone: which batches a user may see, attach to a project, extend and de-duplicate
against. A batch is visible to the projects that hold it (through their owners) and to staff; a batch no
project holds yet is visible to whoever imported it."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from annotator.models import Role
from traces.models import Batch


def visible_batches(user) -> QuerySet[Batch]:
    """Batches `user` may see as batches. `None` is the server's operator at the command line (like staff:
    the shell already reaches every row); anonymous users see none."""
    if user is None or (user.is_authenticated and user.is_staff):
        return Batch.objects.all()
    if not user.is_authenticated:
        return Batch.objects.none()
    owned = Batch.objects.filter(
        projects__memberships__user=user,
        projects__memberships__role=Role.OWNER,
        projects__memberships__active=True,
    )
    imported = Batch.objects.filter(imported_by=user, projects=None)
    return Batch.objects.filter(Q(pk__in=owned.values("pk")) | Q(pk__in=imported.values("pk")))
