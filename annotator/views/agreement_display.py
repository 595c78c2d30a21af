"""The report JSON arranged for the page and the CSV: tables of rows, not logic in templates."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from annotator.csvsafe import csv_writer
from annotator.search.filters import MAX_RATERS

STATISTICS = (
    ("observed_agreement", "observed agreement"),
    ("cohen_kappa", "Cohen's kappa"),
    ("fleiss_kappa", "Fleiss' kappa"),
    ("krippendorff_alpha", "Krippendorff's alpha"),
    ("gwet_ac1", "Gwet's AC1"),
    ("pabak", "PABAK"),
)


@dataclass
class Matrix:
    """A rater x rater heatmap: `cells[i][j]` is the kappa_macro estimate dict (None on the diagonal)."""

    raters: list[str]
    cells: list[list[dict[str, Any] | None]] = field(default_factory=list)
    shared: list[list[int | None]] = field(default_factory=list)


def pair_matrix(results: dict[str, Any]) -> Matrix:
    raters = [r["username"] for r in results["raters"]]
    index = {name: k for k, name in enumerate(raters)}
    cells: list[list[dict[str, Any] | None]] = [[None] * len(raters) for _ in raters]
    shared: list[list[int | None]] = [[None] * len(raters) for _ in raters]
    for pair in results["pairs"]:
        a, b = index[pair["a"]], index[pair["b"]]
        cells[a][b] = cells[b][a] = pair["kappa_macro"]
        shared[a][b] = shared[b][a] = pair["n_shared_items"]
    return Matrix(raters, cells, shared)


def undefined_notes(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(mode, statistic, reason) for every undefined headline statistic, grouped by reason so a page of
    "no variation" reads as one explanation per mode rather than a wall of blanks."""
    notes = []
    shown = ("observed_agreement", results["kappa_statistic"], "krippendorff_alpha", "gwet_ac1", "pabak")
    names = dict(STATISTICS)
    for row in results["modes"]:
        for key in shown:
            estimate = row[key]
            if estimate["value"] is None:
                notes.append((row["code"], names[key], estimate["undefined_reason"]))
    return notes


def histogram(results: dict[str, Any]) -> list[dict[str, Any]]:
    bins = results["per_item"]["by_disputed_modes"]
    top = max((b["count"] for b in bins), default=0) or 1
    total = sum(b["count"] for b in bins) or 1
    return [{**b, "width": round(100 * b["count"] / top), "share": b["count"] / total} for b in bins]


def confusion(results: dict[str, Any]) -> dict[str, Any] | None:
    primary = results.get("primary")
    if not primary or not primary.get("confusion"):
        return None
    matrix = primary["confusion"]["matrix"]
    keep = [k for k in range(len(matrix)) if sum(matrix[k]) or sum(row[k] for row in matrix)]
    return {
        "rows": primary["confusion"]["rows"],
        "columns": primary["confusion"]["columns"],
        "categories": [primary["categories"][k] for k in keep],
        "matrix": [[matrix[i][j] for j in keep] for i in keep],
        "max": max((max(row) for row in matrix), default=0),
        "hidden": len(matrix) - len(keep),
    }


def mode_names(results: dict[str, Any]) -> dict[str, str]:
    return {row["code"]: row["name"] for row in results["modes"]}


