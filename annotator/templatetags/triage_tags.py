"""{% kappa_sparkline points %}: a mode's kappa-against-gold curve as a small inline SVG (no JS library).

Only numbers computed by annotator.triage.curve reach the markup, through format_html, so nothing a user
typed can end up inside the SVG.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from annotator.triage.curve import GOOD_KAPPA, polyline

register = template.Library()

WIDTH, HEIGHT, PAD = 120, 36, 3


@register.simple_tag
def kappa_sparkline(points: list[dict], label: str = "") -> str:
    kappas = [point["kappa"] for point in points]
    if all(kappa is None for kappa in kappas):
        return format_html('<span class="muted" title="{}">&ndash;</span>', "kappa undefined at every point")
    line = polyline(kappas, width=WIDTH, height=HEIGHT, pad=PAD)
    good_y = PAD + (1 - (GOOD_KAPPA + 1) / 2) * (HEIGHT - 2 * PAD)
    zero_y = HEIGHT / 2
    return format_html(
        '<svg class="kappa-curve" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">'
        '<line x1="0" x2="{}" y1="{}" y2="{}" class="kappa-zero"></line>'
        '<line x1="0" x2="{}" y1="{}" y2="{}" class="kappa-good"></line>'
        '<polyline points="{}" class="kappa-line"></polyline></svg>',
        WIDTH,
        HEIGHT,
        WIDTH,
        HEIGHT,
        label,
        WIDTH,
        f"{zero_y:.1f}",
        f"{zero_y:.1f}",
        WIDTH,
        f"{good_y:.1f}",
        f"{good_y:.1f}",
        line,
    )
