"""Failure attributions that come with data (Who&When: agent, step, reason): checked against the trace.

Why a check: a team studying "who failed" reads the attribution as given, and the source can contradict
itself (Who&When Hand-Crafted/22 blames FileSurfer for step 4, which WebSurfer spoke). The import stores the
attribution unchanged and reports every such record, so the user decides; nothing is corrected silently.
"""

from __future__ import annotations

from collections.abc import Iterable

from traces.importers.records import LabelRecord
from traces.models import Step, Trace


def _same_agent(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def attribution_conflicts(trace: Trace, labels: Iterable[LabelRecord], where: str = "") -> list[str]:
    """One sentence per label whose attributed agent is not the agent of the attributed step."""
    found = []
    for label in labels:
        attribution = label.attribution or {}
        agent, step = str(attribution.get("agent") or ""), attribution.get("step")
        if not agent or not isinstance(step, int) or isinstance(step, bool):
            continue
        step_agent = Step.objects.filter(trace=trace, index=step).values_list("agent", flat=True).first()
        if step_agent is None or _same_agent(agent, step_agent):
            continue
        found.append(
            f"{where or f'trace {trace.external_id!r}'}: the attribution names {agent!r}, but step {step} "
            f"was spoken by {step_agent or '(no agent)'!r}; stored as given"
        )
    return found
