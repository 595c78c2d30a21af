"""Figures 3 and 6: benign versus fatal modes, and one batch against another.

Benign versus fatal (the MAST reading of ITBench traces): a mode that shows up about as often in runs that
succeeded is *tolerated* (step repetition is the classic example), one concentrated in failed runs is
*fatal* (incorrect verification: +52% in failed traces). The rule, per mode:

* ``not_observed``: no selected trace carries it;
* ``undetermined``: there are no failed or no successful traces to compare;
* ``fatal``: it never appears in a successful trace but does in failed ones ("only in failures"), or its
  relative increase ``(rate_failed - rate_successful) / rate_successful`` is at least
  :data:`FATAL_MIN_RELATIVE_INCREASE` (+50%: at least 1.5 times as common in failed traces);
* ``benign``: it appears in successful traces and its relative increase is below +50% (modes *more*
  common in successes are benign too).

A classification is only as good as its counts, so each mode also carries warnings: ``few_failed_traces``
or ``few_successful_traces`` (fewer than :data:`MIN_TRACES_PER_OUTCOME`) and ``intervals_overlap`` (the
Wilson 95% intervals of the two rates overlap, so the data do not separate them).
"""

from __future__ import annotations

import numpy as np

from annotator.agreement.results import Estimate
from annotator.signatures._common import group_sums, proportions
from annotator.signatures.inputs import FAILURE, SUCCESS, SignatureInput
from annotator.signatures.intervals import newcombe_difference
from annotator.signatures.results import (
    NEVER_IN_SUCCESSES,
    NO_FAILED_TRACES,
    NO_SUCCESSFUL_TRACES,
    NO_TRACES,
    BatchComparison,
    ModeChange,
    ModeContrast,
    OutcomeContrast,
    Proportion,
)

__all__ = [
    "FATAL_MIN_RELATIVE_INCREASE",
    "MIN_TRACES_PER_OUTCOME",
    "compare_batches",
    "outcome_contrast",
]

FATAL_MIN_RELATIVE_INCREASE = 0.5
MIN_TRACES_PER_OUTCOME = 10
NOT_OBSERVED = "not_observed"


def outcome_contrast(data: SignatureInput) -> OutcomeContrast:
    """Per mode: rate in failed and in successful traces, relative increase, classification, warnings."""
    failed = data.outcome == FAILURE
    successful = data.outcome == SUCCESS
    n_f, n_s = int(failed.sum()), int(successful.sum())
    keys = [mode.code for mode in data.modes]
    k_f = data.labels[failed].sum(axis=0, dtype=np.int64)
    k_s = data.labels[successful].sum(axis=0, dtype=np.int64)
    return contrast_from_counts(keys, (k_f, n_f), (k_s, n_s), data.n_traces)


def contrast_from_counts(
    keys: list[str], failed: tuple[np.ndarray, int], successful: tuple[np.ndarray, int], n_traces: int
) -> OutcomeContrast:
    """The contrast from each outcome's per-mode counts and trace total (also what the tallies give)."""
    (k_f, n_f), (k_s, n_s) = failed, successful
    in_failed = proportions(keys, k_f, n_f)
    in_successful = proportions(keys, k_s, n_s)
    rows = tuple(_contrast(key, pf, ps) for key, pf, ps in zip(keys, in_failed, in_successful, strict=True))
    return OutcomeContrast(
        n_failed=n_f,
        n_successful=n_s,
        n_unknown=int(n_traces - n_f - n_s),
        fatal_min_relative_increase=FATAL_MIN_RELATIVE_INCREASE,
        min_traces_per_outcome=MIN_TRACES_PER_OUTCOME,
        modes=rows,
    )


def _contrast(key: str, failed: Proportion, successful: Proportion) -> ModeContrast:
    warnings = []
    if failed.total < MIN_TRACES_PER_OUTCOME:
        warnings.append("few_failed_traces")
    if successful.total < MIN_TRACES_PER_OUTCOME:
        warnings.append("few_successful_traces")
    if failed.total == 0 or successful.total == 0:
        if failed.total == 0:
            relative = Estimate.undefined(NO_FAILED_TRACES, "no failed traces to compare with")
        else:
            relative = Estimate.undefined(NO_SUCCESSFUL_TRACES, "no successful traces to compare with")
        return ModeContrast(key, failed, successful, relative, "undetermined", tuple(warnings))
    if failed.count == 0 and successful.count == 0:
        relative = Estimate.undefined(NOT_OBSERVED, "never observed")
        return ModeContrast(key, failed, successful, relative, NOT_OBSERVED, ())
    if failed.low <= successful.high and successful.low <= failed.high:
        warnings.append("intervals_overlap")
    if successful.count == 0:
        relative = Estimate.undefined(NEVER_IN_SUCCESSES, "only in failures")
        classification = "fatal"
    else:
        rate_f, rate_s = failed.count / failed.total, successful.count / successful.total
        relative = Estimate.of((rate_f - rate_s) / rate_s)
        classification = "fatal" if relative.value >= FATAL_MIN_RELATIVE_INCREASE - 1e-12 else "benign"
    return ModeContrast(key, failed, successful, relative, classification, tuple(warnings))


def compare_batches(data: SignatureInput, a: str, b: str) -> BatchComparison:
    """Per-mode rates in batch `a` and batch `b` (every row of `data`, selected or not) and the change
    ``rate_b - rate_a`` with Newcombe's hybrid score interval. A batch with no traces gives undefined
    rates and changes, never an error: the page says which batch is empty."""
    keys = [mode.code for mode in data.modes]
    counts = np.zeros((2, len(keys)), dtype=np.int64)
    totals = [0, 0]
    grouping = data.batch
    if grouping is not None:
        sums = group_sums(grouping.codes, len(grouping.names), data.labels_float)
        sizes = np.bincount(grouping.codes, minlength=len(grouping.names))
        for side, name in enumerate((a, b)):
            code = grouping.code_of(name)
            if code is not None:
                counts[side], totals[side] = sums[code], int(sizes[code])
    return batch_comparison(keys, a, b, (counts[0], counts[1]), (totals[0], totals[1]))


def batch_comparison(
    keys: list[str], a: str, b: str, counts: tuple[np.ndarray, np.ndarray], totals: tuple[int, int]
) -> BatchComparison:
    """The comparison from each batch's per-mode counts and trace total (also what the tallies give)."""
    pa, pb = proportions(keys, counts[0], totals[0]), proportions(keys, counts[1], totals[1])
    diff, low, high = newcombe_difference(counts[0], totals[0], counts[1], totals[1])
    empty = a if totals[0] == 0 else b
    rows = []
    for j, key in enumerate(keys):
        if totals[0] == 0 or totals[1] == 0:
            undefined = Estimate.undefined(NO_TRACES, f"no traces in {empty}")
            rows.append(ModeChange(key, pa[j], pb[j], undefined, None, None, False))
            continue
        lo, hi = float(low[j]), float(high[j])
        rows.append(ModeChange(key, pa[j], pb[j], Estimate.of(diff[j]), lo, hi, lo > 0 or hi < 0))
    return BatchComparison(a, b, totals[0], totals[1], "newcombe_hybrid_score", tuple(rows))
