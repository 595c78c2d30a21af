"""Calibration rounds: open (choose traces and annotators, give every annotator every trace), close (compute
and keep the round's agreement report), and the trend across rounds.

How taxonomy teams reach a publishable kappa: label the same traces, measure, discuss, sharpen the
definitions, go again. A round is that unit. Its traces get one slot per chosen annotator (full overlap,
blind like any other slot); those slots never move to another annotator. A trace belongs to at most one round
of a project, since an annotator labels a trace once: a later round takes new traces.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.db.models.fields.json import KeyTextTransform
from django.db.models.lookups import Exact
from django.utils import timezone

from annotator.access import ProjectAccess
from annotator.models import (
    AgreementReport,
    Assignment,
    CalibrationRound,
    Membership,
    Project,
    Role,
    TaxonomyMigration,
)
from annotator.models.reports import JobStatus
from annotator.services.discussions import open_round_threads
from annotator.services.reports import do_request_report
from taxonomy.evolution import forward_codes
from traces.models import Batch, Trace

MAX_ROUND_TRACES = 5_000


class RoundError(ValueError):
    """What is wrong with a request to open or close a round, in words for the person who asked."""


@dataclass(frozen=True)
class TraceChoice:
    """Which traces a round takes: picked ids, a seeded sample of `sample` traces (of `batch`, or of the whole
    project), or the traces whose metadata match every "key=value" of `where`. Sampling and metadata may be
    combined (sample among the matching traces)."""

    ids: tuple[int, ...] = ()
    batch: str = ""
    sample: int | None = None
    seed: int = 0
    where: tuple[str, ...] = ()
    view: str = ""  # the saved view `ids` were taken from (annotator.search.saved), to describe the round

    def describe(self) -> dict[str, Any]:
        if self.ids and self.view:
            return {"how": "saved view", "view": self.view, "n": len(self.ids)}
        if self.ids:
            return {"how": "picked", "n": len(self.ids)}
        out: dict[str, Any] = {"how": "sample" if self.sample else "all matching"}
        if self.batch:
            out["batch"] = self.batch
        if self.where:
            out["where"] = list(self.where)
        if self.sample:
            out.update(n=self.sample, seed=self.seed)
        return out


def do_open_round(
    project: Project, *, name: str, annotators: Sequence[str], choice: TraceChoice, actor=None
) -> CalibrationRound:
    """Open a round named `name` in which every one of `annotators` (usernames, annotators of the project)
    labels every chosen trace. Raises RoundError naming every problem; nothing is created then."""
    name = name.strip()
    errors = []
    if not name:
        errors.append("Give the round a name")
    elif len(name) > 100:
        errors.append("A round name may be at most 100 characters")
    elif CalibrationRound.objects.filter(project=project, name=name).exists():
        errors.append(f"There is already a round “{name}” in this project")
    users = _annotators(project, annotators, errors)
    trace_ids = _choose_traces(project, choice, errors)
    if errors:
        raise RoundError("; ".join(errors))
    taken = list(
        CalibrationRound.objects.filter(project=project, traces__in=trace_ids)
        .values_list("name", flat=True)
        .distinct()
    )
    if taken:
        raise RoundError(
            "Some of these traces are already in another round (" + ", ".join(sorted(taken)) + "); "
            "each trace is labelled in one round only"
        )
    try:
        with transaction.atomic():
            round_ = CalibrationRound.objects.create(
                project=project, name=name, selection=choice.describe(), created_by=actor
            )
            round_.traces.set(trace_ids)
            round_.annotators.set(users)
            _give_slots(project, round_, trace_ids, users)
    except IntegrityError:  # the same name, opened a moment ago by someone else
        raise RoundError(f"There is already a round “{name}” in this project") from None
    return round_


def _annotators(project: Project, usernames: Sequence[str], errors: list[str]) -> list:
    names = sorted({u.strip() for u in usernames if u and u.strip()})
    if len(names) < 2:
        errors.append("Choose at least two annotators: agreement needs two raters")
        return []
    members = dict(
        Membership.objects.filter(
            project=project, role=Role.ANNOTATOR, active=True, user__username__in=names
        ).values_list("user__username", "user_id")
    )
    errors += [f"“{n}” is not an annotator of this project" for n in names if n not in members]
    return list(get_user_model().objects.filter(pk__in=members.values()))


def _choose_traces(project: Project, choice: TraceChoice, errors: list[str]) -> list[int]:
    traces = Trace.objects.in_project(project)
    if choice.ids:
        ids = sorted(set(traces.filter(pk__in=choice.ids).values_list("pk", flat=True)))
        missing = sorted(set(choice.ids) - set(ids))
        if missing:
            errors.append("No trace " + ", ".join(map(str, missing[:10])) + " in this project")
        return ids
    if choice.batch:
        if not Batch.objects.in_project(project).filter(name=choice.batch).exists():
            errors.append(f"No batch “{choice.batch}” in this project")
            return []
        traces = traces.filter(batch__name=choice.batch)
    for condition in choice.where:
        key, sep, value = condition.partition("=")
        if not sep or not key.strip():
            errors.append(f"“{condition}” is not a metadata condition: write key=value")
            return []
        traces = traces.filter(Exact(KeyTextTransform(key.strip(), "metadata"), value.strip()))
    ids = list(traces.order_by("pk").values_list("pk", flat=True))
    if choice.sample is not None:
        if choice.sample < 2:
            errors.append("A sample needs at least 2 traces")
            return []
        # Sorted ids and a seeded generator: the same seed picks the same traces on any database.
        ids = sorted(random.Random(choice.seed).sample(ids, min(choice.sample, len(ids))))
    if not ids:
        errors.append("No trace matches this choice")
    elif len(ids) > MAX_ROUND_TRACES:
        errors.append(f"A round may hold at most {MAX_ROUND_TRACES:,} traces (this choice has {len(ids):,})")
    return ids


def _give_slots(project: Project, round_: CalibrationRound, trace_ids: Iterable[int], users) -> None:
    """One slot per (trace, annotator): the annotators' existing slots on these traces join the round (work
    already done counts), missing ones are created. A gold calibration slot never joins a round (its answer
    is in no report), and its annotator gets no second slot on that trace."""
    wanted = {(t, u.pk) for t in trace_ids for u in users}
    have = set(
        Assignment.objects.filter(project=project, trace_id__in=trace_ids, annotator__in=users).values_list(
            "trace_id", "annotator_id"
        )
    )
    Assignment.objects.work().filter(project=project, trace_id__in=trace_ids, annotator__in=users).update(
        calibration_round=round_
    )
    Assignment.objects.bulk_create(
        [
            Assignment(project=project, trace_id=t, annotator_id=u, calibration_round=round_)
            for t, u in sorted(wanted - have)
        ]
    )


def do_close_round(round_: CalibrationRound, *, actor=None) -> CalibrationRound:
    """Close an open round, request its agreement report (Celery; inline without a worker) and open a
    discussion for every (trace, mode) its annotators disagree on. Unfinished slots stay open, but the
    report counts what was submitted when it was computed."""
    with transaction.atomic():
        locked = CalibrationRound.objects.select_for_update().get(pk=round_.pk)
        if not locked.is_open:
            raise RoundError(f"Round “{locked.name}” is already closed")
        report = do_request_report(locked.project, {"round": locked.pk}, force=True)
        CalibrationRound.objects.filter(pk=locked.pk).update(
            status=CalibrationRound.Status.CLOSED, closed_at=timezone.now(), report=report
        )
        open_round_threads(locked)
    round_.refresh_from_db()
    return round_


def rounds_of_annotator(project: Project, user) -> list[CalibrationRound]:
    """The rounds `user` labels in, newest first (at most 20), for their queue: each with `n_threads`, the
    round's disagreements they may read (none on a trace they are still blind on), and `n_undecided`."""
    readable = ~Q(threads__trace__in=ProjectAccess.of(user, project).blind_trace_ids())
    return list(
        project.rounds.filter(annotators=user)
        .annotate(
            n_threads=Count("threads", filter=readable),
            n_undecided=Count("threads", filter=readable & Q(threads__decision="")),
        )
        .order_by("-created_at", "-id")[:20]
    )


