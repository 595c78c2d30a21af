"""A statement that writes tens of thousands of annotations refreshes their label summary in time linear in
their number (issue 32, part 3; migration 0027): the refresh's plan never runs a nested loop over the list of
annotations, whatever the planner guesses about that list (0020's refresh guessed 200 rows and, past about
20,000 annotations, joined the list with its own label aggregates in a nested loop: 149 s at 58,819)."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.db import connection

from annotator.models import AdjudicationItem, Annotation, Assignment, GoldLabel, LabelApplication
from taxonomy.models import FailureMode
from tests.services import missing
from traces.models import Batch, Trace

pytestmark = pytest.mark.postgres

N_TRACES = 25_000  # two annotators each: 50,000 annotations
_refresh = import_module("annotator.migrations.0027_summary_refresh_per_row")


def _nested_loops_over(node: dict, relation: str, inner: bool = False) -> list[dict]:
    """The plan nodes that re-read `relation` (a function scan) once per row of another input: the inner side
    of a nested loop, or a join filter (a nested loop comparing every pair)."""
    found = [node] if "Join Filter" in node else []
    if inner and node.get("Function Name") == relation:
        found.append(node)
    for place, child in enumerate(node.get("Plans", [])):
        below = inner or (node["Node Type"] == "Nested Loop" and place == 1)
        found += _nested_loops_over(child, relation, below)
    return found


def _node_types(node: dict) -> set[str]:
    return {node["Node Type"]}.union(*(_node_types(child) for child in node.get("Plans", [])))


def _plan(cursor, query: str, ids: list[int]) -> dict:
    """The plan of one of a refresh's bulk statements, made as EXECUTE makes it: with the list at hand, and
    with the tables as they are (not analyzed since the writes, as after a bulk load)."""
    cursor.execute("EXPLAIN (FORMAT JSON) " + query.replace("{ids}", "unnest(%s::bigint[])"), [ids])
    return cursor.fetchone()[0][0]["Plan"]


def _executed_by(cursor, function: str, query: str) -> bool:
    cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [function])
    return f"EXECUTE $q${query.replace('{ids}', 'unnest($1)')}$q$ USING ids" in cursor.fetchone()[0]


def _fifty_thousand_annotations(project, mast, users) -> list[int]:
    """Traces, assignments and annotations written one statement per table (each statement's trigger
    refreshes all its rows at once), then labels on a third of the annotations in one statement."""
    batch = Batch.objects.create(name="bulk", trace_count=N_TRACES)
    project.batches.add(batch)
    traces = Trace.objects.bulk_create(
        Trace(batch=batch, external_id=f"t{i}", content_hash=f"{i:064x}") for i in range(N_TRACES)
    )
    assignments = Assignment.objects.bulk_create(
        Assignment(project=project, trace=trace, annotator=user, status="submitted")
        for trace in traces
        for user in users
    )
    annotations = Annotation.objects.bulk_create(
        Annotation(assignment=assignment, status="submitted") for assignment in assignments
    )
    modes = list(FailureMode.objects.filter(version=mast).order_by("order")[:2])
    LabelApplication.objects.bulk_create(
        LabelApplication(annotation=annotation, mode=mode, evidence=[{"step": k % 7}, {"step": 1}])
        for k, annotation in enumerate(annotations[::3])
        for mode in modes
    )
    return [annotation.pk for annotation in annotations]


def test_a_refresh_of_fifty_thousand_annotations_reads_their_list_once(
    project, mast, annotator_a, annotator_b
):
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    ids = _fifty_thousand_annotations(project, mast, [annotator_a, annotator_b])
    assert len(ids) == 50_000

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), sum(length(body)) FROM annotator_labelsummary WHERE project_id = %s",
            [project.pk],
        )
        assert cursor.fetchone() == (50_000, len(ids[::3]) * 2 * (8 + 2 * 16))

        # The statement the refresh EXECUTEs for a list this long.
        assert _executed_by(cursor, "annotator_labelsummary_refresh", _refresh.LABEL_QUERY)
        plan = _plan(cursor, _refresh.LABEL_QUERY, ids)

    assert _nested_loops_over(plan, "unnest") == []
    assert "Materialize" not in _node_types(plan)


def test_a_refresh_of_five_thousand_gold_items_reads_their_list_once(project, mast):
    """The gold summary's refresh (the agent names, then the rows) is built the same way."""
    if connection.vendor != "postgresql":
        missing("PostgreSQL", "Set DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator to run on it.")
    batch = Batch.objects.create(name="gold", trace_count=5_000)
    project.batches.add(batch)
    traces = Trace.objects.bulk_create(
        Trace(batch=batch, external_id=f"t{i}", content_hash=f"{i:064x}") for i in range(5_000)
    )
    items = AdjudicationItem.objects.bulk_create(
        AdjudicationItem(project=project, trace=trace) for trace in traces
    )
    modes = list(FailureMode.objects.filter(version=mast).order_by("order")[:2])
    GoldLabel.objects.bulk_create(  # one statement: its trigger refreshes the 5,000 items at once
        GoldLabel(item=item, mode=mode, source=GoldLabel.Source.ADJUDICATOR, evidence=[{"step": 2}])
        for item in items
        for mode in modes
    )
    ids = [item.pk for item in items]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), sum(length(body)) FROM annotator_goldsummary WHERE project_id = %s",
            [project.pk],
        )
        assert cursor.fetchone() == (5_000, 5_000 * 2 * (8 + 24))
        plans = []
        for query in (_refresh.GOLD_AGENTS, _refresh.GOLD_QUERY):
            assert _executed_by(cursor, "annotator_goldsummary_refresh", query)
            plans.append(_plan(cursor, query, ids))

    for plan in plans:
        assert _nested_loops_over(plan, "unnest") == []
        assert "Materialize" not in _node_types(plan)
