"""The adjudication queue, one item side by side in the step viewer with its decision form, and history.

Adjudicators and owners only (REVIEW_ROLES): annotators and viewers get 403, outsiders 404; items of a
trace the user is still annotating are left out of every list and answer 404 (annotator.access). The decision
form is a plain POST (it works without JavaScript); a refused save re-renders the page with the user's own
choices in the form and the reason at the top -- 409 for a conflict (someone else decided or holds the
item), 422 for an incomplete decision -- so nothing typed is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, access_project
from annotator.models import AdjudicationItem, GoldHistory, GoldLabel, Membership, Project, Role
from annotator.services.adjudication import (
    AdjudicationConflict,
    AdjudicationInvalid,
    do_claim,
    do_claim_next,
    do_release,
    do_reopen,
    queue_counts,
)
from annotator.services.comparison import LETTERS, Compared, item_annotations, mode_facts
from annotator.services.gold import REASON_CODES, Decision, decision_from_form, do_decide
from annotator.services.payload import PayloadError, version_from
from annotator.views.trace import evidence_marks, render_steps, viewer_context
from taxonomy.models import FailureMode
from traces.models import Trace
from traces.viewer import trace_queryset

Status = AdjudicationItem.Status
ITEMS_PER_PAGE = 50
# Never the trace's raw record or task text: a list row needs its name, model and batch only.
_LIST_FIELDS = (
    "id", "status", "severity", "disputed", "primary_disputed", "claimed_until", "resolved_at", "updated_at",
    "trace__id", "trace__external_id", "trace__model", "trace__outcome", "trace__batch__name",
    "claimed_by__username", "resolved_by__username",
)  # fmt: skip


def _item(project: Project, item_id: int) -> AdjudicationItem:
    # Scoped by the access policy: an item on a trace this user is still annotating answers 404.
    return get_object_or_404(
        project.access.adjudication_items().select_related("claimed_by", "resolved_by"), pk=item_id
    )


def queue(request: HttpRequest, slug: str) -> HttpResponse:
    """Progress counts and the items of one status (open by default), most severe first."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    status = request.GET.get("status", Status.OPEN)
    if status not in Status.values:
        status = Status.OPEN
    items = (
        project.access.adjudication_items()
        .filter(status=status)
        .select_related("trace__batch", "claimed_by", "resolved_by")
        .only(*_LIST_FIELDS)
        .in_list_order(status)
    )
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    counts = queue_counts(project)
    done = counts["resolved"] + counts["agreed"]
    total = done + counts["open"]
    context = {
        "project": project,
        "page": page,
        "status": status,
        "counts": counts,
        "progress": round(100 * done / total) if total else 0,
        "now": timezone.now(),
        "statuses": [(Status.OPEN, "Open"), (Status.RESOLVED, "Resolved"), (Status.AGREED, "Agreed")],
    }
    return render(request, "annotator/adjudication_queue.html", context)


@require_POST
def claim_next(request: HttpRequest, slug: str) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = do_claim_next(project, request.user, items=project.access.adjudication_items())
    if item is None:
        messages.success(request, "Nothing left to adjudicate. Thank you!")
        return redirect("adjudication", slug)
    return redirect("adjudication-item", slug, item.pk)


@dataclass
class Row:
    code: str
    name: str
    fatal: bool
    cells: list[Any]  # ComparedLabel or None, per annotation (A, B, ...)
    disputed: bool
    choice: str = ""
    steps: str = ""
    reason: str = ""
    note: str = ""
    gold: GoldLabel | None = None
    past: dict[str, Any] = field(default_factory=dict)  # the recorded decision, for resolved items
    definition: str = ""  # shown beside the decision: adjudicators decide by the definition
    guidance: str = ""


