"""The gold summary the database keeps (one packed row per adjudication item, migration 0021) always says
what the gold tables say, and the signatures read from it equal the signatures read from the tables,
after random inserts, edits and deletions of gold labels, items and attributed annotation labels."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.db import connection

from annotator.models import AdjudicationItem, GoldLabel, LabelApplication
from annotator.services.signatures import SignatureQuery, load_signature_input
from annotator.signatures import compute_signatures
from annotator.signatures.charts import build_charts
from tests.labels import submit
from tests.signatures.conftest import make_people
from tests.signatures.world import build_annotation_world, build_gold_world

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the gold summary is PostgreSQL's"),
]


def summary_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT item_id, project_id, trace_id, status, head, body FROM annotator_goldsummary ORDER BY item_id"
        )
        return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in cursor.fetchall()]


def recomputed_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SAVEPOINT rebuild")
        cursor.execute("DELETE FROM annotator_goldsummary")
        cursor.execute(
            "SELECT annotator_goldsummary_refresh(ARRAY(SELECT id FROM annotator_adjudicationitem))"
        )
        rows = summary_rows()
        cursor.execute("ROLLBACK TO SAVEPOINT rebuild")
    return rows


def assert_same_input(project, query: SignatureQuery) -> None:
    a = load_signature_input(project, query, summary=True)
    b = load_signature_input(project, query, summary=False)
    assert np.array_equal(a.labels, b.labels) and np.array_equal(a.outcome, b.outcome)
    assert a.groups.keys() == b.groups.keys()
    for name in a.groups:
        assert a.groups[name].names == b.groups[name].names
        assert np.array_equal(a.groups[name].codes, b.groups[name].codes)
    assert a.batch.names == b.batch.names and np.array_equal(a.batch.codes, b.batch.codes)
    assert (a.selection is None) == (b.selection is None)
    ea, eb = a.evidence, b.evidence
    for name in ("trace", "mode", "step", "step_count"):
        assert np.array_equal(getattr(ea, name), getattr(eb, name)), name
    for name in ("agent", "attributed"):
        ga, gb = getattr(ea, name), getattr(eb, name)
        assert ga.names == gb.names and np.array_equal(ga.codes, gb.codes), name
    if b.selected().n_traces:
        sa = compute_signatures(a, compare=query.compare)
        sb = compute_signatures(b, compare=query.compare)
        assert build_charts(sa) == build_charts(sb)


@pytest.mark.parametrize("seed", [0, 1])
def test_after_random_gold_changes_the_summary_says_what_the_tables_say(seed):
    rng = random.Random(seed)
    people = make_people()
    project = people.project
    world = build_gold_world(project)
    build_annotation_world(project, people.annotator_a, people.annotator_b)
    modes = list(world["modes"].values())
    items = list(AdjudicationItem.objects.filter(project=project))
    for _ in range(4):
        for _ in range(rng.randint(4, 10)):
            item = rng.choice(items)
            action = rng.choice(["add", "evidence", "drop", "status", "attributed", "delete item"])
            if action == "add":
                taken = set(GoldLabel.objects.filter(item=item).values_list("mode_id", flat=True))
                free = [mode for mode in modes if mode.id not in taken]
                if free:
                    GoldLabel.objects.create(
                        item=item,
                        mode=rng.choice(free),
                        source="agreed",
                        evidence=[{"step": rng.randint(-1, 12)}],
                    )
            elif action == "evidence":
                GoldLabel.objects.filter(item=item).update(
                    evidence=rng.sample([{"step": rng.randint(0, 9)}, {"step": "3"}, 7, {"step": 11}], 2)
                )
            elif action == "drop":
                GoldLabel.objects.filter(pk__in=GoldLabel.objects.filter(item=item).values("pk")[:1]).delete()
            elif action == "status":
                item.status = rng.choice(["open", "agreed", "resolved"])
                item.save(update_fields=["status"])
            elif action == "attributed":  # an imported attribution on a submitted label of the same trace
                code = GoldLabel.objects.filter(item=item).values_list("mode__code", flat=True).first()
                if code:
                    annotation = submit(project, item.trace, people.annotator_a, {code: [1]})
                    LabelApplication.objects.filter(annotation=annotation).update(
                        attribution={"agent": rng.choice(["planner", "coder", ""])}
                    )
            else:
                items.remove(item)
                item.delete()
        assert summary_rows() == recomputed_rows()
        for query in (
            SignatureQuery(),
            SignatureQuery(compare=("before", "after")),
            SignatureQuery(model=("gpt-4o",)),
            SignatureQuery(source="gold+union"),
            SignatureQuery(source="union"),
        ):
            assert_same_input(project, query)


def test_a_bulk_write_and_single_edits_make_the_same_summary(project, mast):
    """Up to 100 items are refreshed with a plan kept per connection and without the temporary table, more
    through it (migration 0024): both give the same rows, agents and evidence points in the same order."""
    from taxonomy.models import FailureMode
    from tests.labels import project_trace

    modes = list(FailureMode.objects.filter(version=mast).order_by("order")[:3])
    rng = random.Random(3)
    items = AdjudicationItem.objects.bulk_create(
        AdjudicationItem(project=project, trace=project_trace(project, n_steps=6)) for _ in range(120)
    )
    GoldLabel.objects.bulk_create(  # one statement: its trigger refreshes all 120 at once
        GoldLabel(
            item=item,
            mode=mode,
            source=GoldLabel.Source.ADJUDICATOR,
            evidence=[{"step": step} for step in rng.sample(range(-1, 9), 5)],
        )
        for item in items
        for mode in modes
    )
    GoldLabel.objects.filter(item__in=items[::2], mode=modes[0]).update(evidence=[{"step": 4}, {"step": 1}])
    in_bulk = summary_rows()
    assert len(in_bulk) == 120 and all(len(row[5]) > 3 * 8 for row in in_bulk)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotator_goldsummary")
        for item in items:
            cursor.execute("SELECT annotator_goldsummary_refresh(ARRAY[%s]::bigint[])", [item.pk])
    assert summary_rows() == in_bulk == recomputed_rows()
