"""Project verbs: create or extend a project (the CLI), attach batches, change settings.

Every path that can add traces or annotators ends in `do_assign`, so the work plan is always complete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotator.models import Assignment, Membership, Project, QueueOrder, Role
from annotator.raters import imported_q
from annotator.services.assignment import do_assign
from annotator.services.followups import after_annotations_changed
from annotator.triage.service import do_set_queue_order
from taxonomy.services import resolve_version
from traces.models import Batch


class ProjectSetupError(ValueError):
    pass


class ProjectArchived(ProjectSetupError):
    """New work asked of an archived project (claims, imports, batches, LLM runs)."""


def may_create_projects(user) -> bool:
    """PROJECT_CREATORS decides: "staff" (the default) or "any" signed-in user."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or settings.PROJECT_CREATORS == "any"


def refuse_if_archived(project: Project) -> None:
    if project.archived_at is not None:
        raise ProjectArchived(
            f"Project {project.slug!r} is archived: it takes no new work (unarchive it first)"
        )


@dataclass
class ProjectSetup:
    project: Project
    created: bool
    users_created: list[str] = field(default_factory=list)
    batches_added: list[str] = field(default_factory=list)
    members_added: list[str] = field(default_factory=list)
    assignments_created: int = 0


def ensure_users(usernames: Iterable[str]) -> tuple[list, list[str]]:
    """The named users, creating unknown ones with an unusable password (an admin sets one later with
    `manage.py changepassword`); returns (users, names created)."""
    User = get_user_model()
    users, created = [], []
    for name in dict.fromkeys(n.strip() for n in usernames if n.strip()):
        user = User.objects.filter(username=name).first()
        if user is None:
            user = User(username=name)
            user.set_unusable_password()
            user.save()
            created.append(name)
        users.append(user)
    return users, created


def _batches(names: Sequence[str]) -> list[Batch]:
    found = {batch.name: batch for batch in Batch.objects.filter(name__in=names)}
    missing = [name for name in names if name not in found]
    if missing:
        known = (
            ", ".join(Batch.objects.order_by("-created_at").values_list("name", flat=True)[:10]) or "none yet"
        )
        raise ProjectSetupError(f"No batch named {', '.join(map(repr, missing))} (recent batches: {known})")
    return [found[name] for name in dict.fromkeys(names)]


@transaction.atomic
def do_create_project(
    slug: str,
    *,
    taxonomy: str,
    members: Mapping[str, Sequence[str]],
    batches: Sequence[str] = (),
    name: str | None = None,
    overlap: int | None = None,
    guidelines: str | None = None,
    imported_labels_count_toward_overlap: bool | None = None,
) -> ProjectSetup:
    """Create the project, or extend it when it exists (idempotent: re-running adds only what is new).

    `members` maps a role to usernames. The taxonomy of an existing project cannot change (its labels
    would lose their meaning); asking for another one is an error. Switching an existing project's
    `imported_labels_count_toward_overlap` re-plans its work as the settings page does (`do_update_settings`).
    """
    if overlap is not None and overlap < 1:
        raise ProjectSetupError("--overlap must be at least 1")
    try:
        version = resolve_version(taxonomy)
    except Exception as error:  # DoesNotExist carries the slug; say how to load the built-ins
        raise ProjectSetupError(
            f"{error}; load the built-in taxonomies with `manage.py load_taxonomies`"
        ) from None
    batch_rows = _batches(list(batches))
    project = Project.objects.select_related("taxonomy_version__taxonomy").filter(slug=slug).first()
    created = project is None
    if created:
        project = Project.objects.create(
            slug=slug,
            name=name or slug.replace("-", " ").capitalize(),
            taxonomy_version=version,
            overlap=overlap or 2,
            guidelines=guidelines or "",
            imported_labels_count_toward_overlap=bool(imported_labels_count_toward_overlap),
        )
    else:
        if project.taxonomy_version.taxonomy.slug != taxonomy:
            raise ProjectSetupError(
                f"Project {slug!r} labels with {project.taxonomy_version.taxonomy.slug!r}; "
                f"its taxonomy cannot change to {taxonomy!r}"
            )
        changes = {"name": name, "overlap": overlap, "guidelines": guidelines}
        for attr, value in changes.items():
            if value is not None:
                setattr(project, attr, value)
        project.save()
    setup = ProjectSetup(project=project, created=created)
    existing = set(project.batches.values_list("name", flat=True))
    project.batches.add(*batch_rows)
    setup.batches_added = [batch.name for batch in batch_rows if batch.name not in existing]
    for role, usernames in members.items():
        users, new_names = ensure_users(usernames)
        setup.users_created += new_names
        for user in users:
            membership, made = Membership.objects.get_or_create(project=project, user=user, role=role)
            if made or not membership.active:
                Membership.objects.filter(pk=membership.pk).update(active=True)
                setup.members_added.append(f"{user.username} ({role})")
    if project.created_by_id is None and members.get(Role.OWNER):
        owner = get_user_model().objects.get(username=members[Role.OWNER][0].strip())
        Project.objects.filter(pk=project.pk).update(created_by=owner)
    switched = not created and imported_labels_count_toward_overlap not in (
        None,
        project.imported_labels_count_toward_overlap,
    )
    if switched:
        setup.assignments_created = do_update_settings(
            project,
            name=project.name,
            overlap=project.overlap,
            reservation_minutes=project.reservation_minutes,
            guidelines=project.guidelines,
            imported_labels_count_toward_overlap=imported_labels_count_toward_overlap,
        )
    else:
        setup.assignments_created = do_assign(project)
    return setup


