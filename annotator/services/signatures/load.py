"""The ORM bridge of the failure signatures: a label source and filters in, numpy arrays and figures out.

Label sources (``source``):

* ``gold``: the gold layer, i.e. every trace whose adjudication item is *agreed* or *resolved*, with its gold
  labels (a gold trace without gold labels is a trace judged to show no failure);
* ``union``: every trace with at least one submitted annotation; a mode counts when any annotator chose it;
* ``agreed``: every trace with at least two submitted annotations; a mode counts when all of them chose it;
* ``annotator:NAME``: the traces NAME submitted, with NAME's labels;
* ``gold+union``, ``gold+agreed``, ``gold+annotator:NAME``: gold labels where the trace has them and the
  named source for the other traces.

Each source costs a fixed handful of queries (plus one SQL query for evidence with agents, see
:mod:`annotator.services.signatures.sql`), whatever the number of traces; the arrays are assembled with
numpy (sorted ids and ``searchsorted``), never with a loop over traces. On PostgreSQL every column
arrives packed (whole numbers as one bytea each, text as codes into its distinct values), so no Python
object is made per row: what a million traces need.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from django.db import connection, transaction
from django.db.models import Exists, OuterRef, Q

from annotator.models import AdjudicationItem, Annotation, GoldLabel, LabelApplication, Project
from annotator.search.scope import scope_trace_ids
from annotator.services.reports.data import fetch_int_columns
from annotator.services.signatures.sql import (
    EvidencePoints,
    annotation_evidence,
    coded_rows,
    gold_evidence,
    gold_from_summary,
    grouped_rows,
)
from annotator.signatures import (
    FAILURE,
    SUCCESS,
    UNKNOWN,
    Evidence,
    Grouping,
    ModeInfo,
    SignatureInput,
    Signatures,
    compute_signatures,
    factorize,
)
from annotator.signatures.splice import TraceRows
from taxonomy.models import FailureMode
from traces.models import Trace

__all__ = [
    "BASE_SOURCES",
    "GOLD_STATUSES",
    "SignatureQuery",
    "SignatureQueryError",
    "load_signature_input",
    "load_trace_rows",
    "parse_signature_query",
    "project_signatures",
]

GOLD_STATUSES = (AdjudicationItem.Status.AGREED, AdjudicationItem.Status.RESOLVED)
BASE_SOURCES = ("union", "agreed")
FILTERS = ("batch", "model", "system", "benchmark")


class SignatureQueryError(ValueError):
    """A request the figures cannot answer (unknown source, half a comparison); the message says why."""


@dataclass(frozen=True)
class SignatureQuery:
    """What to compute: the label source and the trace filters (each a set of accepted values; empty: all)."""

    source: str = "gold"
    batch: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    system: tuple[str, ...] = ()
    benchmark: tuple[str, ...] = ()
    compare: tuple[str, str] | None = None
    # A saved view's filters (annotator.search.scope), as (parameter, value) pairs: only its traces. The
    # pairs, not the view's id, so stored figures are keyed by what was selected.
    view: tuple[tuple[str, str], ...] = ()
    use_gold: bool = field(init=False)
    fallback: str | None = field(init=False)  # "union", "agreed", "annotator" or None (gold only)
    annotator: str | None = field(init=False)

    def __post_init__(self) -> None:
        use_gold, fallback, annotator = _parse_source(self.source)
        object.__setattr__(self, "use_gold", use_gold)
        object.__setattr__(self, "fallback", fallback)
        object.__setattr__(self, "annotator", annotator)

    def filters(self) -> dict[str, tuple[str, ...]]:
        return {name: getattr(self, name) for name in FILTERS if getattr(self, name)}


def _parse_source(source: str) -> tuple[bool, str | None, str | None]:
    use_gold = source == "gold" or source.startswith("gold+")
    rest = source[len("gold+") :] if source.startswith("gold+") else ("" if source == "gold" else source)
    if rest in BASE_SOURCES:
        return use_gold, rest, None
    if rest.startswith("annotator:") and rest[len("annotator:") :].strip():
        return use_gold, "annotator", rest[len("annotator:") :].strip()
    if source == "gold":
        return True, None, None
    raise SignatureQueryError(
        f"Unknown source {source!r}: use gold, union, agreed or annotator:NAME, optionally after 'gold+'"
    )


def parse_signature_query(params: Mapping) -> SignatureQuery:
    """A query from GET parameters (a QueryDict: filters may repeat) or a plain dict of lists/strings."""

    def values(name: str) -> tuple[str, ...]:
        raw = params.getlist(name) if hasattr(params, "getlist") else params.get(name) or []
        raw = [raw] if isinstance(raw, str) else raw
        return tuple(dict.fromkeys(v.strip() for v in raw if v and v.strip()))

    compare_a, compare_b = values("compare_a"), values("compare_b")
    if bool(compare_a) != bool(compare_b):
        raise SignatureQueryError("Name two batches to compare (compare_a and compare_b)")
    source = (values("source") or ("gold",))[0]
    compare = (compare_a[0], compare_b[0]) if compare_a else None
    return SignatureQuery(source, *(values(name) for name in FILTERS), compare=compare)


def project_signatures(project: Project, query: SignatureQuery) -> Signatures | None:
    """Every figure for the project's traces under `query`; None when the source labels no trace."""
    data = load_signature_input(project, query)
    if data.selected().n_traces == 0:
        return None
    return compute_signatures(data, compare=query.compare)


