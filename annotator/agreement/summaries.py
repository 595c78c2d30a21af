"""Summaries built on the per-mode statistics: rater pairs, items, groups, localisation.

Why: the headline per-mode numbers hide *who* disagrees (a rater-pair
matrix), *where* (items with most disagreement, to send to adjudication),
how categories of modes compare (macro averages that skip undefined modes
instead of counting them as 0), and whether raters who agree on a mode also
point at the same step of the trace (localisation).

Arrays inside results are made read-only so the frozen dataclasses are
immutable in practice. Where a result holds float arrays, ``NaN`` appears
*only* in the documented places and always alongside a count or reason that
explains it; scalar statistics are :class:`Estimate` values.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotator.agreement.ratings import as_ratings
from annotator.agreement.results import NO_OVERLAP, NO_PAIRS, NO_VALUES, NO_VARIATION, SAME_RATER, Estimate

__all__ = [
    "GroupAverage",
    "LocalisationAgreement",
    "MacroAverage",
    "PairwiseAgreement",
    "PerItemAgreement",
    "localisation_agreement",
    "macro_average",
    "pairwise_matrix",
    "per_item_agreement",
]


def _frozen(arr: NDArray) -> NDArray:
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, slots=True)
class PairwiseAgreement:
    """Rater x rater agreement matrices (symmetric).

    ``kappa[a, b]`` is the macro-average over modes of Cohen's kappa between
    raters ``a`` and ``b`` (each mode on the items both rated), skipping modes
    where it is undefined; ``n_modes_defined`` says how many were averaged.
    ``observed_agreement[a, b]`` is pooled over all (item, mode) cells both
    rated. ``n_shared_items[a, b]`` counts items both rated in at least one
    mode; on the diagonal it counts the items rater ``a`` rated.
    ``kappa`` and ``observed_agreement`` are ``NaN`` on the diagonal (a rater
    against itself is not a statistic) and where undefined; use
    :meth:`kappa_estimate` for the value-or-reason form.
    """

    n_raters: int
    kappa: NDArray[np.float64]
    n_modes_defined: NDArray[np.int64]
    observed_agreement: NDArray[np.float64]
    n_shared_items: NDArray[np.int64]

    def kappa_estimate(self, a: int, b: int) -> Estimate:
        """Mean Cohen's kappa of a rater pair, or ``None`` with the reason."""
        if a == b:
            return Estimate.undefined(
                SAME_RATER, "same rater: agreement of a rater with itself is not computed"
            )
        if self.n_shared_items[a, b] == 0:
            return Estimate.undefined(NO_OVERLAP, f"no overlap: raters {a} and {b} rated no item in common")
        if self.n_modes_defined[a, b] == 0:
            return Estimate.undefined(
                NO_VARIATION,
                "no variation: Cohen's kappa is undefined on every mode (expected agreement is 1)",
            )
        return Estimate.of(self.kappa[a, b])


