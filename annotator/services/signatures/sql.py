"""Evidence points with the agent of each step, in one query: the raw SQL half of the signatures bridge.

Why raw SQL: evidence lives in a JSON list on each label (``[{"step": 12}, ...]``) and the agent lives on
the Step row, so "which agent was acting at the evidence step" is a join on a value *inside* the JSON. The
ORM cannot expand a JSON array into rows; doing it in Python would mean fetching every step of every
labelled trace (millions of rows) or one lookup per evidence point. PostgreSQL (``jsonb_array_elements``)
and SQLite (``json_each``) both expand the list server-side, and the agent comes from the unique
(trace, index) index of steps. Only integer steps are kept (``{"step": "abc"}`` or a missing key is not a
point); negative or out-of-range steps are kept with agent ``""`` so the figure can count them as invalid.

Each point also carries the *attributed* agent: the agent an imported attribution names for the label
(``LabelApplication.attribution["agent"]``, Who&When's ``mistake_agent``), or ``""``. A gold label takes it
from the submitted labels of the same trace and mode (gold rows keep no attribution of their own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Model

from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel, LabelApplication
from annotator.services.reports.data import fetch_binary, split_bodies
from annotator.signatures import Grouping, factorize
from traces.models import Step

__all__ = [
    "EvidencePoints",
    "annotation_evidence",
    "coded_rows",
    "gold_evidence",
    "gold_from_summary",
    "grouped_rows",
]


@dataclass(frozen=True)
class EvidencePoints:
    """Evidence points as arrays: trace id, mode id, step index, the agent of that step (or "") and the
    agent the label's attribution names (or "")."""

    trace: np.ndarray
    mode: np.ndarray
    step: np.ndarray
    agent: Grouping
    attributed: Grouping

    def __len__(self) -> int:
        return len(self.trace)


_AGENT_OF = {  # the attributed agent inside a label's attribution JSON, per vendor
    "postgresql": "({column} ->> 'agent')",
    "sqlite": "json_extract({column}, '$.agent')",
}

_POINTS = {
    "postgresql": """
        SELECT l.trace_id, l.mode_id,
               CASE WHEN jsonb_typeof(e.value -> 'step') = 'number' AND (e.value ->> 'step') ~ '^-?[0-9]+$'
                    THEN (e.value ->> 'step')::bigint END AS step,
               l.attributed
        FROM labelled l
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(l.evidence) = 'array' THEN l.evidence ELSE '[]'::jsonb END) AS e(value)
    """,
    "sqlite": """
        SELECT l.trace_id, l.mode_id,
               CASE WHEN e.type = 'object' THEN
                   CASE WHEN json_type(e.value, '$.step') = 'integer' THEN json_extract(e.value, '$.step') END
               END AS step,
               l.attributed
        FROM labelled l,
             json_each(CASE WHEN json_type(l.evidence) = 'array' THEN l.evidence ELSE '[]' END) AS e
    """,
}


def gold_evidence(
    project_id: int, statuses: tuple[str, ...], only: Sequence[int] | None = None
) -> EvidencePoints:
    """Evidence of the gold labels of the project's items in `statuses` (agreed, resolved), of the traces
    `only` if given."""
    gold, item = _t(GoldLabel), _t(AdjudicationItem)
    label, annotation, assignment = _t(LabelApplication), _t(Annotation), _t(Assignment)
    status_params = ", ".join(["%s"] * len(statuses))
    attributed = _agent_of(f"la.{_c(LabelApplication, 'attribution')}")
    labelled = f"""
        SELECT i.{_c(AdjudicationItem, "trace")} AS trace_id, g.{_c(GoldLabel, "mode")} AS mode_id,
               g.{_c(GoldLabel, "evidence")} AS evidence,
               COALESCE((
                   SELECT MIN(NULLIF({attributed}, ''))
                   FROM {label} la
                   JOIN {annotation} a ON a.{_c(Annotation, "id")} = la.{_c(LabelApplication, "annotation")}
                   JOIN {assignment} s ON s.{_c(Assignment, "id")} = a.{_c(Annotation, "assignment")}
                   WHERE s.{_c(Assignment, "trace")} = i.{_c(AdjudicationItem, "trace")}
                     AND s.{_c(Assignment, "project")} = i.{_c(AdjudicationItem, "project")}
                     AND la.{_c(LabelApplication, "mode")} = g.{_c(GoldLabel, "mode")}
                     AND a.{_c(Annotation, "status")} = %s
               ), '') AS attributed
        FROM {gold} g JOIN {item} i ON i.{_c(AdjudicationItem, "id")} = g.{_c(GoldLabel, "item")}
        WHERE i.{_c(AdjudicationItem, "project")} = %s AND i.{_c(AdjudicationItem, "status")} IN ({status_params})
    """
    narrow, narrow_params = _only(f"i.{_c(AdjudicationItem, 'trace')}", only)
    return _run(labelled + narrow, [Annotation.Status.SUBMITTED, project_id, *statuses, *narrow_params])


