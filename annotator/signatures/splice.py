"""Stored figure inputs, updated for the traces that changed instead of reloaded (pure numpy; no Django).

Why: every figure is a sum over traces (counts per group, per outcome, per pair of modes, per exact mode
set, per evidence decile and agent, per batch), so it does not depend on the order of the rows nor on the
other traces. After a few annotations change, the stored input of a million traces stays right for every
trace but the changed ones: their rows are cut out and their current rows (a restricted load) appended.
Names no row uses any more are dropped, as a full load would never have seen them.

``TraceRows`` is a :class:`SignatureInput` with the trace id of each row; ``pack``/``unpack`` turn it into
bytes with the smallest dtypes that hold the values (a million traces x 14 modes: ~20 MB).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from annotator.signatures.inputs import Evidence, Grouping, ModeInfo, SignatureInput

__all__ = ["TraceRows", "describe", "pack", "rows_of", "splice", "take", "unpack"]


@dataclass(frozen=True)
class TraceRows:
    """A figure input whose row ``i`` is the trace ``ids[i]`` (any order: the figures do not depend on it)."""

    ids: NDArray[np.int64]
    data: SignatureInput

    def __post_init__(self) -> None:
        if self.ids.shape != (self.data.n_traces,):
            raise ValueError("TraceRows needs one trace id per row")


def splice(stored: TraceRows, touched: NDArray[np.int64], current: TraceRows) -> TraceRows:
    """`stored` with the rows of the `touched` traces replaced by `current` (their rows as loaded now; a
    touched trace missing from `current` no longer counts, e.g. its only annotation was deleted)."""
    if not np.isin(current.ids, touched).all():
        raise ValueError("every current row must be one of the touched traces")
    old, new = stored.data, current.data
    keep = ~np.isin(stored.ids, touched)
    n_kept = int(keep.sum())
    new_index = np.cumsum(keep) - 1  # row of each kept row after the cut
    ev_old, ev_new = old.evidence, new.evidence
    ev_keep = keep[ev_old.trace]
    evidence = Evidence(
        np.concatenate([new_index[ev_old.trace[ev_keep]], ev_new.trace + n_kept]).astype(np.intp),
        np.concatenate([ev_old.mode[ev_keep], ev_new.mode]).astype(np.intp),
        np.concatenate([ev_old.step[ev_keep], ev_new.step]).astype(np.int64),
        np.concatenate([ev_old.step_count[ev_keep], ev_new.step_count]).astype(np.int64),
        _merge(ev_old.agent, ev_keep, ev_new.agent),
        _merge_optional(ev_old.attributed, ev_keep, ev_new.attributed, len(ev_new)),
    )
    selection = None
    if old.selection is not None or new.selection is not None:
        selection = np.concatenate(
            [
                old.selection[keep] if old.selection is not None else np.ones(n_kept, dtype=bool),
                new.selection if new.selection is not None else np.ones(new.n_traces, dtype=bool),
            ]
        )
    data = SignatureInput(
        labels=np.concatenate([old.labels[keep], new.labels]),
        outcome=np.concatenate([old.outcome[keep], new.outcome]),
        modes=old.modes,
        groups={name: _merge(g, keep, new.groups[name]) for name, g in old.groups.items()},
        batch=None if old.batch is None else _merge(old.batch, keep, new.batch),
        evidence=evidence,
        selection=selection,
    )
    return TraceRows(np.concatenate([stored.ids[keep], current.ids]), data)


def take(rows: TraceRows, traces: NDArray[np.int64]) -> TraceRows:
    """The rows of `rows` whose trace is one of `traces` (those it has)."""
    chosen = np.flatnonzero(np.isin(rows.ids, traces))
    return _subset(rows.ids, rows.data, chosen)


def _subset(ids: NDArray, data: SignatureInput, chosen: NDArray[np.intp]) -> TraceRows:
    new_index = np.full(len(ids), -1, dtype=np.intp)
    new_index[chosen] = np.arange(len(chosen))
    ev = data.evidence
    points = np.flatnonzero(np.isin(ev.trace, chosen))
    evidence = Evidence(
        new_index[ev.trace[points]].astype(np.intp),
        ev.mode[points].astype(np.intp),
        ev.step[points].astype(np.int64),
        ev.step_count[points].astype(np.int64),
        Grouping(ev.agent.codes[points].astype(np.intp), ev.agent.names),
        None
        if ev.attributed is None
        else Grouping(ev.attributed.codes[points].astype(np.intp), ev.attributed.names),
    )
    subset = SignatureInput(
        labels=data.labels[chosen],
        outcome=data.outcome[chosen],
        modes=data.modes,
        groups={name: Grouping(g.codes[chosen].astype(np.intp), g.names) for name, g in data.groups.items()},
        batch=None
        if data.batch is None
        else Grouping(data.batch.codes[chosen].astype(np.intp), data.batch.names),
        evidence=evidence,
        selection=None if data.selection is None else data.selection[chosen],
    )
    return TraceRows(ids[chosen].astype(np.int64), subset)


def describe(rows: TraceRows, traces: NDArray[np.int64] | None = None) -> list[tuple]:
    """Each trace's row (of the given `traces`; all by default) as plain values, by trace id: two loads
    of the same traces describe them equally exactly when every figure counts them the same way."""
    data = rows.data
    chosen = np.flatnonzero(np.isin(rows.ids, traces) if traces is not None else np.ones(len(rows.ids), bool))
    ev = data.evidence
    points: dict[int, list[tuple]] = {}
    in_chosen = np.isin(ev.trace, chosen)
    for k in np.flatnonzero(in_chosen).tolist():
        row = int(ev.trace[k])
        attributed = "" if ev.attributed is None else ev.attributed.names[ev.attributed.codes[k]]
        points.setdefault(row, []).append(
            (
                int(ev.mode[k]),
                int(ev.step[k]),
                int(ev.step_count[k]),
                ev.agent.names[ev.agent.codes[k]],
                attributed,
            )
        )
    out = []
    for row in chosen.tolist():
        groups = tuple((name, g.names[g.codes[row]]) for name, g in sorted(data.groups.items()))
        out.append(
            (
                int(rows.ids[row]),
                tuple(np.flatnonzero(data.labels[row]).tolist()),
                int(data.outcome[row]),
                groups,
                None if data.batch is None else data.batch.names[data.batch.codes[row]],
                True if data.selection is None else bool(data.selection[row]),
                tuple(sorted(points.get(row, []))),
            )
        )
    return sorted(out)


def _merge(old: Grouping, keep: NDArray[np.bool_], new: Grouping) -> Grouping:
    """The kept rows of `old` followed by `new`, in one code space of the names still used (sorted)."""
    used_old = np.unique(old.codes[keep])
    used_new = np.unique(new.codes)
    names = sorted(
        {old.names[c] for c in used_old.tolist()} | {new.names[c] for c in used_new.tolist()}, key=str
    )
    position = {name: i for i, name in enumerate(names)}
    remap_old = np.array([position.get(name, -1) for name in old.names], dtype=np.intp)
    remap_new = np.array([position.get(name, -1) for name in new.names], dtype=np.intp)
    codes = np.concatenate(
        [
            remap_old[old.codes[keep]] if len(remap_old) else np.zeros(0, np.intp),
            remap_new[new.codes] if len(remap_new) else np.zeros(0, np.intp),
        ]
    )
    return Grouping(codes.astype(np.intp), tuple(names))


def _merge_optional(old: Grouping | None, keep: NDArray[np.bool_], new: Grouping | None, n_new: int):
    if old is None and new is None:
        return None
    blank_old = Grouping(np.zeros(len(keep), np.intp), ("",))
    blank_new = Grouping(np.zeros(n_new, np.intp), ("",))
    return _merge(old if old is not None else blank_old, keep, new if new is not None else blank_new)


def pack(rows: TraceRows) -> bytes:
    """`rows` as bytes (an uncompressed .npz: numbers do not compress well, and it must load fast)."""
    data, ev = rows.data, rows.data.evidence
    groupings = {f"group:{name}": g for name, g in data.groups.items()}
    if data.batch is not None:
        groupings["batch"] = data.batch
    groupings["agent"] = ev.agent
    if ev.attributed is not None:
        groupings["attributed"] = ev.attributed
    meta = {
        "modes": [[m.code, m.name, m.category, m.category_name, m.fatal] for m in data.modes],
        "n_modes": len(data.modes),
        "names": {key: list(g.names) for key, g in groupings.items()},
        "selection": data.selection is not None,
    }
    arrays = {
        "meta": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
        "ids": rows.ids.astype(np.int64),
        "labels": np.packbits(data.labels, axis=1, bitorder="little"),
        "outcome": data.outcome.astype(np.int8),
        "ev_trace": _small(ev.trace),
        "ev_mode": _small(ev.mode),
        "ev_step": _small(ev.step),
        "ev_step_count": _small(ev.step_count),
    }
    arrays.update({f"codes:{key}": _small(g.codes) for key, g in groupings.items()})
    if data.selection is not None:
        arrays["selection"] = data.selection
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def unpack(blob: bytes) -> TraceRows:
    """What `pack` wrote."""
    return _unpacked(blob, None)


def rows_of(blob: bytes, traces: NDArray[np.int64]) -> TraceRows:
    """The rows of the `traces` (those it has) of what `pack` wrote, without widening every row's arrays:
    a few traces out of a million cost a read of the bytes and a few array lookups."""
    return _unpacked(blob, traces)


def _unpacked(blob: bytes, traces: NDArray[np.int64] | None) -> TraceRows:
    with np.load(io.BytesIO(blob)) as stored:
        arrays = {key: stored[key] for key in stored.files}
    meta = json.loads(arrays["meta"].tobytes())

    def grouping(key: str) -> Grouping:
        return Grouping(arrays[f"codes:{key}"].astype(np.intp), tuple(meta["names"][key]))

    n_modes = meta["n_modes"]
    if traces is not None:  # only the chosen rows are unpacked and widened
        chosen = np.flatnonzero(np.isin(arrays["ids"], traces))
        points = np.flatnonzero(np.isin(arrays["ev_trace"], chosen))
        new_index = np.full(len(arrays["ids"]), -1, dtype=np.intp)
        new_index[chosen] = np.arange(len(chosen))
        arrays = {
            **{
                key: value[chosen]
                for key, value in arrays.items()
                if key in _PER_TRACE or key.startswith("codes:group") or key == "codes:batch"
            },
            **{
                key: value[points]
                for key, value in arrays.items()
                if key.startswith("ev_") or key in ("codes:agent", "codes:attributed")
            },
            "meta": arrays["meta"],
        }
        arrays["ev_trace"] = new_index[arrays["ev_trace"]]
    labels = np.unpackbits(arrays["labels"], axis=1, count=n_modes, bitorder="little").astype(bool)
    evidence = Evidence(
        arrays["ev_trace"].astype(np.intp),
        arrays["ev_mode"].astype(np.intp),
        arrays["ev_step"].astype(np.int64),
        arrays["ev_step_count"].astype(np.int64),
        grouping("agent"),
        grouping("attributed") if "attributed" in meta["names"] else None,
    )
    data = SignatureInput(
        labels=labels.reshape(-1, n_modes),
        outcome=arrays["outcome"],
        modes=tuple(ModeInfo(*mode) for mode in meta["modes"]),
        groups={key[len("group:") :]: grouping(key) for key in meta["names"] if key.startswith("group:")},
        batch=grouping("batch") if "batch" in meta["names"] else None,
        evidence=evidence,
        selection=arrays["selection"] if meta["selection"] else None,
    )
    return TraceRows(arrays["ids"], data)


_PER_TRACE = ("ids", "labels", "outcome", "selection")


def _small(values: NDArray) -> NDArray:
    """The narrowest integer dtype holding every value (codes, modes and steps are small)."""
    if not len(values):
        return values.astype(np.int8)
    return values.astype(
        np.result_type(np.min_scalar_type(int(values.min())), np.min_scalar_type(int(values.max())))
    )