def round_progress(rounds: Sequence[CalibrationRound]) -> dict[int, tuple[int, int]]:
    """(submitted slots, all slots) per round, in one query."""
    rows = (
        Assignment.objects.filter(calibration_round__in=rounds)
        .values("calibration_round")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)))
    )
    return {row["calibration_round"]: (row["done"], row["total"]) for row in rows}


TREND_STATISTICS = (
    ("kappa", "headline kappa"),
    ("mean_pairwise_cohen_kappa", "mean pairwise Cohen's kappa"),
    ("krippendorff_alpha", "Krippendorff's alpha"),
    ("gwet_ac1", "Gwet's AC1"),
)


@dataclass(frozen=True)
class Trend:
    rounds: list[CalibrationRound]
    overall: list[tuple[str, list[dict | None]]]  # (statistic label, one estimate per round)
    modes: list[tuple[str, str, list[dict | None]]]  # (code, name, one row of the report per round)


def round_trend(project: Project) -> Trend:
    """Per mode and overall agreement of every closed round whose report is computed, in round order."""
    rounds = list(
        project.rounds.filter(status=CalibrationRound.Status.CLOSED, report__status=JobStatus.SUCCEEDED)
        .select_related("report")
        .order_by("closed_at", "id")
    )
    results = [r.report.results for r in rounds]
    overall = [(label, [res["overall"].get(key) for res in results]) for key, label in TREND_STATISTICS]
    keyer = _mode_keyer(project)
    codes: dict[str, str] = {}
    by_round = []
    for res in results:
        number = (res.get("taxonomy") or {}).get("version")
        rows = {keyer(m["code"], number): m for m in res["modes"]}
        for key, m in rows.items():
            codes[key] = m["name"]  # the newest round names the row (a renamed mode shows its new name)
        by_round.append(rows)
    modes = [(code, name, [rows.get(code) for rows in by_round]) for code, name in codes.items()]
    return Trend(rounds=rounds, overall=overall, modes=modes)


