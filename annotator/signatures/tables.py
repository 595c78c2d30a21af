"""Each figure as a flat table (header + rows): the CSV downloads and the command's text output.

Long ("tidy") format on purpose: one row per measured cell loads straight into a spreadsheet, pandas or R
without reshaping, and keeps the count and the total beside every rate so a reader can recompute it.
"""

from __future__ import annotations

from collections.abc import Callable

from annotator.signatures.position import DECILES
from annotator.signatures.report import Signatures
from annotator.signatures.results import Proportion

__all__ = ["FIGURES", "figure_table"]

Row = tuple[object, ...]
Table = tuple[tuple[str, ...], list[Row]]


def figure_table(signatures: Signatures, figure: str) -> Table:
    """(header, rows) of `figure`, one of :data:`FIGURES`; KeyError for an unknown figure."""
    return FIGURES[figure](signatures)


def _names(s: Signatures) -> dict[str, str]:
    return {mode.code: mode.name for mode in s.modes} | {c.code: c.name for c in s.categories}


def _rate(p: Proportion) -> Row:
    return (p.count, p.total, p.rate.value, p.low, p.high)


def prevalence(s: Signatures) -> Table:
    names = _names(s)
    header = ("dimension", "group", "kind", "code", "name", "count", "traces", "rate", "ci_low", "ci_high")
    rows = [
        (table.dimension, group.value, kind, p.key, names[p.key], *_rate(p))
        for table in s.prevalence
        for group in table.groups
        for kind, items in (("mode", group.modes), ("category", group.categories))
        for p in items
    ]
    return header, rows


def modes_per_trace(s: Signatures) -> Table:
    header = ("group", "outcome", "traces", "mean_modes", "modes_in_trace", "traces_with_that_many")
    rows = [
        (row.group, row.outcome, row.n_traces, row.mean.value, k, count)
        for row in s.modes_per_trace.rows
        for k, count in enumerate(row.histogram)
    ]
    return header, rows


def benign_fatal(s: Signatures) -> Table:
    fatal_prior = {mode.code: mode.fatal for mode in s.modes}
    names = _names(s)
    header = (
        "code",
        "name",
        "failed_with_mode",
        "failed_traces",
        "rate_failed",
        "failed_ci_low",
        "failed_ci_high",
        "successful_with_mode",
        "successful_traces",
        "rate_successful",
        "successful_ci_low",
        "successful_ci_high",
        "relative_increase",
        "relative_increase_note",
        "classification",
        "taxonomy_says_fatal",
        "warnings",
    )
    rows = [
        (
            row.key,
            names[row.key],
            *_rate(row.in_failed),
            *_rate(row.in_successful),
            row.relative_increase.value,
            row.relative_increase.undefined_reason or "",
            row.classification,
            fatal_prior[row.key],
            " ".join(row.warnings),
        )
        for row in s.contrast.modes
    ]
    return header, rows


def cooccurrence(s: Signatures) -> Table:
    c = s.cooccurrence
    header = ("mode_a", "mode_b", "traces_with_both", "lift", "jaccard")
    n = len(c.keys)
    rows = [
        (c.keys[i], c.keys[j], c.both[i][j], c.lift[i][j], c.jaccard[i][j])
        for i in range(n)
        for j in range(i, n)
        if c.both[i][i] and c.both[j][j]
    ]
    return header, rows


def vectors(s: Signatures) -> Table:
    header = ("rank", "modes", "traces", "failed_traces", "share_of_traces_with_modes")
    rows = [
        (rank, " + ".join(v.modes), v.count, v.n_failed, v.share) for rank, v in enumerate(s.vectors.top, 1)
    ]
    return header, rows


def positions(s: Signatures) -> Table:
    header = ("mode", "decile", "relative_position", "evidence_steps")
    keys = [mode.code for mode in s.modes]
    spans = [f"{10 * d}-{10 * (d + 1)}%" for d in range(DECILES)]
    rows: list[Row] = [("all", d, spans[d], count) for d, count in enumerate(s.positions.deciles)]
    rows += [
        (keys[j], d, spans[d], count)
        for j, row in enumerate(s.positions.by_mode)
        if any(row)
        for d, count in enumerate(row)
    ]
    return header, rows


def agents(s: Signatures) -> Table:
    keys = [mode.code for mode in s.modes]
    header = ("agent", "evidence_steps", *keys)
    return header, [(a.agent, a.count, *a.by_mode) for a in s.positions.agents]


def attributed_agents(s: Signatures) -> Table:
    """The same evidence steps counted by the agent their label's attribution names (Who&When)."""
    keys = [mode.code for mode in s.modes]
    header = ("attributed_agent", "evidence_steps", *keys)
    return header, [(a.agent, a.count, *a.by_mode) for a in s.positions.attributed_agents]


def comparison(s: Signatures) -> Table:
    names = _names(s)
    header = (
        "code",
        "name",
        "batch_a",
        "a_count",
        "a_traces",
        "a_rate",
        "a_ci_low",
        "a_ci_high",
        "batch_b",
        "b_count",
        "b_traces",
        "b_rate",
        "b_ci_low",
        "b_ci_high",
        "change_b_minus_a",
        "change_ci_low",
        "change_ci_high",
        "significant",
    )
    c = s.comparison
    if c is None:
        return header, []
    rows = [
        (
            row.key,
            names[row.key],
            c.a,
            *_rate(row.a),
            c.b,
            *_rate(row.b),
            row.difference.value,
            row.low,
            row.high,
            row.significant,
        )
        for row in c.modes
    ]
    return header, rows


FIGURES: dict[str, Callable[[Signatures], Table]] = {
    "prevalence": prevalence,
    "modes_per_trace": modes_per_trace,
    "benign_fatal": benign_fatal,
    "cooccurrence": cooccurrence,
    "vectors": vectors,
    "positions": positions,
    "agents": agents,
    "attributed_agents": attributed_agents,
    "comparison": comparison,
}
