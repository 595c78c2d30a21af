"""Figure 5: where in a trace the failures show, by relative position (deciles) and by agent.

An evidence point is one step an annotator (or the gold label) points at for a mode. Its relative position
is ``step / step_count`` (steps are numbered from 0), binned into deciles with integer arithmetic
(``10 * step // step_count``) so that a step exactly on a boundary never lands in the neighbouring bin
through floating-point rounding.
"""

from __future__ import annotations

import numpy as np

from annotator.signatures.inputs import SignatureInput
from annotator.signatures.results import AgentCount, EvidencePositions

__all__ = ["DECILES", "UNKNOWN_AGENT", "decile_counts", "evidence_positions"]

DECILES = 10
UNKNOWN_AGENT = "(unnamed agent)"


def decile_counts(data: SignatureInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(which evidence points can be placed, their modes, modes x deciles counts)."""
    ev = data.evidence
    n_modes = len(data.modes)
    valid = (ev.step >= 0) & (ev.step < ev.step_count)
    decile = (DECILES * ev.step[valid]) // ev.step_count[valid]
    mode = ev.mode[valid]
    by_mode = np.bincount(mode * DECILES + decile, minlength=n_modes * DECILES).reshape(n_modes, DECILES)
    return valid, mode, by_mode


def evidence_positions(data: SignatureInput) -> EvidencePositions:
    """Decile histogram overall and per mode, and counts per agent (most frequent first): by the agent of the
    evidence step, and by the agent an imported attribution names (points with an attribution only).

    Steps outside ``[0, step_count)`` (a stale index, a trace re-imported shorter) cannot be placed; they
    are counted in ``n_invalid`` rather than silently clipped into the first or last decile.
    """
    ev = data.evidence
    n_modes = len(data.modes)
    valid, mode, by_mode = decile_counts(data)
    agents = _by_agent(ev.agent.codes[valid], ev.agent.names, mode, n_modes)
    attributed: tuple[AgentCount, ...] = ()
    n_attributed = 0
    if ev.attributed is not None:
        names = ev.attributed.names
        codes = ev.attributed.codes[valid]
        has = (
            np.array([bool(name) for name in names], dtype=bool)[codes] if len(codes) else codes.astype(bool)
        )
        n_attributed = int(has.sum())
        attributed = _by_agent(codes[has], names, mode[has], n_modes)
    return EvidencePositions(
        n_points=int(valid.sum()),
        n_invalid=int((~valid).sum()),
        deciles=tuple(int(c) for c in by_mode.sum(axis=0)),
        by_mode=tuple(tuple(int(c) for c in row) for row in by_mode),
        agents=agents,
        attributed_agents=attributed,
        n_attributed=n_attributed,
    )


def _by_agent(agent: np.ndarray, agent_names: tuple[str, ...], mode: np.ndarray, n_modes: int):
    n_agents = len(agent_names)
    per_agent = np.bincount(agent * n_modes + mode, minlength=n_agents * n_modes).reshape(n_agents, n_modes)
    totals = per_agent.sum(axis=1)
    names = [name or UNKNOWN_AGENT for name in agent_names]
    order = sorted((a for a in range(n_agents) if totals[a]), key=lambda a: (-totals[a], names[a]))
    return tuple(AgentCount(names[a], int(totals[a]), tuple(int(c) for c in per_agent[a])) for a in order)