def _rows(
    project: Project,
    item: AdjudicationItem,
    annotations: list[Compared],
    decision: Decision | None,
    gold: dict,
) -> list[Row]:
    facts = mode_facts(project)
    codes = {code for a in annotations for code in a.labels} | set(item.disputed) | set(gold)
    last = _last_decision(item) if item.status == Status.RESOLVED else {}
    texts = {
        code: (definition, guidance)
        for code, definition, guidance in FailureMode.objects.filter(
            version=project.taxonomy_version_id, code__in=codes
        ).values_list("code", "definition", "guidance")
    }
    rows = []
    for code in sorted(codes, key=lambda c: (facts[c].order if c in facts else 10**6, c)):
        mine = decision.for_mode(code) if decision else None
        rows.append(
            Row(
                code=code,
                name=facts[code].name if code in facts else "",
                fatal=bool(code in facts and facts[code].fatal),
                cells=[a.labels.get(code) for a in annotations],
                disputed=code in item.disputed,
                choice=mine.choice if mine else "",
                steps=", ".join(str(s) for s in mine.steps) if mine else "",
                reason=mine.reason_code if mine else "",
                note=mine.note if mine else "",
                gold=gold.get(code),
                past=last.get(code, {}),
                definition=texts.get(code, ("", ""))[0],
                guidance=texts.get(code, ("", ""))[1],
            )
        )
    return rows


def _last_decision(item: AdjudicationItem) -> dict[str, dict[str, Any]]:
    record = (
        GoldHistory.objects.filter(item=item, action=GoldHistory.Action.DECIDED)
        .order_by("-at", "-id")
        .first()
    )
    if record is None or not record.after:
        return {}
    return {d["mode"]: d for d in record.after.get("decisions", [])}


def _marks(annotations: list[Compared]) -> dict[int, list[str]]:
    """Evidence marks by letter (A, B, ...): the adjudicator compares annotations, not people."""
    return evidence_marks(
        (letter, code, label.steps)
        for letter, annotation in zip(LETTERS, annotations, strict=False)
        for code, label in annotation.labels.items()
    )


def _page(
    request: HttpRequest,
    project: Project,
    item: AdjudicationItem,
    *,
    decision: Decision | None = None,
    errors: list[str] | None = None,
    conflict: str = "",
    code: int = 200,
) -> HttpResponse:
    trace = trace_queryset().get(pk=item.trace_id)
    annotations = item_annotations(item)
    gold = {g.mode.code: g for g in GoldLabel.objects.filter(item=item).select_related("mode", "decided_by")}
    now = timezone.now()
    claim_live = bool(item.claimed_until and item.claimed_until > now and item.status == Status.OPEN)
    page_url = reverse("adjudication-item", args=[project.slug, item.pk])
    viewer = viewer_context(
        request,
        project,
        trace,
        page_url=page_url,
        steps_url=reverse("adjudication-steps", args=[project.slug, item.pk]),
        marks=_marks(annotations),
    )
    primaries = sorted({a.primary for a in annotations if a.primary} | set(gold))
    context = {
        **viewer,
        "project": project,
        "item": item,
        "annotations": list(zip(LETTERS, annotations, strict=False)),
        "letters": [letter.lower() for letter in LETTERS[: len(annotations)]],
        "rows": _rows(project, item, annotations, decision, gold),
        "gold": gold,
        "multi": project.taxonomy_version.is_multi_label,
        "primary_choices": primaries,
        "primary_value": decision.primary
        if decision
        else next((c for c, g in gold.items() if g.primary), ""),
        "decision_note": decision.note if decision else item.note,
        "reasons": REASON_CODES.items(),
        "mine": claim_live and item.claimed_by_id == request.user.pk,
        "held_by_other": claim_live and item.claimed_by_id != request.user.pk,
        "errors": errors or [],
        "conflict": conflict,
        # A refused decision on an item that is no longer open cannot go back into the form: show it as
        # text, so the adjudicator can compare it with the decision that won, and reopen if needed.
        "echo": _echo(decision) if decision and item.status != Status.OPEN else None,
    }
    return render(request, "annotator/adjudication_item.html", context, status=code)


