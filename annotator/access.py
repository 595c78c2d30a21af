"""The one door for access: who may see what in a project, as one policy object with scoped querysets.

`ProjectAccess` is built once per request from the user's active memberships in the project. It has no
default role: a user with no membership never gets one (outsiders get 404, the same answer for "absent" and
"forbidden", so slugs leak nothing), and a member whose roles are not enough for a page gets 403. Every
page, partial, API view, export and task asks it, through `access_project`, `access_trace`,
`access_assignment` or the querysets it hands out.

Blind beats every other role. In a blind project (the default) a trace is *blind* for a user while they
are an annotator of the project and hold an assignment of it that they have not submitted (to do, draft or
skipped). On a blind trace the user sees no other rater's labels, notes, LLM labels or the answer key that
came with the data, whatever other role they hold there (owner, adjudicator, viewer): its review page and
its annotations are 403, its adjudication item is left out of every list (404). Pages that show labels of
many traces at once (agreement report, exports, failure signatures, LLM agreement) are refused while the
user is blind on any trace of the project. See README, "Who sees what".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from annotator.models import (
    AdjudicationItem,
    Annotation,
    ApiToken,
    Assignment,
    GoldLabel,
    LabelApplication,
    Membership,
    Project,
    Role,
)
from annotator.prepared import PreparedQuery
from traces.access import may_browse_batches
from traces.models import Batch, Trace, in_project_q

MANAGE_ROLES = frozenset({Role.OWNER})
REVIEW_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR})
LABEL_ROLES = frozenset({Role.ANNOTATOR})
ANY_ROLE = frozenset(Role)
# The agreement report names raters and compares them pair by pair: not for annotators (blind labelling).
REPORT_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR, Role.VIEWER})
SIGNATURE_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR, Role.VIEWER})
# Roles that open every trace of the project (annotators open the traces assigned to them).
ALL_TRACES_ROLES = frozenset({Role.OWNER, Role.ADJUDICATOR, Role.VIEWER})

BLIND_MESSAGE = (
    "You are annotating this trace in this project: other raters' labels and the answer key open once you "
    "have submitted your own annotation (blind labelling)."
)


def roles_in(user, project: Project) -> frozenset[str]:
    if not user.is_authenticated:
        return frozenset()
    return frozenset(
        Membership.objects.filter(project=project, user=user, active=True).values_list("role", flat=True)
    )


# Compiled once per connection (annotator.prepared): it runs on every request.
_MEMBERSHIPS = PreparedQuery(
    lambda slug, user: (
        Membership.objects.filter(project__slug=slug, user_id=user, active=True)
        .select_related("project__taxonomy_version__taxonomy")
        .order_by()
    ),
    slug=str,
    user=int,
)


@dataclass
class ProjectAccess:
    """What one user may see and do in one project. Build it with `ProjectAccess.load` (or through
    `access_project`); every queryset it hands out is scoped to the project and to this user's rights."""

    user: Any
    project: Project
    roles: frozenset[str]
    _blind_on: dict[int, bool] = field(default_factory=dict, repr=False)

    @classmethod
    def load(cls, user, slug: str) -> ProjectAccess:
        """The user's access to the project `slug`; 404 unless they hold an active role in it."""
        # One query for the project and the user's roles in it: every request of the app starts here.
        memberships = _MEMBERSHIPS.objects(slug=slug, user=user.pk) if user.is_authenticated else []
        if not memberships:
            raise Http404("No such project")
        project = memberships[0].project
        access = cls(user=user, project=project, roles=frozenset(m.role for m in memberships))
        project.user_roles = access.roles
        project.access = access
        return access

    @classmethod
    def of(cls, user, project: Project) -> ProjectAccess:
        """For code that already holds the project (tasks, services): the same rules, no 404."""
        existing = getattr(project, "access", None)
        if existing is not None and existing.user == user:
            return existing
        return cls(user=user, project=project, roles=roles_in(user, project))

    # Roles ---------------------------------------------------------------------------------------------

    def holds(self, roles: frozenset[str]) -> bool:
        return bool(self.roles & roles)

    def require(self, roles: frozenset[str]) -> ProjectAccess:
        if not self.holds(roles):
            raise PermissionDenied("Your role in this project does not allow this")
        return self

    @property
    def is_reviewer(self) -> bool:
        return self.holds(REVIEW_ROLES)

    def may_open(self, roles: frozenset[str], *, shows_labels: bool = False) -> bool:
        """What `access_project(user, slug, roles=roles, shows_labels=...)` lets through, asked without
        raising: the navigation shows each member only the pages that will open for them."""
        return self.holds(roles) and not (shows_labels and self.blind_count)

    def holds_signature_role(self) -> bool:
        """Failure signatures by role: owners, adjudicators, viewers; annotators once the project is no
        longer blind (`access_signatures` also waits until the user is blind on no trace)."""
        return not self.project.blind or self.holds(SIGNATURE_ROLES)

    # The blind rule ------------------------------------------------------------------------------------

    def blind_assignments(self) -> QuerySet[Assignment]:
        """My assignments in this project that keep me blind: not submitted (to do, draft or skipped).
        Only while I hold the annotator role: someone removed from it can no longer label, so seeing the
        labels can no longer bias them."""
        if not self.project.blind or Role.ANNOTATOR not in self.roles:
            return Assignment.objects.none()
        return Assignment.objects.filter(project=self.project, annotator=self.user).exclude(
            status=Assignment.Status.SUBMITTED
        )

    def blind_trace_ids(self) -> QuerySet:
        """A subquery of the trace ids I am blind on (use with `trace__in=` / `pk__in=`)."""
        return self.blind_assignments().values("trace_id")

    @cached_property
    def blind_count(self) -> int:
        return self.blind_assignments().count()

    def is_blind_on(self, trace: Trace | int) -> bool:
        trace_id = trace if isinstance(trace, int) else trace.pk
        if trace_id not in self._blind_on:
            self._blind_on[trace_id] = self.blind_assignments().filter(trace_id=trace_id).exists()
        return self._blind_on[trace_id]

    def may_see_labels(self, trace: Trace | int) -> bool:
        """May this user see other raters' labels, notes, LLM labels and the answer key of `trace`?
        Owners and adjudicators may, except on a trace they are blind on (blind beats every role)."""
        return self.is_reviewer and not self.is_blind_on(trace)

    def require_labels(self, trace: Trace | int) -> None:
        """403 unless `may_see_labels(trace)`; the message says why when the user is blind on it."""
        if not self.is_reviewer:
            raise PermissionDenied("Your role in this project does not allow this")
        if self.is_blind_on(trace):
            raise PermissionDenied(BLIND_MESSAGE)

    def require_project_labels(self) -> None:
        """For pages that show labels of many traces at once (reports, exports, signatures, LLM runs):
        403 while the user is blind on any trace of the project."""
        if self.blind_count:
            raise PermissionDenied(
                f"You still have {self.blind_count} trace(s) to annotate in this project. Reports, exports "
                "and LLM results show other raters' labels of those traces, so they open once you have "
                "submitted them (blind labelling)."
            )

    # Scoped querysets ----------------------------------------------------------------------------------

    def traces(self) -> QuerySet[Trace]:
        """Traces of the project this member may open: all of them for owners, adjudicators and viewers;
        for annotators only the traces assigned to them. Loaded without the raw original record."""
        from traces.viewer import trace_queryset

        traces = trace_queryset().filter(in_project_q(self.project))
        if not self.holds(ALL_TRACES_ROLES):
            traces = traces.filter(assignments__project=self.project, assignments__annotator=self.user)
        return traces

    def trace(self, trace_id: int) -> Trace:
        trace = self.traces().filter(pk=trace_id).first()
        if trace is None:
            raise Http404("No such trace in this project")
        return trace

    def label_traces(self) -> QuerySet[Trace]:
        """Traces whose labels this user may see: none for annotators and viewers; for owners and
        adjudicators every trace of the project except those they are blind on."""
        if not self.is_reviewer:
            return Trace.objects.none()
        return Trace.objects.in_project(self.project).exclude(pk__in=self.blind_trace_ids())

    def assignments(self) -> QuerySet[Assignment]:
        """My own assignments in the project (everyone's progress is counted elsewhere, not listed)."""
        return Assignment.objects.filter(project=self.project, annotator=self.user)

    def assignment(self, assignment_id: int) -> Assignment:
        """My own assignment; another annotator's slot answers 404 exactly like a missing one."""
        self.require(LABEL_ROLES)
        assignment = self.assignments().filter(pk=assignment_id).first()
        if assignment is None:
            raise Http404("No such assignment")
        assignment.project = self.project
        return assignment

    def assignment_to_lock(self, assignment_id: int) -> Assignment:
        """My assignment `assignment_id`, not read: for a verb that locks it (the annotation verbs of
        annotator.services.annotations), whose locking read keeps to this project and annotator, so another
        annotator's slot is Assignment.DoesNotExist there (404), exactly like a missing one. The API's saves
        use it and skip a read of the row the lock reads again a moment later."""
        self.require(LABEL_ROLES)
        return Assignment(pk=assignment_id, project=self.project, annotator_id=self.user.pk)

    def annotations(self) -> QuerySet[Annotation]:
        """Annotations this user may read: their own, plus everyone's on traces whose labels they may see."""
        own = Annotation.objects.filter(assignment__project=self.project, assignment__annotator=self.user)
        if not self.is_reviewer:
            return own
        others = Annotation.objects.filter(
            assignment__project=self.project,
            assignment__purpose=Assignment.Purpose.WORK,  # gold calibration answers are the annotator's own
            assignment__trace__in=self.label_traces().values("pk"),
        )
        return own | others

    def labels(self) -> QuerySet[LabelApplication]:
        return LabelApplication.objects.filter(annotation__in=self.annotations().values("pk"))

    def adjudication_items(self) -> QuerySet[AdjudicationItem]:
        """The adjudication items this user may open: owners' and adjudicators', minus blind traces."""
        if not self.is_reviewer:
            return AdjudicationItem.objects.none()
        return AdjudicationItem.objects.filter(project=self.project).exclude(
            trace_id__in=self.blind_trace_ids()
        )

    def gold(self) -> QuerySet[GoldLabel]:
        return GoldLabel.objects.filter(item__in=self.adjudication_items().values("pk"))

    def batches(self) -> QuerySet[Batch]:
        """The batches holding the project's traces (what its members may know exist): a project may hold
        only part of a batch, the files imported into it."""
        return Batch.objects.in_project(self.project)

    def metadata(self, trace: Trace) -> dict[str, Any]:
        """The trace's metadata as this user may see it: with its answer key only if they may see labels."""
        public = dict(trace.metadata or {})
        return {**public, **self.answer_key(trace)}

    def answer_key(self, trace: Trace) -> dict[str, Any]:
        """The verdict that came with the data (Who&When attribution, MAST failure modes), or {}."""
        if not trace.answer_key or not self.may_see_labels(trace):
            return {}
        return dict(trace.answer_key)


