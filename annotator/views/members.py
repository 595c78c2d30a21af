"""The owner's page: members and roles, batches, settings. Every change re-plans the assignments."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotator.access import MANAGE_ROLES, access_project
from annotator.assignment_strategy import pair_counts
from annotator.batches import visible_batches
from annotator.models import Assignment, Membership, Role
from annotator.services.assignment import do_add_member, do_remove_annotator
from annotator.services.projects import ProjectSetupError, do_attach_batches, do_update_settings


def members(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    memberships = list(
        project.memberships.select_related("user").order_by("-active", "role", "user__username")
    )
    workload = {
        row["annotator_id"]: row
        for row in Assignment.objects.filter(project=project)
        .values("annotator_id")
        .annotate(total=Count("id"), submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)))
    }
    annotators = {m.user_id: m.user.username for m in memberships if m.role == Role.ANNOTATOR and m.active}
    pairs = pair_counts(
        Assignment.objects.filter(project=project, annotator_id__in=list(annotators)).values_list(
            "trace_id", "annotator_id"
        )
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
            "batches": project.batches.order_by("name"),
            "available_batches": visible_batches(request.user)
            .exclude(projects=project)
            .order_by("-created_at")[:200],
            "pair_rows": pair_rows,
        },
    )


@require_POST
def add_member(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    username = request.POST.get("username", "").strip()
    role = request.POST.get("role", "")
    user = get_user_model().objects.filter(username=username).first()
    if role not in Role.values:
        messages.error(request, "Choose a role.")
    elif user is None:
        messages.error(request, f"There is no user “{username}”. Ask an administrator to create the account.")
    else:
        created = do_add_member(project, user, role)
        messages.success(
            request,
            f"{user.username} is now {role}"
            + (f"; {created} traces assigned to annotators." if created else "."),
        )
    return redirect("project-members", slug)


@require_POST
def remove_member(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    membership = get_object_or_404(Membership, project=project, pk=membership_id, active=True)
    owners = project.memberships.filter(role=Role.OWNER, active=True).count()
    if membership.role == Role.OWNER and owners <= 1:
        messages.error(request, "A project needs at least one owner; add another owner first.")
        return redirect("project-members", slug)
    if membership.role == Role.ANNOTATOR:
        created = do_remove_annotator(project, membership.user)
        messages.success(
            request,
            f"{membership.user.username} no longer annotates; their submitted work stays, "
            f"{created} unfinished traces went to others.",
        )
    else:
        Membership.objects.filter(pk=membership.pk).update(active=False)
        messages.success(request, f"{membership.user.username} is no longer {membership.role}.")
    return redirect("project-members", slug)


@require_POST
def attach_batch(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    batch_id = request.POST.get("batch", "")
    if not batch_id.isdigit():
        messages.error(request, "Choose a batch to add.")
        return redirect("project-members", slug)
    # Only a batch this owner may see: another project's batch answers 404, exactly like a missing one.
    batch = get_object_or_404(visible_batches(request.user), pk=int(batch_id))
    created = do_attach_batches(project, [batch])
    messages.success(request, f"Batch {batch.name} added: {created} new assignments.")
    return redirect("project-members", slug)


@require_POST
def update_settings(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    try:
        created = do_update_settings(
            project,
            name=request.POST.get("name", ""),
            overlap=int(request.POST.get("overlap") or 0),
            reservation_minutes=int(request.POST.get("reservation_minutes") or 0),
            guidelines=request.POST.get("guidelines", ""),
        )
    except (ValueError, ProjectSetupError) as error:
        messages.error(
            request, str(error) if isinstance(error, ProjectSetupError) else "Enter whole numbers."
        )
    else:
        messages.success(request, "Settings saved" + (f"; {created} new assignments." if created else "."))
    return redirect("project-members", slug)
