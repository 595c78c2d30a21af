"""Figures 1 and 2: how common each mode is per group, and how many modes a trace carries.

Both are counts over the whole label matrix, so each is a single group-by-column product
(:func:`~annotator.signatures._common.group_sums`) or one ``bincount``: no loop over traces.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from annotator.signatures._common import group_sums, proportions, ratio
from annotator.signatures.inputs import FAILURE, SUCCESS, Grouping, SignatureInput
from annotator.signatures.results import (
    NO_TRACES,
    CategoryInfo,
    GroupRates,
    ModeCountDistribution,
    ModesPerTrace,
    Prevalence,
)

ALL = "all"
OUTCOMES = (("failure", FAILURE), ("success", SUCCESS))


def categories_of(data: SignatureInput) -> tuple[tuple[CategoryInfo, ...], NDArray[np.bool_]]:
    """The categories in taxonomy order and the (traces x categories) matrix (see
    :attr:`SignatureInput.category_matrix`)."""
    names, matrix = data.category_matrix
    return tuple(CategoryInfo(code, name) for code, name in names), matrix


def prevalence(data: SignatureInput, dimension: str | None = None) -> Prevalence:
    """Mode and category rates per group of `dimension` (a key of ``data.groups``), or over all traces.

    Groups with no traces (a name kept only by an earlier filter) are left out.
    """
    categories, category_matrix = categories_of(data)
    grouping = _grouping(data, dimension)
    n_groups = len(grouping.names)
    mode_counts = group_sums(grouping.codes, n_groups, data.labels_float)
    category_counts = group_sums(grouping.codes, n_groups, category_matrix)
    totals = np.bincount(grouping.codes, minlength=n_groups)
    mode_keys = [mode.code for mode in data.modes]
    category_keys = [category.code for category in categories]
    groups = tuple(
        GroupRates(
            value=name,
            n_traces=int(totals[g]),
            modes=proportions(mode_keys, mode_counts[g], totals[g]),
            categories=proportions(category_keys, category_counts[g], totals[g]),
        )
        for g, name in enumerate(grouping.names)
        if totals[g] > 0
    )
    return Prevalence(dimension or ALL, groups)


def modes_per_trace(data: SignatureInput, dimension: str | None = "model") -> ModesPerTrace:
    """Mean and histogram of modes per trace, for failed and for successful traces, per group and overall.

    One ``bincount`` over (group, outcome, number of modes) gives every histogram; the bins run from 0 to
    the largest count seen anywhere, so histograms line up across groups.
    """
    k = np.count_nonzero(data.labels, axis=1).astype(np.int64)
    n_bins = int(k.max()) + 1 if k.size else 1
    rows: list[ModeCountDistribution] = []
    grouping = _grouping(data, dimension) if dimension in data.groups else None
    for label, code in OUTCOMES:
        rows.append(_distribution(ALL, label, k[data.outcome == code], n_bins))
    if grouping is not None:
        n_groups = len(grouping.names)
        present = np.bincount(grouping.codes, minlength=n_groups) > 0
        for label, code in OUTCOMES:
            chosen = data.outcome == code
            flat = grouping.codes[chosen] * n_bins + k[chosen]
            hist = np.bincount(flat, minlength=n_groups * n_bins).reshape(n_groups, n_bins)
            rows.extend(
                _from_histogram(name, label, hist[g]) for g, name in enumerate(grouping.names) if present[g]
            )
    return ModesPerTrace(dimension if grouping is not None else ALL, tuple(rows))


def _distribution(group: str, outcome: str, k: NDArray[np.int64], n_bins: int) -> ModeCountDistribution:
    return _from_histogram(group, outcome, np.bincount(k, minlength=n_bins))


def _from_histogram(group: str, outcome: str, histogram: NDArray[np.int64]) -> ModeCountDistribution:
    n = int(histogram.sum())
    total_modes = float(histogram @ np.arange(len(histogram)))
    mean = ratio(total_modes, n, NO_TRACES, f"no {outcome} traces in this group")
    return ModeCountDistribution(group, outcome, n, mean, tuple(int(c) for c in histogram))


def _grouping(data: SignatureInput, dimension: str | None) -> Grouping:
    if dimension is None:
        return Grouping(np.zeros(data.n_traces, dtype=np.intp), (ALL,))
    return data.groups[dimension]


__all__ = ["ALL", "categories_of", "modes_per_trace", "prevalence"]