def site_links_visible(user) -> dict[str, bool]:
    """Which links of the top bar this user may follow (outside any project): "Traces" lists every
    imported batch, which only staff may browse (traces.access)."""
    return {"batches": may_browse_batches(user)}


def access_project(
    user, slug: str, *, roles: frozenset[str] = ANY_ROLE, shows_labels: bool = False
) -> Project:
    """The project if `user` holds one of `roles` in it; 404 for non-members, 403 for too small a role.
    `shows_labels`: the page shows labels of many traces (refused while the user is blind on any).
    The policy object rides along as `project.access`."""
    access = ProjectAccess.load(user, slug).require(roles)
    if shows_labels:
        access.require_project_labels()
    return access.project


def access_project_admin(user, slug: str) -> Project:
    """The project, for its administration (members, batches, settings, archive): owners, and staff even
    when they are not members (staff administer every project; they see no labels through this door: the
    administration pages show who works on what, never what anyone labelled). Others as `access_project`
    with MANAGE_ROLES: outsiders 404, members without the owner role 403."""
    if user.is_authenticated and user.is_active and user.is_staff:
        project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
        if project is None:
            raise Http404("No such project")
        access = ProjectAccess(user=user, project=project, roles=roles_in(user, project))
        project.user_roles = access.roles
        project.access = access
        return project
    return access_project(user, slug, roles=MANAGE_ROLES)


