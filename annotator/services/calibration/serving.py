"""Gold calibration of annotators: traces with gold labels served as calibration items, and the scores.

An owner picks which gold traces (an AdjudicationItem agreed or resolved, so its GoldLabel rows are the
answer) serve as calibration items and sets, per project, a mix-in rate, a qualification set size and a
qualification threshold (`do_configure`, `do_add_items`). `next_calibration` is asked by
`annotator.services.assignment.do_claim_next` before any real work:

- qualification: an annotator with fewer than `qualification_size` calibration items gets the next one;
- threshold: once qualified, an annotator whose pooled kappa against gold is below
  `qualification_min_kappa` gets no real work (`gate` says why; the annotation services refuse saves of
  real work) but is served the calibration items left, so they can catch up;
- mix-in: afterwards claim number t (finished real work + mixed-in items + 1) is a calibration item when
  floor(t * rate) exceeds the mixed-in items served so far: with rate 0.25, every fourth claim.
  Deterministic, so it can be tested and explained.

A calibration slot is an Assignment with purpose "calibration": the unique (project, trace, annotator) row
means nobody is served a trace they labelled for real (nor later labels for real one they calibrated on).
Its annotation is left out of every report, queue, signature, export and round by
`Annotation.objects.in_project` and `reports.filters.filter_q`, submitting it triggers no follow-up, and
do_assign neither counts nor moves it. After submitting, and only then, the annotator sees the gold answer
with the adjudicator's reasons (`feedback`, in annotator.services.calibration.answer); its answer locks (the
trace has an adjudication item).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from annotator.agreement.calibration import CalibrationScores, ModeScore, score
from annotator.models import (
    AdjudicationItem,
    Annotation,
    Assignment,
    CalibrationItem,
    GoldLabel,
    LabelApplication,
    Project,
)
from taxonomy.models import FailureMode
from traces.models import Batch, Trace

GOLD_STATUSES = (AdjudicationItem.Status.AGREED, AdjudicationItem.Status.RESOLVED)
MAX_RATE = 0.5
MAX_QUALIFICATION = 1000
MAX_ITEMS_PER_CALL = 5000
MAX_ID = 2**63 - 1  # past the id column, a lookup would fail in the database instead of saying why
CAL = Assignment.Purpose.CALIBRATION
DONE = (Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED)


class CalibrationError(Exception):
    """A refused calibration change; `messages` are shown as they are."""

    def __init__(self, messages: list[str] | str):
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


# Settings and items ----------------------------------------------------------------------------------


def gold_items(project: Project) -> QuerySet[AdjudicationItem]:
    """Traces of the project with gold labels: adjudication items agreed automatically or resolved."""
    return AdjudicationItem.objects.filter(
        project=project, status__in=GOLD_STATUSES, trace__in=Trace.objects.in_project(project).values("pk")
    )


def do_configure(
    project: Project,
    *,
    rate: float | None = None,
    qualification_size: int | None = None,
    min_kappa: float | None = None,
    clear_min_kappa: bool = False,
) -> Project:
    """Change the project's calibration settings (only the ones given); CalibrationError lists every
    problem at once and changes nothing. Preconditions: the caller is an owner (annotator.access)."""
    errors = []
    if rate is not None and not (0 <= rate <= MAX_RATE):
        errors.append(f"The mix-in rate must be from 0 to {MAX_RATE} (e.g. 0.1: one claim in ten)")
    if qualification_size is not None and not (0 <= qualification_size <= MAX_QUALIFICATION):
        errors.append(f"The qualification set size must be from 0 to {MAX_QUALIFICATION}")
    if min_kappa is not None and not (-1 <= min_kappa <= 1):
        errors.append("The qualification threshold is a kappa: from -1 to 1 (e.g. 0.6)")
    if errors:
        raise CalibrationError(errors)
    fields = {}
    if rate is not None:
        fields["calibration_rate"] = rate
    if qualification_size is not None:
        fields["qualification_size"] = qualification_size
    if min_kappa is not None or clear_min_kappa:
        fields["qualification_min_kappa"] = None if clear_min_kappa else min_kappa
    if fields:
        Project.objects.filter(pk=project.pk).update(**fields)
        for name, value in fields.items():
            setattr(project, name, value)
    return project


def do_add_items(
    project: Project, *, trace_ids: Sequence[int] = (), batch: str = "", all_gold: bool = False, actor=None
) -> int:
    """Make gold traces calibration items: the given ids, every gold trace of a batch, or every gold trace.
    Ids that are not gold traces of the project are refused by name (nothing is added then). Returns how
    many items are new."""
    gold = gold_items(project)
    _check_ids(trace_ids)
    if trace_ids:
        found = set(gold.filter(trace_id__in=list(trace_ids)).values_list("trace_id", flat=True))
        missing = sorted(set(trace_ids) - found)
        if missing:
            shown = ", ".join(str(pk) for pk in missing[:10])
            raise CalibrationError(
                f"Not a gold trace of this project (no agreed or adjudicated gold labels): {shown}"
                + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
            )
        chosen = sorted(found)
    elif batch:
        if not Batch.objects.in_project(project).filter(name=batch).exists():
            raise CalibrationError(f"No batch “{batch}” in this project")
        chosen = list(gold.filter(trace__batch__name=batch).values_list("trace_id", flat=True))
    elif all_gold:
        chosen = list(gold.values_list("trace_id", flat=True))
    else:
        raise CalibrationError("Name the traces: trace ids, a batch, or all gold traces")
    if not chosen:
        raise CalibrationError("No gold traces there yet: adjudicate (or agree on) some traces first")
    before = CalibrationItem.objects.filter(project=project).count()
    CalibrationItem.objects.bulk_create(
        [CalibrationItem(project=project, trace_id=pk, added_by=actor) for pk in chosen],
        ignore_conflicts=True,
    )
    return CalibrationItem.objects.filter(project=project).count() - before


def _check_ids(trace_ids: Sequence[int]) -> None:
    if len(trace_ids) > MAX_ITEMS_PER_CALL:
        raise CalibrationError(f"At most {MAX_ITEMS_PER_CALL} trace ids at once")
    bad = [pk for pk in trace_ids if not 1 <= pk <= MAX_ID]
    if bad:
        raise CalibrationError(f"“{bad[0]}” is not a trace id (a positive whole number)")


def do_remove_items(project: Project, trace_ids: Iterable[int]) -> int:
    """Stop serving these traces (slots already served stay, with their answers and scores)."""
    trace_ids = list(trace_ids)
    _check_ids(trace_ids)
    deleted, _ = CalibrationItem.objects.filter(project=project, trace_id__in=list(trace_ids)).delete()
    return deleted


def item_trace_ids(project: Project) -> list[int]:
    return list(CalibrationItem.objects.filter(project=project).values_list("trace_id", flat=True))


# Serving -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    blocked: bool
    reason: str = ""
    done: int = 0  # calibration items submitted
    required: int = 0  # the qualification set size
    kappa: float | None = None  # pooled kappa against gold (None: not computed or undefined)


OPEN = Gate(blocked=False)


def gate(project: Project, user) -> Gate:
    """May `user` do real work in `project` now? Costs no query when the project requires nothing."""
    required = project.qualification_size
    threshold = project.qualification_min_kappa
    if not required and threshold is None:
        return OPEN
    done = Assignment.objects.filter(
        project=project, annotator=user, purpose=CAL, status=Assignment.Status.SUBMITTED
    ).count()
    if done < required:
        return Gate(
            True,
            f"Qualification first: this project asks for {required} calibration items before real work "
            f"({done} done). After each one you see the gold answer.",
            done,
            required,
        )
    if threshold is None or done == 0:
        return Gate(False, "", done, required)
    overall = annotator_scores(project, [user.pk]).get(user.get_username())
    kappa = overall.overall.kappa if overall else None
    if kappa is not None and kappa < threshold:
        return Gate(
            True,
            f"Your agreement with the gold labels (pooled Cohen's kappa {kappa:.2f} over {done} calibration "
            f"items) is below this project's threshold of {threshold:.2f}, so no real work is served. Study "
            "the gold answers of your calibration items, do the ones left, or ask an owner.",
            done,
            required,
            kappa,
        )
    return Gate(False, "", done, required, kappa)


def _unserved_items(project: Project, user) -> QuerySet[CalibrationItem]:
    """Calibration items still gold that `user` holds no slot of (real or calibration), in trace order."""
    held = Assignment.objects.filter(project=project, annotator=user).values("trace_id")
    return (
        CalibrationItem.objects.filter(project=project, trace__in=gold_items(project).values("trace_id"))
        .exclude(trace_id__in=held)
        .order_by("trace_id")
    )


def _due(project: Project, user, blocked: bool) -> bool:
    """Is the next claim a calibration item (qualification, catching up, or the mix-in rate)?"""
    if not blocked and not project.qualification_size and project.calibration_rate <= 0:
        return False
    mine = Assignment.objects.filter(project=project, annotator=user)
    served = mine.filter(purpose=CAL).count()
    if served < project.qualification_size or blocked:
        return True
    rate = project.calibration_rate
    if rate <= 0:
        return False
    mixed = served - project.qualification_size
    finished_work = mine.work().filter(status__in=DONE).count()
    claim = finished_work + mixed + 1
    # The small epsilon keeps 3 * (1/3) from flooring to 0.
    return math.floor(claim * rate + 1e-9) > mixed


def calibration_waiting(project: Project, user) -> bool:
    """Would "Start next" serve `user` a calibration item now (so the queue offers it even when no real
    work is left)? An open calibration slot, or an unserved item when one is due."""
    if not CalibrationItem.objects.filter(project=project).exists():
        return False
    if Assignment.objects.open_for(user).filter(project=project, purpose=CAL).exists():
        return True
    return _unserved_items(project, user).exists() and _due(project, user, gate(project, user).blocked)


def uses_calibration(project: Project) -> bool:
    """Does a claim in `project` ask for calibration at all? Without a rate, a qualification set or a
    threshold, no calibration item is served and the gate is open."""
    return bool(
        project.calibration_rate or project.qualification_size or project.qualification_min_kappa is not None
    )


def next_calibration(
    project: Project, user, *, now: datetime, until: datetime, exclude: Iterable[int] = ()
) -> tuple[Assignment | None, Gate]:
    """The calibration slot `user` should do next (an open one first, else a new one when due), reserved
    until `until`; and the gate for real work. Runs inside the caller's transaction. A project without
    calibration settings costs no query: turning calibration off serves no more items."""
    if not uses_calibration(project):
        return None, OPEN
    free = Q(reserved_until__isnull=True) | Q(reserved_until__lt=now)
    state = gate(project, user)
    current = (
        Assignment.objects.select_for_update(skip_locked=True)
        .open_for(user)
        .filter(project=project, purpose=CAL)
        .filter(free)
        .exclude(pk__in=list(exclude))
        .order_by("id")
        .first()
    )
    if current is not None:
        if Assignment.objects.filter(pk=current.pk).filter(free).update(reserved_until=until, updated_at=now):
            current.reserved_until = until
            return current, state
        return None, state
    if not _due(project, user, state.blocked):
        return None, state
    item = _unserved_items(project, user).first()
    if item is None:
        return None, state
    try:
        with transaction.atomic():
            slot = Assignment.objects.create(
                project=project, trace_id=item.trace_id, annotator=user, purpose=CAL, reserved_until=until
            )
    except IntegrityError:  # a concurrent claim created it first: the next claim finds it open
        return None, state
    return slot, state


# Scores -----------------------------------------------------------------------------------------------


def scores_withheld(access) -> str:
    """Why every annotator's scores are not shown to this member ("" when they are): scores over a few
    items tell gold labels, so a reviewer still blind on a trace of the project waits (annotator.access)."""
    if access.holds(frozenset({"owner", "adjudicator", "viewer"})) and access.blind_count:
        return (
            f"You still have {access.blind_count} trace(s) to annotate in this project; the annotators' "
            "scores against gold open once you have submitted them (blind labelling)."
        )
    return ""


def annotator_scores(project: Project, user_ids: Sequence[int] | None = None) -> dict[str, CalibrationScores]:
    """Per annotator (username, sorted): their submitted calibration answers against the current gold,
    per mode of the project's taxonomy version (pure computation in annotator.agreement.calibration)."""
    answers = Annotation.objects.filter(
        assignment__project=project, assignment__purpose=CAL, status=Annotation.Status.SUBMITTED
    )
    if user_ids is not None:
        answers = answers.filter(assignment__annotator_id__in=list(user_ids))
    rows = list(
        answers.order_by().values_list("id", "assignment__trace_id", "assignment__annotator__username")
    )
    if not rows:
        return {}
    gold_by_trace = {
        item.trace_id: item.pk for item in gold_items(project).filter(trace_id__in={t for _, t, _ in rows})
    }
    rows = [row for row in rows if row[1] in gold_by_trace]  # a reopened item has no gold to score against
    modes = list(
        FailureMode.objects.filter(version=project.taxonomy_version)
        .order_by("order", "id")
        .values_list("id", "code")
    )
    codes = [code for _, code in modes]
    chosen: dict[int, set[int]] = {}
    for annotation_id, mode_id in LabelApplication.objects.filter(
        annotation_id__in=[a for a, _, _ in rows]
    ).values_list("annotation_id", "mode_id"):
        chosen.setdefault(annotation_id, set()).add(mode_id)
    gold: dict[int, set[int]] = {}
    for item_id, mode_id in GoldLabel.objects.filter(item_id__in=gold_by_trace.values()).values_list(
        "item_id", "mode_id"
    ):
        gold.setdefault(item_id, set()).add(mode_id)
    by_user: dict[str, list[tuple[set[int], set[int]]]] = {}
    for annotation_id, trace_id, username in rows:
        by_user.setdefault(username, []).append(
            (chosen.get(annotation_id, set()), gold.get(gold_by_trace[trace_id], set()))
        )
    result = {}
    for username in sorted(by_user):
        pairs = by_user[username]
        yours = [[pk in c for pk, _ in modes] for c, _ in pairs]
        truth = [[pk in g for pk, _ in modes] for _, g in pairs]
        result[username] = score(yours, truth, codes)
    return result


