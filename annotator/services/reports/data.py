"""From the database to the agreement report's input arrays, vectorised.

Why not loop over traces: a million-trace project has two million annotations and ~three million labels,
and the report must go from the database to a stored result in seconds. On PostgreSQL the database keeps
a label summary (one packed row per annotation, maintained by triggers in the same transaction as every
write: migration 0020), read in one sequential pass as two binary columns straight into numpy; elsewhere
each table is read once. The (traces x raters x modes) ratings tensor is filled by fancy indexing -- no
Python object per trace.

Which annotations count (the report's filters) is `annotator.services.reports.filters`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import numpy as np
import psycopg
from django.contrib.auth import get_user_model
from django.core.exceptions import EmptyResultSet
from django.db import connection, transaction
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from annotator.agreement.rows import EvidenceRows, ModeInfo, ReportInput, unique_ints
from annotator.models import Annotation, Assignment, LabelApplication, Project, ProjectTrace, RaterKind
from annotator.raters import kinds_of
from annotator.services.reports.filters import filter_q, report_annotations
from taxonomy.models import FailureMode


@dataclass(frozen=True)
class LoadedInput:
    data: ReportInput
    raters: list[dict[str, Any]]  # per rater: username, kind (human/llm), imported (inactive account)
    trace_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # per item, sorted
    rater_ids: tuple[int, ...] = ()  # user id of each rater, in the order of data.raters
    # annotation_columns of the same annotations when the load read them too (the label summary), else None
    columns: np.ndarray | None = None
    # the item (index in trace_ids) of each row of `columns`
    column_items: np.ndarray | None = None


class RatersChanged(Exception):
    """A load restricted to given raters met an annotation by someone else (see `load_report_input`)."""


def load_report_input(
    project: Project,
    filters: Mapping[str, Any],
    *,
    traces: Sequence[int] | None = None,
    rater_ids: Sequence[int] | None = None,
    source: str = "summary",
) -> LoadedInput:
    """The ratings tensor (traces with at least one matching annotation x raters x modes), the primary
    labels for single-primary taxonomies, and the evidence steps.

    On PostgreSQL each of the three tables (annotations, labels, evidence steps) arrives as one row of
    packed int8 columns read straight into numpy (`fetch_int_sql`), the evidence lists expanded by the
    database (``jsonb_path_query``): no Python object per row, which is what made a million traces slow.
    Elsewhere (SQLite) the same arrays come from ``values_list``.

    ``traces`` restricts the load to those trace ids (an incremental refresh reloads only the traces
    whose annotations changed); ``rater_ids`` fixes the raters and their order (the stored state's) and
    raises RatersChanged when a matching annotation is by anyone else.

    On PostgreSQL the arrays come from the label summary (one narrow row per annotation, kept by triggers:
    migration 0020) in one sequential pass; ``source="tables"`` reads the label tables themselves instead,
    which is what the summary must always agree with (tests/agreement/test_label_summary.py)."""
    version = project.taxonomy_version
    mode_rows = list(
        FailureMode.objects.filter(version=version)
        .order_by("order", "id")
        .values_list("id", "code", "name", "category__code", "category__name", "parent__code", "fatal")
    )
    modes = tuple(
        ModeInfo(code, name, category or "", category_name or "", parent, fatal)
        for _, code, name, category, category_name, parent, fatal in mode_rows
    )
    mode_ids = np.array([row[0] for row in mode_rows], dtype=np.int64)
    # .order_by(): the models' default orderings would add a join and a sort of every row for nothing.
    annotations = report_annotations(project, filters).order_by()
    labels = LabelApplication.objects.filter(filter_q(project, filters, prefix="annotation__")).order_by()
    if traces is not None:
        annotations = annotations.filter(assignment__trace_id__in=list(traces))
        labels = labels.filter(annotation__assignment__trace_id__in=list(traces))
    missing_rows = columns = None
    rows_given = False
    if connection.vendor == "postgresql" and source == "summary":
        ann, lab, points, missing_rows, columns = _summary_arrays(project, filters, traces)
        rows_given = True
    elif connection.vendor == "postgresql":
        with transaction.atomic(), connection.cursor() as cursor:
            # JIT compiles for a few hundred ms whenever the estimate passes jit_above_cost, which a
            # large join or an expanded JSON list does; these scans gain nothing from it.
            cursor.execute("SET LOCAL jit = off")
            # Hash joins of millions of rows stay in memory instead of spilling to temporary files.
            cursor.execute("SET LOCAL work_mem = '256MB'")
            ann = fetch_int_columns(
                annotations.values_list("id", "assignment__trace_id", "assignment__annotator_id")
            )
            lab = fetch_int_columns(
                labels.values_list("annotation_id", "mode_id", "primary"), casts={2: "int"}
            )
            points = _evidence_points(labels)
    else:
        ann = np.array(
            list(annotations.values_list("id", "assignment__trace_id", "assignment__annotator_id")),
            dtype=np.int64,
        ).reshape(-1, 3)
        lab, points = _labels_and_points(labels)

    trace_ids, item_idx = unique_ints(ann[:, 1])
    item_idx = item_idx.reshape(-1)
    n_items = len(trace_ids)
    if rater_ids is None:
        user_ids, rater_idx = unique_ints(ann[:, 2])
        rater_idx = rater_idx.reshape(-1)
        raters = _raters(user_ids)
        # Raters in username order (stable across runs and readable), not in user-id order.
        rank = np.argsort(np.argsort([r["username"] for r in raters], kind="stable"))
        raters = [raters[k] for k in np.argsort(rank)]
        user_order = user_ids[np.argsort(rank)] if len(user_ids) else user_ids
        rater_idx = rank[rater_idx] if len(ann) else rater_idx
    else:
        user_order = np.array(list(rater_ids), dtype=np.int64)
        rater_idx = _positions(user_order, ann[:, 2])
        if (rater_idx < 0).any():
            raise RatersChanged("a matching annotation is by a rater outside the given ones")
        raters = _raters(user_order) if len(user_order) else []
    n_raters, n_modes = len(raters), len(modes)

    ratings = np.full((n_items, n_raters, n_modes), -1, dtype=np.int8)
    # One flat index per cell instead of three index arrays: a single pass over millions of labels.
    slot = item_idx * n_raters + rater_idx  # each annotation's (item, rater)
    ratings.reshape(-1, n_modes)[slot] = 0
    mode_column = _positions(mode_ids, lab[:, 1])
    # The summary gives each label's and point's annotation as a row of `ann` already (`rows_given`).
    position = lab[:, 0] if rows_given else _positions(ann[:, 0], lab[:, 0])
    known = (mode_column >= 0) & (position >= 0)
    lm = mode_column[known]
    label_slot = slot[position[known]]
    ratings.reshape(-1)[label_slot * n_modes + lm] = 1
    codes = [row[1] for row in mode_rows]
    if missing_rows is None:
        missing_rows = _missing_votes(project, filters, traces)
    _mark_missing(ratings, missing_rows, ann, slot, codes)

    primary = None
    if not version.is_multi_label:
        primary = np.full((n_items, n_raters), -1, dtype=np.int64)
        primary.reshape(-1)[slot] = n_modes
        is_primary = lab[known, 2].astype(bool)
        primary.reshape(-1)[label_slot[is_primary]] = lm[is_primary]

    ev_mode = _positions(mode_ids, points[:, 1])
    ev_position = points[:, 0] if rows_given else _positions(ann[:, 0], points[:, 0])
    ev_known = (ev_mode >= 0) & (ev_position >= 0)
    evidence = EvidenceRows(
        item=item_idx[ev_position[ev_known]],
        rater=rater_idx[ev_position[ev_known]],
        mode=ev_mode[ev_known],
        step=points[ev_known, 2],
    )
    data = ReportInput(
        ratings=ratings,
        raters=tuple(r["username"] for r in raters),
        modes=modes,
        primary=primary,
        evidence=evidence,
    )
    return LoadedInput(
        data=data,
        raters=raters,
        trace_ids=trace_ids,
        rater_ids=tuple(int(u) for u in user_order),
        columns=columns,
        column_items=None if columns is None else item_idx,
    )


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def annotation_columns(
    project: Project,
    filters: Mapping[str, Any],
    traces: Sequence[int] | None = None,
    source: str = "summary",
) -> np.ndarray:
    """Per matching annotation: (trace id, annotation id, version, updated_at in microseconds since the
    epoch), as an (n, 4) int64 array: what the report's fingerprint aggregates, kept per trace by the
    incremental refresh so that it never re-aggregates every annotation."""
    micros = "round(extract(epoch from c3) * 1000000)"
    if connection.vendor == "postgresql" and source == "summary":
        return _summary_arrays(project, filters, traces)[4]
    annotations = report_annotations(project, filters).order_by()
    if traces is not None:
        annotations = annotations.filter(assignment__trace_id__in=list(traces))
    rows = annotations.values_list("assignment__trace_id", "id", "version", "updated_at")
    if connection.vendor == "postgresql":
        try:
            sql, params = rows.query.sql_with_params()
        except EmptyResultSet:
            return np.zeros((0, 4), dtype=np.int64)
        # extract(epoch) is numeric (exact) since PostgreSQL 14; round() also guards a double.
        return fetch_int_sql(sql, params, 4, ["c0", "c1", "c2", micros])
    one = dt.timedelta(microseconds=1)
    return np.array([(t, pk, v, (u - EPOCH) // one) for t, pk, v, u in rows], dtype=np.int64).reshape(-1, 4)


def _positions(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index in `keys` (distinct, any order) of each of `values`; -1 where absent."""
    if len(keys) == 0:
        return np.full(len(values), -1, dtype=np.int64)
    low, high = int(keys.min()), int(keys.max())
    if high - low <= max(4 * len(values), 1 << 20):
        # Ids (modes, annotations, users) span a small range: a table replaces the sort and the search.
        table = np.full(high - low + 3, -1, dtype=np.int64)
        table[keys - low + 1] = np.arange(len(keys))
        return table[np.clip(values - low + 1, 0, high - low + 2)]
    order = np.argsort(keys, kind="stable")
    at = np.clip(np.searchsorted(keys[order], values), 0, len(keys) - 1)
    return np.where(keys[order[at]] == values, order[at], -1).astype(np.int64)


def fetch_int_columns(queryset: QuerySet, casts: Mapping[int, str] | None = None) -> np.ndarray:
    """The rows of a `values_list` queryset of whole numbers as an (n, columns) int64 array, fetched as
    one row of packed columns (see `fetch_int_sql`). `casts` casts a column (by position) before bigint,
    e.g. a boolean to "int". PostgreSQL only."""
    n_columns = len(queryset.query.values_select) + len(queryset.query.annotation_select)
    casts = casts or {}
    try:
        sql, params = queryset.query.sql_with_params()
    except EmptyResultSet:  # e.g. `__in=[]`: nothing to read
        return np.zeros((0, n_columns), dtype=np.int64)
    expressions = [f"c{k}::{casts[k]}" if k in casts else f"c{k}" for k in range(n_columns)]
    return fetch_int_sql(sql, params, n_columns, expressions)


def fetch_int_sql(
    sql: str, params: Sequence[Any], n_inner: int, expressions: Sequence[str], tail: str = ""
) -> np.ndarray:
    """``SELECT <expressions> FROM (<sql>) AS q(c0, c1, ...) <tail>`` as an (n, len(expressions)) int64
    array; the inner SELECT's `n_inner` columns are named c0, c1, ... for the expressions and `tail`.

    Why one row of packed columns: each column comes back as a single bytea of big-endian int8 values
    (``string_agg(int8send(...), '')``, all in one pass, so the columns stay aligned) and is read by
    ``np.frombuffer`` -- no Python object per row. A row-per-message protocol (COPY TO STDOUT through
    psycopg yields one Python chunk per row) costs about as much per row as ``values_list``."""
    names = ", ".join(f"c{k}" for k in range(n_inner))
    packed = ", ".join(f"string_agg(int8send(({e})::bigint), ''::bytea)" for e in expressions)
    statement = f"SELECT count(*), {packed} FROM ({sql}) AS q({names}) {tail}"
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        count, *columns = cursor.fetchone()  # bytea arrives as bytes (decoded from hex by the driver, in C)
    out = np.empty((count, len(expressions)), dtype=np.int64)
    for k, column in enumerate(columns):
        if count:
            out[:, k] = np.frombuffer(column, dtype=">i8", count=count)
    return out


def _evidence_points(labels: QuerySet[LabelApplication]) -> np.ndarray:
    """(annotation id, mode id, step) per evidence step of `labels`, the lists expanded by PostgreSQL
    (``jsonb_array_elements``; a quarter of jsonpath's cost): the elements of an evidence list that are
    objects whose "step" is a whole number -- what the values_list path keeps too."""
    try:
        sql, params = labels.values_list("annotation_id", "mode_id", "evidence").query.sql_with_params()
    except EmptyResultSet:
        return np.zeros((0, 3), dtype=np.int64)
    tail = """
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(c2) = 'array' THEN c2 ELSE '[]'::jsonb END) AS e(value)
        WHERE jsonb_typeof(e.value -> 'step') = 'number' AND (e.value ->> 'step') ~ '^-?[0-9]{1,18}$'
    """
    return fetch_int_sql(sql, params, 3, ["c0", "c1", "e.value ->> 'step'"], tail)


def _labels_and_points(labels: QuerySet[LabelApplication]) -> tuple[np.ndarray, np.ndarray]:
    """(annotation id, mode id, primary) per label and (annotation id, mode id, step) per evidence step,
    through `values_list` (databases without COPY). Every evidence text is parsed by one `json.loads` (of
    a list of them): at this size the per-call overhead is most of the cost."""
    rows = list(labels.values_list("annotation_id", "mode_id", "primary", Cast("evidence", TextField())))
    lab = np.array([row[:3] for row in rows], dtype=np.int64).reshape(-1, 3)
    parsed = json.loads("[" + ",".join(row[3] or "[]" for row in rows) + "]") if rows else []
    steps = [
        [v for v in (entry.get("step") for entry in value if isinstance(entry, dict)) if type(v) is int]
        if isinstance(value, list)
        else []
        for value in parsed
    ]
    counts = np.fromiter(map(len, steps), dtype=np.int64, count=len(steps))
    points = np.empty((int(counts.sum()), 3), dtype=np.int64)
    points[:, 0] = np.repeat(lab[:, 0], counts)
    points[:, 1] = np.repeat(lab[:, 1], counts)
    points[:, 2] = np.fromiter(chain.from_iterable(steps), dtype=np.int64, count=len(points))
    return lab, points


def _missing_votes(
    project: Project, filters: Mapping[str, Any], traces: Sequence[int] | None
) -> list[tuple[int, Any]]:
    """(annotation id, its provenance's missing_modes) of the matching annotations that have one."""
    annotations = report_annotations(project, filters).filter(provenance__has_key="missing_modes")
    if traces is not None:
        annotations = annotations.filter(assignment__trace_id__in=list(traces))
    return [
        (pk, (provenance or {}).get("missing_modes", []))
        for pk, provenance in annotations.order_by().values_list("id", "provenance")
    ]


def _mark_missing(ratings, rows: list[tuple[int, Any]], ann, slot, codes: list[str]) -> None:
    """Votes an imported source left out (MAST's NaN) are missing, not "not chosen"."""
    if not rows:
        return
    found = _positions(ann[:, 0], np.array([pk for pk, _ in rows], dtype=np.int64))
    code_pos = {code: j for j, code in enumerate(codes)}
    cells = ratings.reshape(-1, ratings.shape[2])
    for k, (_, missing) in zip(found.tolist(), rows, strict=True):
        for code in missing:
            if k >= 0 and code in code_pos:
                cells[slot[k], code_pos[code]] = -1


SUMMARY = "annotator_labelsummary"


def _summary_where(
    project: Project, filters: Mapping[str, Any], traces: Sequence[int] | None
) -> tuple[str, list[Any]]:
    """The WHERE clause selecting the summary rows of the matching submitted annotations: the project's
    own columns for the unfiltered report, the filtered annotations' ids (a semi-join) otherwise."""
    # As filter_q: submitted work (a gold calibration answer tests an annotator; it is no agreement data), on
    # the project's traces (Trace.objects.in_project: its membership rows, probed by their key).
    where = (
        "s.project_id = %s AND s.status = %s AND s.purpose = %s AND EXISTS (SELECT 1 FROM "
        f"{ProjectTrace._meta.db_table} pt WHERE pt.project_id = s.project_id AND pt.trace_id = s.trace_id)"
    )
    params: list[Any] = [project.pk, Annotation.Status.SUBMITTED, Assignment.Purpose.WORK]
    if filters:
        try:
            sql, filter_params = (
                report_annotations(project, filters).order_by().values("id").query.sql_with_params()
            )
        except EmptyResultSet:
            return "FALSE", []
        where += f" AND s.annotation_id IN ({sql})"
        params += list(filter_params)
    if traces is not None:
        where += " AND s.trace_id = ANY(%s)"
        params.append(list(traces))
    return where, params


def fetch_binary(sql: str, params: Sequence[Any]) -> tuple[Any, ...]:
    """The one row of `sql`, its columns sent in binary: a bytea arrives as its bytes, not as hexadecimal
    text twice its size that the driver decodes (half the transfer, a third of the time for the packed
    columns). Django's cursors bind parameters client-side, which cannot ask for binary results, so this
    uses a psycopg cursor on Django's connection (the same transaction). PostgreSQL only."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchone()


def summary_aggregate(project: Project, filters: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprint's aggregate (count, highest id, sum of versions, latest update) of the matching
    submitted annotations, from the label summary. PostgreSQL only."""
    where, params = _summary_where(project, filters, None)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*), max(s.annotation_id), sum(s.version), max(s.updated_at) "
            f"FROM {SUMMARY} s WHERE {where}",
            params,
        )
        n, last_id, versions, changed = cursor.fetchone()
    return {
        "n": n,
        "last_id": last_id,
        "versions": None if versions is None else int(versions),
        "changed": changed,
    }


