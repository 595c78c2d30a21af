"""Chart-ready rows for the signatures page: widths, shades and labels computed here, drawn by templates.

Why not compute in the template: Django templates have no arithmetic, and a chart is only legible when
every bar shares an axis, every shade a scale and every number a format. Widths are CSS percentage
strings ("37.5%") and shades are opacities in [0, 1] formatted with a dot, so a locale never turns them
into "37,5%". Pure Python on the result dataclasses: no Django, testable alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from annotator.signatures.contrast import FATAL_MIN_RELATIVE_INCREASE, MIN_TRACES_PER_OUTCOME
from annotator.signatures.position import DECILES
from annotator.signatures.report import Signatures
from annotator.signatures.results import ModeContrast, Proportion

__all__ = ["WARNING_TEXT", "Bar", "Cell", "build_charts", "pct", "signed_points"]

WARNING_TEXT = {
    "few_failed_traces": f"fewer than {MIN_TRACES_PER_OUTCOME} failed traces",
    "few_successful_traces": f"fewer than {MIN_TRACES_PER_OUTCOME} successful traces",
    "intervals_overlap": "95% intervals overlap",
}


DASH, MINUS, TIMES = "\u2013", "\u2212", "\u00d7"


def pct(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{100 * value:.{digits}f}%"


def signed_points(value: float | None) -> str:
    """A change of rates in percentage points, with a true minus sign: "-12.5 pts" reads as a hyphen."""
    if value is None:
        return DASH
    return f"{100 * value:+.1f} pts".replace("-", MINUS)


def _css(fraction: float) -> str:
    return f"{100 * max(0.0, min(1.0, fraction)):.2f}%"


def _axis(top: float) -> float:
    """A round axis maximum (10%, 20%, ... 100%) at or above `top`."""
    return min(1.0, max(0.1, math.ceil(top * 10 - 1e-9) / 10))


@dataclass(frozen=True)
class Bar:
    code: str
    name: str
    text: str
    title: str
    width: str
    ci_left: str = "0%"
    ci_width: str = "0%"


@dataclass(frozen=True)
class Cell:
    text: str
    title: str
    shade: str  # opacity of the accent colour, "0.000".."1.000"
    dark: bool  # white text on a dark cell
    # For a cell that opens its traces (the prevalence heatmap): how many, and the trace-list filter
    # (dimension, value) of its column; "" when the column's value cannot be filtered on (none recorded).
    count: int | None = None
    param: str = ""
    value: str = ""
    n: int | None = None  # traces behind a rate, shown in the cell when they are few (`faint`)
    faint: bool = False  # too few traces to trust the rate: drawn pale, with its n


# Below this many traces a rate is drawn faded and says its n: 1 of 1 is "100%", not a dark certainty.
SMALL_N = 5


def _bar(p: Proportion, name: str, axis: float) -> Bar:
    title = f"{p.key} {name}: {p.count} of {p.total} traces, {pct(p.rate.value)} (95% CI {pct(p.low)}{DASH}{pct(p.high)})"
    return Bar(
        p.key,
        name,
        f"{pct(p.rate.value)}  ({p.count}/{p.total})",
        title,
        _css(p.rate.value / axis),
        _css(p.low / axis),
        _css((p.high - p.low) / axis),
    )


def _cell(text: str, title: str, intensity: float, n: int | None = None) -> Cell:
    intensity = max(0.0, min(1.0, intensity))
    faint = n is not None and n < SMALL_N
    if faint:  # at most half the scale, less the fewer the traces
        intensity *= n / (2 * SMALL_N)
    shade = f"{0.08 + 0.85 * intensity:.3f}" if intensity > 0 else "0"
    return Cell(text, title, shade, intensity > 0.55 and not faint, n=n, faint=faint)


def build_charts(s: Signatures) -> dict:
    """Everything the page draws, keyed by section."""
    names = {mode.code: mode.name for mode in s.modes} | {c.code: c.name for c in s.categories}
    overall = s.prevalence[0].groups[0]
    observed = [p.key for p in overall.modes if p.count]
    return {
        "names": names,
        "observed": observed,
        "headline": _headline(s, names),
        "prevalence": _prevalence_bars(overall.modes, names),
        "categories": _prevalence_bars(overall.categories, names, keep_zero=True),
        "heatmap": _heatmap(s.prevalence[1:], observed, names),
        "per_trace": _per_trace(s),
        "contrast": _contrast_rows(s, names),
        "cooccurrence": _cooccurrence(s, observed, names),
        "vectors": _vectors(s, names),
        "positions": _positions(s, names),
        "comparison": _comparison(s, names),
    }


def _headline(s: Signatures, names: dict[str, str]) -> dict:
    """The three sentences a reader wants first: modes per failed trace, the most common mode, the most
    fatal one (see :func:`_fatal_rank`)."""
    failed_mean = next(
        (r.mean.value for r in s.modes_per_trace.rows if (r.group, r.outcome) == ("all", "failure")), None
    )
    common = max((p for p in s.prevalence[0].groups[0].modes if p.count), key=lambda p: p.count, default=None)
    fatal = sorted((row for row in s.contrast.modes if row.classification == "fatal"), key=_fatal_rank)
    headline: dict = {"failed_mean": None if failed_mean is None else f"{failed_mean:.2f}"}
    if common is not None:
        headline["common"] = {
            "code": common.key,
            "name": names[common.key],
            "rate": pct(common.rate.value, 0),
        }
    if fatal:
        top = fatal[0]
        headline["fatal"] = {
            "code": top.key,
            "name": names[top.key],
            "text": f"{pct(top.in_failed.rate.value)} of failed vs {pct(top.in_successful.rate.value)} of "
            f"successful traces ({_relative_text(top)})",
        }
    return headline


def _fatal_rank(row: ModeContrast) -> tuple:
    """Most fatal first: confident verdicts (no warning) before tentative ones, "only in failures" before
    the largest relative increase, then the most failed traces."""
    relative = row.relative_increase.value
    return (bool(row.warnings), relative is not None, -(relative or 0), -row.in_failed.count)


def _prevalence_bars(items, names: dict[str, str], keep_zero: bool = False) -> list[Bar]:
    shown = [p for p in items if p.total and (p.count or keep_zero)]
    if not shown:
        return []
    axis = _axis(max(p.high for p in shown))
    return [_bar(p, names[p.key], axis) for p in sorted(shown, key=lambda p: -p.count)]


def _heatmap(tables, observed: list[str], names: dict[str, str]) -> dict:
    """One heatmap, modes down and the groups of every dimension across (model | system | benchmark);
    a dimension with a single value is only mentioned, since its column would repeat the overall rate."""
    shown = [table for table in tables if len(table.groups) >= 2]
    single = [
        {"name": t.dimension, "value": t.groups[0].value or "(none)"} for t in tables if len(t.groups) == 1
    ]
    rates = {(t.dimension, g.value, p.key): p for t in shown for g in t.groups for p in g.modes}
    top = max((p.rate.value for (_, _, key), p in rates.items() if key in observed), default=0.0) or 1.0
    rows = []
    for key in observed:
        parts = []
        for table in shown:
            cells = []
            for g in table.groups:
                p = rates[table.dimension, g.value, key]
                title = (
                    f"{key} with {table.dimension} {g.value}: {p.count}/{p.total} = {pct(p.rate.value)} "
                    f"(95% CI {pct(p.low)}{DASH}{pct(p.high)})"
                )
                cell = _cell(pct(p.rate.value, 0), title, p.rate.value / top, n=p.total)
                cells.append(replace(cell, count=p.count, param=table.dimension, value=g.value or ""))
            parts.append(cells)
        rows.append({"code": key, "name": names[key], "parts": parts})
    dimensions = [
        {"name": t.dimension, "columns": [{"value": g.value or "(none)", "n": g.n_traces} for g in t.groups]}
        for t in shown
    ]
    return {"dimensions": dimensions, "rows": rows, "single": single, "small_n": SMALL_N}


def _per_trace(s: Signatures) -> list[dict]:
    rows = s.modes_per_trace.rows
    by_group: dict[str, dict] = {}
    for row in rows:
        by_group.setdefault(row.group, {})[row.outcome] = row
    cards = []
    for group, outcomes in by_group.items():
        failed, success = outcomes.get("failure"), outcomes.get("success")
        shares = [
            [c / r.n_traces if r and r.n_traces else 0.0 for c in (r.histogram if r else ())]
            for r in (failed, success)
        ]
        top = max((v for side in shares for v in side), default=0.0) or 1.0
        n_bins = max(len(failed.histogram) if failed else 0, len(success.histogram) if success else 0)
        bins = []
        for k in range(n_bins):
            f = shares[0][k] if k < len(shares[0]) else 0.0
            ok = shares[1][k] if k < len(shares[1]) else 0.0
            bins.append(
                {
                    "k": k,
                    "failed": _css(f / top),
                    "success": _css(ok / top),
                    "title": f"{k} modes: {pct(f, 0)} of failed, {pct(ok, 0)} of successful traces",
                }
            )
        cards.append(
            {
                "group": "All traces" if group == "all" else group,
                "failed_mean": _mean(failed),
                "failed_n": failed.n_traces if failed else 0,
                "success_mean": _mean(success),
                "success_n": success.n_traces if success else 0,
                "bins": bins,
            }
        )
    return cards


def _mean(row) -> str:
    return DASH if row is None or row.mean.value is None else f"{row.mean.value:.2f}"


def _relative_text(row: ModeContrast) -> str:
    value = row.relative_increase.value
    if value is None:
        return row.relative_increase.undefined_reason or DASH
    return f"{100 * value:+.0f}%".replace("-", MINUS)


def _contrast_rows(s: Signatures, names: dict[str, str]) -> dict:
    c = s.contrast
    shown = [row for row in c.modes if row.classification != "not_observed"]
    order = {"fatal": 0, "benign": 1, "undetermined": 2}
    shown.sort(key=lambda row: (order[row.classification], *_fatal_rank(row)))
    axis = _axis(
        max([r.in_failed.high or 0 for r in shown] + [r.in_successful.high or 0 for r in shown] + [0.1])
    )
    prior = {mode.code: mode.fatal for mode in s.modes}
    rows = [
        {
            "code": row.key,
            "name": names[row.key],
            "classification": row.classification,
            "failed": _bar(row.in_failed, names[row.key], axis) if row.in_failed.total else None,
            "success": _bar(row.in_successful, names[row.key], axis) if row.in_successful.total else None,
            "n_failed": row.in_failed.count,
            "n_successful": row.in_successful.count,
            "relative": _relative_text(row),
            "prior_fatal": prior[row.key],
            "warnings": [WARNING_TEXT[w] for w in row.warnings],
        }
        for row in shown
    ]
    return {
        "rows": rows,
        "n_failed": c.n_failed,
        "n_successful": c.n_successful,
        "n_unknown": c.n_unknown,
        "threshold": f"+{100 * FATAL_MIN_RELATIVE_INCREASE:.0f}%",
        "min_traces": MIN_TRACES_PER_OUTCOME,
        "comparable": c.n_failed > 0 and c.n_successful > 0,
    }


def _cooccurrence(s: Signatures, observed: list[str], names: dict[str, str]) -> dict:
    """Shade by Jaccard relative to the strongest pair: Jaccard indices of real modes rarely pass 0.3, and
    on an absolute 0..1 scale every cell would look the same pale blue."""
    c = s.cooccurrence
    index = {key: i for i, key in enumerate(c.keys)}
    pairs = [c.jaccard[index[a]][index[b]] or 0.0 for a in observed for b in observed if a != b]
    strongest = max(pairs, default=0.0) or 1.0
    rows = []
    for a in observed:
        cells = []
        for b in observed:
            i, j = index[a], index[b]
            both = c.both[i][j]
            if i == j:
                cells.append(Cell(str(both), f"{a}: {both} traces", "", False))
                continue
            lift, jaccard = c.lift[i][j], c.jaccard[i][j]
            title = f"{a} and {b}: {both} traces together; lift {lift:.2f}, Jaccard {jaccard:.2f}"
            cells.append(_cell(str(both) if both else "\u00b7", title, (jaccard or 0.0) / strongest))
        rows.append({"code": a, "name": names[a], "cells": cells})
    return {"keys": observed, "rows": rows}


def _vectors(s: Signatures, names: dict[str, str]) -> dict:
    v = s.vectors
    top = max((vector.count for vector in v.top), default=1)
    rows = [
        {
            "modes": [{"code": m, "name": names[m]} for m in vector.modes],
            "count": vector.count,
            "failed": vector.n_failed,
            "share": pct(vector.share, 0),
            "width": _css(vector.count / top),
        }
        for vector in v.top
    ]
    return {"rows": rows, "n_with_modes": v.n_with_modes, "n_distinct": v.n_distinct, "n_traces": v.n_traces}


def _positions(s: Signatures, names: dict[str, str]) -> dict:
    p = s.positions
    top = max(p.deciles, default=0) or 1
    deciles = [
        {
            "label": f"{10 * d}{DASH}{10 * (d + 1)}%",
            "count": n,
            "height": _css(n / top),
            "title": f"{n} evidence steps between {10 * d}% and {10 * (d + 1)}% of the trace",
        }
        for d, n in enumerate(p.deciles)
    ]
    keys = [mode.code for mode in s.modes]
    by_mode = []
    for key, row in zip(keys, p.by_mode, strict=True):
        total = sum(row)
        if total:
            cells = [
                _cell(
                    str(n) if n else "",
                    f"{key}: {n} of {total} evidence steps in {10 * d}{DASH}{10 * (d + 1)}%",
                    n / max(row),
                )
                for d, n in enumerate(row)
            ]
            by_mode.append({"code": key, "name": names[key], "total": total, "cells": cells})
    return {
        "n_points": p.n_points,
        "n_invalid": p.n_invalid,
        "deciles": deciles,
        "by_mode": by_mode,
        "agents": _agent_bars(p.agents, p.n_points, keys),
        "more_agents": max(0, len(p.agents) - 12),
        "attributed_agents": _agent_bars(p.attributed_agents, p.n_attributed, keys),
        "more_attributed_agents": max(0, len(p.attributed_agents) - 12),
        "n_attributed": p.n_attributed,
        "decile_labels": [f"{10 * d}%" for d in range(DECILES)],
    }


def _agent_bars(counts, total: int, keys: list[str]) -> list[dict]:
    top = max((a.count for a in counts), default=1)
    return [
        {
            "agent": a.agent,
            "count": a.count,
            "width": _css(a.count / top),
            "share": pct(a.count / total, 0),
            "modes": ", ".join(f"{k} {TIMES}{n}" for k, n in zip(keys, a.by_mode, strict=True) if n),
        }
        for a in counts[:12]
    ]


def _interval_text(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return DASH
    return f"{100 * low:+.1f} to {100 * high:+.1f} pts".replace("-", MINUS)


def _comparison(s: Signatures, names: dict[str, str]) -> dict | None:
    c = s.comparison
    if c is None:
        return None
    shown = [row for row in c.modes if row.a.count or row.b.count]
    bound = max([abs(v) for row in shown for v in (row.low, row.high) if v is not None] + [0.05])
    axis = min(1.0, math.ceil(bound * 20 - 1e-9) / 20)

    def at(value: float) -> float:
        return 0.5 + value / (2 * axis)

    rows = []
    for row in shown:
        defined = row.difference.value is not None
        rows.append(
            {
                "code": row.key,
                "name": names[row.key],
                "a": pct(row.a.rate.value),
                "b": pct(row.b.rate.value),
                "a_count": f"{row.a.count}/{row.a.total}",
                "b_count": f"{row.b.count}/{row.b.total}",
                "change": signed_points(row.difference.value),
                "interval": _interval_text(row.low, row.high),
                "significant": row.significant,
                "defined": defined,
                "direction": "down" if defined and row.difference.value < 0 else "up",
                "ci_left": _css(at(row.low)) if defined else "0%",
                "ci_width": _css(at(row.high) - at(row.low)) if defined else "0%",
                "point": _css(at(row.difference.value)) if defined else "50%",
            }
        )
    return {"a": c.a, "b": c.b, "n_a": c.n_a, "n_b": c.n_b, "rows": rows, "axis": pct(axis, 0)}