def _mode_keyer(project: Project):
    """A row key per (mode code, taxonomy version number of the report): across an applied taxonomy
    migration a mode that maps one-to-one (kept or renamed) is the same row under its current code;
    a merged, split or retired mode keeps its own row, marked with its version, since its numbers
    measure something else than any current mode's."""
    chain = [
        (m.from_version.number, m.to_version.number, m.applied_mapping or {})
        for m in applied_migrations(project)
    ]
    current = project.taxonomy_version.number

    def key(code: str, number: int | None) -> str:
        if number is None or number == current or not chain:
            return code
        steps, at = [], number
        for source, target, mapping in chain:
            if source == at:
                steps.append(mapping)
                at = target
        forward = forward_codes(steps, code) if at == current else None
        return forward if forward is not None else f"{code} (v{number})"

    return key


def applied_migrations(project: Project) -> list[TaxonomyMigration]:
    """The project's applied taxonomy migrations, oldest first."""
    return list(
        project.taxonomy_migrations.filter(status=TaxonomyMigration.Status.APPLIED)
        .select_related("from_version", "to_version")
        .order_by("applied_at", "id")
    )


def round_report(round_: CalibrationRound) -> AgreementReport | None:
    return round_.report


def trend_json(trend: Trend) -> dict:
    """The trend as JSON (`manage.py rounds SLUG trend --json` and GET /api/projects/<slug>/rounds/trend/):
    round names, the overall estimates per round, and per mode the kappa with its interval, alpha, AC1 and
    observed agreement per round (null where a round has no row for the mode)."""

    def value(estimate):
        return None if not estimate else estimate.get("value")

    return {
        "rounds": [r.name for r in trend.rounds],
        "overall": {label: [value(e) for e in values] for label, values in trend.overall},
        "modes": {
            code: [
                None
                if row is None
                else {
                    "kappa": value(row[row["kappa_ci"]["statistic"]]),
                    "kappa_ci": [row["kappa_ci"]["low"], row["kappa_ci"]["high"]],
                    "krippendorff_alpha": value(row["krippendorff_alpha"]),
                    "gwet_ac1": value(row["gwet_ac1"]),
                    "observed_agreement": value(row["observed_agreement"]),
                }
                for row in rows
            ]
            for code, _, rows in trend.modes
        },
    }