def annotation_evidence(
    project_id: int, status: str, annotator: str | None = None, only: Sequence[int] | None = None
) -> EvidencePoints:
    """Evidence of every label of the project's annotations in `status` (of one annotator if named; of
    the traces `only` if given)."""
    user_model = get_user_model()
    label, annotation, assignment = _t(LabelApplication), _t(Annotation), _t(Assignment)
    by_user = ""
    params: list[object] = []
    if annotator is not None:
        by_user = (
            f"JOIN {_t(user_model)} u ON u.{_c(user_model, 'id')} = s.{_c(Assignment, 'annotator')} "
            f"AND u.{_c(user_model, user_model.USERNAME_FIELD)} = %s"
        )
        params.append(annotator)
    labelled = f"""
        SELECT s.{_c(Assignment, "trace")} AS trace_id, l.{_c(LabelApplication, "mode")} AS mode_id,
               l.{_c(LabelApplication, "evidence")} AS evidence,
               COALESCE({_agent_of(f"l.{_c(LabelApplication, 'attribution')}")}, '') AS attributed
        FROM {label} l
        JOIN {annotation} a ON a.{_c(Annotation, "id")} = l.{_c(LabelApplication, "annotation")}
        JOIN {assignment} s ON s.{_c(Assignment, "id")} = a.{_c(Annotation, "assignment")}
        {by_user}
        WHERE s.{_c(Assignment, "project")} = %s AND a.{_c(Annotation, "status")} = %s
    """
    narrow, narrow_params = _only(f"s.{_c(Assignment, 'trace')}", only)
    return _run(labelled + narrow, [*params, project_id, status, *narrow_params])


def _run(labelled: str, params: list[object]) -> EvidencePoints:
    """Expand the evidence lists, then look each step's agent up with a correlated subquery.

    The subquery is deliberate: it is one probe of the unique (trace, index) index per evidence point, so
    the cost follows the number of points. A join lets the planner hash the whole step table instead
    (millions of rows for a large project) because it cannot estimate how many elements a JSON list
    has (the caller turns PostgreSQL's JIT off for the same reason).
    """
    vendor = connection.vendor
    if vendor not in _POINTS:
        raise RuntimeError(f"evidence positions need PostgreSQL or SQLite, not {vendor}")
    step = _t(Step)
    sql = f"""
        WITH labelled AS ({labelled}), points AS ({_POINTS[vendor]})
        SELECT p.trace_id, p.mode_id, p.step,
               COALESCE((SELECT st.{_c(Step, "agent")} FROM {step} st
                         WHERE st.{_c(Step, "trace")} = p.trace_id AND st.{_c(Step, "index")} = p.step), ''),
               p.attributed
        FROM points p
        WHERE p.step IS NOT NULL
    """
    if vendor == "postgresql":
        ints, (agent, attributed) = coded_rows(sql, params, 3, 2)
        return EvidencePoints(ints[:, 0], ints[:, 1], ints[:, 2], agent, attributed)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
    return EvidencePoints(
        *(np.fromiter(columns[k], dtype=np.int64, count=len(rows)) for k in range(3)),
        factorize(columns[3]),
        factorize(columns[4]),
    )


