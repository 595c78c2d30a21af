"""Discussions: who may read and write them (blind stays blind), comments with @mentions, the threads a
closed calibration round opens for every disagreement, and the decision each ends with.

The blind rule: comments talk about labels, so an annotator reads and writes the discussion of a trace only
once they have submitted their own annotation of it (or, for a closed round's threads, once the round they
labelled in is closed). Owners and adjudicators always may. Viewers and everyone else never do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotator.access import ProjectAccess
from annotator.models import (
    Annotation,
    CalibrationRound,
    Comment,
    Membership,
    Mention,
    Project,
    Thread,
)
from taxonomy.models import FailureMode
from traces.models import Trace

MAX_BODY = 5_000
MAX_DECISION = 5_000
_MENTION = re.compile(r"(?<![\w@])@([\w.+-]{1,150})")


class DiscussionError(ValueError):
    """What is wrong with a comment or a decision, in words for its author."""


def may_discuss(project: Project, user, trace: Trace) -> bool:
    """True when `user` may read and write the discussion of `trace` in `project` (the blind rule above):
    never while they are blind on the trace, whatever other role they hold."""
    access = ProjectAccess.of(user, project)
    if access.is_blind_on(trace):
        return False
    if access.is_reviewer:
        return True
    if Annotation.objects.filter(
        assignment__project=project,
        assignment__purpose="work",  # a gold calibration answer is no seat at the trace's discussion
        assignment__trace=trace,
        assignment__annotator=user,
        status=Annotation.Status.SUBMITTED,
    ).exists():
        return True
    return CalibrationRound.objects.filter(
        project=project, status=CalibrationRound.Status.CLOSED, traces=trace, annotators=user
    ).exists()


def require_discussion(project: Project, user, trace: Trace) -> None:
    if not may_discuss(project, user, trace):
        raise PermissionDenied(
            "The discussion of a trace opens to you once you have submitted your own annotation of it "
            "(labelling stays blind until then)"
        )


def threads_of(project: Project, trace: Trace) -> QuerySet[Thread]:
    return (
        Thread.objects.filter(project=project, trace=trace)
        .select_related("mode", "decided_by", "calibration_round")
        .prefetch_related("comments__author")
        .order_by("mode__order", "id")
    )


def do_comment(project: Project, trace: Trace, user, *, body: str, mode_code: str = "", step=None) -> Comment:
    """Add `user`'s comment to the trace's thread (or the thread of one mode); @username of a project member
    notifies them. Raises PermissionDenied (blind rule) or DiscussionError (what to fix)."""
    require_discussion(project, user, trace)
    body = (body or "").strip()
    errors = []
    if not body:
        errors.append("Write something first")
    elif len(body) > MAX_BODY:
        errors.append(f"A comment may be at most {MAX_BODY:,} characters (this one has {len(body):,})")
    mode = None
    if mode_code:
        mode = FailureMode.objects.filter(version=project.taxonomy_version, code=mode_code).first()
        if mode is None:
            errors.append(f"No mode “{mode_code[:50]}” in this project's taxonomy")
    step_index = _step(step, trace, errors)
    if errors:
        raise DiscussionError("; ".join(errors))
    with transaction.atomic():
        thread = _thread(project, trace, mode)
        comment = Comment.objects.create(thread=thread, author=user, body=body, step=step_index)
        for member in _mentioned(project, trace, body, exclude=user):
            Mention.objects.create(comment=comment, user=member)
    return comment


def _step(step, trace: Trace, errors: list[str]) -> int | None:
    if step in (None, ""):
        return None
    text = str(step).strip()
    if not text.isdigit() or len(text) > 9 or int(text) >= trace.step_count:
        errors.append(f"Step “{text[:20]}” is not a step of this trace (steps #0 to #{trace.step_count - 1})")
        return None
    return int(text)


def _thread(project: Project, trace: Trace, mode: FailureMode | None, **extra) -> Thread:
    existing = Thread.objects.filter(project=project, trace=trace, mode=mode).first()
    if existing:
        return existing
    try:
        with transaction.atomic():
            return Thread.objects.create(project=project, trace=trace, mode=mode, **extra)
    except IntegrityError:  # opened a moment ago by someone else
        return Thread.objects.get(project=project, trace=trace, mode=mode)


def _mentioned(project: Project, trace: Trace, body: str, *, exclude) -> list:
    """Members named with @username who may read this discussion: a mention must not carry a comment to
    someone still blind on the trace."""
    names = {m.group(1).rstrip(".") for m in _MENTION.finditer(body)}
    if not names:
        return []
    member_ids = Membership.objects.filter(project=project, active=True, user__username__in=names).values(
        "user_id"
    )
    users = get_user_model().objects.filter(pk__in=member_ids).exclude(pk=exclude.pk)
    return [user for user in users if may_discuss(project, user, trace)]


def do_decide(thread: Thread, user, *, decision: str, text: str) -> Thread:
    """Close a discussion with its decision (owners and adjudicators). A clarified guideline is appended to
    the project's guidelines under the mode's code, so every annotator reads it from then on."""
    project = thread.project
    access = ProjectAccess.of(user, project)
    if not access.is_reviewer:
        raise PermissionDenied("Only owners and adjudicators decide a discussion")
    access.require_labels(thread.trace_id)
    text = (text or "").strip()
    if decision not in Thread.Decision.values:
        raise DiscussionError(
            "Choose a decision: guideline clarified, definition to change or annotator error"
        )
    if decision in (Thread.Decision.GUIDELINE, Thread.Decision.DEFINITION) and not text:
        raise DiscussionError("Write the clarified guideline or the definition change")
    if len(text) > MAX_DECISION:
        raise DiscussionError(f"A decision may be at most {MAX_DECISION:,} characters")
    with transaction.atomic():
        Thread.objects.filter(pk=thread.pk).update(
            decision=decision, decision_text=text, decided_by=user, decided_at=timezone.now()
        )
        if decision == Thread.Decision.GUIDELINE:
            project = Project.objects.select_for_update().get(pk=project.pk)
            subject = f"**{thread.mode.code} {thread.mode.name}**" if thread.mode_id else "**General**"
            addition = f"{subject} (clarified {timezone.now():%Y-%m-%d}): {text}"
            guidelines = project.guidelines.rstrip()
            project.guidelines = f"{guidelines}\n\n{addition}" if guidelines else addition
            project.save(update_fields=["guidelines"])
    thread.refresh_from_db()
    return thread


def open_round_threads(round_: CalibrationRound) -> int:
    """One thread per (trace, mode) that the round's submitted annotations disagree on; returns how many."""
    chosen: dict[tuple[int, int], set[int]] = {}
    raters: dict[int, set[int]] = {}
    annotations = Annotation.objects.filter(
        assignment__calibration_round=round_, status=Annotation.Status.SUBMITTED
    ).values_list("assignment__trace_id", "assignment__annotator_id", "labels__mode_id")
    for trace_id, annotator_id, mode_id in annotations:
        raters.setdefault(trace_id, set()).add(annotator_id)
        if mode_id is not None:
            chosen.setdefault((trace_id, mode_id), set()).add(annotator_id)
    created = 0
    for (trace_id, mode_id), who in sorted(chosen.items()):
        if len(raters[trace_id]) >= 2 and who != raters[trace_id]:
            thread = _thread(
                round_.project, Trace(pk=trace_id), FailureMode(pk=mode_id), calibration_round=round_
            )
            if thread.calibration_round_id is None:
                Thread.objects.filter(pk=thread.pk).update(calibration_round=round_)
            created += 1
    return created


