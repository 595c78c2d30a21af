"""An annotator against gold: per mode sensitivity, specificity and Cohen's kappa, with intervals.

Pure numpy, no Django. Input: two boolean matrices of the same shape, items x modes: what the annotator
chose and what the gold labels hold. Every (item, mode) cell is one binary decision; "overall" pools the
cells of every mode.

Formulas (docs/calibration.md names them too):

- sensitivity = TP / (TP + FN), specificity = TN / (TN + FP), each with the Wilson score interval
  (Wilson 1927): centre (p + z²/2n) / (1 + z²/n), half-width z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n).
- Cohen's kappa = (p_o - p_e) / (1 - p_e) with p_e = p_yes·g_yes + p_no·g_no from the two margins, and the
  interval kappa ± z·SE with Cohen's (1960) approximate standard error SE = sqrt(p_o(1-p_o) / (n(1-p_e)²)),
  clipped to [-1, 1]. Undefined (None, with the reason) when p_e = 1: both sides gave one answer only.
  The approximate SE is 0 whenever p_o is 0 or 1 (e.g. a single item), which would claim a zero-width
  interval: there the interval is None, with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
KAPPA_SE_FORMULA = "Cohen (1960) approximate SE: sqrt(p_o(1-p_o) / (n(1-p_e)^2)); interval kappa ± z·SE"
PROPORTION_INTERVAL = "Wilson score interval"
DEGENERATE_SE = "observed agreement is 0 or 1, so the approximate SE is 0: no interval"


@dataclass(frozen=True)
class Counts:
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn


@dataclass(frozen=True)
class ModeScore:
    mode: str
    counts: Counts
    sensitivity: float | None
    sensitivity_ci: tuple[float, float] | None
    specificity: float | None
    specificity_ci: tuple[float, float] | None
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    kappa_undefined: str = ""  # why kappa is None ("" when it is defined)
    kappa_ci_undefined: str = ""  # why kappa_ci is None although kappa is defined


@dataclass(frozen=True)
class CalibrationScores:
    n_items: int
    modes: tuple[ModeScore, ...]
    overall: ModeScore  # every (item, mode) cell pooled


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion; None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))


def kappa_with_se(counts: Counts) -> tuple[float | None, float | None, str]:
    """Cohen's kappa of the 2x2 table and Cohen's (1960) approximate SE; (None, None, reason) if undefined."""
    n = counts.n
    if n == 0:
        return None, None, "no items"
    p_o = (counts.tp + counts.tn) / n
    yours = (counts.tp + counts.fp) / n
    gold = (counts.tp + counts.fn) / n
    p_e = yours * gold + (1 - yours) * (1 - gold)
    if math.isclose(p_e, 1.0):
        return None, None, "one answer only on both sides (expected agreement is 1)"
    kappa = (p_o - p_e) / (1 - p_e)
    se = math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2))
    return kappa, se, ""


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def mode_score(mode: str, counts: Counts, z: float = Z95) -> ModeScore:
    kappa, se, why = kappa_with_se(counts)
    degenerate = kappa is not None and se == 0
    return ModeScore(
        mode=mode,
        counts=counts,
        sensitivity=_ratio(counts.tp, counts.tp + counts.fn),
        sensitivity_ci=wilson(counts.tp, counts.tp + counts.fn, z),
        specificity=_ratio(counts.tn, counts.tn + counts.fp),
        specificity_ci=wilson(counts.tn, counts.tn + counts.fp, z),
        kappa=kappa,
        kappa_ci=None
        if kappa is None or se is None or degenerate
        else (max(-1.0, kappa - z * se), min(1.0, kappa + z * se)),
        kappa_undefined=why,
        kappa_ci_undefined=DEGENERATE_SE if degenerate else "",
    )


def score(
    chosen: Iterable[Sequence[bool]], gold: Iterable[Sequence[bool]], modes: Sequence[str], z: float = Z95
) -> CalibrationScores:
    """Scores of one annotator: `chosen` and `gold` are items x modes booleans, columns named by `modes`.

    Plain Python rather than numpy: a calibration set is tens of items, and this module is imported by the
    claim path, so numpy here would cost every command and worker its import at start-up."""
    yours = [[bool(v) for v in row] for row in chosen]
    truth = [[bool(v) for v in row] for row in gold]
    width = len(modes)
    if len(yours) != len(truth) or any(len(row) != width for row in (*yours, *truth)):
        raise ValueError(
            f"chosen ({len(yours)} items) and gold ({len(truth)} items) must both be items x {width} modes"
        )
    tallies = [[0, 0, 0, 0] for _ in modes]  # tp, fp, fn, tn per mode
    for mine, right in zip(yours, truth, strict=True):
        for j in range(width):
            tallies[j][(0 if mine[j] else 2) + (0 if right[j] else 1)] += 1
    per_mode = tuple(mode_score(code, Counts(*tallies[j]), z) for j, code in enumerate(modes))
    pooled = Counts(*(sum(t[k] for t in tallies) for k in range(4)))
    return CalibrationScores(n_items=len(yours), modes=per_mode, overall=mode_score("overall", pooled, z))