def coded_rows(
    sql: str, params: Sequence[object], n_ints: int, n_texts: int
) -> tuple[np.ndarray, list[Grouping]]:
    """The rows of `sql` (first `n_ints` whole-number columns, then `n_texts` text columns) as an
    (n, n_ints) int64 array and one Grouping per text column, in one statement. PostgreSQL only.

    Why: a million rows of Python tuples and strings cost seconds; here the database returns each
    integer column as one packed bytea and each text column as dense codes (the position of the value
    in that column's distinct values, which come back too), so numpy reads everything with
    ``frombuffer``. Names are re-sorted in Python (the database's collation may order them otherwise)."""
    n = n_ints + n_texts
    names = ", ".join(f"c{k}" for k in range(n))
    distinct = ", ".join(f"array_agg(DISTINCT c{n_ints + k}) AS n{k}" for k in range(n_texts)) or "1 AS n0"
    packed = [f"string_agg(int8send(c{k}::bigint), ''::bytea)" for k in range(n_ints)]
    packed += [
        f"string_agg(int8send((array_position(d.n{k}, c{n_ints + k}) - 1)::bigint), ''::bytea)"
        for k in range(n_texts)
    ]
    lists = [f"(SELECT n{k} FROM d)" for k in range(n_texts)]
    statement = f"""
        WITH t AS MATERIALIZED (SELECT * FROM ({sql}) AS q({names})),
             d AS (SELECT {distinct} FROM t)
        SELECT count(*), {", ".join(packed + lists)} FROM t CROSS JOIN d
    """
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        count, *values = cursor.fetchone()
    ints = np.empty((count, n_ints), dtype=np.int64)
    for k in range(n_ints):
        if count:
            ints[:, k] = np.frombuffer(values[k], dtype=">i8", count=count)
    groupings = []
    for k in range(n_texts):
        codes = np.frombuffer(values[n_ints + k], dtype=">i8", count=count) if count else np.zeros(0)
        found = [str(v) if v is not None else "" for v in (values[n_ints + n_texts + k] or [])]
        ordered = sorted(set(found), key=str)
        remap = np.array([ordered.index(v) for v in found], dtype=np.intp)
        groupings.append(
            Grouping(remap[codes.astype(np.intp)] if count else np.zeros(0, np.intp), tuple(ordered))
        )
    return ints, groupings


def _only(column: str, only: Sequence[int] | None) -> tuple[str, list[object]]:
    """An ``AND`` narrowing `column` to the traces `only` (nothing when None)."""
    if only is None:
        return "", []
    if connection.vendor == "postgresql":
        return f" AND {column} = ANY(%s)", [list(only)]
    if not only:
        return " AND 0", []
    return f" AND {column} IN ({', '.join(['%s'] * len(only))})", list(only)


def _agent_of(column: str) -> str:
    vendor = connection.vendor
    if vendor not in _AGENT_OF:
        raise RuntimeError(f"evidence positions need PostgreSQL or SQLite, not {vendor}")
    return _AGENT_OF[vendor].format(column=column)


