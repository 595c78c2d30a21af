"""Formatting of agreement numbers: a value, or "undefined" with its reason -- never a silent 0 or nan."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def est(estimate: dict[str, Any] | None, digits: int = 3):
    """An Estimate dict from the report JSON as HTML: the number, or a marked "undefined" whose reason is
    shown on hover and read out by screen readers."""
    if not estimate:
        return format_html('<span class="muted">—</span>')
    if estimate.get("value") is None:
        return format_html(
            '<span class="undef" title="{}">undefined<span class="visually-hidden">: {}</span></span>',
            estimate.get("undefined_reason") or "",
            estimate.get("undefined_reason") or "",
        )
    return format_html("{}", f"{estimate['value']:.{int(digits)}f}")


@register.filter
def ci(interval: dict[str, Any] | None):
    """A bootstrap interval as "[low, high]", or why there is none."""
    if not interval:
        return ""
    if interval.get("low") is None:
        return format_html(
            '<span class="muted small" title="{}">no interval</span>', interval.get("undefined_reason") or ""
        )
    return format_html(
        '<span class="ci" title="{} of {} resamples defined">[{}, {}]</span>',
        interval.get("n_defined"),
        interval.get("n_resamples"),
        f"{interval['low']:.2f}",
        f"{interval['high']:.2f}",
    )


@register.filter
def pct(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{100 * value:.{int(digits)}f}%"


def heat_colour(value: float | None) -> str:
    """Background for an agreement value: red (<= 0) through amber (0.4-0.6) to green (>= 0.8), light
    enough for dark text; grey when undefined."""
    if value is None:
        return "#f1f1ee"
    share = min(max(value, 0.0), 1.0)
    hue = round(share**1.3 * 125)
    return f"hsl({hue}, 70%, {90 - 8 * share:.0f}%)"


@register.filter
def heat(estimate: dict[str, Any] | float | None) -> str:
    value = estimate.get("value") if isinstance(estimate, dict) else estimate
    return f"background: {heat_colour(value)}"


@register.filter
def shade(count: int, maximum: int) -> str:
    """A confusion-matrix cell: blue, darker for larger counts (0 stays white)."""
    if not count or not maximum:
        return ""
    share = count / maximum
    return f"background: hsl(220, 70%, {96 - 40 * share:.0f}%); color: {'#fff' if share > 0.7 else 'inherit'}"


@register.filter
def get(mapping: dict, key: Any) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def fatal_count(severity: int) -> int:
    """Disputed fatal modes, from an adjudication item's severity (100 per fatal mode + 1 per mode)."""
    return int(severity or 0) // 100
