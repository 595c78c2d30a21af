"""Who may see traces outside a project: staff (the people who import). Project members reach traces
through their project's pages, which check membership in annotator.access."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied


def may_browse_batches(user) -> bool:
    return bool(user.is_authenticated and user.is_staff)


def require_importer(user) -> None:
    if not may_browse_batches(user):
        raise PermissionDenied("Only staff can browse and import batches outside a project")