def report_csv(results: dict[str, Any]) -> str:
    """One row per (table, mode): the fine table, the coarse roll-up, and every rater pair's Cohen's kappa."""
    buffer = io.StringIO()
    writer = csv_writer(buffer)
    raters = [r["username"] for r in results["raters"]]
    writer.writerow(
        [
            "table",
            "mode",
            "name",
            "category",
            "n_items",
            *[f"prevalence:{name}" for name in raters],
            *(f"{key}{suffix}" for key, _ in STATISTICS for suffix in ("", "_undefined")),
            "kappa_ci_statistic",
            "kappa_ci_low",
            "kappa_ci_high",
            "alpha_ci_low",
            "alpha_ci_high",
        ]
    )

    def value(e: dict[str, Any]) -> list[Any]:
        return ["" if e["value"] is None else repr(e["value"]), e["undefined_reason"] or ""]

    for table, rows in (("modes", results["modes"]), ("coarse", results.get("coarse_modes") or [])):
        for row in rows:
            writer.writerow(
                [
                    table,
                    row["code"],
                    row["name"],
                    row["category"],
                    row["n_items"],
                    *[
                        "" if row["prevalence"].get(name) is None else repr(row["prevalence"][name])
                        for name in raters
                    ],
                    *(v for key, _ in STATISTICS for v in value(row[key])),
                    row["kappa_ci"]["statistic"],
                    _num(row["kappa_ci"]["low"]),
                    _num(row["kappa_ci"]["high"]),
                    _num(row["alpha_ci"]["low"]),
                    _num(row["alpha_ci"]["high"]),
                ]
            )
    names = mode_names(results)
    for pair in results["pairs"]:
        for row in pair["modes"]:
            blank = [""] * len(raters)
            writer.writerow(
                [
                    f"pair:{pair['a']}|{pair['b']}",
                    row["code"],
                    names.get(row["code"], ""),
                    "",
                    row["n_items"],
                    *blank,
                    *(
                        v
                        for key, _ in STATISTICS
                        for v in (value(row["cohen_kappa"]) if key == "cohen_kappa" else ["", ""])
                    ),
                    "cohen_kappa",
                    _num(row["kappa_ci"]["low"]),
                    _num(row["kappa_ci"]["high"]),
                    "",
                    "",
                ]
            )
    return buffer.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else repr(value)


# Report filters the trace list can say too (batch; `where k=v` is the list's `meta=k:v`); `annotators` only
# picks which raters the report compares, and a pair names its two. Others (dates, a round, a view) select
# annotations the list cannot: their cells open nothing rather than a list that does not add up.
_DRILLABLE = frozenset({"batch", "where", "annotators"})


def drill_query(filters: dict[str, Any]) -> str | None:
    """The trace-list query of the report's filters ("" for none, "&batch=..." otherwise), or None when
    the report's cells cannot open their traces (see _DRILLABLE)."""
    if set(filters) - _DRILLABLE:
        return None
    query = QueryDict(mutable=True)
    if filters.get("batch"):
        query["batch"] = filters["batch"]
    where = filters.get("where") or []
    query.setlist("meta", [":".join(item.split("=", 1)) for item in where if "=" in item])
    encoded = query.urlencode()
    return f"&{encoded}" if encoded else ""


def mode_disagreements(results: dict[str, Any]) -> dict[str, int]:
    """Mode code -> the report's traces where one rater chose it and another did not (the main table's
    "Disagree" column); {} for a report stored before the count existed with other than two raters."""
    modes = results.get("modes") or []
    if modes and all("n_disagree" in m for m in modes):
        return {m["code"]: m["n_disagree"] for m in modes}
    pairs = results.get("pairs") or []
    if len(pairs) != 1:
        return {}
    return {m["code"]: m["n_disagree"] for m in pairs[0]["modes"] if "n_disagree" in m}


def disagree_raters(results: dict[str, Any]) -> tuple[str | None, str]:
    """The trace-list parameter naming the report's raters for a "Disagree" cell (`pair=a,b` for two,
    `raters=a,b,c` for more), or None and why the cells open nothing. Naming every rater of the report is
    what makes the list count the cell's traces: `disputed_mode` alone compares the overlap's raters."""
    names = [r["username"] for r in results.get("raters") or []]
    if len(names) < 2:
        return None, "Agreement needs two raters"
    if len(names) > MAX_RATERS:
        return None, f"The trace list compares at most {MAX_RATERS} raters at once"
    query = QueryDict(mutable=True)
    query["pair" if len(names) == 2 else "raters"] = ",".join(names)
    return query.urlencode(safe=","), ""