def _echo(decision: Decision) -> dict[str, Any]:
    def choice(value: str) -> str:
        return {"present": "present (own evidence)", "absent": "absent"}.get(value, f"accept {value.upper()}")

    return {
        "modes": [
            {
                "mode": d.mode,
                "choice": choice(d.choice) if d.choice else "no choice",
                "steps": ", ".join(str(s) for s in d.steps),
                "reason": REASON_CODES.get(d.reason_code, d.reason_code),
                "note": d.note,
            }
            for d in decision.modes
        ],
        "primary": decision.primary,
        "note": decision.note,
    }


def item_page(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """GET: both annotations side by side with the trace; POST: save the decision."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = _item(project, item_id)
    if request.method != "POST":
        return _page(request, project, item)
    try:
        decision = decision_from_form(item, request.POST)
    except AdjudicationInvalid as error:
        return _page(request, project, item, errors=error.messages, code=422)
    base = _version(request)  # -1 is never a stored version: refused as stale, the form echoed back
    try:
        do_decide(item, decision, actor=request.user, base_version=base)
    except AdjudicationConflict as conflict:
        return _page(request, project, conflict.item, decision=decision, conflict=str(conflict), code=409)
    except AdjudicationInvalid as error:
        return _page(request, project, item, decision=decision, errors=error.messages, code=422)
    name = Trace.objects.filter(pk=item.trace_id).values_list("external_id", flat=True).first()
    messages.success(request, f"Decision saved for trace {name}.")
    if request.POST.get("then") == "next":
        return claim_next(request, slug)
    return redirect("adjudication-item", slug, item.pk)


def item_steps(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """The item page's step partial (#trace-steps) with both annotators' evidence marked."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = _item(project, item_id)
    trace = trace_queryset().get(pk=item.trace_id)
    return render_steps(
        request,
        project,
        trace,
        fallback=reverse("adjudication-item", args=[slug, item.pk]),
        steps_url=reverse("adjudication-steps", args=[slug, item.pk]),
        marks=_marks(item_annotations(item)),
    )


def _version(request: HttpRequest) -> int:
    """The version the form was based on; -1 (never stored, so refused as stale) when it is not one."""
    try:
        return version_from(request.POST.get("version"))
    except PayloadError:
        return -1


@require_POST
def claim(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = _item(project, item_id)
    try:
        do_claim(item, request.user, base_version=_version(request))
    except AdjudicationConflict as conflict:
        messages.error(request, str(conflict))
    return redirect("adjudication-item", slug, item.pk)


@require_POST
def release(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    do_release(_item(project, item_id), request.user)
    messages.info(request, "Released: another adjudicator can take it now.")
    return redirect("adjudication", slug)


@require_POST
def reopen(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    item = _item(project, item_id)
    try:
        do_reopen(item, actor=request.user, base_version=_version(request), note=request.POST.get("note", ""))
    except (AdjudicationConflict, AdjudicationInvalid) as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.info(request, "Reopened: the previous decision is kept in the history. Decide again below.")
    return redirect("adjudication-item", slug, item.pk)


def history(request: HttpRequest, slug: str) -> HttpResponse:
    """My decisions (an owner may pick any adjudicator with ?adjudicator=NAME), newest first."""
    project = access_project(request.user, slug, roles=REVIEW_ROLES)
    who = request.user.username
    if project.user_roles & MANAGE_ROLES and request.GET.get("adjudicator"):
        who = request.GET["adjudicator"]
    records = (
        GoldHistory.objects.filter(project=project, actor__username=who)
        .exclude(trace_id__in=project.access.blind_trace_ids())
        .select_related("trace", "item")
        .only(
            "id",
            "action",
            "at",
            "note",
            "after",
            "before",
            "trace__id",
            "trace__external_id",
            "item__id",
            "item__status",
        )
        .order_by("-at", "-id")
    )
    adjudicators = (
        Membership.objects.filter(project=project, role__in=[Role.ADJUDICATOR, Role.OWNER], active=True)
        .values_list("user__username", flat=True)
        .distinct()
        .order_by("user__username")
    )
    page = Paginator(records, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "project": project,
        "page": page,
        "who": who,
        "adjudicators": adjudicators if project.user_roles & MANAGE_ROLES else [],
        "reasons": REASON_CODES,
    }
    return render(request, "annotator/adjudication_history.html", context)