@dataclass
class _Labels:
    """One source's labels as id arrays: (trace, mode) pairs and evidence rows."""

    pair_trace: np.ndarray
    pair_mode: np.ndarray
    evidence: EvidencePoints


def load_signature_input(project: Project, query: SignatureQuery, *, summary: bool = True) -> SignatureInput:
    """The arrays of :class:`~annotator.signatures.SignatureInput` for `project` under `query`.

    On PostgreSQL the traces come grouped by their texts and the gold from the gold summary (migration
    0021); ``summary=False`` reads the gold tables themselves, which the summary must always agree with
    (tests/signatures/test_gold_summary.py)."""
    return load_trace_rows(project, query, summary=summary).data


def load_trace_rows(
    project: Project, query: SignatureQuery, *, summary: bool = True, only: Sequence[int] | None = None
) -> TraceRows:
    """`load_signature_input` with the trace id of every row; with `only`, just those traces (each query
    narrowed to them: what an incremental refresh reloads after a few traces changed)."""
    restrict = None if only is None else sorted({int(pk) for pk in only})
    with _analytics_transaction():
        modes = list(
            FailureMode.objects.filter(version_id=project.taxonomy_version_id)
            .select_related("category")
            .order_by("order", "id")
        )
        traces = _traces(project, query, grouped=summary, only=restrict)
        covered = from_gold = _gold_traces(project, query, traces.ids, restrict)
        if query.fallback:
            submitted = _submitted_annotations(project, query, traces.ids, restrict)
            covered = from_gold | (submitted >= (2 if query.fallback == "agreed" else 1))
        keep = np.flatnonzero(covered)
        traces, from_gold = traces.take(keep), from_gold[keep]
        gold = _gold_labels(project, query, summary, restrict) if query.use_gold else None
        other = (
            _annotation_labels(project, query, traces.ids, submitted[keep], restrict)
            if query.fallback
            else None
        )
    mode_column = _lookup([mode.id for mode in modes])
    labels = np.zeros((len(traces.ids), len(modes)), dtype=bool)
    evidence_parts = []
    for source, is_gold in ((gold, True), (other, False)):
        if source is None:
            continue
        row, col = _locate(traces.ids, source.pair_trace, mode_column, source.pair_mode)
        ok = (row >= 0) & (col >= 0)
        ok[ok] &= from_gold[row[ok]] == is_gold
        labels[row[ok], col[ok]] = True
        evidence_parts.append((source.evidence, is_gold))
    evidence = _evidence(evidence_parts, traces.ids, from_gold, labels, mode_column, traces.step_count)
    data = SignatureInput(
        labels=labels,
        outcome=traces.outcome,
        modes=tuple(_mode_info(mode) for mode in modes),
        groups=traces.groups,
        batch=traces.batch,
        evidence=evidence,
        selection=None if traces.selected.all() else traces.selected,
    )
    return TraceRows(traces.ids, data)


