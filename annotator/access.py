"""The one door for access: every view, API endpoint and task asks here, with a queryset.

Outsiders get 404 (the same answer for "absent" and "forbidden", so slugs leak nothing); members whose role
is not enough get 403.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from annotator.models import Membership, Project, Role

MANAGE_ROLES = frozenset({Role.OWNER})
REVIEW_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR})
LABEL_ROLES = frozenset({Role.ANNOTATOR})
ANY_ROLE = frozenset(Role)


def roles_in(user, project: Project) -> frozenset[str]:
    if not user.is_authenticated:
        return frozenset()
    return frozenset(
        Membership.objects.filter(project=project, user=user, active=True).values_list("role", flat=True)
    )


def access_project(user, slug: str, *, roles: frozenset[str] = ANY_ROLE) -> Project:
    """The project if `user` holds one of `roles` in it; 404 for non-members, 403 for too small a role."""
    project = (
        Project.objects.visible_to(user)
        .select_related("taxonomy_version__taxonomy")
        .filter(slug=slug)
        .first()
    )
    if project is None:
        raise Http404("No such project")
    held = roles_in(user, project)
    if not held & roles:
        raise PermissionDenied("Your role in this project does not allow this")
    project.user_roles = held
    return project


def can_see_all_labels(roles: frozenset[str]) -> bool:
    """Owners and adjudicators see everyone's labels; annotators and viewers stay blind."""
    return bool(roles & REVIEW_ROLES)
