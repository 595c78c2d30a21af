"""The agreement report as plain JSON (schema 1), assembled from the statistics of this package.

Pure: arrays and names in, a JSON-ready dict out, no Django -- so the report's numbers can be tested and
benchmarked without a database, and the Celery task is only "load arrays, call build_report, store".
The schema is documented in README.md ("Agreement report JSON"). Bump SCHEMA when a field changes
meaning or disappears; adding a field keeps the number.

Choices stated once here (and in the README):

- A submitted "no failure" annotation is a rating of 0 on every mode; a rater who did not annotate a
  trace is missing (-1) there, never 0.
- Subtypes: the per-mode table lists every mode as annotators chose it (fine). When the taxonomy has
  subtypes, a second table rolls each subtype up into its top-level parent (coarse: chosen if the parent
  or any of its subtypes was chosen). Category and overall macro averages use the fine table.
- The headline kappa is Cohen's with exactly two raters and Fleiss' otherwise (`kappa_statistic`);
  every rater pair also gets its own per-mode Cohen's kappa with a bootstrap interval (fewer resamples).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from annotator.agreement.nominal import nominal_agreement
from annotator.agreement.paper import add_mean_pairwise_cohen, methods
from annotator.agreement.ratings import as_ratings
from annotator.agreement.results import NO_PAIRS, ConfidenceInterval, Estimate
from annotator.agreement.rows import (
    NEITHER_PINNED,
    NOT_BOTH,
    ONLY_A_PINNED,
    ONLY_B_PINNED,
    EvidenceRows,
    ItemRows,
    ModeInfo,
    ReportInput,
    _windows,
    compress,
)
from annotator.agreement.setstats import masi_alpha_from_ratings
from annotator.agreement.stats import ModeAgreement, binary_mode_agreement, row_weights, weighted_sum
from annotator.agreement.summaries import macro_average, pairwise_matrix, per_item_agreement

__all__ = [
    "NO_PRIMARY",
    "SCHEMA",
    "EvidenceRows",
    "ItemRows",
    "ModeInfo",
    "ReportInput",
    "ReportSettings",
    "build_report",
    "build_report_from_rows",
    "compress",
    "estimate_json",
    "interval_json",
]

SCHEMA = 1
NO_PRIMARY = "none"
"""Category name, in the single-primary section, of an annotation without a primary label (no failure)."""

_DISPUTE_BINS = 5  # per-trace histogram: 0, 1, 2, 3, 4 disputed modes, then "5+"


@dataclass(frozen=True)
class ReportSettings:
    n_boot: int = 1000
    pair_n_boot: int = 200
    ci: float = 0.95
    seed: int = 0
    windows: tuple[int, ...] = (1, 3)
    extra: dict[str, Any] = field(default_factory=dict)


def estimate_json(estimate: Estimate) -> dict[str, Any]:
    return {
        "value": estimate.value,
        "undefined_code": estimate.undefined_code,
        "undefined_reason": estimate.undefined_reason,
    }


def interval_json(interval: ConfidenceInterval, statistic: str) -> dict[str, Any]:
    return {
        "statistic": statistic,
        "low": interval.low,
        "high": interval.high,
        "level": interval.level,
        "n_resamples": interval.n_resamples,
        "n_defined": interval.n_defined,
        "undefined_code": interval.undefined_code,
        "undefined_reason": interval.undefined_reason,
    }


def build_report(data: ReportInput, settings: ReportSettings | None = None) -> dict[str, Any]:
    """Every section of the report, as JSON-ready values (floats, ints, strings, None)."""
    settings = settings or ReportSettings()
    r = as_ratings(data.ratings)
    if r.shape[1] != len(data.raters) or r.shape[2] != len(data.modes):
        raise ValueError("ratings shape does not match raters and modes")
    items, _ = compress(data, settings.windows)
    return build_report_from_rows(items, data.raters, data.modes, settings)


def build_report_from_rows(
    items: ItemRows,
    raters: Sequence[str],
    modes: Sequence[ModeInfo],
    settings: ReportSettings | None = None,
) -> dict[str, Any]:
    """The report from distinct item rows and their counts (see :class:`ItemRows`); equal to
    :func:`build_report` on the items they stand for."""
    settings = settings or ReportSettings()
    r = as_ratings(items.ratings)
    w = row_weights(items.weight, r.shape[0])
    _, n_raters, n_modes = r.shape
    if n_raters != len(raters) or n_modes != len(modes):
        raise ValueError("ratings shape does not match raters and modes")
    data = ReportInput(ratings=r, raters=tuple(raters), modes=tuple(modes), primary=items.primary)
    rows = binary_mode_agreement(r, n_boot=settings.n_boot, seed=settings.seed, ci=settings.ci, weights=w)
    kappa_statistic = "cohen_kappa" if n_raters == 2 else "fleiss_kappa"
    modes_json = [_mode_json(row, info, data.raters) for row, info in zip(rows, data.modes, strict=True)]
    for row, n in zip(modes_json, _disagreements(r, w), strict=True):
        row["n_disagree"] = n
    report: dict[str, Any] = {
        "schema": SCHEMA,
        **settings.extra,
        "settings": {
            "n_boot": settings.n_boot,
            "pair_n_boot": settings.pair_n_boot,
            "ci_level": settings.ci,
            "seed": settings.seed,
            "windows": list(settings.windows),
        },
        "counts": _counts(r, w),
        "raters": _raters(r, w, data.raters),
        "kappa_statistic": kappa_statistic,
        "modes": modes_json,
        "coarse_modes": _coarse(r, w, data, settings),
        "categories": [],
        "overall": {},
        "masi_alpha": _masi(r, w),
        "pairs": _pairs(r, w, data, rows, settings),
        "per_item": _per_item(r, w),
        "localisation": _localisation(items.closest, w, data, settings.windows),
        "primary": _primary(data, w) if data.primary is not None else None,
    }
    report["categories"], report["overall"] = _macro(modes_json, data.modes, kappa_statistic)
    add_mean_pairwise_cohen(report)
    report["methods"] = methods(report, settings, schema=SCHEMA)
    return report


def _mode_json(row: ModeAgreement, info: ModeInfo, raters: Sequence[str]) -> dict[str, Any]:
    return {
        "code": info.code,
        "name": info.name,
        "category": info.category,
        "parent": info.parent,
        "fatal": info.fatal,
        "n_items": row.n_items,
        "n_items_rated": row.n_items_rated,
        "prevalence": dict(zip(raters, row.prevalence, strict=True)),
        "observed_agreement": estimate_json(row.observed_agreement),
        "cohen_kappa": estimate_json(row.cohen_kappa),
        "fleiss_kappa": estimate_json(row.fleiss_kappa),
        "krippendorff_alpha": estimate_json(row.krippendorff_alpha),
        "gwet_ac1": estimate_json(row.gwet_ac1),
        "pabak": estimate_json(row.pabak),
        "kappa_ci": interval_json(row.kappa_ci, row.kappa_ci_statistic),
        "alpha_ci": interval_json(row.alpha_ci, "krippendorff_alpha"),
    }


def _disagreements(r: NDArray[np.int8], w: NDArray[np.int64]) -> list[int]:
    """Per mode, the traces where one rater chose it and another rated it without choosing it (a missing
    vote is neither): what the main table's "Disagree" cell opens in the trace list (`raters=...` or, with
    two raters, `pair=a,b`, with `disputed_mode=CODE`). With two raters, the pair's `n_disagree`."""
    split = (r == 1).any(axis=1) & (r == 0).any(axis=1)
    return [int(n) for n in w @ split]


