"""The arrays the signature analyses read, checked once so every figure can trust their shapes.

Why arrays rather than model instances: the figures are counts over every trace of a project (100,000 and
more), and a (traces x modes) 0/1 matrix turns each of them into one or two vectorised reductions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["FAILURE", "SUCCESS", "UNKNOWN", "Evidence", "Grouping", "ModeInfo", "SignatureInput", "factorize"]

# Outcome codes (int8): what a trace's run ended as. Unknown outcomes count in prevalence, never in the
# failed-versus-successful figures.
FAILURE = 1
SUCCESS = 0
UNKNOWN = -1


@dataclass(frozen=True, slots=True)
class ModeInfo:
    """One column of the label matrix: a failure mode of the taxonomy, in taxonomy order."""

    code: str
    name: str
    category: str = ""
    category_name: str = ""
    fatal: bool = (
        False  # the taxonomy's prior ("usually predicts a failed run"), shown beside what we observe
    )


@dataclass(frozen=True, slots=True)
class Grouping:
    """A categorical label per row as dense codes plus the names they stand for (names sorted)."""

    codes: NDArray[np.intp]
    names: tuple[str, ...]

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 1:
            raise ValueError("Grouping codes must be one-dimensional")
        if codes.size and (codes.min() < 0 or codes.max() >= len(self.names)):
            raise ValueError("Grouping codes must index names")

    def __len__(self) -> int:
        return len(self.codes)

    def take(self, rows: NDArray[np.intp] | NDArray[np.bool_]) -> Grouping:
        """The same grouping for a subset (or a reordering) of the rows."""
        return Grouping(self.codes[rows], self.names)

    def code_of(self, name: str) -> int | None:
        """The code of `name`, or None when no row carries it."""
        try:
            return self.names.index(name)
        except ValueError:
            return None


def factorize(values: ArrayLike | Sequence[str]) -> Grouping:
    """Dense codes for string labels, names sorted.

    A list or tuple (what a database cursor returns) goes through a dict: one hash per value, several
    times faster than building a unicode array and sorting it, and the sort then only touches the few
    distinct names. A numpy array goes through ``np.unique``.
    """
    if isinstance(values, np.ndarray):
        if values.size == 0:
            return Grouping(np.zeros(0, dtype=np.intp), ())
        names, codes = np.unique(values.astype(str), return_inverse=True)
        return Grouping(codes.astype(np.intp).reshape(-1), tuple(str(name) for name in names))
    index: dict[str, int] = {}
    first_seen = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.intp)
    names = sorted(index, key=str)
    remap = np.empty(len(names), dtype=np.intp)
    remap[[index[name] for name in names]] = np.arange(len(names))
    return Grouping(remap[first_seen] if len(names) else first_seen, tuple(str(name) for name in names))


@dataclass(frozen=True, slots=True)
class Evidence:
    """Evidence points: one row per (labelled trace, mode, step pointed at).

    ``trace`` indexes rows of the label matrix and ``mode`` its columns; ``step_count`` is the length of the
    trace the step belongs to, so the relative position is ``step / step_count``. ``agent`` is the agent of
    the step (``Step.agent``); a step the trace does not have carries the agent name ``""``. ``attributed``
    is the agent an imported attribution names for the label (Who&When's ``mistake_agent``), ``""`` where
    the label carries none (None: the caller knows of no attributions).
    """

    trace: NDArray[np.intp]
    mode: NDArray[np.intp]
    step: NDArray[np.int64]
    step_count: NDArray[np.int64]
    agent: Grouping
    attributed: Grouping | None = None

    def __post_init__(self) -> None:
        n = len(self.trace)
        if not (len(self.mode) == len(self.step) == len(self.step_count) == len(self.agent) == n):
            raise ValueError("Evidence arrays must all have one entry per evidence point")
        if self.attributed is not None and len(self.attributed) != n:
            raise ValueError("Evidence arrays must all have one entry per evidence point")

    @classmethod
    def empty(cls) -> Evidence:
        none = np.zeros(0, dtype=np.intp)
        return cls(none, none, none.astype(np.int64), none.astype(np.int64), Grouping(none, ()))

    def __len__(self) -> int:
        return len(self.trace)


@dataclass(frozen=True)
class SignatureInput:
    """Everything the figures need about a set of labelled traces.

    ``labels[i, j]`` is 1 when trace ``i`` carries mode ``j`` in the chosen label source. ``groups`` are the
    dimensions prevalence is broken down by (model, system, benchmark); ``batch`` drives the before/after
    comparison. ``selection`` marks the traces the figures describe: rows outside it are only there because
    the comparison names a batch the filters leave out (None: every row is selected).
    """

    labels: NDArray[np.bool_]
    outcome: NDArray[np.int8]
    modes: tuple[ModeInfo, ...]
    groups: Mapping[str, Grouping] = field(default_factory=dict)
    batch: Grouping | None = None
    evidence: Evidence = field(default_factory=Evidence.empty)
    selection: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        labels = self.labels
        if labels.ndim != 2 or labels.shape[1] != len(self.modes):
            raise ValueError(f"labels must be (n_traces, {len(self.modes)}), got {labels.shape}")
        n = labels.shape[0]
        if self.outcome.shape != (n,):
            raise ValueError("outcome must have one entry per trace")
        if not np.isin(self.outcome, (FAILURE, SUCCESS, UNKNOWN)).all():
            raise ValueError("outcome codes must be FAILURE (1), SUCCESS (0) or UNKNOWN (-1)")
        for name, grouping in {**self.groups, "batch": self.batch}.items():
            if grouping is not None and len(grouping) != n:
                raise ValueError(f"grouping {name!r} must have one entry per trace")
        if self.selection is not None and self.selection.shape != (n,):
            raise ValueError("selection must have one entry per trace")
        ev = self.evidence
        if len(ev) and (
            ev.trace.max() >= n or ev.mode.max() >= len(self.modes) or min(ev.trace.min(), ev.mode.min()) < 0
        ):
            raise ValueError("evidence must index rows and columns of the label matrix")

    @property
    def n_traces(self) -> int:
        return int(self.labels.shape[0])

    @cached_property
    def labels_float(self) -> NDArray[np.float64]:
        """The label matrix as float64, converted once: every count is a BLAS product over it."""
        return self.labels.astype(np.float64)

    @cached_property
    def category_matrix(self) -> tuple[tuple[tuple[str, str], ...], NDArray[np.bool_]]:
        """((code, name) per category in taxonomy order, the traces x categories matrix): a trace shows a
        category when it carries any of its modes. Modes without a category belong to none."""
        names: dict[str, str] = {}
        for mode in self.modes:
            if mode.category:
                names.setdefault(mode.category, mode.category_name or mode.category)
        index = {code: i for i, code in enumerate(names)}
        member = np.zeros((len(self.modes), len(names)), dtype=np.float64)
        for j, mode in enumerate(self.modes):
            if mode.category:
                member[j, index[mode.category]] = 1.0
        return tuple(names.items()), (self.labels_float @ member) > 0

    def selected(self) -> SignatureInput:
        """The same input restricted to ``selection`` (itself when everything is selected)."""
        if self.selection is None or self.selection.all():
            return self
        keep = np.flatnonzero(self.selection)
        new_index = np.full(self.n_traces, -1, dtype=np.intp)
        new_index[keep] = np.arange(len(keep))
        ev = self.evidence
        ev_keep = self.selection[ev.trace]
        evidence = Evidence(
            new_index[ev.trace[ev_keep]],
            ev.mode[ev_keep],
            ev.step[ev_keep],
            ev.step_count[ev_keep],
            ev.agent.take(ev_keep),
            None if ev.attributed is None else ev.attributed.take(ev_keep),
        )
        return SignatureInput(
            labels=self.labels[keep],
            outcome=self.outcome[keep],
            modes=self.modes,
            groups={name: g.take(keep) for name, g in self.groups.items()},
            batch=None if self.batch is None else self.batch.take(keep),
            evidence=evidence,
        )
