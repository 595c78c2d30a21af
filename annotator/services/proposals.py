"""Proposals for new failure modes: recorded while labelling, grouped for the owners, settled when the
codebook changes. Blind like labels: an annotator sees only their own proposals."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet

from annotator.access import MANAGE_ROLES, REVIEW_ROLES, ProjectAccess
from annotator.codebook.grouping import Group, Proposal, group_proposals
from annotator.models import Assignment, DiscoveryRun, LabelApplication, ModeProposal, Project
from traces.models import Trace

MAX_TEXT = 2_000
MAX_NAME = 200
MAX_STEPS = 20


class ProposalError(ValueError):
    """What to fix in a proposal, in words for its author."""


def do_propose(
    project: Project, trace: Trace, user, *, text: str, suggested_name: str = "", steps=()
) -> ModeProposal:
    """Record `user`'s proposal of a failure the taxonomy lacks, seen on `trace` (annotators: a trace
    assigned to them; owners and adjudicators: any trace of the project). Co-occurring modes are the modes
    the author's own annotation of the trace holds at this moment."""
    roles = getattr(project, "user_roles", frozenset())
    own = Assignment.objects.filter(project=project, trace=trace, annotator=user).first()
    if own is None and not roles & REVIEW_ROLES:
        raise PermissionDenied("Propose a mode from a trace assigned to you")
    text, suggested_name = (text or "").strip(), (suggested_name or "").strip()
    errors = []
    if not text:
        errors.append("Describe the failure the taxonomy lacks")
    elif len(text) > MAX_TEXT:
        errors.append(f"A description may be at most {MAX_TEXT:,} characters")
    if len(suggested_name) > MAX_NAME:
        errors.append(f"A suggested name may be at most {MAX_NAME} characters")
    indices = _steps(steps, trace, errors)
    if errors:
        raise ProposalError("; ".join(errors))
    cooccurring = []
    if own is not None:
        cooccurring = sorted(
            LabelApplication.objects.filter(annotation__assignment=own).values_list("mode__code", flat=True)
        )
    return ModeProposal.objects.create(
        project=project,
        trace=trace,
        author=user,
        text=text,
        suggested_name=suggested_name,
        steps=indices,
        cooccurring=cooccurring,
    )


def _steps(steps, trace: Trace, errors: list[str]) -> list[int]:
    if isinstance(steps, str):
        steps = [s for s in steps.replace(",", " ").split() if s]
    out = []
    for value in list(steps)[: MAX_STEPS + 1]:
        text = str(value).strip().lstrip("#")
        if not text.isdigit() or len(text) > 9 or int(text) >= trace.step_count:
            errors.append(f"“{text[:20]}” is not a step of this trace (steps #0 to #{trace.step_count - 1})")
            return []
        out.append(int(text))
    if len(out) > MAX_STEPS:
        errors.append(f"Point at {MAX_STEPS} steps at most")
    return sorted(set(out))


STATUSES = ("open", "accepted", "declined", "all")


def project_proposals(project: Project) -> QuerySet[ModeProposal]:
    """Every proposal of the project, for the command line (which acts as staff) and for scoping below."""
    return (
        ModeProposal.objects.filter(project=project)
        .select_related("author", "trace", "mode")
        .defer("trace__raw")  # the original record can be huge; a proposal shows the trace's id only
    )


def visible_proposals(project: Project, user) -> QuerySet[ModeProposal]:
    proposals = project_proposals(project)
    access = ProjectAccess.of(user, project)
    if access.is_reviewer:
        # Another annotator's proposal tells what they saw in a trace: not while I am blind on it.
        visible = proposals.filter(~Q(trace__in=access.blind_trace_ids()) | Q(author=user))
        # A discovered candidate is drawn from every trace its run read (annotator.discovery).
        blind = set(access.blind_assignments().values_list("trace_id", flat=True))
        if blind:
            runs = DiscoveryRun.objects.filter(project=project).only("induction_ids", "held_ids")
            visible = visible.exclude(discovery_run__in=[r.pk for r in runs if r.seen_trace_ids & blind])
        return visible
    return proposals.filter(author=user)


