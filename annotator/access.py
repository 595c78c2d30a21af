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
# The agreement report names raters and compares them pair by pair: not for annotators (blind labelling).
REPORT_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR, Role.VIEWER})


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


def access_assignment(user, slug: str, assignment_id: int):
    """The user's own assignment in the project. Another annotator's slot answers 404, exactly like a
    missing one: blind annotation means a slot's owner and labels are not even confirmed to exist."""
    from annotator.models import Assignment

    project = access_project(user, slug, roles=LABEL_ROLES)
    assignment = Assignment.objects.filter(project=project, annotator=user, pk=assignment_id).first()
    if assignment is None:
        raise Http404("No such assignment")
    assignment.project = project
    return assignment


def visible_traces(project: Project, user):
    """Traces of the project's batches this member may open: all of them for owners, adjudicators and
    viewers; only the traces assigned to them for annotators. Loaded without the raw original record."""
    from traces.viewer import trace_queryset

    traces = trace_queryset().filter(batch__projects=project)
    if not project.user_roles & (REVIEW_ROLES | {Role.VIEWER}):
        traces = traces.filter(assignments__project=project, assignments__annotator=user)
    return traces


def access_trace(user, slug: str, trace_id: int, *, roles: frozenset[str] = ANY_ROLE):
    """(project, trace) for a trace this member may open (see visible_traces); anything else is 404."""
    project = access_project(user, slug, roles=roles)
    trace = visible_traces(project, user).filter(pk=trace_id).first()
    if trace is None:
        raise Http404("No such trace in this project")
    return project, trace


SIGNATURE_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR, Role.VIEWER})


def access_signatures(user, slug: str, *, annotator: str | None = None) -> Project:
    """The project, for its failure-signature analytics (page, CSV, API).

    Owners, adjudicators and viewers read them. Annotators only once the project is no longer blind: the
    figures are aggregates of gold labels, but filters can narrow them to a handful of traces, and the gold
    label of a trace an annotator labelled tells them what the other annotator chose. One annotator's own
    labels (source ``annotator:NAME``) are for owners and adjudicators, or for NAME themself.
    """
    project = access_project(user, slug)
    held = project.user_roles
    if project.blind and not held & SIGNATURE_ROLES:
        raise PermissionDenied("Failure signatures open to annotators when the project is no longer blind")
    if annotator is not None and annotator != user.get_username() and not held & REVIEW_ROLES:
        raise PermissionDenied("Only owners and adjudicators may see one annotator's labels")
    return project
