"""Project administration pages (owners, and staff: `access_project_admin`): members and roles, invitations,
batches, settings, archive. Every change re-plans the assignments."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotator.access import access_project_admin
from annotator.assignment_strategy import pair_counts
from annotator.batches import visible_batches
from annotator.models import Assignment, Membership, QueueOrder, Role
from annotator.services.members import MemberError, do_add_existing, do_change_role, do_deactivate, do_invite
from annotator.services.projects import (
    ProjectSetupError,
    do_archive_project,
    do_attach_batches,
    do_update_settings,
)

INVITE_LINK_KEY = "invite_link"


def members(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project_admin(request.user, slug)
    memberships = list(
        project.memberships.select_related("user").order_by("-active", "role", "user__username")
    )
    workload = {
        row["annotator_id"]: row
        for row in Assignment.objects.work()  # gold calibration slots are not workload
        .filter(project=project)
        .values("annotator_id")
        .annotate(total=Count("id"), submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)))
    }
    annotators = {m.user_id: m.user.username for m in memberships if m.role == Role.ANNOTATOR and m.active}
    pairs = pair_counts(
        Assignment.objects.work()
        .filter(project=project, annotator_id__in=list(annotators))
        .values_list("trace_id", "annotator_id")
    )
    pair_rows = [
        (annotators[a], annotators[b], pairs.get((a, b), 0))
        for i, a in enumerate(sorted(annotators))
        for b in sorted(annotators)[i + 1 :]
    ]
    return render(
        request,
        "annotator/members.html",
        {
            "project": project,
            "memberships": [(m, workload.get(m.user_id)) for m in memberships],
            "roles": Role.choices,
            "queue_orders": QueueOrder.choices,
            "batches": project.batches.order_by("name"),
            "available_batches": visible_batches(request.user)
            .exclude(projects=project)
            .order_by("-created_at")[:200],
            "pair_rows": pair_rows,
            # The one-time set-password link of the person just invited, shown once for the owner to copy.
            "invite": request.session.pop(INVITE_LINK_KEY, None),
        },
    )


def _created(count: int) -> str:
    return f"; {count} traces assigned to annotators." if count else "."


@require_POST
def add_member(request: HttpRequest, slug: str) -> HttpResponse:
    """Add an existing account by username, or invite by e-mail (an account with a set-password link)."""
    project = access_project_admin(request.user, slug)
    role = request.POST.get("role", "")
    email = request.POST.get("email", "").strip()
    try:
        if email:
            change = do_invite(
                project,
                email=email,
                role=role,
                username=request.POST.get("username", ""),
                base_url=request.build_absolute_uri("/").rstrip("/"),
                actor=request.user,
            )
        else:
            change = do_add_existing(project, request.POST.get("username", ""), role)
    except MemberError as error:
        messages.error(request, str(error))
        return redirect("project-members", slug)
    user = change.membership.user
    messages.success(
        request, f"{user.username} is now {change.membership.role}" + _created(change.assignments_created)
    )
    if change.set_password_path:
        request.session[INVITE_LINK_KEY] = {
            "username": user.username,
            "email": user.email,
            "link": request.build_absolute_uri(change.set_password_path),
            "emailed": change.emailed,
        }
    return redirect("project-members", slug)


@require_POST
def remove_member(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = access_project_admin(request.user, slug)
    membership = get_object_or_404(Membership, project=project, pk=membership_id, active=True)
    try:
        change = do_deactivate(project, membership)
    except MemberError as error:
        messages.error(request, str(error))
        return redirect("project-members", slug)
    if membership.role == Role.ANNOTATOR:
        messages.success(
            request,
            f"{membership.user.username} no longer annotates; their submitted work stays, "
            f"{change.assignments_created} unfinished traces went to others.",
        )
    else:
        messages.success(request, f"{membership.user.username} is no longer {membership.role}.")
    return redirect("project-members", slug)


@require_POST
def change_role(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = access_project_admin(request.user, slug)
    membership = get_object_or_404(Membership, project=project, pk=membership_id, active=True)
    try:
        change = do_change_role(project, membership, request.POST.get("role", ""))
    except MemberError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"{membership.user.username} is now {change.membership.role}"
            + _created(change.assignments_created),
        )
    return redirect("project-members", slug)


@require_POST
def archive(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project_admin(request.user, slug)
    archived = request.POST.get("archived", "1") != "0"
    do_archive_project(project, archived=archived)
    messages.success(
        request,
        "Project archived: it is off the home list and takes no new work; everything stays readable."
        if archived
        else "Project restored: it takes new work again.",
    )
    return redirect("project-members", slug)


@require_POST
def attach_batch(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project_admin(request.user, slug)
    batch_id = request.POST.get("batch", "")
    if not batch_id.isdigit():
        messages.error(request, "Choose a batch to add.")
        return redirect("project-members", slug)
    # Only a batch this owner may see: another project's batch answers 404, exactly like a missing one.
    batch = get_object_or_404(visible_batches(request.user), pk=int(batch_id))
    try:
        created = do_attach_batches(project, [batch])
    except ProjectSetupError as error:
        messages.error(request, str(error))
        return redirect("project-members", slug)
    messages.success(request, f"Batch {batch.name} added: {created} new assignments.")
    return redirect("project-members", slug)


@require_POST
def update_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project_admin(request.user, slug)
    try:
        created = do_update_settings(
            project,
            name=request.POST.get("name", ""),
            overlap=int(request.POST.get("overlap") or 0),
            reservation_minutes=int(request.POST.get("reservation_minutes") or 0),
            guidelines=request.POST.get("guidelines", ""),
            # A checkbox: absent when unticked.
            imported_labels_count_toward_overlap=request.POST.get("imported_labels_count_toward_overlap")
            == "on",
            queue_order=request.POST.get("queue_order") or None,  # absent from an older form: unchanged
        )
    except (ValueError, ProjectSetupError) as error:
        messages.error(
            request, str(error) if isinstance(error, ProjectSetupError) else "Enter whole numbers."
        )
    else:
        messages.success(request, "Settings saved" + (f"; {created} new assignments." if created else "."))
    return redirect("project-members", slug)
