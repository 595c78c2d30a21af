"""Vectorised agreement statistics for multi-label ("mode") annotations.

Why this module exists: annotators tick any number of failure *modes* per
trace. Agreement is reported per mode (a binary chosen / not-chosen
variable), over tens of thousands of traces, with bootstrap confidence
intervals. Looping over reference libraries per mode and per resample is far
too slow, so everything here is computed with numpy array operations over all
traces and all modes at once, and checked against the reference libraries to
1e-9 in ``tests/agreement``.

Input model
-----------
``R`` is an integer array of shape ``(n_items, n_raters, n_modes)``:
``1`` = the rater chose the mode for the item, ``0`` = did not choose it,
``-1`` (:data:`MISSING`) = the rater did not rate the item (a boolean array
is accepted too and means "no missing ratings"). A sentinel was chosen over a
separate mask so that one array carries all the information and cannot drift
out of sync with a mask.

Undefined semantics
-------------------
A statistic is *undefined* when its formula divides by zero, i.e.

* only one rater (agreement needs a pair);
* Cohen's kappa with a number of raters other than 2;
* no overlap: no item rated by both raters / by at least two raters;
* no variation: every rating is the same value, so expected agreement is 1
  (kappa) or expected disagreement is 0 (alpha);
* fewer than 2 pairable values (Krippendorff's alpha).

Reference libraries disagree here: scikit-learn returns ``nan``, the
``krippendorff`` package raises, nltk returns ``1.0``. We return an
:class:`~annotator.agreement.results.Estimate` whose ``value`` is ``None`` and
whose ``undefined_code`` (machine-readable) and ``undefined_reason`` (human,
e.g. ``"no variation: every rating is 0 (expected agreement is 1)"``) say
why. Never a silent ``0`` or ``nan``. Gwet's AC1 is defined whenever the
observed agreement is (its chance term is at most 0.5 for two categories);
with no variation it is 1, as in irrCAC with ``categories=[0, 1]``.

Bootstrap intervals are percentile intervals over items resampled with
replacement (``numpy.random.default_rng(seed)``, so deterministic), taken
over the resamples on which the statistic is defined; when fewer than half of
them are defined, or the point estimate is undefined, the interval is
``None`` with a reason. Each mode is resampled independently (see
``_bootstrap`` for why that is exact for per-mode intervals and cheap).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotator.agreement.nominal import NominalAgreement, nominal_agreement
from annotator.agreement.ratings import MISSING, as_ratings
from annotator.agreement.results import (
    BOOTSTRAP_DISABLED,
    NO_OVERLAP,
    NO_VARIATION,
    NOT_TWO_RATERS,
    POINT_UNDEFINED,
    TOO_FEW_DEFINED_RESAMPLES,
    TOO_FEW_PAIRABLE,
    TOO_FEW_RATERS,
    ConfidenceInterval,
    Estimate,
)
from annotator.agreement.setstats import MasiAlpha, masi_alpha, masi_distance
from annotator.agreement.summaries import (
    GroupAverage,
    LocalisationAgreement,
    MacroAverage,
    PairwiseAgreement,
    PerItemAgreement,
    localisation_agreement,
    macro_average,
    pairwise_matrix,
    per_item_agreement,
)

__all__ = [
    "MISSING",
    "ConfidenceInterval",
    "Estimate",
    "GroupAverage",
    "LocalisationAgreement",
    "MacroAverage",
    "MasiAlpha",
    "ModeAgreement",
    "NominalAgreement",
    "PairwiseAgreement",
    "PerItemAgreement",
    "as_ratings",
    "binary_mode_agreement",
    "localisation_agreement",
    "macro_average",
    "masi_alpha",
    "masi_distance",
    "nominal_agreement",
    "pairwise_matrix",
    "per_item_agreement",
]

# Bound on elements of one (resamples x modes x states) count block, so large
# rater counts (many states) or huge n_boot never allocate one giant array.
_BOOT_CHUNK_ELEMENTS = 4_000_000
_MIN_DEFINED_SHARE = 0.5

_COHEN_FEATURES = ("both", "agree", "a1", "b1")
_FLEISS_FEATURES = ("pair", "pa", "rated", "p1", "k1", "m")
_ALPHA_FEATURES = ("nv", "nv1", "s")

Sums = dict[str, NDArray[np.float64]]


@dataclass(frozen=True, slots=True)
class ModeAgreement:
    """Agreement on one binary mode.

    ``n_items`` counts items rated by at least two raters (the items every
    pairwise statistic uses); ``n_items_rated`` counts items rated by anyone.
    ``prevalence[j]`` is the share of rater ``j``'s ratings that chose the
    mode (``None`` if that rater rated no item). ``kappa_ci`` is for Cohen's
    kappa with 2 raters and Fleiss' kappa otherwise (``kappa_ci_statistic``).
    """

    mode: int
    n_raters: int
    n_items: int
    n_items_rated: int
    prevalence: tuple[float | None, ...]
    observed_agreement: Estimate
    cohen_kappa: Estimate
    fleiss_kappa: Estimate
    krippendorff_alpha: Estimate
    gwet_ac1: Estimate
    pabak: Estimate
    kappa_ci_statistic: str
    kappa_ci: ConfidenceInterval
    alpha_ci: ConfidenceInterval


def _state_codes(ratings: NDArray[np.int8]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Classify every (item, mode) into a small set of *states*; return codes and per-state (m, k1, x0, x1).

    Why: every statistic here is a sum over items of a function of the item's
    ratings for that mode, and that function only depends on ``m`` (raters who
    rated) and ``k1`` (raters who chose the mode) -- plus, for Cohen's kappa,
    which of the two raters chose it. So a mode is fully described by a
    histogram over ``S`` states (9 for two raters, ``(r+1)(r+2)/2`` otherwise).
    Codes have shape ``(n_items, n_modes)``; the state table has shape
    ``(S, 4)`` with columns ``m, k1, x0, x1`` (``x*`` only meaningful for 2 raters).
    """
    n_raters = ratings.shape[1]
    if n_raters == 2:
        codes = (ratings[:, 0].astype(np.int64) + 1) * 3 + (ratings[:, 1] + 1)
        x0, x1 = np.divmod(np.arange(9), 3)
        x0, x1 = x0 - 1, x1 - 1
        m = (x0 >= 0).astype(np.int64) + (x1 >= 0)
        k1 = (x0 == 1).astype(np.int64) + (x1 == 1)
        return codes, np.stack([m, k1, x0, x1], axis=1)
    m_item = (ratings >= 0).sum(axis=1, dtype=np.int64)
    codes = m_item * (m_item + 1) // 2 + (ratings == 1).sum(axis=1, dtype=np.int64)
    m = np.repeat(np.arange(n_raters + 1), np.arange(1, n_raters + 2))
    k1 = np.concatenate([np.arange(k + 1) for k in range(n_raters + 1)])
    return codes, np.stack([m, k1, np.full_like(m, -1), np.full_like(m, -1)], axis=1)