def status_counts(proposals: QuerySet[ModeProposal]) -> list[tuple[str, str, int]]:
    """(status, label, count) for each status filter, "all" last: the page's tabs."""
    counts = dict(proposals.order_by().values_list("status").annotate(n=Count("pk")))
    tabs = [(value, label, counts.get(value, 0)) for value, label in ModeProposal.Status.choices]
    return [*tabs, ("all", "All", sum(counts.values()))]


def proposal_groups(
    proposals: QuerySet[ModeProposal], status: str = ModeProposal.Status.OPEN
) -> list[tuple[Group, list[ModeProposal]]]:
    """`proposals` (already scoped to what the reader may see) with this status ("all": any), grouped by
    the words they use, each group with its proposals. The page, the API and the CLI all group here, so
    they show the same groups."""
    if status not in STATUSES:
        raise ProposalError(f"Unknown status {status[:20]!r}: choose one of {', '.join(STATUSES)}")
    if status != "all":
        proposals = proposals.filter(status=status)
    rows = list(proposals.order_by("pk"))
    by_id = {p.pk: p for p in rows}
    groups = group_proposals(
        [
            Proposal(id=p.pk, text=p.text, suggested_name=p.suggested_name, cooccurring=tuple(p.cooccurring))
            for p in rows
        ]
    )
    return [(group, [by_id[i] for i in group.ids]) for group in groups]


def proposal_json(proposal: ModeProposal) -> dict[str, Any]:
    return {
        "id": proposal.pk,
        "trace": proposal.trace_id,
        "trace_external_id": proposal.trace.external_id,
        "author": proposal.author.get_username(),
        "text": proposal.text,
        "suggested_name": proposal.suggested_name,
        "steps": list(proposal.steps or []),
        "cooccurring": list(proposal.cooccurring or []),
        "status": proposal.status,
        "outcome": proposal.outcome,
        "mode": proposal.mode.code if proposal.mode_id else None,
        "created_at": proposal.created_at.isoformat().replace("+00:00", "Z"),
    }


def groups_json(groups: list[tuple[Group, list[ModeProposal]]], status: str) -> dict[str, Any]:
    """The groups as the API answers them and `manage.py proposals SLUG list --json` prints them."""
    out = []
    for group, items in groups:
        statuses = {p.status for p in items}
        out.append(
            {
                "size": len(items),
                "status": statuses.pop() if len(statuses) == 1 else "mixed",
                "terms": list(group.terms),
                "names": list(group.names),
                "cooccurring": [{"code": code, "count": n} for code, n in group.cooccurring],
                "proposals": [proposal_json(p) for p in items],
            }
        )
    return {"status": status, "count": sum(g["size"] for g in out), "groups": out}


def do_settle(project: Project, ids, *, status: str, outcome: str, actor=None) -> list[ModeProposal]:
    """Mark proposals accepted (turned into a mode; `outcome` names its code, which a later taxonomy
    migration adding that code links them to) or declined (`outcome`: why). `actor`: the owner settling
    them, who may settle only proposals they may see; None: the command line. All or nothing: an id that
    is not a proposal of the project, or one a taxonomy migration already turned into a mode, refuses the
    lot."""
    if actor is not None and not ProjectAccess.of(actor, project).holds(MANAGE_ROLES):
        raise PermissionDenied("Only owners settle proposals")
    if status not in (ModeProposal.Status.ACCEPTED, ModeProposal.Status.DECLINED):
        raise ProposalError("Choose: turned into a mode, or declined")
    outcome = (outcome or "").strip()
    if not outcome:
        raise ProposalError("Say which mode it became, or why it is declined")
    ids = sorted({int(i) for i in ids if str(i).isdigit() and len(str(i)) < 10})
    if not ids:
        raise ProposalError("Choose at least one proposal")
    scope = project_proposals(project) if actor is None else visible_proposals(project, actor)
    found = {p.pk: p for p in scope.filter(pk__in=ids)}
    missing = [str(pid) for pid in ids if pid not in found]
    if missing:
        raise ProposalError(f"No proposal {', '.join(missing)} in this project")
    linked = [f"{p.pk} ({p.mode.code})" for p in found.values() if p.mode_id]
    if linked:
        raise ProposalError(f"A taxonomy migration already turned proposal {', '.join(linked)} into a mode")
    ModeProposal.objects.filter(pk__in=ids).update(status=status, outcome=outcome[:MAX_NAME])
    return list(project_proposals(project).filter(pk__in=ids).order_by("pk"))
