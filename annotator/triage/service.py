"""LLM-assisted triage: the ORM bridge between a project's LLM answers, human labels and gold, and the pure
signals of annotator.triage.signals; the stored queue ranks; a calibration round from the triage order.

The order is a project setting (`Project.queue_order`, annotator.models.QueueOrder): "trace" (the default)
or one of the LLM signals. Under a signal, `TriageRank` holds each scored trace's place; the claim
(annotator.services.assignment._reserve_next) and the annotator's queue page hand out open slots by that
rank, the unscored traces after them in trace order. Who gets which trace (annotator.assignment_strategy)
never changes: only the order in which one annotator's own slots come.

The ranks are rewritten (`do_refresh_ranks`, one DELETE and batched INSERTs in one transaction) when the
owner switches the order, and after the inputs change: an LLM run finished, annotations changed, gold was
decided (annotator.services.followups.schedule_triage, debounced like the agreement report). Under trace
order nothing is stored and nothing is scheduled.

Blind annotators see the order only: the score, its reason and the model's labels stay on the owner's
triage page and API, which refuse anyone still blind on a trace of the project (like the LLM agreement).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass

from django.core.cache import cache
from django.db import transaction
from django.db.models import IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotator.models import (
    AdjudicationItem,
    Annotation,
    CalibrationRound,
    LabelApplication,
    LLMTraceResult,
    Project,
    QueueOrder,
    TriageRank,
)
from annotator.raters import llm_q
from annotator.services.enqueue import enqueue
from annotator.services.followups import TRIAGE_TASK, triage_refresh_key
from annotator.services.rounds import TraceChoice, do_open_round
from annotator.triage import signals
from annotator.triage.signals import ModelAnswer, Score, TriageInputs
from taxonomy.models import FailureMode
from traces.models import Trace

log = logging.getLogger(__name__)

_BATCH = 2000
UNRANKED = TriageRank.UNRANKED  # traces the signal knows nothing about: after the ranked ones, in trace order
SETTLED = (AdjudicationItem.Status.AGREED, AdjudicationItem.Status.RESOLVED)

# Which pure signal each LLM queue order uses.
SIGNAL_OF = {
    QueueOrder.LLM_UNCERTAIN: signals.UNCERTAIN,
    QueueOrder.LLM_GOLD_DISAGREEMENT: signals.GOLD_DISAGREEMENT,
    QueueOrder.LLM_RARE_MODES: signals.RARE_MODES,
}


class TriageError(ValueError):
    """What is wrong with a triage request, in words for the owner."""


def _mode_sets(annotations: QuerySet) -> dict[int, set[str]]:
    out: dict[int, set[str]] = defaultdict(set)
    for annotation_id, code in LabelApplication.objects.filter(annotation__in=annotations).values_list(
        "annotation_id", "mode__code"
    ):
        out[annotation_id].add(code)
    return out


def triage_inputs(project: Project) -> tuple[TriageInputs, list[str]]:
    """(inputs, mode codes) for the signals: every submitted LLM answer of the project with its stored
    confidence (the latest result of that model on that trace), the settled gold, the union of the human
    raters' modes per trace, and each trace's batch (its similarity group)."""
    codes = list(
        FailureMode.objects.filter(version=project.taxonomy_version)
        .order_by("order")
        .values_list("code", flat=True)
    )
    submitted = Annotation.objects.submitted_in(project)
    llm = submitted.filter(llm_q("assignment__annotator"))
    llm_rows = list(llm.values_list("id", "assignment__trace_id", "assignment__annotator__username"))
    llm_modes = _mode_sets(llm)
    confidence: dict[tuple[int, str], float] = {}
    for trace_id, rater, value in (
        LLMTraceResult.objects.filter(
            run__project=project, status=LLMTraceResult.Status.DONE, confidence__isnull=False
        )
        .order_by("id")
        .values_list("trace_id", "run__rater__username", "confidence")
    ):
        confidence[(trace_id, rater)] = value  # in id order: the latest result wins
    answers = [
        ModelAnswer(trace, rater, frozenset(llm_modes.get(pk, ())), confidence.get((trace, rater)))
        for pk, trace, rater in llm_rows
    ]
    human: dict[int, set[str]] = defaultdict(set)
    people = submitted.exclude(llm_q("assignment__annotator"))
    people_modes = _mode_sets(people)
    for pk, trace in people.values_list("id", "assignment__trace_id"):
        human[trace] |= people_modes.get(pk, set())
    gold: dict[int, set[str]] = {
        trace: set()
        for trace in AdjudicationItem.objects.filter(project=project, status__in=SETTLED).values_list(
            "trace_id", flat=True
        )
    }
    for trace, code in AdjudicationItem.objects.filter(project=project, status__in=SETTLED).values_list(
        "trace_id", "gold_labels__mode__code"
    ):
        if code is not None:
            gold[trace].add(code)
    traces = {answer.trace for answer in answers} | set(gold)
    group = dict(Trace.objects.filter(pk__in=traces).values_list("id", "batch_id"))
    inputs = TriageInputs(
        answers=tuple(answers),
        gold={trace: frozenset(modes) for trace, modes in gold.items()},
        human={trace: frozenset(modes) for trace, modes in human.items()},
        group=group,
    )
    return inputs, codes


def triage_ranking(project: Project, signal: str) -> list[Score]:
    """The project's traces scored by `signal` (one of annotator.triage.signals.SIGNALS), highest first."""
    inputs, codes = triage_inputs(project)
    return signals.ranking(signals.scores(signal, inputs, codes))