def _summary_arrays(
    project: Project, filters: Mapping[str, Any], traces: Sequence[int] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, Any]], np.ndarray]:
    """What the label tables give (annotations, labels, evidence points, missing votes) and the
    annotation columns (see `annotation_columns`), read from the label summary in one pass: the packed
    ``head`` and ``body`` of every matching row, concatenated by the database and split by numpy. Labels
    and points name their annotation by its row in the annotations array, not by its id."""
    where, params = _summary_where(project, filters, traces)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL jit = off")
        # One pass for everything, the few annotations with missing votes included (aggregates over the
        # same rows see them in the same order, so ids and values stay paired).
        count, head, body, missing_ids, missing_values = fetch_binary(
            f"SELECT count(*), string_agg(s.head, ''::bytea), string_agg(s.body, ''::bytea), "
            f"array_agg(s.annotation_id) FILTER (WHERE s.missing IS NOT NULL), "
            f"array_agg(s.missing::text) FILTER (WHERE s.missing IS NOT NULL) "
            f"FROM {SUMMARY} s WHERE {where}",
            params,
        )
    missing = [
        (pk, json.loads(value)) for pk, value in zip(missing_ids or [], missing_values or [], strict=True)
    ]
    # Big-endian bytes to native integers: the whole head block in one pass (a million traces: ~130 MB).
    heads = np.frombuffer(head, dtype=">i8").reshape(-1, 8) if count else np.zeros((0, 8), ">i8")
    heads = heads.astype(np.int64)
    del head
    bodies = np.frombuffer(body, dtype=">i8") if count and body else np.zeros(0, ">i8")
    n_modes, n_points = heads[:, 3], heads[:, 5]
    modes, pairs = split_bodies(bodies, n_modes, n_points, 2)
    rows = np.arange(len(heads))
    lab = np.empty((len(modes), 3), dtype=np.int64)
    lab[:, 0] = np.repeat(rows, n_modes)
    lab[:, 1] = modes
    lab[:, 2] = modes == np.repeat(heads[:, 4], n_modes)
    points = np.empty((len(pairs), 3), dtype=np.int64)
    points[:, 0] = np.repeat(rows, n_points)
    points[:, 1:] = pairs
    columns = heads[:, [1, 0, 6, 7]]  # trace, id, version, updated_at micros
    ann = heads[:, :3]
    return ann, lab, points, missing, columns


