"""Agreement on single-primary (one category per item) taxonomies.

Why separate from the binary per-mode statistics: a primary category is one
nominal variable with many values, so kappa and alpha are computed over the
full category set (not per category), and the two-rater confusion matrix is
the most useful diagnostic for where raters diverge.

Labels are category codes (integers) in an ``(n_items, n_raters)`` array;
``-1`` means the rater did not label the item. Undefined results follow the
package-wide rule (``value=None`` plus a reason), see
:mod:`annotator.agreement.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from annotator.agreement.results import (
    NO_OVERLAP,
    NO_VARIATION,
    NOT_TWO_RATERS,
    TOO_FEW_PAIRABLE,
    TOO_FEW_RATERS,
    Estimate,
)

__all__ = ["NominalAgreement", "nominal_agreement"]


@dataclass(frozen=True, slots=True)
class NominalAgreement:
    """Agreement on one nominal variable.

    ``n_items`` counts items labelled by at least two raters. ``confusion``
    (2 raters only, else ``None``) has rows = rater 0 and columns = rater 1
    over ``categories`` in the given order, counted on items both labelled;
    it is read-only.
    """

    n_raters: int
    n_items: int
    categories: tuple[int, ...]
    observed_agreement: Estimate
    cohen_kappa: Estimate
    krippendorff_alpha: Estimate
    confusion: NDArray[np.int64] | None


def _category_index(labels: NDArray[np.int64], categories: tuple[int, ...]) -> NDArray[np.int64]:
    """Map codes to positions in ``categories`` (-1 stays missing); reject unknown codes."""
    present = labels >= 0
    if not categories:
        if present.any():
            raise ValueError("labels contain codes but categories is empty")
        return np.full(labels.shape, -1, dtype=np.int64)
    codes = np.asarray(categories, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    pos = np.minimum(np.searchsorted(sorted_codes, labels), len(codes) - 1)
    unknown = present & (sorted_codes[pos] != labels)
    if unknown.any():
        raise ValueError(
            f"labels contain codes not in categories: {sorted(set(labels[unknown].tolist()))[:5]}"
        )
    return np.where(present, order[pos], -1)


def nominal_agreement(
    labels: ArrayLike, categories: Sequence[int] | None = None, weights: ArrayLike | None = None
) -> NominalAgreement:
    """Observed agreement, Cohen's kappa (2 raters) and nominal Krippendorff's alpha.

    ``categories`` fixes the confusion-matrix order and may include codes no
    rater used; by default it is the sorted set of codes present. Cohen's
    kappa uses items both raters labelled and equals scikit-learn's
    ``cohen_kappa_score``; alpha allows missing labels and equals
    ``krippendorff.alpha(..., level_of_measurement="nominal")``. ``weights`` (one whole number per row)
    counts each row as that many identical items.
    """
    arr = np.asarray(labels)
    if arr.ndim != 2:
        raise ValueError(f"labels must have shape (n_items, n_raters); got {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"labels must be integer category codes; got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if (arr < -1).any():
        raise ValueError("labels must be category codes >= 0, or -1 for missing")
    if categories is None:
        categories = np.unique(arr[arr >= 0]).tolist()
    cats = tuple(int(c) for c in categories)
    if len(set(cats)) != len(cats) or any(c < 0 for c in cats):
        raise ValueError("categories must be distinct codes >= 0")
    idx = _category_index(arr, cats)
    n_items, n_raters = idx.shape
    w = np.ones(n_items, dtype=np.int64) if weights is None else np.asarray(weights, dtype=np.int64)
    if w.shape != (n_items,):
        raise ValueError(f"weights must have one entry per row ({n_items}); got shape {w.shape}")
    q = max(len(cats), 1)

    # counts[i, c]: raters who put item i in category c.
    item_of = np.broadcast_to(np.arange(n_items)[:, None], idx.shape)
    present = idx >= 0
    counts = np.bincount(item_of[present] * q + idx[present], minlength=n_items * q).reshape(n_items, q)
    m = counts.sum(axis=1)
    pair = m >= 2
    pc, pm = counts[pair].astype(np.float64), m[pair].astype(np.float64)
    pw = w[pair].astype(np.float64)
    same_pairs = (pc * (pc - 1)).sum(axis=1)  # ordered pairs of raters that agree

    few = (TOO_FEW_RATERS, f"only {n_raters} rater: agreement needs at least 2") if n_raters < 2 else None
    if few:
        observed = Estimate.undefined(*few)
    elif not pair.any():
        observed = Estimate.undefined(NO_OVERLAP, "no overlap: no item was labelled by at least 2 raters")
    else:
        share = same_pairs / (pm * (pm - 1))
        observed = Estimate.of(np.mean(share) if weights is None else (share @ pw) / pw.sum())

    # Krippendorff: alpha = 1 - (n-1) * (n - sum_u same_u/(m_u-1)) / (n^2 - sum_c n_c^2)
    n = pm @ pw
    n_c = pw @ pc
    expected = n * n - (n_c * n_c).sum()
    if few:
        alpha = Estimate.undefined(*few)
    elif n < 2:
        alpha = Estimate.undefined(
            TOO_FEW_PAIRABLE, "fewer than 2 pairable values: no item was labelled by at least 2 raters"
        )
    elif expected == 0:
        only = cats[int(np.argmax(n_c))]
        alpha = Estimate.undefined(
            NO_VARIATION, f"no variation: every pairable label is {only} (expected disagreement is 0)"
        )
    else:
        alpha = Estimate.of(1.0 - (n - 1.0) * (n - (same_pairs / (pm - 1)) @ pw) / expected)

    confusion = None
    if n_raters != 2:
        cohen = Estimate.undefined(
            *(few or (NOT_TWO_RATERS, f"Cohen's kappa needs exactly 2 raters; got {n_raters}"))
        )
    else:
        both = present[:, 0] & present[:, 1]
        cells = idx[both, 0] * q + idx[both, 1]
        confusion = np.bincount(cells, weights=w[both], minlength=q * q).astype(np.int64)
        confusion = confusion.reshape(q, q)[: len(cats), : len(cats)]
        confusion.flags.writeable = False
        cohen = _cohen_from_confusion(confusion, cats)
    return NominalAgreement(
        n_raters=n_raters,
        n_items=int(w[pair].sum()),
        categories=cats,
        observed_agreement=observed,
        cohen_kappa=cohen,
        krippendorff_alpha=alpha,
        confusion=confusion,
    )


def _cohen_from_confusion(confusion: NDArray[np.int64], cats: tuple[int, ...]) -> Estimate:
    """(N*trace - sum(row*col)) / (N^2 - sum(row*col)), in exact integer arithmetic."""
    n = int(confusion.sum())
    if n == 0:
        return Estimate.undefined(NO_OVERLAP, "no overlap: no item was labelled by both raters")
    chance = int((confusion.sum(axis=1) * confusion.sum(axis=0)).sum())
    den = n * n - chance
    if den == 0:
        only = cats[int(np.argmax(confusion.sum(axis=1)))]
        return Estimate.undefined(
            NO_VARIATION,
            f"no variation: both raters gave {only} on every shared item (expected agreement is 1)",
        )
    return Estimate.of((n * int(np.trace(confusion)) - chance) / den)
