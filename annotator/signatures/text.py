"""The figures as plain-text tables for a terminal (``manage.py signatures`` without ``--json``)."""

from __future__ import annotations

from annotator.signatures.charts import WARNING_TEXT, pct, signed_points
from annotator.signatures.report import Signatures

__all__ = ["render_text"]


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    cells = [tuple(str(c) for c in row) for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _ci(p) -> str:
    return f"{pct(p.low)} - {pct(p.high)}" if p.low is not None else "-"


def render_text(s: Signatures, source: str) -> str:
    """Every figure, in the order of the page; rows of modes nobody chose are left out."""
    names = {mode.code: mode.name for mode in s.modes}
    out = [
        f"{s.n_traces} traces ({s.n_failed} failed, {s.n_successful} successful, {s.n_unknown} unknown), "
        f"labels from {source}",
    ]
    overall = s.prevalence[0].groups[0]
    observed = [p.key for p in overall.modes if p.count]
    rows = [
        (p.key, names[p.key], f"{p.count}/{p.total}", pct(p.rate.value), _ci(p))
        for p in overall.modes
        if p.count
    ]
    out += ["", "MODE PREVALENCE", _table(("mode", "name", "traces", "rate", "95% CI (Wilson)"), rows)]
    for table in s.prevalence[1:]:
        if len(table.groups) < 2:
            continue
        header = ("mode", *(g.value or "(none)" for g in table.groups))
        rows = [
            (key, *(pct(next(p for p in g.modes if p.key == key).rate.value) for g in table.groups))
            for key in observed
        ]
        out += ["", f"PREVALENCE BY {table.dimension.upper()}", _table(header, rows)]
    rows = [
        (
            r.group,
            r.outcome,
            r.n_traces,
            "-" if r.mean.value is None else f"{r.mean.value:.2f}",
            " ".join(map(str, r.histogram)),
        )
        for r in s.modes_per_trace.rows
    ]
    out += [
        "",
        "MODES PER TRACE",
        _table(("group", "outcome", "traces", "mean", "histogram (0, 1, 2, ... modes)"), rows),
    ]
    c = s.contrast
    rows = [
        (
            row.key,
            names[row.key],
            f"{row.in_failed.count}/{row.in_failed.total}",
            pct(row.in_failed.rate.value),
            f"{row.in_successful.count}/{row.in_successful.total}",
            pct(row.in_successful.rate.value),
            "-"
            if row.relative_increase.value is None and row.relative_increase.undefined_reason is None
            else (
                row.relative_increase.undefined_reason
                if row.relative_increase.value is None
                else f"{100 * row.relative_increase.value:+.0f}%"
            ),
            row.classification,
            "; ".join(WARNING_TEXT[w] for w in row.warnings),
        )
        for row in c.modes
        if row.classification != "not_observed"
    ]
    out += [
        "",
        f"BENIGN OR FATAL (fatal: +{100 * c.fatal_min_relative_increase:.0f}% or more in failed traces, or only there)",
        _table(
            (
                "mode",
                "name",
                "failed",
                "rate",
                "successful",
                "rate",
                "relative increase",
                "verdict",
                "warnings",
            ),
            rows,
        ),
    ]
    co = s.cooccurrence
    index = {key: i for i, key in enumerate(co.keys)}
    pairs = [
        (
            a,
            b,
            co.both[index[a]][index[b]],
            f"{co.lift[index[a]][index[b]]:.2f}",
            f"{co.jaccard[index[a]][index[b]]:.2f}",
        )
        for n, a in enumerate(observed)
        for b in observed[n + 1 :]
        if co.both[index[a]][index[b]]
    ]
    pairs.sort(key=lambda row: -row[2])
    out += [
        "",
        "CO-OCCURRENCE (pairs, most frequent first)",
        _table(("mode", "mode", "traces", "lift", "jaccard"), pairs[:15]),
    ]
    rows = [
        (rank, " + ".join(v.modes), v.count, v.n_failed, pct(v.share))
        for rank, v in enumerate(s.vectors.top, 1)
    ]
    out += ["", "MOST COMMON FAILURE VECTORS", _table(("#", "modes", "traces", "failed", "share"), rows)]
    p = s.positions
    rows = [(f"{10 * d}-{10 * (d + 1)}%", n) for d, n in enumerate(p.deciles)]
    out += [
        "",
        f"EVIDENCE POSITION ({p.n_points} steps, {p.n_invalid} outside their trace)",
        _table(("position", "steps"), rows),
    ]
    rows = [(a.agent, a.count) for a in p.agents]
    out += ["", "EVIDENCE BY THE EVIDENCE STEP'S AGENT", _table(("agent", "steps"), rows)]
    if p.n_attributed:
        rows = [(a.agent, a.count) for a in p.attributed_agents]
        out += [
            "",
            f"EVIDENCE BY ATTRIBUTED AGENT ({p.n_attributed} steps whose label names an agent)",
            _table(("agent", "steps"), rows),
        ]
    if s.comparison is not None:
        cmp = s.comparison
        rows = [
            (
                row.key,
                pct(row.a.rate.value),
                pct(row.b.rate.value),
                signed_points(row.difference.value),
                f"{signed_points(row.low)} to {signed_points(row.high)}",
                "yes" if row.significant else "",
            )
            for row in cmp.modes
            if row.a.count or row.b.count
        ]
        out += [
            "",
            f"COMPARISON {cmp.a} (n={cmp.n_a}) -> {cmp.b} (n={cmp.n_b}), Newcombe 95% interval",
            _table(("mode", cmp.a, cmp.b, "change", "95% CI", "significant"), rows),
        ]
    return "\n".join(out) + "\n"