def pairwise_matrix(ratings: ArrayLike, weights: ArrayLike | None = None) -> PairwiseAgreement:
    """Cohen's kappa (macro over modes), observed agreement and overlap for every rater pair.

    The 2x2 table of every (pair, mode) is computed for all items and modes
    at once; only the (small) set of rater pairs is looped over. ``weights``
    (one whole number per row) counts each row as that many identical items.
    """
    r = as_ratings(ratings)
    n_raters, n_modes = r.shape[1], r.shape[2]
    w = np.ones(r.shape[0], dtype=np.int64) if weights is None else np.asarray(weights, dtype=np.int64)
    if w.shape != (r.shape[0],):
        raise ValueError(f"weights must have one entry per row ({r.shape[0]}); got shape {w.shape}")
    valid, ones = r >= 0, r == 1
    # Per (rater a, rater b, mode): items both rated, of which a chose the mode, and agreements.
    shared, a1, agree = (np.zeros((n_raters, n_raters, n_modes)) for _ in range(3))
    for a in range(n_raters):  # loop over rater pairs; each step is vectorised over items x modes
        for b in range(a, n_raters):
            both = valid[:, a] & valid[:, b]
            shared[a, b] = shared[b, a] = w @ both
            a1[a, b] = w @ (ones[:, a] & both)
            a1[b, a] = w @ (ones[:, b] & both)
            agree[a, b] = agree[b, a] = w @ (both & (r[:, a] == r[:, b]))
    b1 = a1.transpose(1, 0, 2)
    chance = a1 * b1 + (shared - a1) * (shared - b1)
    den = shared * shared - chance
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa_mode = np.where(den > 0, (shared * agree - chance) / den, np.nan)
    off_diag = ~np.eye(n_raters, dtype=bool)
    defined = np.isfinite(kappa_mode) & off_diag[:, :, None]
    n_defined = defined.sum(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(n_defined > 0, np.where(defined, kappa_mode, 0.0).sum(axis=2) / n_defined, np.nan)
        cells = shared.sum(axis=2)
        observed = np.where((cells > 0) & off_diag, agree.sum(axis=2) / cells, np.nan)
    rated_item = (r >= 0).any(axis=2).astype(np.int64)
    both_items = np.einsum("i,ia,ib->ab", w, rated_item, rated_item)
    return PairwiseAgreement(
        n_raters=n_raters,
        kappa=_frozen(kappa),
        n_modes_defined=_frozen(n_defined.astype(np.int64)),
        observed_agreement=_frozen(observed),
        n_shared_items=_frozen(both_items),
    )


@dataclass(frozen=True, slots=True)
class PerItemAgreement:
    """Per item: on how many modes do all of its raters agree?

    A mode counts for an item only if at least two raters rated it there
    (``n_modes_compared``). ``fraction = n_modes_agreed / n_modes_compared``
    and is ``NaN`` exactly where ``n_modes_compared == 0``.
    """

    fraction: NDArray[np.float64]
    n_modes_agreed: NDArray[np.int64]
    n_modes_compared: NDArray[np.int64]


def per_item_agreement(ratings: ArrayLike) -> PerItemAgreement:
    """Fraction of modes with unanimous raters, for every item (to rank items for adjudication)."""
    r = as_ratings(ratings)
    m = (r >= 0).sum(axis=1)
    k1 = (r == 1).sum(axis=1)
    compared = m >= 2
    unanimous = compared & ((k1 == 0) | (k1 == m))
    n_cmp = compared.sum(axis=1).astype(np.int64)
    n_agr = unanimous.sum(axis=1).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        fraction = np.where(n_cmp > 0, n_agr / n_cmp, np.nan)
    return PerItemAgreement(_frozen(fraction), _frozen(n_agr), _frozen(n_cmp))


@dataclass(frozen=True, slots=True)
class GroupAverage:
    """Mean of the defined values of one group; ``n_total`` includes undefined ones."""

    group: Hashable
    mean: Estimate
    n_defined: int
    n_total: int


@dataclass(frozen=True, slots=True)
class MacroAverage:
    """Per-group means, the mean of all defined values, and the mean of the group means."""

    groups: tuple[GroupAverage, ...]
    overall: GroupAverage
    mean_of_group_means: Estimate

    def by_group(self) -> dict[Hashable, GroupAverage]:
        """Groups keyed by their label."""
        return {g.group: g for g in self.groups}


def _as_float(value: float | Estimate | None) -> float:
    if isinstance(value, Estimate):
        value = value.value
    return math.nan if value is None else float(value)


def macro_average(values: Sequence[float | Estimate | None], groups: Sequence[Hashable]) -> MacroAverage:
    """Average per-mode statistics per category of modes, skipping undefined ones.

    ``values[k]`` belongs to ``groups[k]``. ``None``, ``NaN`` and undefined
    :class:`Estimate` values are skipped (counted in ``n_total`` only), so a
    mode nobody ever chose cannot drag a category towards 0. Groups keep their
    first-appearance order.
    """
    if len(values) != len(groups):
        raise ValueError("values and groups must have the same length")
    vals = np.array([_as_float(v) for v in values], dtype=np.float64)
    labels = list(dict.fromkeys(groups))
    index = {g: k for k, g in enumerate(labels)}
    gid = np.array([index[g] for g in groups], dtype=np.int64)
    ok = np.isfinite(vals)
    n_def = np.bincount(gid[ok], minlength=len(labels))
    n_tot = np.bincount(gid, minlength=len(labels))
    sums = np.bincount(gid[ok], weights=vals[ok], minlength=len(labels))

    def mean(total: float, n: int, what: str) -> Estimate:
        if n == 0:
            return Estimate.undefined(NO_VALUES, f"no defined values: every value in {what} is undefined")
        return Estimate.of(total / n)

    group_rows = tuple(
        GroupAverage(g, mean(sums[k], int(n_def[k]), f"group {g!r}"), int(n_def[k]), int(n_tot[k]))
        for k, g in enumerate(labels)
    )
    overall = GroupAverage(
        None, mean(float(vals[ok].sum()), int(ok.sum()), "the input"), int(ok.sum()), len(vals)
    )
    group_means = [g.mean.value for g in group_rows if g.mean.value is not None]
    return MacroAverage(group_rows, overall, mean(float(sum(group_means)), len(group_means), "every group"))


@dataclass(frozen=True, slots=True)
class LocalisationAgreement:
    """Do two raters who chose the same mode pin the same trace step?

    Computed over ``n_pairs`` pairs where both raters pinned at least one
    step; pairs where one or both pinned nothing are excluded and counted
    separately (``n_only_a_pinned`` / ``n_only_b_pinned`` / ``n_neither_pinned``).
    ``exact_match``: the step sets share a step. ``within_window``: some step
    of A is at most ``window`` steps from some step of B.
    """

    window: int
    n_pairs: int
    n_exact: int
    n_within_window: int
    exact_match: Estimate
    within_window: Estimate
    n_only_a_pinned: int
    n_only_b_pinned: int
    n_neither_pinned: int


def localisation_agreement(
    pairs: Sequence[tuple[Collection[int], Collection[int]]], window: int
) -> LocalisationAgreement:
    """Exact and windowed step agreement for (item, mode) pairs both raters chose.

    Vectorised: all steps of all pairs go into two sorted key arrays
    (``pair * span + step``); a ``searchsorted`` finds, for each step of A, its
    nearest step of B in the same pair, and a per-pair minimum gives the
    closest distance.
    """
    if window < 0:
        raise ValueError("window must be >= 0")
    len_a = np.array([len(a) for a, _ in pairs], dtype=np.int64)
    len_b = np.array([len(b) for _, b in pairs], dtype=np.int64)
    keep = (len_a > 0) & (len_b > 0)
    n_pairs = int(keep.sum())
    kept = [p for p, k in zip(pairs, keep.tolist(), strict=True) if k]
    steps_a = np.fromiter((s for a, _ in kept for s in a), dtype=np.int64, count=int(len_a[keep].sum()))
    steps_b = np.fromiter((s for _, b in kept for s in b), dtype=np.int64, count=int(len_b[keep].sum()))
    n_exact = n_within = 0
    if n_pairs:
        pid_a = np.repeat(np.arange(n_pairs), len_a[keep])
        pid_b = np.repeat(np.arange(n_pairs), len_b[keep])
        low = min(steps_a.min(), steps_b.min())
        span = int(max(steps_a.max(), steps_b.max()) - low) + 1
        key_a = pid_a * span + (steps_a - low)
        key_b = np.sort(pid_b * span + (steps_b - low))
        pos = np.searchsorted(key_b, key_a)
        best = np.full(key_a.shape, np.iinfo(np.int64).max)
        for cand in (pos - 1, pos):  # the nearest B step is just below or at/above
            ok = (cand >= 0) & (cand < len(key_b))
            c = np.clip(cand, 0, len(key_b) - 1)
            same_pair = ok & (key_b[c] // span == pid_a)
            best = np.where(same_pair, np.minimum(best, np.abs(key_b[c] - key_a)), best)
        starts = np.concatenate(([0], np.cumsum(len_a[keep])[:-1]))
        closest = np.minimum.reduceat(best, starts)  # pid_a is sorted and no pair is empty
        n_exact = int((closest == 0).sum())
        n_within = int((closest <= window).sum())

    def share(count: int) -> Estimate:
        if n_pairs == 0:
            return Estimate.undefined(
                NO_PAIRS, "no pairs: no pair where both raters pinned at least one step"
            )
        return Estimate.of(count / n_pairs)

    return LocalisationAgreement(
        window=window,
        n_pairs=n_pairs,
        n_exact=n_exact,
        n_within_window=n_within,
        exact_match=share(n_exact),
        within_window=share(n_within),
        n_only_a_pinned=int(((len_a > 0) & (len_b == 0)).sum()),
        n_only_b_pinned=int(((len_a == 0) & (len_b > 0)).sum()),
        n_neither_pinned=int(((len_a == 0) & (len_b == 0)).sum()),
    )
