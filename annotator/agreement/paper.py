"""The figures papers publish, added to a built report: the mean pairwise Cohen's kappa beside the headline,
and a reproducible methods paragraph (software, data, filters, statistics, seed, fingerprint).

Pure like the rest of this package: the report's JSON in, more JSON out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from annotator.agreement.report import ReportSettings


MEAN_PAIRWISE_FORMULA = (
    "mean pairwise Cohen's kappa: for each mode, Cohen's kappa of every pair of raters on the traces both "
    "rated, averaged over the pairs where it is defined; overall, the mean over every (pair, mode) where it "
    "is defined (modes where nobody varies are left out, not counted as 1 or 0)"
)


def add_mean_pairwise_cohen(report: dict[str, Any]) -> None:
    """The figure papers such as MAST publish ("Cohen's kappa" with three or more annotators), beside the
    Fleiss headline: the mean of the pairs' per-mode Cohen's kappas, per mode and overall."""
    pooled: list[float] = []
    for k, mode in enumerate(report["modes"]):
        values = [
            pair["modes"][k]["cohen_kappa"]["value"]
            for pair in report["pairs"]
            if pair["modes"][k]["cohen_kappa"]["value"] is not None
        ]
        pooled += values
        mode["mean_pairwise_cohen_kappa"] = {
            "value": float(np.mean(values)) if values else None,
            "n_pairs_defined": len(values),
            "n_pairs": len(report["pairs"]),
        }
    defined = [m["mean_pairwise_cohen_kappa"]["value"] for m in report["modes"]]
    defined = [v for v in defined if v is not None]
    report["overall"]["mean_pairwise_cohen_kappa"] = {
        "value": float(np.mean(pooled)) if pooled else None,
        "n_defined": len(pooled),
        "mean_of_mode_means": float(np.mean(defined)) if defined else None,
        "n_modes_defined": len(defined),
        "formula": MEAN_PAIRWISE_FORMULA,
    }


STATISTIC_DEFINITIONS = {
    "cohen_kappa": "Cohen (1960) kappa for two raters, (p_o - p_e) / (1 - p_e) with each rater's own marginals",
    "fleiss_kappa": "Fleiss (1971) kappa for three or more raters, on traces with at least two ratings",
    "mean_pairwise_cohen_kappa": MEAN_PAIRWISE_FORMULA,
    "krippendorff_alpha": "Krippendorff's alpha, nominal, missing ratings allowed",
    "gwet_ac1": "Gwet's AC1, robust to rare modes (the kappa paradox)",
    "pabak": "prevalence- and bias-adjusted kappa, 2 p_o - 1",
    "masi_alpha": "Krippendorff's alpha over label sets with the MASI distance (Passonneau 2006)",
    "intervals": "percentile bootstrap over traces",
    "missing": "a rater who did not annotate a trace is missing there, never a 'no failure'",
}


def methods(report: dict[str, Any], settings: ReportSettings, *, schema: int) -> dict[str, Any]:
    """A reproducible methods block: what was computed, how, on which data, ready to paste into a paper."""
    extra = settings.extra
    counts = report["counts"]
    taxonomy = extra.get("taxonomy") or {}
    filters = extra.get("filters") or {}
    overall = report["overall"]
    headline = overall.get("kappa") or {}
    mean_pairwise = overall["mean_pairwise_cohen_kappa"]
    level = round(settings.ci * 100)
    described_filters = "; ".join(f"{k} = {v}" for k, v in sorted(filters.items())) or "none"
    parts = [
        f"Inter-annotator agreement was computed with {extra.get('software', 'trace-annotator')} on "
        f"{counts['items']} traces ({counts['items_with_two_or_more_raters']} rated by two or more raters), "
        f"{counts['annotations']} annotations by {counts['raters']} raters"
        + (f", taxonomy {taxonomy.get('slug')} version {taxonomy.get('version')}" if taxonomy else "")
        + f" (filters: {described_filters}).",
        f"Per failure mode we report {_KAPPA_NAMES[report['kappa_statistic']]} "
        f"(macro mean {_number(headline.get('value'))} over {headline.get('n_defined', 0)} modes where defined)"
        f" and the mean pairwise Cohen's kappa ({_number(mean_pairwise['value'])} over "
        f"{mean_pairwise['n_defined']} pair-mode combinations), Krippendorff's alpha, Gwet's AC1 and PABAK, "
        f"with {level}% percentile bootstrap intervals ({settings.n_boot} resamples over traces, seed "
        f"{settings.seed}).",
        "A rater who did not annotate a trace counts as missing, not as 'no failure'.",
    ]
    if extra.get("fingerprint"):
        parts.append(f"Data fingerprint (SHA-256 of the inputs): {extra['fingerprint']}.")
    return {
        "software": extra.get("software", ""),
        "schema": schema,
        "statistics": STATISTIC_DEFINITIONS,
        "filters": filters,
        "seed": settings.seed,
        "n_boot": settings.n_boot,
        "ci_level": settings.ci,
        "fingerprint": extra.get("fingerprint", ""),
        "text": " ".join(parts),
    }


_KAPPA_NAMES = {"cohen_kappa": "Cohen's kappa", "fleiss_kappa": "Fleiss' kappa"}


def _number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
