"""Markdown for the dataset card: tables whose cells stay on one line, counts with their noun, and the
agreement report's estimates, intervals and prevalence as text ("undefined" with its reason, "-" for none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__ = [
    "cell",
    "ci_level",
    "counted",
    "estimate",
    "estimate_value",
    "interval",
    "mean_prevalence",
    "most_common_rows",
    "oneline",
    "table",
]


def counted(count: int, noun: str, plural: str = "") -> str:
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def most_common_rows(counter: Counter, limit: int = 20) -> list[list[str]]:
    rows = [[str(k), f"{v:,}"] for k, v in counter.most_common(limit)]
    if len(counter) > limit:
        rows.append(
            [f"({len(counter) - limit} more)", f"{sum(v for _, v in counter.most_common()[limit:]):,}"]
        )
    return rows


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    if not rows:
        return "_(none)_"
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def cell(value: Any) -> str:
    return oneline(str(value)).replace("|", "\\|")


def oneline(text: str) -> str:
    return " ".join(str(text).split())


def estimate_value(estimate: Any) -> float | None:
    return estimate.get("value") if isinstance(estimate, dict) else None


def estimate(estimate: Any) -> str:
    if not isinstance(estimate, dict):
        return "-"
    if estimate.get("value") is None:
        code = estimate.get("undefined_code")
        return f"undefined ({code.replace('_', ' ')})" if code else "undefined"
    return f"{estimate['value']:.3f}"


def interval(ci: dict[str, Any]) -> str:
    if ci.get("low") is None or ci.get("high") is None:
        return "-"
    return f"[{ci['low']:.3f}, {ci['high']:.3f}]"


def ci_level(results: dict[str, Any]) -> str:
    level = (results.get("settings") or {}).get("ci_level") or 0.95
    return f"{round(level * 100)}%"


def mean_prevalence(prevalence: Any) -> str:
    if not isinstance(prevalence, dict):
        return "-"
    values = [v for v in prevalence.values() if isinstance(v, int | float)]
    return f"{sum(values) / len(values):.3f}" if values else "-"
