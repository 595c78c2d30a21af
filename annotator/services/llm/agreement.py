"""How far to trust each LLM rater: per-mode Cohen's kappa (with a bootstrap interval) against every human
rater and against the gold labels, on the traces both have labelled.

The project's agreement report (annotator.services.reports) already lists LLM raters as raters, so "LLM vs
each human" is also in its `pairs`; this module adds what the report has not: the comparison with gold, and
a view centred on one model. The statistics are the pure `binary_mode_agreement`; this is only the
database-to-arrays bridge, built with numpy indexing rather than a loop over traces.

Gold = the labels of adjudication items that are settled (agreed automatically or resolved); an agreed item
without gold rows means everyone said "no failure", i.e. 0 on every mode.

Each LLM rater also gets its kappa curve per mode (annotator.triage.curve): the kappa against gold on the
first 10, 20, 40 ... gold traces in the order their gold was first decided, so a team sees when the model
is good enough for a mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db.models import Min, Q
from django.db.models.functions import Coalesce

from annotator.agreement.report import estimate_json, interval_json
from annotator.agreement.stats import binary_mode_agreement
from annotator.models import AdjudicationItem, Annotation, GoldHistory, GoldLabel, LabelApplication, Project
from annotator.raters import llm_q
from annotator.triage.curve import GOOD_KAPPA, STABLE_DELTA, kappa_curves
from taxonomy.models import FailureMode

GOLD = "(gold)"  # not a valid username, so no human rater can collide with it
SETTLED = (AdjudicationItem.Status.AGREED, AdjudicationItem.Status.RESOLVED)


def _tables(project: Project) -> tuple[list[str], list[tuple[str, str]], np.ndarray, np.ndarray, list[str]]:
    """(rater names incl. "gold", modes, rated[trace, rater], chosen[trace, rater, mode], trace ids)."""
    modes = list(
        FailureMode.objects.filter(version=project.taxonomy_version)
        .order_by("order")
        .values_list("code", "name")
    )
    mode_index = {code: j for j, (code, _) in enumerate(modes)}
    submitted = Annotation.objects.submitted_in(project)
    rows = list(submitted.values_list("id", "assignment__trace_id", "assignment__annotator__username"))
    labels = list(
        LabelApplication.objects.filter(annotation__in=submitted).values_list("annotation_id", "mode__code")
    )
    settled = list(
        AdjudicationItem.objects.filter(project=project, status__in=SETTLED).values_list(
            "trace_id", flat=True
        )
    )
    gold = list(
        GoldLabel.objects.filter(item__project=project, item__status__in=SETTLED).values_list(
            "item__trace_id", "mode__code"
        )
    )
    raters = [*sorted({name for _, _, name in rows}), GOLD]
    rater_index = {name: k for k, name in enumerate(raters)}
    traces = sorted({trace for _, trace, _ in rows} | set(settled))
    trace_index = {trace: i for i, trace in enumerate(traces)}
    rated = np.zeros((len(traces), len(raters)), dtype=bool)
    chosen = np.zeros((len(traces), len(raters), len(modes)), dtype=np.int8)
    where = {pk: (trace_index[trace], rater_index[name]) for pk, trace, name in rows}
    if rows:
        cells = np.array(list(where.values()), dtype=np.int64)
        rated[cells[:, 0], cells[:, 1]] = True
    gold_column = rater_index[GOLD]
    rated[[trace_index[t] for t in settled], gold_column] = True
    # The queries above are separate reads: an annotation submitted (or an item settled) between them
    # brings labels without a row. Those wait for the next computation rather than raising KeyError.
    marks = [(*where[pk], mode_index[code]) for pk, code in labels if code in mode_index and pk in where]
    marks += [
        (trace_index[t], gold_column, mode_index[code])
        for t, code in gold
        if code in mode_index and t in trace_index
    ]
    if marks:
        at = np.array(marks, dtype=np.int64)
        chosen[at[:, 0], at[:, 1], at[:, 2]] = 1
    return raters, modes, rated, chosen, traces


def _compare(
    chosen: np.ndarray, rated: np.ndarray, a: int, b: int, modes, n_boot: int, seed: int
) -> dict[str, Any]:
    both = rated[:, a] & rated[:, b]
    ratings = chosen[both][:, [a, b], :]
    rows = binary_mode_agreement(ratings, n_boot=n_boot, seed=seed) if len(modes) else []
    defined = [row.cohen_kappa.value for row in rows if row.cohen_kappa.value is not None]
    return {
        "n_items": int(both.sum()),
        "kappa_macro": float(np.mean(defined)) if defined else None,
        "modes": [
            {
                "code": code,
                "name": name,
                "cohen_kappa": estimate_json(row.cohen_kappa),
                "kappa_ci": interval_json(row.kappa_ci, row.kappa_ci_statistic),
                "observed_agreement": estimate_json(row.observed_agreement),
                "pabak": estimate_json(row.pabak),
                "prevalence_llm": row.prevalence[0],
                "prevalence_other": row.prevalence[1],
            }
            for (code, name), row in zip(modes, rows, strict=True)
        ],
    }


def gold_order(project: Project) -> list[int]:
    """The settled traces in the order their gold was first decided (agreed automatically or by an
    adjudicator; the item's own times when its history says neither), trace id breaking ties."""
    first = (
        AdjudicationItem.objects.filter(project=project, status__in=SETTLED)
        .annotate(
            first_gold=Coalesce(
                Min(
                    "history__at",
                    filter=Q(history__action__in=(GoldHistory.Action.AGREED, GoldHistory.Action.DECIDED)),
                ),
                "resolved_at",
                "updated_at",
            )
        )
        .order_by("first_gold", "trace_id")
        .values_list("trace_id", flat=True)
    )
    return list(first)


def _curves(
    chosen: np.ndarray, rated: np.ndarray, rater: int, gold_rows: list[int], modes
) -> list[dict[str, Any]]:
    """The rater's kappa curve per mode, on the gold traces it answered, in gold order."""
    rows = [i for i in gold_rows if rated[i, rater] and rated[i, -1]]
    curves = kappa_curves([code for code, _ in modes], chosen[rows, rater, :], chosen[rows, -1, :])
    return [
        {
            "code": code,
            "name": name,
            "points": [{"n_gold": p.n_gold, "kappa": p.kappa} for p in curve.points],
            "good_enough": curve.good_enough,
        }
        for (code, name), curve in zip(modes, curves, strict=True)
    ]


CURVE_RULE = f"kappa at least {GOOD_KAPPA} at the last two points, which differ by at most {STABLE_DELTA}"


def llm_agreement(project: Project, *, n_boot: int = 200, seed: int = 0) -> list[dict[str, Any]]:
    """One entry per LLM rater of the project: its comparisons with each human rater and with gold, each
    with per-mode Cohen's kappa, interval, observed agreement and PABAK (kappa is unstable for rare modes),
    and its per-mode kappa curve against gold (`kappa_curve`)."""
    raters, modes, rated, chosen, traces = _tables(project)
    index = {trace: i for i, trace in enumerate(traces)}
    gold_rows = [index[t] for t in gold_order(project) if t in index]
    llms = set(
        get_user_model()
        .objects.filter(llm_q(), username__in=[name for name in raters if name != GOLD])
        .values_list("username", flat=True)
    )
    out = []
    for a, name in enumerate(raters):
        if name not in llms:
            continue
        comparisons = []
        for b, other in enumerate(raters):
            if other in llms:
                continue
            kind = "gold" if other == GOLD else "human"
            comparisons.append(
                {"against": other, "kind": kind, **_compare(chosen, rated, a, b, modes, n_boot, seed)}
            )
        out.append(
            {
                "rater": name,
                "n_items": int(rated[:, a].sum()),
                "comparisons": comparisons,
                "kappa_curve": _curves(chosen, rated, a, gold_rows, modes),
            }
        )
    return out