def _t(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _c(model: type[Model], field: str) -> str:
    return connection.ops.quote_name(model._meta.get_field(field).column)


def gold_from_summary(
    project_id: int, statuses: tuple[str, ...], only: Sequence[int] | None = None
) -> tuple[np.ndarray, np.ndarray, EvidencePoints]:
    """What the gold queries give -- the (trace, mode) pairs of the gold labels and `gold_evidence` -- read
    from the gold summary (migration 0021): each item's packed ``head`` and ``body``, concatenated by the
    database, with every evidence point's agent already resolved. PostgreSQL only.

    The attributed agent (the smallest non-empty ``attribution.agent`` of the submitted labels of the same
    trace and mode) comes from the few labels that carry one (a partial index finds them). With `only`,
    the rows of those traces (found through the items' (project, trace) index)."""
    narrow, narrow_params = "", []
    if only is not None:
        inner, inner_params = _only("trace_id", only)
        narrow = f" AND item_id IN (SELECT id FROM annotator_adjudicationitem WHERE project_id = %s{inner})"
        narrow_params = [project_id, *inner_params]
    label_narrow, label_params = _only(f"s.{_c(Assignment, 'trace')}", only)
    label, annotation, assignment = _t(LabelApplication), _t(Annotation), _t(Assignment)
    with connection.cursor() as cursor:
        # The agent names come along: a handful of names for every project's gold evidence together.
        count, head, body, name_ids, names = fetch_binary(
            "SELECT count(*), string_agg(head, ''::bytea), string_agg(body, ''::bytea), "
            "(SELECT array_agg(id) FROM annotator_agentname), (SELECT array_agg(name) FROM annotator_agentname) "
            "FROM annotator_goldsummary WHERE project_id = %s AND status = ANY(%s)" + narrow,
            [project_id, list(statuses), *narrow_params],
        )
        cursor.execute(
            f"""
            SELECT s.{_c(Assignment, "trace")}, l.{_c(LabelApplication, "mode")},
                   MIN(NULLIF(l.{_c(LabelApplication, "attribution")} ->> 'agent', ''))
            FROM {label} l
            JOIN {annotation} a ON a.{_c(Annotation, "id")} = l.{_c(LabelApplication, "annotation")}
            JOIN {assignment} s ON s.{_c(Assignment, "id")} = a.{_c(Annotation, "assignment")}
            WHERE l.{_c(LabelApplication, "attribution")} ? 'agent'
              AND s.{_c(Assignment, "project")} = %s AND a.{_c(Annotation, "status")} = %s{label_narrow}
            GROUP BY 1, 2
            """,
            [project_id, Annotation.Status.SUBMITTED, *label_params],
        )
        attributions = {(trace, mode): name for trace, mode, name in cursor.fetchall() if name}
    heads = np.frombuffer(head, dtype=">i8").reshape(-1, 4) if count else np.zeros((0, 4), np.int64)
    bodies = np.frombuffer(body, dtype=">i8") if count and body else np.zeros(0, np.int64)
    trace, n_modes, n_points = (heads[:, k].astype(np.int64) for k in (1, 2, 3))
    modes, triples = split_bodies(bodies, n_modes, n_points, 3)
    agent_ids, agent_codes = np.unique(triples[:, 2], return_inverse=True)
    name_of = dict(zip(name_ids or [], names or [], strict=True))
    point_trace = np.repeat(trace, n_points)
    agents = [name_of[int(pk)] for pk in agent_ids]
    ordered = sorted(set(agents), key=str)
    remap = np.array([ordered.index(name) for name in agents], dtype=np.intp)
    agent = Grouping(remap[agent_codes.reshape(-1)] if len(triples) else np.zeros(0, np.intp), tuple(ordered))
    if attributions and len(triples):
        attributed = factorize(
            [
                attributions.get(key, "")
                for key in zip(point_trace.tolist(), triples[:, 0].tolist(), strict=True)
            ]
        )
    else:
        attributed = Grouping(np.zeros(len(triples), np.intp), ("",) if len(triples) else ())
    points = EvidencePoints(point_trace, triples[:, 0].copy(), triples[:, 1].copy(), agent, attributed)
    return np.repeat(trace, n_modes), modes, points


def grouped_rows(
    sql: str, params: Sequence[object], n_ints: int, n_texts: int
) -> tuple[np.ndarray, list[Grouping]]:
    """What `coded_rows` returns, for queries whose text columns take few distinct combinations (a
    trace's model, system, benchmark, outcome, batch): the database groups the rows by their texts and
    returns each group's whole-number columns packed, so no text is handled per row. PostgreSQL only."""
    n = n_ints + n_texts
    names = ", ".join(f"c{k}" for k in range(n))
    texts = ", ".join(f"c{n_ints + k}" for k in range(n_texts))
    packed = ", ".join(f"string_agg(int8send(c{k}::bigint), ''::bytea)" for k in range(n_ints))
    statement = f"SELECT {texts}, count(*), {packed} FROM ({sql}) AS q({names}) GROUP BY {texts}"
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        groups = cursor.fetchall()
    sizes = np.array([row[n_texts] for row in groups], dtype=np.int64)
    ints = np.empty((int(sizes.sum()), n_ints), dtype=np.int64)
    for k in range(n_ints):
        if len(ints):
            ints[:, k] = np.frombuffer(b"".join(row[n_texts + 1 + k] for row in groups), dtype=">i8")
    groupings = []
    for k in range(n_texts):
        values = ["" if row[k] is None else str(row[k]) for row in groups]
        ordered = sorted(set(values), key=str)
        codes = np.array([ordered.index(v) for v in values], dtype=np.intp)
        groupings.append(Grouping(np.repeat(codes, sizes), tuple(ordered)))
    return ints, groupings
