"""The codebook gate's numbers from the raters' answers. Pure: no Django.

K model raters each applied the current modes plus the candidates to every trace of a held-out sample. Per
candidate the answers make a binary traces x raters table; its Fleiss' kappa and bootstrap interval come from
annotator.agreement (the same exact statistics as the agreement report, equal to statsmodels' fleiss_kappa),
with its prevalence, the current modes it co-occurs with, and the traces the raters split on. For the
codebook: coverage, the share of the sample's failed traces that a majority of raters gave at least one code
(a current mode or a candidate). A candidate passes at kappa >= `kappa_min` (an undefined kappa never
passes); the codebook at coverage >= `coverage_min`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotator.agreement.ratings import MISSING
from annotator.agreement.stats import binary_mode_agreement

MAX_DISAGREEMENTS = 20


@dataclass(frozen=True)
class RaterAnswer:
    """One rater's answer on one trace: the codes it marked present, with their steps and reasons."""

    trace: int
    rater: str
    codes: frozenset[str]
    steps: dict[str, tuple[int, ...]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


def rating_table(
    answers: Sequence[RaterAnswer], traces: Sequence[int], raters: Sequence[str], codes: Sequence[str]
) -> NDArray[np.int8]:
    """(traces x raters x codes): 1 marked, 0 not marked, MISSING when the rater gave no usable answer."""
    table = np.full((len(traces), len(raters), len(codes)), MISSING, dtype=np.int8)
    row = {t: i for i, t in enumerate(traces)}
    col = {r: k for k, r in enumerate(raters)}
    for answer in answers:
        i, k = row.get(answer.trace), col.get(answer.rater)
        if i is None or k is None:
            continue
        table[i, k, :] = [int(code in answer.codes) for code in codes]
    return table


def _majority(table: NDArray[np.int8]) -> NDArray[np.bool_]:
    """(traces x codes): more than half of the raters who answered marked the code."""
    answered = (table >= 0).sum(axis=1)
    marked = (table == 1).sum(axis=1)
    return (answered > 0) & (2 * marked > answered)


def gate(
    answers: Sequence[RaterAnswer],
    *,
    traces: Sequence[int],
    failed: Sequence[int],
    raters: Sequence[str],
    candidates: Sequence[str],
    current: Sequence[str],
    kappa_min: float = 0.75,
    coverage_min: float = 0.70,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The gate's verdict as JSON-ready data (what the results page, the API and `--json` show)."""
    codes = [*candidates, *current]
    table = rating_table(answers, traces, raters, codes)
    n_cand = len(candidates)
    majority = _majority(table)
    by_key = {(a.trace, a.rater): a for a in answers}
    rows = (
        binary_mode_agreement(table[:, :, :n_cand], n_boot=n_boot, seed=seed)
        if n_cand and len(traces)
        else []
    )
    out = []
    for j, code in enumerate(candidates):
        stats = rows[j] if rows else None
        kappa = stats.fleiss_kappa if stats else None
        ci = stats.kappa_ci if stats else None
        column = table[:, :, j]
        rated = column >= 0
        prevalence = float((column == 1).sum() / rated.sum()) if rated.any() else None
        present = majority[:, j]
        cooccurring = Counter()
        for i in np.flatnonzero(present):
            for m, other in enumerate(current):
                if majority[i, n_cand + m]:
                    cooccurring[other] += 1
        disagreements = []
        for i in range(len(traces)):
            values = column[i][rated[i]]
            if values.size and 0 < values.sum() < values.size:
                votes = []
                for rater in raters:
                    a = by_key.get((traces[i], rater))
                    if a is None:
                        continue
                    votes.append(
                        {
                            "rater": rater,
                            "present": code in a.codes,
                            "steps": list(a.steps.get(code, ())),
                            "reason": a.reasons.get(code, ""),
                        }
                    )
                disagreements.append({"trace": traces[i], "votes": votes})
        defined = kappa is not None and kappa.value is not None
        out.append(
            {
                "code": code,
                "kappa": kappa.value if defined else None,
                "kappa_undefined": None if defined or kappa is None else kappa.undefined_reason,
                "interval": [ci.low, ci.high] if ci is not None and ci.low is not None else None,
                "n_traces": int(stats.n_items) if stats else 0,
                "prevalence": prevalence,
                "present_in": int(present.sum()),
                "cooccurring": [{"code": c, "count": n} for c, n in cooccurring.most_common(5)],
                "disagreement_count": len(disagreements),
                "disagreements": disagreements[:MAX_DISAGREEMENTS],
                "passes": bool(defined and kappa.value >= kappa_min),
            }
        )
    failed_rows = [i for i, t in enumerate(traces) if t in set(failed)]
    covered = int(majority[failed_rows].any(axis=1).sum()) if failed_rows and codes else 0
    coverage = covered / len(failed_rows) if failed_rows else None
    return {
        "raters": list(raters),
        "traces": len(traces),
        "failed_traces": len(failed_rows),
        "answers": len(answers),
        "kappa_min": kappa_min,
        "coverage_min": coverage_min,
        "coverage": coverage,
        "covered_failed_traces": covered,
        "codebook_passes": coverage is not None and coverage >= coverage_min,
        "candidates": out,
    }