def access_assignment(user, slug: str, assignment_id: int) -> Assignment:
    """The user's own assignment in the project (see ProjectAccess.assignment)."""
    return ProjectAccess.load(user, slug).assignment(assignment_id)


def access_trace(
    user, slug: str, trace_id: int, *, roles: frozenset[str] = ANY_ROLE, labels: bool = False
) -> tuple[Project, Trace]:
    """(project, trace) for a trace this member may open; anything else is 404. `labels`: the page shows
    the trace's labels, so the user must be allowed to see them (owners and adjudicators, not blind)."""
    access = ProjectAccess.load(user, slug).require(roles)
    trace = access.trace(trace_id)
    if labels:
        access.require_labels(trace)
    return access.project, trace


def access_signatures(user, slug: str, *, annotator: str | None = None) -> Project:
    """The project, for its failure-signature analytics (page, CSV, API).

    Owners, adjudicators and viewers read them. Annotators only once the project is no longer blind: the
    figures are aggregates of gold labels, but filters can narrow them to a handful of traces, and the gold
    label of a trace an annotator labelled tells them what the other annotator chose. One annotator's own
    labels (source ``annotator:NAME``) are for owners and adjudicators, or for NAME themself. Anyone still
    blind on a trace of the project waits until they have submitted it.
    """
    access = ProjectAccess.load(user, slug)
    if not access.holds_signature_role():
        raise PermissionDenied("Failure signatures open to annotators when the project is no longer blind")
    if annotator is not None and annotator != user.get_username() and not access.is_reviewer:
        raise PermissionDenied("Only owners and adjudicators may see one annotator's labels")
    access.require_project_labels()
    return access.project


def owned_projects(user) -> QuerySet[Project]:
    """The projects `user` owns (an active owner membership): where they manage the ingest tokens."""
    if not user.is_authenticated:
        return Project.objects.none()
    return Project.objects.filter(
        memberships__user=user, memberships__role=Role.OWNER, memberships__active=True
    ).distinct()


def access_tokens(user) -> QuerySet[ApiToken]:
    """The API tokens `user` may list and revoke: their own (scope full), and the ingest tokens of the
    projects they own, whoever created them. Never another user's token, never a project's they do not own
    (staff included: staff revoke other people's tokens in the Django admin)."""
    if not user.is_authenticated:
        return ApiToken.objects.none()
    own = Q(user=user, project__isnull=True)
    projects = Q(scope=ApiToken.Scope.INGEST, project__in=owned_projects(user).values("pk"))
    return ApiToken.objects.filter(own | projects).select_related("project")