def do_refresh_ranks(project_id: int) -> int:
    """Rewrite the project's stored queue ranks for its current order; returns how many traces are ranked.
    Idempotent. The ranking is computed first, without locks (it reads every LLM answer of the project);
    only the rewrite locks the project row, so the adjudication check and `do_assign`, which lock it too,
    wait for a DELETE and a few INSERTs, not for the computation. A switch of the order meanwhile wins: this
    refresh then writes nothing and the switch's own refresh writes its order. A claim reads the ranks before
    or after the rewrite, never half of it."""
    cache.delete(triage_refresh_key(project_id))
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return 0
    signal = SIGNAL_OF.get(project.queue_order)
    ranked = triage_ranking(project, signal) if signal is not None else []
    # Traces of the project only: a trace the project no longer holds keeps no rank.
    held = set(Trace.objects.in_project(project).values_list("pk", flat=True)) if ranked else set()
    rows = [
        TriageRank(project=project, trace_id=score.trace, rank=place)
        for place, score in enumerate((s for s in ranked if s.trace in held), start=1)
    ]
    with transaction.atomic():
        order = (
            Project.objects.select_for_update()
            .filter(pk=project_id)
            .values_list("queue_order", flat=True)
            .first()
        )
        if order != project.queue_order:
            return 0  # switched meanwhile: the switch's refresh ranks by the new order
        TriageRank.objects.filter(project=project).delete()
        TriageRank.objects.bulk_create(rows, batch_size=_BATCH)
    log.info("project %s: %d traces ranked by %s", project.slug, len(rows), project.queue_order)
    return len(rows)


def do_set_queue_order(project: Project, order: str) -> bool:
    """Switch the project's queue order; the ranks are rewritten after commit (a task; inline without a
    worker). False when nothing changed."""
    if order not in QueueOrder.values:
        raise TriageError(f"Unknown queue order {order!r} (one of {', '.join(QueueOrder.values)})")
    if order == project.queue_order:
        return False
    Project.objects.filter(pk=project.pk).update(queue_order=order)
    project.queue_order = order
    enqueue(TRIAGE_TASK, project.pk)
    return True


def queue_rank(project: Project) -> Coalesce | Value:
    """An expression for an Assignment queryset: its trace's place in the project's queue (UNRANKED for
    traces without a rank, and for every trace under trace order). Order by it, then trace and id, exactly
    as the claim does."""
    if project.queue_order == QueueOrder.TRACE:
        return Value(UNRANKED, output_field=IntegerField())
    rank = TriageRank.objects.filter(project_id=OuterRef("project_id"), trace_id=OuterRef("trace_id"))
    return Coalesce(Subquery(rank.values("rank")[:1]), Value(UNRANKED), output_field=IntegerField())


def in_queue_order(project: Project, assignments: QuerySet) -> QuerySet:
    return assignments.annotate(queue_rank=queue_rank(project)).order_by("queue_rank", "trace_id", "id")


@dataclass(frozen=True)
class TriageRow:
    trace_id: int
    external_id: str
    batch: str
    score: float
    reason: str


def triage_table(project: Project, signal: str, *, limit: int = 100) -> list[TriageRow]:
    """The owner's view: the top `limit` traces by `signal` with score and reason (a reason may name the
    model's labels: only for readers blind on no trace, annotator.access `shows_labels`)."""
    ranked = triage_ranking(project, signal)[:limit]
    names = dict(
        (pk, (external_id, batch))
        for pk, external_id, batch in Trace.objects.filter(pk__in=[s.trace for s in ranked]).values_list(
            "pk", "external_id", "batch__name"
        )
    )
    return [TriageRow(s.trace, *names[s.trace], s.value, s.reason) for s in ranked if s.trace in names]


def do_open_triage_round(
    project: Project, *, signal: str, n: int, name: str, annotators: list[str], actor=None
) -> CalibrationRound:
    """Open a calibration round on the `n` traces the `signal` ranks first, skipping traces already in a
    round (a trace is in one round only). Raises TriageError or annotator.services.rounds.RoundError."""
    if signal not in signals.SIGNALS:
        raise TriageError(f"Unknown triage signal {signal!r} (one of {', '.join(signals.SIGNALS)})")
    if not 2 <= n <= 5_000:
        raise TriageError("A round from the triage order takes from 2 to 5,000 traces")
    taken = set(CalibrationRound.objects.filter(project=project).values_list("traces", flat=True))
    held = set(Trace.objects.in_project(project).values_list("pk", flat=True))
    chosen = [s.trace for s in triage_ranking(project, signal) if s.trace in held and s.trace not in taken][
        :n
    ]
    if len(chosen) < 2:
        raise TriageError(
            "The model's answers rank fewer than 2 traces outside other rounds for this signal: run the "
            "LLM rater on more traces first"
        )
    with transaction.atomic():
        round_ = do_open_round(
            project, name=name, annotators=annotators, choice=TraceChoice(ids=tuple(chosen)), actor=actor
        )
        # Recorded as what it is, so the rounds page can say how the traces were chosen.
        round_.selection = {"how": f"LLM triage ({signal})", "signal": signal, "n": len(chosen)}
        round_.save(update_fields=["selection"])
    return round_