def _state_features(states: NDArray[np.int64], names: tuple[str, ...]) -> NDArray[np.float64]:
    """Per-state sufficient statistics, shape ``(S, len(names))``: the summands of every formula."""
    m, k1, x0, x1 = (states[:, i] for i in range(4))
    k0 = m - k1
    pair = m >= 2
    zeros = np.zeros(m.shape)
    columns = {
        "pair": pair,
        "pa": np.divide(k1 * (k1 - 1) + k0 * (k0 - 1), m * (m - 1), out=zeros.copy(), where=pair),
        "rated": m >= 1,
        "p1": np.divide(k1, m, out=zeros.copy(), where=m >= 1),
        "k1": k1,
        "m": m,
        "nv": np.where(pair, m, 0),
        "nv1": np.where(pair, k1, 0),
        "s": np.divide(k1 * k0, m - 1, out=zeros.copy(), where=pair),
        "both": (x0 >= 0) & (x1 >= 0),
        "agree": (x0 >= 0) & (x0 == x1),
        "a1": (x0 == 1) & (x1 >= 0),
        "b1": (x0 >= 0) & (x1 == 1),
    }
    return np.stack([columns[name] for name in names], axis=1).astype(np.float64)


def _as_sums(arr: NDArray[np.float64], names: tuple[str, ...]) -> Sums:
    """Name the feature axis (last) of summed features."""
    return {name: arr[..., i] for i, name in enumerate(names)}


# --- coefficient formulas on summed features: NaN marks "undefined" (internal only) ---