@dataclass(frozen=True)
class Position:
    """One round annotator's answer on a disputed (trace, mode): chose it or not, and where."""

    username: str
    chose: bool
    steps: list[int]


def positions(thread: Thread) -> list[Position]:
    """What each annotator of the thread's round said about its mode, with their evidence steps (shown to
    every participant once the round is closed)."""
    round_ = thread.calibration_round
    if round_ is None:
        return []
    rows = Annotation.objects.filter(
        assignment__calibration_round=round_,
        assignment__trace=thread.trace,
        status=Annotation.Status.SUBMITTED,
    ).prefetch_related("labels")
    out = []
    for annotation in rows.select_related("assignment__annotator").order_by(
        "assignment__annotator__username"
    ):
        label = next((lab for lab in annotation.labels.all() if lab.mode_id == thread.mode_id), None)
        out.append(
            Position(
                username=annotation.assignment.annotator.username,
                chose=label is not None,
                steps=label.evidence_steps if label else [],
            )
        )
    return out


def unread_mentions(user) -> QuerySet[Mention]:
    return Mention.objects.filter(user=user, read_at__isnull=True)


def mentions_for(user) -> list[Mention]:
    """My newest mentions whose discussion I may still read: a mention made before I was given the trace
    to label waits until I have submitted it (blind beats the notification)."""
    rows = (
        Mention.objects.filter(user=user)
        .select_related(
            "comment__author", "comment__thread__project", "comment__thread__trace", "comment__thread__mode"
        )
        .order_by("-comment__created_at")[:200]
    )
    allowed: dict[tuple[int, int], bool] = {}
    out = []
    for mention in rows:
        thread = mention.comment.thread
        key = (thread.project_id, thread.trace_id)
        if key not in allowed:
            allowed[key] = may_discuss(thread.project, user, thread.trace)
        if allowed[key]:
            out.append(mention)
    return out


def visible_round_threads(round_: CalibrationRound, user, project: Project) -> list[Thread]:
    """The round's threads this user may read: reviewers, and the round's annotators once it is closed,
    each only on traces they are not blind on."""
    access = ProjectAccess.of(user, project)
    participant = (
        round_.status == CalibrationRound.Status.CLOSED and round_.annotators.filter(pk=user.pk).exists()
    )
    if not (access.is_reviewer or participant):
        return []
    return list(
        round_.threads.exclude(trace__in=access.blind_trace_ids())
        .select_related("trace", "mode", "decided_by")
        .prefetch_related("comments__author")
    )