def _interval(ci: tuple[float, float] | None) -> list[float] | None:
    return [ci[0], ci[1]] if ci else None


def mode_score_json(s: ModeScore) -> dict[str, Any]:
    c = s.counts
    return {
        "mode": s.mode,
        "n": c.n,
        "tp": c.tp,
        "fp": c.fp,
        "fn": c.fn,
        "tn": c.tn,
        "sensitivity": s.sensitivity,
        "sensitivity_ci": _interval(s.sensitivity_ci),
        "specificity": s.specificity,
        "specificity_ci": _interval(s.specificity_ci),
        "kappa": s.kappa,
        "kappa_ci": _interval(s.kappa_ci),
        "kappa_undefined": s.kappa_undefined,
        "kappa_ci_undefined": s.kappa_ci_undefined,
    }


def scores_json(scores: dict[str, CalibrationScores]) -> list[dict[str, Any]]:
    """The API's and the CLI's shape: one entry per annotator."""
    return [
        {
            "annotator": username,
            "items": s.n_items,
            "overall": mode_score_json(s.overall),
            "modes": [mode_score_json(m) for m in s.modes],
        }
        for username, s in scores.items()
    ]


def settings_json(project: Project) -> dict[str, Any]:
    return {
        "rate": project.calibration_rate,
        "qualification_size": project.qualification_size,
        "min_kappa": project.qualification_min_kappa,
        "items": item_trace_ids(project),
        "gold_traces": gold_items(project).count(),
    }
