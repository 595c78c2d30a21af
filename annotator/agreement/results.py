"""Result value types shared by every agreement statistic.

Why a dedicated type instead of bare floats: agreement coefficients are
frequently *undefined* (no variation, no overlap, one rater). Reference
libraries disagree on what to return there (scikit-learn gives ``nan``,
``krippendorff`` raises, nltk says ``1.0``), and a bare ``nan`` or ``0`` in a
report is easy to misread as a real measurement. Every statistic in this
package is therefore an :class:`Estimate` whose ``value`` is either a finite
float or ``None`` together with a machine-readable ``undefined_code`` and a
human ``undefined_reason``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "BOOTSTRAP_DISABLED",
    "NOT_TWO_RATERS",
    "NO_OVERLAP",
    "NO_PAIRS",
    "NO_VALUES",
    "NO_VARIATION",
    "POINT_UNDEFINED",
    "SAME_RATER",
    "TOO_FEW_DEFINED_RESAMPLES",
    "TOO_FEW_PAIRABLE",
    "TOO_FEW_RATERS",
    "ConfidenceInterval",
    "Estimate",
]

# Machine-readable reason codes (stable strings: safe to store and compare).
TOO_FEW_RATERS = "too_few_raters"
NOT_TWO_RATERS = "not_two_raters"
NO_OVERLAP = "no_overlap"
NO_VARIATION = "no_variation"
TOO_FEW_PAIRABLE = "too_few_pairable_values"
SAME_RATER = "same_rater"
NO_PAIRS = "no_pairs"
NO_VALUES = "no_defined_values"
BOOTSTRAP_DISABLED = "bootstrap_disabled"
POINT_UNDEFINED = "point_estimate_undefined"
TOO_FEW_DEFINED_RESAMPLES = "too_few_defined_resamples"


@dataclass(frozen=True, slots=True)
class Estimate:
    """A statistic that is either a finite number or undefined *with a reason*.

    Invariant (checked): ``value is None`` exactly when ``undefined_code`` is
    set; a defined value is always finite, so callers never meet ``nan``.
    """

    value: float | None
    undefined_code: str | None = None
    undefined_reason: str | None = None

    def __post_init__(self) -> None:
        if self.value is None:
            if not self.undefined_code or not self.undefined_reason:
                raise ValueError("an undefined Estimate needs undefined_code and undefined_reason")
        else:
            if self.undefined_code is not None or self.undefined_reason is not None:
                raise ValueError("a defined Estimate must not carry an undefined reason")
            if not math.isfinite(self.value):
                raise ValueError(f"Estimate value must be finite, got {self.value!r}")

    @classmethod
    def of(cls, value: float) -> Estimate:
        """A defined estimate (converts numpy scalars to ``float``)."""
        return cls(float(value))

    @classmethod
    def undefined(cls, code: str, reason: str) -> Estimate:
        """An undefined estimate; ``reason`` is prefixed by a short human label."""
        return cls(None, code, reason)


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """Percentile bootstrap interval over items.

    ``n_defined`` counts the resamples on which the statistic was defined; the
    percentiles are taken over those only. When too few are defined (or the
    point estimate itself is undefined) ``low``/``high`` are ``None`` and the
    reason is given, exactly like :class:`Estimate`.
    """

    low: float | None
    high: float | None
    level: float
    n_resamples: int
    n_defined: int
    undefined_code: str | None = None
    undefined_reason: str | None = None

    def __post_init__(self) -> None:
        if (self.low is None) != (self.high is None):
            raise ValueError("low and high must both be set or both be None")
        if self.low is None and not (self.undefined_code and self.undefined_reason):
            raise ValueError("an undefined interval needs undefined_code and undefined_reason")
        if self.low is not None and self.undefined_code is not None:
            raise ValueError("a defined interval must not carry an undefined reason")