def split_bodies(
    bodies: np.ndarray, n_first: np.ndarray, n_tuples: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated bodies, each `n_first` int8 then `n_tuples` tuples of `width` int8, as the first parts
    (concatenated) and the tuples (an (n, width) array), converted to native int64. Index arithmetic
    only: no mask or copy as long as all the bodies."""
    sizes = n_first + width * n_tuples
    start = np.cumsum(sizes) - sizes
    before_first = np.cumsum(n_first) - n_first
    at_first = np.arange(int(n_first.sum())) + np.repeat(start - before_first, n_first)
    before_tuples = np.cumsum(n_tuples) - n_tuples
    at_tuple = width * np.arange(int(n_tuples.sum())) + np.repeat(
        start + n_first - width * before_tuples, n_tuples
    )
    tuples = np.stack([bodies[at_tuple + k] for k in range(width)], axis=1) if len(at_tuple) else None
    return (
        bodies[at_first].astype(np.int64),
        tuples.astype(np.int64) if tuples is not None else np.zeros((0, width), np.int64),
    )


def _raters(user_ids: np.ndarray) -> list[dict[str, Any]]:
    users = dict(
        (pk, username)
        for pk, username in get_user_model()
        .objects.filter(pk__in=user_ids.tolist())
        .values_list("pk", "username")
    )
    kinds = kinds_of(user_ids.tolist())
    return [
        {
            "username": users[pk],
            # human or llm, as the statistics compare them; `imported` says the labels were made elsewhere.
            "kind": RaterKind.LLM if kinds[pk] == RaterKind.LLM else RaterKind.HUMAN,
            "imported": kinds[pk] == RaterKind.IMPORTED,
        }
        for pk in user_ids.tolist()
    ]
