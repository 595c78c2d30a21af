"""Test data generators and thin wrappers around the reference libraries.

Kept apart from the tests so that every comparison calls the reference
library the same way (irrCAC needs ``categories=[0, 1]`` and full digits,
krippendorff needs ``nan`` for missing, nltk needs omitted triples).
"""

from __future__ import annotations

import warnings

import krippendorff
import numpy as np
import pandas as pd
from irrCAC.raw import CAC
from nltk.metrics.agreement import AnnotationTask
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

# name: (seed, n_items, n_raters, n_modes, prevalence, noise, missing share of (item, rater))
SHAPES = {
    "two_raters": (11, 300, 2, 6, 0.3, 0.15, 0.0),
    "three_raters": (12, 200, 3, 5, 0.25, 0.2, 0.0),
    "two_raters_missing": (13, 300, 2, 5, 0.3, 0.15, 0.25),
    "four_raters_missing": (14, 250, 4, 4, 0.3, 0.2, 0.3),
    "rare_modes": (15, 400, 2, 6, 0.03, 0.02, 0.1),
    "rare_modes_three_raters": (16, 300, 3, 4, 0.04, 0.03, 0.2),
    "rare_modes_complete": (17, 400, 3, 5, 0.03, 0.02, 0.0),
}


def make_ratings(
    seed: int,
    n_items: int,
    n_raters: int,
    n_modes: int,
    prevalence: float,
    noise: float,
    missing: float,
) -> np.ndarray:
    """Correlated binary ratings: a shared truth per (item, mode), flipped per rater with ``noise``.

    Prevalence varies between modes (``prevalence`` scaled by 0.5..1.5) and
    whole (item, rater) rows go missing with probability ``missing``.
    """
    rng = np.random.default_rng(seed)
    mode_prev = prevalence * np.linspace(0.5, 1.5, n_modes)
    truth = rng.random((n_items, 1, n_modes)) < mode_prev
    flips = rng.random((n_items, n_raters, n_modes)) < noise
    ratings = (truth ^ flips).astype(np.int8)
    gone = rng.random((n_items, n_raters)) < missing
    ratings[gone] = -1
    return ratings


def shape_ratings(name: str) -> np.ndarray:
    return make_ratings(*SHAPES[name])


def as_float(ratings_2d: np.ndarray) -> np.ndarray:
    """(items, raters) with ``nan`` for missing."""
    return np.where(ratings_2d < 0, np.nan, ratings_2d).astype(np.float64)


def sklearn_cohen(a: np.ndarray, b: np.ndarray) -> float:
    both = (a >= 0) & (b >= 0)
    return float(cohen_kappa_score(a[both], b[both]))


def statsmodels_fleiss(ratings_2d: np.ndarray) -> float:
    table, _ = aggregate_raters(ratings_2d)
    return float(fleiss_kappa(table, method="fleiss"))


def krippendorff_nominal(ratings_2d: np.ndarray) -> float:
    return float(krippendorff.alpha(reliability_data=as_float(ratings_2d).T, level_of_measurement="nominal"))


def irrcac(ratings_2d: np.ndarray, method: str, categories: list | None = None) -> dict:
    """``CAC(...).<method>()['est']`` with full precision; irrCAC's pandas warnings silenced."""
    frame = pd.DataFrame(as_float(ratings_2d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cac = CAC(frame, categories=[0, 1] if categories is None else categories, digits=15)
        return getattr(cac, method)()["est"]


def nltk_task(ratings_2d: np.ndarray, distance=None) -> AnnotationTask:
    """One triple per present rating (missing ratings are omitted, as nltk expects)."""
    triples = [
        (f"r{j}", f"i{i:05d}", int(ratings_2d[i, j]))
        for i in range(ratings_2d.shape[0])
        for j in range(ratings_2d.shape[1])
        if ratings_2d[i, j] >= 0
    ]
    return (
        AnnotationTask(data=triples) if distance is None else AnnotationTask(data=triples, distance=distance)
    )


def percentile_ci(samples: np.ndarray, level: float) -> tuple[float, float]:
    defined = samples[np.isfinite(samples)]
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)
