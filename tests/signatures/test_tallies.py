"""The figures computed from counts equal the figure functions reading the traces, and counts of traces
added or taken out equal the counts of the resulting set (what the incremental refresh relies on)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from annotator.signatures import Evidence, Grouping, ModeInfo, SignatureInput, compute_signatures
from annotator.signatures.report import direct_signatures, signatures_from
from annotator.signatures.splice import TraceRows, pack, rows_of, splice, take, unpack
from annotator.signatures.tallies import combine, tally


def random_rows(seed: int) -> TraceRows:
    """Random traces: outcomes unknown too, modes with and without a category, evidence outside the
    trace, unnamed agents, attributions on half the inputs, a selection on some."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(0, 40)), int(rng.integers(1, 6))
    modes = tuple(
        ModeInfo(f"FM-{j}", f"m{j}", f"C{j % 2}" if j % 3 else "", f"cat{j % 2}", j % 2 == 0)
        for j in range(m)
    )
    labels = rng.random((n, m)) < 0.3
    rows, cols = np.nonzero(labels)
    n_points = len(rows)
    attributed = Grouping(rng.integers(0, 2, n_points).astype(np.intp), ("", "x")) if seed % 2 else None
    evidence = Evidence(
        rows.astype(np.intp),
        cols.astype(np.intp),
        rng.integers(-1, 7, n_points).astype(np.int64),
        rng.integers(1, 6, n_points).astype(np.int64),
        Grouping(rng.integers(0, 3, n_points).astype(np.intp), ("", "coder", "planner")),
        attributed,
    )

    def grouping(names: tuple[str, ...]) -> Grouping:
        return Grouping(rng.integers(0, len(names), n).astype(np.intp), names)

    data = SignatureInput(
        labels=labels,
        outcome=rng.integers(-1, 2, n).astype(np.int8),
        modes=modes,
        groups={"model": grouping(("a", "b", "c")), "system": grouping(("x", "y"))} if seed % 3 else {},
        batch=grouping(("after", "before", "z")) if seed % 5 else None,
        evidence=evidence,
        selection=(rng.random(n) < 0.7) if seed % 4 == 0 else None,
    )
    return TraceRows(np.arange(n, dtype=np.int64) * 3 + 1, data)


@pytest.mark.parametrize("seed", range(60))
def test_figures_from_counts_equal_the_figures_of_the_traces(seed):
    data = random_rows(seed).data
    compare = ("before", "after") if seed % 2 else None
    assert compute_signatures(data, compare=compare) == direct_signatures(data, compare=compare)


@pytest.mark.parametrize("seed", range(60))
def test_counts_updated_by_changed_traces_equal_the_counts_of_the_new_set(seed):
    rng = np.random.default_rng(1000 + seed)
    stored = random_rows(seed)
    touched = rng.choice(stored.ids, size=min(len(stored.ids), 5), replace=False)
    old = take(stored, touched)
    # The touched traces now: modes flipped (evidence only for modes still chosen), outcome and batch
    # changed, some gone (their last annotation deleted).
    d = old.data
    labels = d.labels ^ (rng.random(d.labels.shape) < 0.3)
    ev = d.evidence
    still = labels[ev.trace, ev.mode]
    evidence = Evidence(
        ev.trace[still],
        ev.mode[still],
        ev.step[still],
        ev.step_count[still],
        ev.agent.take(still),
        None if ev.attributed is None else ev.attributed.take(still),
    )
    changed = replace(
        d, labels=labels, outcome=rng.integers(-1, 2, len(labels)).astype(np.int8), evidence=evidence
    )
    if d.batch is not None:
        changed = replace(
            changed,
            batch=Grouping(rng.integers(0, 3, len(labels)).astype(np.intp), ("after", "before", "new")),
        )
    current = take(TraceRows(old.ids, changed), old.ids[rng.random(len(old.ids)) < 0.8])
    after = splice(stored, touched, current)
    updated = combine(combine(tally(stored.data), tally(old.data), sign=-1), tally(current.data))
    compare = ("before", "after")
    assert signatures_from(updated, compare=compare) == compute_signatures(after.data, compare=compare)
    assert signatures_from(updated, compare=compare) == direct_signatures(after.data, compare=compare)


@pytest.mark.parametrize("seed", range(20))
def test_stored_rows_read_back_equal(seed):
    rows = random_rows(seed)
    blob = pack(rows)
    assert compute_signatures(unpack(blob).data) == compute_signatures(rows.data)
    some = rows.ids[::2]
    assert compute_signatures(rows_of(blob, some).data) == compute_signatures(take(rows, some).data)
