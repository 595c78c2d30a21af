"""Small vectorised helpers shared by the figures."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from annotator.agreement.results import Estimate
from annotator.signatures.intervals import wilson
from annotator.signatures.results import NO_TRACES, Proportion


def group_sums(codes: NDArray[np.intp], n_groups: int, matrix: NDArray) -> NDArray[np.int64]:
    """Column sums of ``matrix`` per group: a (n_groups, n_columns) table in one BLAS product.

    A one-hot (rows x groups) matrix times the 0/1 matrix counts every (group, column) cell at once; float64
    products are exact for counts below 2**53, far above any project.
    """
    onehot = np.zeros((len(codes), n_groups), dtype=np.float64)
    onehot[np.arange(len(codes)), codes] = 1.0
    return np.rint(onehot.T @ np.asarray(matrix, dtype=np.float64)).astype(np.int64)


def proportions(keys: Sequence[str], counts: NDArray, totals: NDArray | int) -> tuple[Proportion, ...]:
    """One :class:`Proportion` per key, with Wilson 95% intervals computed for all keys at once."""
    counts = np.asarray(counts, dtype=np.int64)
    totals = np.broadcast_to(np.asarray(totals, dtype=np.int64), counts.shape)
    rate, low, high = wilson(counts, totals)
    out = []
    for key, k, n, p, lo, hi in zip(keys, counts.tolist(), totals.tolist(), rate, low, high, strict=True):
        if n == 0:
            out.append(Proportion(key, 0, 0, Estimate.undefined(NO_TRACES, "no traces to count"), None, None))
        else:
            out.append(Proportion(key, k, n, Estimate.of(p), float(lo), float(hi)))
    return tuple(out)


def ratio(numerator: float, denominator: float, code: str, reason: str) -> Estimate:
    """``numerator / denominator`` or undefined (with `reason`) when the denominator is 0."""
    if denominator == 0:
        return Estimate.undefined(code, reason)
    return Estimate.of(numerator / denominator)