@contextmanager
def _analytics_transaction():
    """One transaction for the few reads (one snapshot on PostgreSQL), with JIT off: its compile time
    (a few hundred milliseconds per query) is paid whenever the planner's estimate passes
    ``jit_above_cost``, which row estimates for JSON lists and 100,000-trace scans both do, and it buys
    nothing for these simple scans."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        cursor.execute("SET LOCAL work_mem = '256MB'")  # joins of millions of rows stay in memory
        yield


@dataclass
class _Traces:
    """The selected traces' columns, sorted by id (so ``searchsorted`` finds a trace's row)."""

    ids: np.ndarray
    step_count: np.ndarray
    outcome: np.ndarray
    groups: dict[str, Grouping]
    batch: Grouping
    selected: np.ndarray

    def take(self, rows: np.ndarray) -> _Traces:
        return _Traces(
            self.ids[rows],
            self.step_count[rows],
            self.outcome[rows],
            {name: grouping.take(rows) for name, grouping in self.groups.items()},
            self.batch.take(rows),
            self.selected[rows],
        )


def _trace_q(query: SignatureQuery, prefix: str = "") -> Q:
    """The trace filters as a Q on `prefix` (the path from the queried model to its trace). A comparison
    widens the batch filter to the compared batches; the selection then narrows back in numpy."""
    q = Q()
    for name in ("model", "system", "benchmark"):
        if values := getattr(query, name):
            q &= Q(**{f"{prefix}{name}__in": values})
    if query.batch:
        q &= Q(**{f"{prefix}batch__name__in": sorted({*query.batch, *(query.compare or ())})})
    return q


def _only(field: str, only: list[int] | None) -> Q:
    """Narrowed to the traces `only` (None: every trace)."""
    return Q() if only is None else Q(**{f"{field}__in": only})


def _traces(
    project: Project, query: SignatureQuery, grouped: bool = True, only: list[int] | None = None
) -> _Traces:
    """One query: the project's traces under the filters that the source may cover (an EXISTS per source
    keeps unlabelled traces out), as columns sorted by trace id."""
    covered = []
    if query.use_gold:
        items = AdjudicationItem.objects.filter(
            project=project, trace=OuterRef("pk"), status__in=GOLD_STATUSES
        )
        covered.append(Exists(items))
    if query.fallback:
        covered.append(Exists(_annotations(project, query).filter(assignment__trace=OuterRef("pk"))))
    condition = covered[0] if len(covered) == 1 else covered[0] | covered[1]
    traces = Trace.objects.in_project(project)
    if query.view:
        traces = traces.filter(pk__in=scope_trace_ids(project, query.view))
    traces = (
        traces.filter(_trace_q(query), condition, _only("pk", only))
        .order_by()
        .values_list("id", "step_count", "outcome", "model", "system", "benchmark", "batch__name")
    )
    if connection.vendor == "postgresql":
        sql, params = traces.query.sql_with_params()
        read = grouped_rows if grouped else coded_rows
        ints, (outcome, *groups, batch) = read(sql, params, 2, 5)
        ids, step_count = ints[:, 0], ints[:, 1]
    else:
        rows = list(traces)
        columns = list(zip(*rows, strict=True)) if rows else [()] * 7
        ids = np.fromiter(columns[0], dtype=np.int64, count=len(rows))
        step_count = np.fromiter(columns[1], dtype=np.int64, count=len(rows))
        outcome, *groups, batch = (factorize(columns[i]) for i in (2, 3, 4, 5, 6))
    order = np.argsort(ids, kind="stable")
    outcome_codes = np.array([_OUTCOME_CODES.get(name, UNKNOWN) for name in outcome.names], dtype=np.int8)
    batch = batch.take(order)
    return _Traces(
        ids=ids[order],
        step_count=step_count[order],
        outcome=outcome_codes[outcome.codes][order] if len(ids) else np.zeros(0, dtype=np.int8),
        groups={
            name: grouping.take(order)
            for name, grouping in zip(("model", "system", "benchmark"), groups, strict=True)
        },
        batch=batch,
        selected=np.isin(batch.codes, [batch.code_of(name) for name in query.batch])
        if query.batch
        else np.ones(len(ids), dtype=bool),
    )


def _gold_traces(
    project: Project, query: SignatureQuery, ids: np.ndarray, only: list[int] | None
) -> np.ndarray:
    """Which rows have gold. With gold as the only source every fetched trace has (no query needed)."""
    if not query.use_gold:
        return np.zeros(len(ids), dtype=bool)
    if not query.fallback:
        return np.ones(len(ids), dtype=bool)
    items = AdjudicationItem.objects.filter(project=project, status__in=GOLD_STATUSES).filter(
        _trace_q(query, "trace__"), _only("trace_id", only)
    )
    return np.isin(ids, _int_column(items.order_by().values_list("trace_id", flat=True)))


def _submitted_annotations(
    project: Project, query: SignatureQuery, ids: np.ndarray, only: list[int] | None
) -> np.ndarray:
    """Per row, how many submitted annotations the trace has (of the named annotator, if any)."""
    annotations = _annotations(project, query).filter(
        _trace_q(query, "assignment__trace__"), _only("assignment__trace_id", only)
    )
    per_annotation = _int_column(annotations.order_by().values_list("assignment__trace_id", flat=True))
    traces, counts = np.unique(per_annotation, return_counts=True)
    submitted = np.zeros(len(ids), dtype=np.int64)
    if len(traces):
        position = np.clip(np.searchsorted(traces, ids), 0, len(traces) - 1)
        found = traces[position] == ids
        submitted[found] = counts[position[found]]
    return submitted


def _annotations(project: Project, query: SignatureQuery):
    annotations = Annotation.objects.submitted_in(project)
    if query.annotator is not None:
        annotations = annotations.filter(assignment__annotator__username=query.annotator)
    return annotations


def _gold_labels(project: Project, query: SignatureQuery, summary: bool, only: list[int] | None) -> _Labels:
    """The gold (trace, mode) pairs and evidence. The summary's pairs are not narrowed by the trace
    filters: pairs of traces outside the selection find no row in the matrix (`_locate`), as evidence
    never was narrowed either."""
    if summary and connection.vendor == "postgresql":
        pair_trace, pair_mode, points = gold_from_summary(project.id, GOLD_STATUSES, only)
        return _Labels(pair_trace, pair_mode, points)
    pairs = (
        GoldLabel.objects.filter(item__project=project, item__status__in=GOLD_STATUSES)
        .filter(_trace_q(query, "item__trace__"), _only("item__trace_id", only))
        .order_by()
        .values_list("item__trace_id", "mode_id")
    )
    pair_trace, pair_mode = _pairs(pairs)
    return _Labels(pair_trace, pair_mode, gold_evidence(project.id, GOLD_STATUSES, only))


def _annotation_labels(
    project: Project, query: SignatureQuery, ids: np.ndarray, submitted: np.ndarray, only: list[int] | None
) -> _Labels:
    """Union, agreement or one annotator: each (trace, mode) pair's votes against the trace's number of
    submitted annotations (``submitted``, aligned with the sorted trace ``ids``), in one ``np.unique``."""
    labels = LabelApplication.objects.filter(
        annotation__in=Annotation.objects.submitted_in(project).order_by().values("id")
    ).filter(
        _trace_q(query, "annotation__assignment__trace__"), _only("annotation__assignment__trace_id", only)
    )
    if query.annotator is not None:
        labels = labels.filter(annotation__assignment__annotator__username=query.annotator)
    pair_trace, pair_mode = _pairs(
        labels.order_by().values_list("annotation__assignment__trace_id", "mode_id")
    )
    votes = np.stack([pair_trace, pair_mode], axis=1)
    if len(votes):
        distinct, counts = np.unique(votes, axis=0, return_counts=True)
    else:
        distinct, counts = votes, np.zeros(0, dtype=np.int64)
    if query.fallback == "agreed":
        position = np.clip(np.searchsorted(ids, distinct[:, 0]), 0, max(len(ids) - 1, 0))
        known = ids[position] == distinct[:, 0] if len(ids) else np.zeros(len(distinct), dtype=bool)
        needed = np.where(known, submitted[position] if len(ids) else 0, 0)
        distinct = distinct[known & (counts == needed) & (needed >= 2)]
    evidence = annotation_evidence(project.id, Annotation.Status.SUBMITTED, query.annotator, only)
    return _Labels(distinct[:, 0], distinct[:, 1], evidence)


def _pairs(rows) -> tuple[np.ndarray, np.ndarray]:
    if connection.vendor == "postgresql":
        pairs = fetch_int_columns(rows)
    else:
        pairs = np.fromiter((v for row in rows for v in row), dtype=np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _int_column(rows) -> np.ndarray:
    """A flat values_list of whole numbers as an int64 array (packed on PostgreSQL)."""
    if connection.vendor == "postgresql":
        return fetch_int_columns(rows)[:, 0]
    return np.fromiter(rows, dtype=np.int64)


def _lookup(mode_ids: list[int]) -> np.ndarray:
    """mode id -> column (-1: not a mode of the project's taxonomy version)."""
    table = np.full(max(mode_ids, default=0) + 1, -1, dtype=np.intp)
    table[mode_ids] = np.arange(len(mode_ids))
    return table


def _locate(ids: np.ndarray, trace_ids: np.ndarray, mode_column: np.ndarray, mode_ids: np.ndarray):
    """(row, column) of each (trace id, mode id) pair; -1 where the trace or the mode is not in the matrix."""
    if len(ids) == 0:
        missing = np.full(len(trace_ids), -1, dtype=np.intp)
        return missing, missing
    pos = np.clip(np.searchsorted(ids, trace_ids), 0, len(ids) - 1)
    row = np.where(ids[pos] == trace_ids, pos, -1)
    inside = (mode_ids >= 0) & (mode_ids < len(mode_column))
    col = np.where(inside, mode_column[np.where(inside, mode_ids, 0)], -1)
    return row, col


def _evidence(parts, ids, from_gold, labels, mode_column, step_count) -> Evidence:
    """Evidence points of labels that made it into the matrix (an evidence step for a mode the agreement
    dropped is not evidence of anything), each (trace, mode, step) once even if two annotators chose it."""
    rows, cols, steps = [], [], []
    agents, attributed = _Names(), _Names()
    for points, is_gold in parts:
        if not len(points):
            continue
        row, col = _locate(ids, points.trace, mode_column, points.mode)
        ok = (row >= 0) & (col >= 0)
        ok[ok] &= from_gold[row[ok]] == is_gold
        ok[ok] &= labels[row[ok], col[ok]]
        rows.append(row[ok])
        cols.append(col[ok])
        steps.append(points.step[ok])
        agents.add(points.agent, ok)
        attributed.add(points.attributed, ok)
    if not rows or not sum(len(r) for r in rows):
        return Evidence.empty()
    row, col, step = np.concatenate(rows), np.concatenate(cols), np.concatenate(steps)
    # One int64 key per (row, mode, step) point: a 1-D unique, much faster than np.unique(axis=0).
    low, span = int(step.min()), int(step.max()) - int(step.min()) + 1
    if (len(ids) * labels.shape[1] + 1) * span < 2**62:
        key = (row.astype(np.int64) * labels.shape[1] + col) * span + (step - low)
        _, first = np.unique(key, return_index=True)
    else:  # absurd step numbers: fall back to comparing rows
        _, first = np.unique(np.stack([row, col, step], axis=1), axis=0, return_index=True)
    row = row[first]
    return Evidence(
        row, col[first], step[first], step_count[row], agents.grouping(first), attributed.grouping(first)
    )


class _Names:
    """One name per evidence point, gathered part by part (gold, annotations) and merged into a Grouping."""

    def __init__(self) -> None:
        self.codes: list[np.ndarray] = []
        self.names: list[tuple[str, ...]] = []

    def add(self, grouping: Grouping, keep: np.ndarray) -> None:
        self.codes.append(grouping.codes[keep] + sum(len(names) for names in self.names))
        self.names.append(grouping.names)

    def grouping(self, first: np.ndarray) -> Grouping:
        merged = factorize([name for names in self.names for name in names])
        return Grouping(merged.codes[np.concatenate(self.codes)[first]], merged.names)


def _mode_info(mode: FailureMode) -> ModeInfo:
    category = mode.category
    return ModeInfo(
        mode.code, mode.name, category.code if category else "", category.name if category else "", mode.fatal
    )


_OUTCOME_CODES = {"failure": FAILURE, "success": SUCCESS}