def _cohen(s: Sums) -> NDArray[np.float64]:
    """Cohen's kappa from integer counts: (N*agree - E) / (N^2 - E), E = a1*b1 + a0*b0."""
    n, a1, b1 = s["both"], s["a1"], s["b1"]
    chance = a1 * b1 + (n - a1) * (n - b1)
    den = n * n - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (n * s["agree"] - chance) / den, np.nan)


def _observed(s: Sums) -> NDArray[np.float64]:
    """Mean pairwise agreement over items rated by >= 2 raters (Fleiss' P-bar)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s["pair"] > 0, s["pa"] / s["pair"], np.nan)


def _fleiss(s: Sums) -> NDArray[np.float64]:
    """Fleiss' kappa generalised to a varying number of raters (irrCAC ``fleiss()``)."""
    pa = _observed(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        pi1 = s["p1"] / s["rated"]
        pe = pi1 * pi1 + (1.0 - pi1) * (1.0 - pi1)
        kappa = (pa - pe) / (1.0 - pe)
    varies = (s["k1"] > 0) & (s["k1"] < s["m"])
    return np.where(varies & np.isfinite(pa), kappa, np.nan)


def _gwet(s: Sums) -> NDArray[np.float64]:
    """Gwet's AC1 with two categories: chance agreement 2*pi*(1-pi)."""
    pa = _observed(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        pi1 = s["p1"] / s["rated"]
    pe = 2.0 * pi1 * (1.0 - pi1)
    return (pa - pe) / (1.0 - pe)


def _alpha(s: Sums) -> NDArray[np.float64]:
    """Krippendorff's nominal alpha for a binary variable: 1 - (n-1) * S / (n0 * n1)."""
    n, n1 = s["nv"], s["nv1"]
    den = n1 * (n - n1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, 1.0 - (n - 1.0) * s["s"] / den, np.nan)


# --- reasons (evaluated per mode, on the full-data sums) ---


def _reason_pairwise(n_raters: int, n_pair: float) -> tuple[str, str] | None:
    if n_raters < 2:
        return TOO_FEW_RATERS, f"only {n_raters} rater: agreement needs at least 2"
    if n_pair == 0:
        return NO_OVERLAP, "no overlap: no item was rated by at least 2 raters"
    return None


def _reason_cohen(n_raters: int, s: Sums, j: int) -> tuple[str, str] | None:
    if n_raters < 2:
        return TOO_FEW_RATERS, f"only {n_raters} rater: Cohen's kappa needs exactly 2"
    if n_raters != 2:
        return NOT_TWO_RATERS, f"Cohen's kappa needs exactly 2 raters; got {n_raters} (see fleiss_kappa)"
    n, a1, b1 = s["both"][j], s["a1"][j], s["b1"][j]
    if n == 0:
        return NO_OVERLAP, "no overlap: no item was rated by both raters"
    if a1 == b1 and a1 in (0, n):
        value = int(a1 > 0)
        return (
            NO_VARIATION,
            f"no variation: both raters gave {value} on every shared item (expected agreement is 1)",
        )
    return None


def _reason_fleiss(n_raters: int, s: Sums, j: int) -> tuple[str, str] | None:
    base = _reason_pairwise(n_raters, s["pair"][j])
    if base is not None:
        return base
    if s["k1"][j] in (0, s["m"][j]):
        value = int(s["k1"][j] > 0)
        return NO_VARIATION, f"no variation: every rating is {value} (expected agreement is 1)"
    return None


def _reason_alpha(n_raters: int, s: Sums, j: int) -> tuple[str, str] | None:
    if n_raters < 2:
        return TOO_FEW_RATERS, f"only {n_raters} rater: agreement needs at least 2"
    if s["nv"][j] < 2:
        return TOO_FEW_PAIRABLE, "fewer than 2 pairable values: no item was rated by at least 2 raters"
    if s["nv1"][j] in (0, s["nv"][j]):
        value = int(s["nv1"][j] > 0)
        return NO_VARIATION, f"no variation: every pairable rating is {value} (expected disagreement is 0)"
    return None


def _estimate(value: float, reason: tuple[str, str] | None) -> Estimate:
    if reason is not None:
        return Estimate.undefined(*reason)
    if not np.isfinite(value):  # pragma: no cover - guards the formula/reason consistency
        raise AssertionError(f"statistic is {value} but no undefined reason was found")
    return Estimate.of(value)


# --- weights (a row standing for several identical items) ---


def row_weights(weights: ArrayLike | None, n_rows: int) -> NDArray[np.int64]:
    """Validated weights (ones when None): whole numbers >= 0, one per row."""
    if weights is None:
        return np.ones(n_rows, dtype=np.int64)
    w = np.asarray(weights)
    if w.shape != (n_rows,):
        raise ValueError(f"weights must have one entry per row ({n_rows}); got shape {w.shape}")
    if w.size and (not np.issubdtype(w.dtype, np.integer) or (w < 0).any()):
        raise ValueError("weights must be whole numbers >= 0")
    return w.astype(np.int64)


def weighted_sum(values: NDArray, w: NDArray[np.int64]) -> NDArray[np.int64]:
    """Sum over the first axis, each row counted ``w`` times; exact integers for boolean input."""
    flat = values.reshape(values.shape[0], int(np.prod(values.shape[1:])))
    if values.dtype == np.bool_ and int(w.sum()) < 2**53:
        # Through BLAS in float64: every partial sum is a whole number below 2**53, so exact.
        return (
            np.rint(w.astype(np.float64) @ flat.astype(np.float64)).astype(np.int64).reshape(values.shape[1:])
        )
    return (w @ flat.astype(np.int64)).reshape(values.shape[1:])


def _bincount(codes: NDArray[np.int64], w: NDArray[np.int64], size: int) -> NDArray[np.int64]:
    """Integer bincount with integer weights (numpy's weighted bincount is float; exact below 2**53)."""
    return np.bincount(codes, weights=w, minlength=size).astype(np.int64)


# --- bootstrap ---


def _bootstrap(
    state_counts: NDArray[np.int64],
    table: NDArray[np.float64],
    names: tuple[str, ...],
    statistics: tuple[Callable[[Sums], NDArray[np.float64]], ...],
    n_boot: int,
    seed: int,
) -> list[NDArray[np.float64]]:
    """Item bootstrap of several statistics at once; returns ``(n_boot, n_modes)`` arrays.

    Resampling ``n`` items with replacement and summing their per-item terms
    only depends on how many resampled items fall in each state, and those
    counts are exactly ``Multinomial(n, state frequencies)``. So each
    resample of a mode is one multinomial draw over ``S`` states followed by
    a ``(S x F)`` product -- the same distribution as drawing item indices,
    without ever touching the ``n`` items again. Modes are resampled
    independently (each CI is a per-mode marginal); kappa and alpha of a mode
    share the same resamples. Chunked over resamples to bound memory.
    """
    n_modes, n_states = state_counts.shape
    n_items = int(state_counts[0].sum())
    probabilities = state_counts / n_items
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_boot, _BOOT_CHUNK_ELEMENTS // (n_modes * n_states)))
    out = [np.empty((n_boot, n_modes)) for _ in statistics]
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        counts = rng.multinomial(n_items, probabilities, size=(b, n_modes))  # (b, modes, states)
        sums = _as_sums(counts.astype(np.float64) @ table, names)
        for k, statistic in enumerate(statistics):
            out[k][start : start + b] = statistic(sums)
    return out


def _intervals(
    samples: NDArray[np.float64] | None, point_defined: NDArray[np.bool_], n_boot: int, ci: float
) -> list[ConfidenceInterval]:
    """Percentile intervals per mode over the defined resamples."""
    n_modes = point_defined.shape[0]
    if samples is None:
        return [
            ConfidenceInterval(None, None, ci, 0, 0, BOOTSTRAP_DISABLED, "bootstrap disabled (n_boot=0)")
        ] * n_modes
    n_defined = np.isfinite(samples).sum(axis=0)
    tail = 100.0 * (1.0 - ci) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns are reported below
        bounds = np.nanpercentile(samples, [tail, 100.0 - tail], axis=0)
    out = []
    for j in range(n_modes):
        nd = int(n_defined[j])
        if not point_defined[j]:
            out.append(
                ConfidenceInterval(
                    None, None, ci, n_boot, nd, POINT_UNDEFINED, "point estimate undefined: no interval"
                )
            )
        elif nd < _MIN_DEFINED_SHARE * n_boot:
            reason = f"statistic defined in only {nd} of {n_boot} resamples (< {_MIN_DEFINED_SHARE:.0%})"
            out.append(ConfidenceInterval(None, None, ci, n_boot, nd, TOO_FEW_DEFINED_RESAMPLES, reason))
        else:
            out.append(ConfidenceInterval(float(bounds[0, j]), float(bounds[1, j]), ci, n_boot, nd))
    return out


def binary_mode_agreement(
    ratings: ArrayLike,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    weights: ArrayLike | None = None,
) -> list[ModeAgreement]:
    """Per-mode agreement statistics with bootstrap intervals, one row per mode.

    ``ratings`` is ``(n_items, n_raters, n_modes)`` with 1/0/-1 (see module
    docs). Every statistic is computed for all modes at once; the bootstrap
    resamples items (independently per mode) and covers kappa (Cohen with 2
    raters, Fleiss otherwise) and Krippendorff's alpha.

    ``weights`` (whole numbers, one per row) says how many items each row stands for: the result equals
    that of the tensor with every row repeated ``weights`` times (every statistic is a sum over items,
    and the bootstrap only sees the state counts), so a million traces can be passed as their few
    thousand distinct rows.
    """
    if n_boot < 0:
        raise ValueError("n_boot must be >= 0")
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be in (0, 1)")
    r = as_ratings(ratings)
    n_rows, n_raters, n_modes = r.shape
    w = row_weights(weights, n_rows)
    n_items = int(w.sum())
    cohen_names = _COHEN_FEATURES if n_raters == 2 else ()
    names = _FLEISS_FEATURES + _ALPHA_FEATURES + cohen_names
    codes, states = _state_codes(r)
    n_states = states.shape[0]
    offsets = np.arange(n_modes, dtype=np.int64) * n_states
    state_counts = _bincount((codes + offsets).ravel(), np.repeat(w, n_modes), n_modes * n_states)
    state_counts = state_counts.reshape(n_modes, -1)
    table = _state_features(states, names)
    s = _as_sums(state_counts.astype(np.float64) @ table, names)

    observed, fleiss, gwet, alpha = _observed(s), _fleiss(s), _gwet(s), _alpha(s)
    cohen = _cohen(s) if cohen_names else np.full(n_modes, np.nan)
    rated_by = weighted_sum(r >= 0, w)
    with np.errstate(divide="ignore", invalid="ignore"):
        prevalence = weighted_sum(r == 1, w) / rated_by

    kappa_name, kappa_fn = ("cohen_kappa", _cohen) if n_raters == 2 else ("fleiss_kappa", _fleiss)
    kappa_point = cohen if n_raters == 2 else fleiss
    kappa_samples = alpha_samples = None
    if n_boot > 0 and n_items > 0 and n_raters >= 2:
        kappa_samples, alpha_samples = _bootstrap(
            state_counts, table, names, (kappa_fn, _alpha), n_boot, seed
        )
    elif n_boot > 0:  # nothing to resample: every point estimate is undefined anyway
        kappa_samples = alpha_samples = np.full((n_boot, n_modes), np.nan)
    kappa_cis = _intervals(kappa_samples, np.isfinite(kappa_point), n_boot, ci)
    alpha_cis = _intervals(alpha_samples, np.isfinite(alpha), n_boot, ci)

    rows = []
    for j in range(n_modes):
        pair_reason = _reason_pairwise(n_raters, s["pair"][j])
        cohen_reason = _reason_cohen(n_raters, s, j)
        rows.append(
            ModeAgreement(
                mode=j,
                n_raters=n_raters,
                n_items=int(s["pair"][j]),
                n_items_rated=int(s["rated"][j]),
                prevalence=tuple(
                    None if rated_by[k, j] == 0 else float(prevalence[k, j]) for k in range(n_raters)
                ),
                observed_agreement=_estimate(observed[j], pair_reason),
                cohen_kappa=_estimate(cohen[j], cohen_reason),
                fleiss_kappa=_estimate(fleiss[j], _reason_fleiss(n_raters, s, j)),
                krippendorff_alpha=_estimate(alpha[j], _reason_alpha(n_raters, s, j)),
                gwet_ac1=_estimate(gwet[j], pair_reason),
                pabak=_estimate(2.0 * observed[j] - 1.0, pair_reason),
                kappa_ci_statistic=kappa_name,
                kappa_ci=kappa_cis[j],
                alpha_ci=alpha_cis[j],
            )
        )
    return rows