@transaction.atomic
def do_attach_batches(project: Project, batches: Iterable[Batch]) -> int:
    """Add batches to the project and assign their traces; returns the new assignments."""
    refuse_if_archived(project)
    project.batches.add(*batches)
    return do_assign(project)


@transaction.atomic
def do_update_settings(
    project: Project,
    *,
    name: str,
    overlap: int,
    reservation_minutes: int,
    guidelines: str,
    imported_labels_count_toward_overlap: bool | None = None,
    queue_order: str | None = None,
) -> int:
    """Change the project's settings; a larger overlap assigns more annotators at once (a smaller one
    never takes finished or started work away). Returns the new assignments.

    Switching `imported_labels_count_toward_overlap` re-plans the work (`do_assign`): off, every trace gets
    `overlap` people besides its imported raters; on, the people's untouched slots on traces the imported
    labels fill are dropped (submitted, skipped, drafted and reserved work stays). The adjudication check
    then runs again for the traces with imported labels, after commit (who is required changed).

    `queue_order` (annotator.models.QueueOrder) switches the order annotators get their traces in; the
    LLM triage ranks are rewritten after commit (annotator.triage.service)."""
    if queue_order is not None and queue_order not in QueueOrder.values:
        raise ProjectSetupError(f"Choose a queue order: {', '.join(QueueOrder.values)}")
    if not name.strip():
        raise ProjectSetupError("The project needs a name")
    if not 1 <= overlap <= 20:
        raise ProjectSetupError("Overlap must be from 1 to 20 annotators per trace")
    if not 1 <= reservation_minutes <= 24 * 60:
        raise ProjectSetupError("The reservation must last from 1 minute to 24 hours")
    counted = project.imported_labels_count_toward_overlap
    if imported_labels_count_toward_overlap is not None:
        counted = imported_labels_count_toward_overlap
    switched = counted != project.imported_labels_count_toward_overlap
    Project.objects.filter(pk=project.pk).update(
        name=name.strip(),
        overlap=overlap,
        reservation_minutes=reservation_minutes,
        guidelines=guidelines,
        imported_labels_count_toward_overlap=counted,
    )
    project.refresh_from_db()
    if queue_order is not None:
        do_set_queue_order(project, queue_order)
    created = do_assign(project, trim=switched and counted)
    if switched:
        traces = set(
            Assignment.objects.work()
            .filter(imported_q("annotator"), project=project, status=Assignment.Status.SUBMITTED)
            .values_list("trace_id", flat=True)
        )
        transaction.on_commit(lambda: after_annotations_changed(project.pk, traces))
    return created


@transaction.atomic
def do_new_project(
    creator,
    *,
    slug: str,
    name: str,
    taxonomy: str,
    version: int | None = None,
    overlap: int = 2,
    guidelines: str = "",
    blind: bool = True,
    imported_labels_count_toward_overlap: bool = False,
    batches: Sequence[Batch] = (),
) -> ProjectSetup:
    """Create a project from the browser or the API; `creator` becomes its owner. Unlike the CLI's
    `do_create_project` an existing slug is an error (a form never extends someone else's project).
    The caller checks `may_create_projects(creator)` and that `batches` are ones the creator may see."""
    slug = slug.strip().lower()
    if not slug:
        raise ProjectSetupError("The project needs a slug (letters, digits and dashes, used in its URLs)")
    if Project.objects.filter(slug=slug).exists():
        raise ProjectSetupError(f"A project with the slug {slug!r} exists already; choose another slug")
    if not name.strip():
        raise ProjectSetupError("The project needs a name")
    if not 1 <= overlap <= 20:
        raise ProjectSetupError("Overlap must be from 1 to 20 annotators per trace")
    try:
        taxonomy_version = resolve_version(taxonomy, version)
    except Exception as error:  # DoesNotExist names the slug and version
        raise ProjectSetupError(str(error)) from None
    project = Project.objects.create(
        slug=slug,
        name=name.strip(),
        taxonomy_version=taxonomy_version,
        overlap=overlap,
        guidelines=guidelines,
        blind=blind,
        imported_labels_count_toward_overlap=imported_labels_count_toward_overlap,
        created_by=creator,
    )
    Membership.objects.create(project=project, user=creator, role=Role.OWNER)
    setup = ProjectSetup(project=project, created=True, members_added=[f"{creator.username} (owner)"])
    project.batches.add(*batches)
    setup.batches_added = [batch.name for batch in batches]
    setup.assignments_created = do_assign(project)
    return setup


def do_archive_project(project: Project, *, archived: bool = True) -> None:
    """Archive (or restore) a project: archived projects leave the home list, take no new work, stay
    readable. Finished work and reports are kept as they are."""
    Project.objects.filter(pk=project.pk).update(archived_at=timezone.now() if archived else None)
    project.refresh_from_db(fields=["archived_at"])
