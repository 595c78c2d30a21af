"""Confidence intervals for proportions and their differences, vectorised over modes and groups.

Why Wilson and Newcombe rather than the textbook Wald interval: mode rates are often near 0 (rare modes)
or computed on a few dozen traces, where ``p +- z*sqrt(p(1-p)/n)`` collapses to zero width at 0/n and
overshoots [0, 1]. The Wilson score interval keeps its coverage there (Newcombe 1998, "Two-sided
confidence intervals for the single proportion", Stat. Med. 17:857), and Newcombe's hybrid score interval
for a difference of two independent proportions ("method 10" of Newcombe 1998, Stat. Med. 17:873) is built
from the two Wilson intervals, so it inherits that behaviour. Both match statsmodels
(``proportion_confint(method="wilson")``, ``confint_proportions_2indep(method="newcomb")``) to 1e-12.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Z95", "newcombe_difference", "wilson"]

Z95 = 1.959963984540054  # the 97.5th percentile of the standard normal


def wilson(count: ArrayLike, total: ArrayLike, z: float = Z95) -> tuple[NDArray, NDArray, NDArray]:
    """(rate, low, high) of ``count / total`` with the Wilson score interval; nan where ``total == 0``."""
    k = np.asarray(count, dtype=np.float64)
    n = np.asarray(total, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        z2n = z * z / n
        denominator = 1.0 + z2n
        centre = (p + z2n / 2.0) / denominator
        half = z * np.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n)) / denominator
    low = np.clip(centre - half, 0.0, 1.0)
    high = np.clip(centre + half, 0.0, 1.0)
    # At k = 0 (or k = n) the bound is exactly 0 (or 1); say so rather than leave a rounding residue.
    low = np.where(k == 0, 0.0, low)
    high = np.where(k == n, 1.0, high)
    empty = n == 0
    return np.where(empty, np.nan, p), np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def newcombe_difference(
    count_a: ArrayLike, total_a: ArrayLike, count_b: ArrayLike, total_b: ArrayLike, z: float = Z95
) -> tuple[NDArray, NDArray, NDArray]:
    """(difference, low, high) of ``rate_b - rate_a`` with Newcombe's hybrid score interval.

    ``b`` minus ``a`` because the comparison reads "after minus before": a negative change is a mode the
    intervention made rarer. nan where either total is 0.
    """
    pa, la, ua = wilson(count_a, total_a, z)
    pb, lb, ub = wilson(count_b, total_b, z)
    d = pb - pa
    low = d - np.sqrt((pb - lb) ** 2 + (ua - pa) ** 2)
    high = d + np.sqrt((ub - pb) ** 2 + (pa - la) ** 2)
    return d, low, high