def _counts(r: NDArray[np.int8], w: NDArray[np.int64]) -> dict[str, int]:
    present = (r >= 0).any(axis=2)
    nothing = present & ~(r == 1).any(axis=2)
    return {
        "items": int(w @ present.any(axis=1)),
        "items_with_two_or_more_raters": int(w @ (present.sum(axis=1) >= 2)),
        "annotations": int(weighted_sum(present, w).sum()),
        "no_failure_annotations": int(weighted_sum(nothing, w).sum()),
        "labels": int(weighted_sum(r == 1, w).sum()),
        "raters": int(r.shape[1]),
    }


def _raters(r: NDArray[np.int8], w: NDArray[np.int64], names: Sequence[str]) -> list[dict[str, Any]]:
    present = (r >= 0).any(axis=2)
    chosen = (r == 1).sum(axis=2)
    out = []
    for j, name in enumerate(names):
        n = int(w @ present[:, j])
        labels = int(w @ chosen[:, j])
        out.append(
            {
                "username": name,
                "annotations": n,
                "no_failure_annotations": int(w @ (present[:, j] & (chosen[:, j] == 0))),
                "labels": labels,
                "mean_labels_per_annotation": float(labels / n) if n else None,
            }
        )
    return out


def _macro(
    modes_json: list[dict[str, Any]], modes: Sequence[ModeInfo], kappa_statistic: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Category and overall means of each headline statistic, skipping modes where it is undefined."""
    groups = [m.category for m in modes]
    names = {m.category: m.category_name for m in modes}
    statistics = {
        "kappa": kappa_statistic,
        "krippendorff_alpha": "krippendorff_alpha",
        "gwet_ac1": "gwet_ac1",
        "pabak": "pabak",
        "observed_agreement": "observed_agreement",
    }
    averages = {
        key: macro_average([Estimate(**row[source]) for row in modes_json], groups)
        for key, source in statistics.items()
    }
    categories = []
    for k, group in enumerate(averages["kappa"].groups):
        entry: dict[str, Any] = {"code": group.group, "name": names[group.group], "n_modes": group.n_total}
        for key, avg in averages.items():
            entry[key] = {**estimate_json(avg.groups[k].mean), "n_defined": avg.groups[k].n_defined}
        categories.append(entry)
    overall: dict[str, Any] = {"kappa_statistic": kappa_statistic, "n_modes": len(modes_json)}
    for key, avg in averages.items():
        overall[key] = {**estimate_json(avg.overall.mean), "n_defined": avg.overall.n_defined}
    overall["kappa_mean_of_category_means"] = estimate_json(averages["kappa"].mean_of_group_means)
    return categories, overall


def _coarse(
    r: NDArray[np.int8], w: NDArray[np.int64], data: ReportInput, settings: ReportSettings
) -> list[dict[str, Any]] | None:
    """Subtypes rolled up into their top-level mode; None when the taxonomy has no subtypes."""
    if not any(m.parent for m in data.modes):
        return None
    index = {m.code: j for j, m in enumerate(data.modes)}
    top = [j for j, m in enumerate(data.modes) if not m.parent or m.parent not in index]
    column = {data.modes[j].code: k for k, j in enumerate(top)}
    membership = np.zeros((len(data.modes), len(top)), dtype=np.int64)
    for j, mode in enumerate(data.modes):
        root = mode
        while root.parent and root.parent in index:  # subtypes of subtypes roll up to the top
            root = data.modes[index[root.parent]]
        membership[j, column[root.code]] = 1
    chosen = ((r == 1).astype(np.int64) @ membership) > 0
    missing = (r < 0).all(axis=2, keepdims=True)
    coarse = np.where(missing, -1, chosen).astype(np.int8)
    rows = binary_mode_agreement(
        coarse, n_boot=settings.n_boot, seed=settings.seed, ci=settings.ci, weights=w
    )
    return [_mode_json(row, data.modes[j], data.raters) for row, j in zip(rows, top, strict=True)]


def _masi(r: NDArray[np.int8], w: NDArray[np.int64]) -> dict[str, Any]:
    result = masi_alpha_from_ratings(r, w)
    return {
        "alpha": estimate_json(result.alpha),
        "n_items": result.n_items,
        "n_values": result.n_values,
        "observed_disagreement": result.observed_disagreement,
        "expected_disagreement": result.expected_disagreement,
    }


def _pairs(
    r: NDArray[np.int8],
    w: NDArray[np.int64],
    data: ReportInput,
    rows: list[ModeAgreement],
    settings: ReportSettings,
) -> list[dict[str, Any]]:
    """Every rater pair: overlap, macro kappa, pooled observed agreement, and per-mode Cohen's kappa with
    an interval. With exactly two raters the per-mode rows are the main table's (full n_boot)."""
    n_raters = r.shape[1]
    matrix = pairwise_matrix(r, w)
    out = []
    for a, b in combinations(range(n_raters), 2):
        if n_raters == 2:
            pair_rows, n_boot = rows, settings.n_boot
        else:
            sub = r[:, [a, b], :]
            both = ((sub[:, 0] >= 0) & (sub[:, 1] >= 0)).any(axis=1)
            n_boot = settings.pair_n_boot
            pair_rows = binary_mode_agreement(
                sub[both], n_boot=n_boot, seed=settings.seed, ci=settings.ci, weights=w[both]
            )
        observed = matrix.observed_agreement[a, b]
        ra, rb = r[:, a, :], r[:, b, :]
        # Traces (weighted distinct rows) where both rated a mode and exactly one chose it: what the pair's
        # row of a mode opens in the trace list (pair=a,b&disputed_mode=CODE).
        n_disagree = (w[:, None] * ((ra >= 0) & (rb >= 0) & (ra != rb))).sum(axis=0)
        entry = {
            "a": data.raters[a],
            "b": data.raters[b],
            "n_shared_items": int(matrix.n_shared_items[a, b]),
            "kappa_macro": {
                **estimate_json(matrix.kappa_estimate(a, b)),
                "n_modes": int(matrix.n_modes_defined[a, b]),
            },
            "observed_agreement": None if np.isnan(observed) else float(observed),
            "n_boot": n_boot,
            "modes": [
                {
                    "code": info.code,
                    "n_items": row.n_items,
                    "n_disagree": int(n_disagree[m]),
                    "cohen_kappa": estimate_json(row.cohen_kappa),
                    "kappa_ci": interval_json(row.kappa_ci, "cohen_kappa"),
                }
                for m, (row, info) in enumerate(zip(pair_rows, data.modes, strict=True))
            ],
            "primary": None,
        }
        if data.primary is not None:
            nominal = nominal_agreement(
                data.primary[:, [a, b]], categories=range(len(data.modes) + 1), weights=w
            )
            entry["primary"] = {"n_items": nominal.n_items, "cohen_kappa": estimate_json(nominal.cohen_kappa)}
        out.append(entry)
    return out


def _per_item(r: NDArray[np.int8], w: NDArray[np.int64]) -> dict[str, Any]:
    """How many modes each trace's raters disagree on: the distribution behind the adjudication queue."""
    per_item = per_item_agreement(r)
    compared = per_item.n_modes_compared > 0
    disputed = (per_item.n_modes_compared - per_item.n_modes_agreed)[compared]
    counts = np.bincount(
        np.minimum(disputed, _DISPUTE_BINS), weights=w[compared], minlength=_DISPUTE_BINS + 1
    ).astype(np.int64)
    labels = [str(k) for k in range(_DISPUTE_BINS)] + [f"{_DISPUTE_BINS}+"]
    n = int(w[compared].sum())
    return {
        "n_items": n,
        "full_agreement": int(counts[0]),
        "mean_fraction_agreed": float(per_item.fraction[compared] @ w[compared] / n) if n else None,
        "by_disputed_modes": [
            {"disputed": label, "count": int(c)} for label, c in zip(labels, counts, strict=True)
        ],
    }


def _localisation(
    closest: NDArray[np.int16], w: NDArray[np.int64], data: ReportInput, windows: Sequence[int]
) -> dict[str, Any]:
    """Where two raters chose the same mode on a trace, did they pin the same step (or one within w)?

    Every rater pair contributes its (trace, mode) cells chosen by both (``closest``, see
    :func:`localisation_codes`). Per mode, then overall as the sum of the per-mode counts."""
    windows = _windows(windows)

    def count(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
        return weighted_sum(mask, w).sum(axis=0) if mask.ndim == 3 else np.zeros(0, dtype=np.int64)

    n_modes = len(data.modes)
    if closest.shape[1] == 0:
        closest = np.full((closest.shape[0], 1, n_modes), NOT_BOTH, dtype=np.int16)
    pinned = closest >= 0
    per_key = {
        "n_pairs_chosen_by_both": count(closest != NOT_BOTH),
        "n_pairs": count(pinned),
        "n_exact": count(closest == 0),
        "n_only_one_pinned": count((closest == ONLY_A_PINNED) | (closest == ONLY_B_PINNED)),
        "n_neither_pinned": count(closest == NEITHER_PINNED),
    }
    within = [count(pinned & (closest <= window)) for window in windows]
    per_mode = []
    for j, info in enumerate(data.modes):
        counts = {key: int(values[j]) for key, values in per_key.items()}
        counts["n_within"] = [int(values[j]) for values in within]
        per_mode.append((info.code, counts))
    total = {
        key: (
            [sum(c["n_within"][k] for _, c in per_mode) for k in range(len(windows))]
            if key == "n_within"
            else sum(c[key] for _, c in per_mode)
        )
        for key in (
            "n_pairs_chosen_by_both",
            "n_pairs",
            "n_exact",
            "n_within",
            "n_only_one_pinned",
            "n_neither_pinned",
        )
    }
    return {
        "windows": windows,
        "overall": _localisation_json(total, windows),
        "modes": [{"code": code, **_localisation_json(counts, windows)} for code, counts in per_mode],
    }


def _share(count: int, n_pairs: int) -> dict[str, Any]:
    if n_pairs == 0:
        estimate = Estimate.undefined(
            NO_PAIRS, "no pairs: no pair where both raters pinned at least one step"
        )
    else:
        estimate = Estimate.of(count / n_pairs)
    return {**estimate_json(estimate), "count": count}


def _localisation_json(counts: dict[str, Any], windows: Sequence[int]) -> dict[str, Any]:
    n_pairs = counts["n_pairs"]
    return {
        "n_pairs_chosen_by_both": counts["n_pairs_chosen_by_both"],
        "n_pairs": n_pairs,
        "exact": _share(counts["n_exact"], n_pairs),
        "within": {str(w): _share(c, n_pairs) for w, c in zip(windows, counts["n_within"], strict=True)},
        "n_only_one_pinned": counts["n_only_one_pinned"],
        "n_neither_pinned": counts["n_neither_pinned"],
    }


def _primary(data: ReportInput, w: NDArray[np.int64]) -> dict[str, Any]:
    """Single-primary taxonomies: the primary label as one nominal variable (kappa, alpha, confusion)."""
    categories = [m.code for m in data.modes] + [NO_PRIMARY]
    nominal = nominal_agreement(data.primary, categories=range(len(categories)), weights=w)
    confusion = None
    if nominal.confusion is not None:
        confusion = {
            "rows": data.raters[0],
            "columns": data.raters[1],
            "matrix": nominal.confusion.tolist(),
        }
    return {
        "categories": categories,
        "n_items": nominal.n_items,
        "observed_agreement": estimate_json(nominal.observed_agreement),
        "cohen_kappa": estimate_json(nominal.cohen_kappa),
        "krippendorff_alpha": estimate_json(nominal.krippendorff_alpha),
        "confusion": confusion,
    }
