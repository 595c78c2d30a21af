"""The owner's LLM triage page (/p/<slug>/triage/): the queue order, the traces each signal puts first with
its score and reason, and a calibration round opened from that order.

Reading it is like reading the LLM agreement page: owners only, and refused while the reader is blind on
any trace (`shows_labels`): a reason names the model's labels. Switching the order only needs the owner role:
it reveals nothing (an owner who also annotates sees just the order of their own queue change). Plain forms
that post and redirect back with a message, as the project settings do.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.access import MANAGE_ROLES, access_project
from annotator.models import Membership, QueueOrder, Role
from annotator.services.rounds import RoundError
from annotator.triage import signals
from annotator.triage.service import (
    SIGNAL_OF,
    TriageError,
    do_open_triage_round,
    do_set_queue_order,
    triage_table,
)

SIGNAL_NAMES = {
    signals.UNCERTAIN: "Least certain",
    signals.GOLD_DISAGREEMENT: "Disagrees with gold on similar traces",
    signals.RARE_MODES: "Rare modes",
}
SHOWN = 100


@require_GET
def triage_page(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    signal = request.GET.get("signal", "")
    if signal not in signals.SIGNALS:
        signal = SIGNAL_OF.get(project.queue_order, signals.UNCERTAIN)
    context = {
        "project": project,
        "orders": QueueOrder.choices,
        "signals": list(SIGNAL_NAMES.items()),
        "signal": signal,
        "signal_name": SIGNAL_NAMES[signal],
        "rows": triage_table(project, signal, limit=SHOWN),
        "shown": SHOWN,
        "annotators": Membership.objects.filter(project=project, role=Role.ANNOTATOR, active=True)
        .order_by("user__username")
        .values_list("user__username", flat=True),
    }
    return render(request, "annotator/triage.html", context)


@require_POST
def set_order(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES)
    try:
        changed = do_set_queue_order(project, request.POST.get("queue_order", ""))
    except TriageError as error:
        messages.error(request, str(error))
    else:
        label = QueueOrder(project.queue_order).label
        messages.success(request, f"Queue order: {label}." if changed else f"The queue order stays: {label}.")
    return redirect("project-triage", slug)


@require_POST
def open_round(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=MANAGE_ROLES, shows_labels=True)
    post = request.POST
    signal = post.get("signal", "")
    text = post.get("n", "").strip()
    try:
        if not text.isdigit() or len(text) > 6:
            raise TriageError("The number of traces must be a whole number from 2 to 5,000")
        round_ = do_open_triage_round(
            project,
            signal=signal,
            n=int(text),
            name=post.get("name", ""),
            annotators=post.getlist("annotators"),
            actor=request.user,
        )
    except (TriageError, RoundError) as error:
        messages.error(request, f"The round was not opened: {error}")
        url = reverse("project-triage", args=[project.slug])
        return redirect(f"{url}?signal={signal}" if signal in signals.SIGNALS else url)
    messages.success(
        request,
        f"Round “{round_.name}” opened: {round_.traces.count()} traces for {round_.annotators.count()} annotators.",
    )
    return redirect("rounds", slug)
