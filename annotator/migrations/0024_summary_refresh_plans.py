"""The label and gold summaries' refreshes (migrations 0020 and 0021) planned once per connection for
small writes.

Why: every statement that writes an annotation or its labels refreshes that annotation's summary row, and
the refresh ran its query through EXECUTE, which plans it anew on each call. For the query's one or two
rows that planning was 2 ms of database CPU per statement (the execution 0.3 ms), four to five times per
draft and submit (bench/bench_annotators.py); even a statement that changed nothing the summary copies
(an assignment's status) paid it for an empty list. The gold summary's refresh (an adjudication item
created, its status or its gold changed) also created its temporary table each time: 3.5 ms a call. Now:

- an empty list returns at once;
- up to SMALL annotations (items) run the same queries as static statements with a generic plan, which
  PostgreSQL plans once per connection and keeps (index probes, as before); without
  ``force_generic_plan`` it would plan again each time, since the generic plan's row estimates look
  costlier than a custom plan's. The gold points are computed in place instead of in the temporary table;
- larger lists (imports, taxonomy evolution, backfills) still go through EXECUTE, planned with the array at
  hand (hash joins), and the gold points through the temporary table.

The query texts are 0020's and 0021's, taken from them, so both paths run the same queries; the evidence
points of a row are now written in order of (mode, step[, agent]) whichever plan reads them (readers take
them as a set).
"""

from importlib import import_module

from django.db import migrations

SMALL = 100

_label_summary = import_module("annotator.migrations.0020_label_summary")
_gold_summary = import_module("annotator.migrations.0021_gold_summary")


_UNORDERED_POINTS = "''::bytea)\n                   AS points"
_ORDERED_POINTS = "''::bytea\n                   ORDER BY l.mode_id, (e.value ->> 'step')::bigint) AS points"


def _label_query() -> str:
    """0020's refresh query, with `$1` for the array of annotation ids, and the evidence points in order of
    (mode, step): 0020 left them in the order the plan read them, which differs between the two paths."""
    body = _label_summary.REFRESH.split("EXECUTE $q$", 1)[1].split("$q$ USING ids;", 1)[0]
    assert "unnest($1)" in body and "$q$" not in body and _UNORDERED_POINTS in body
    return body.replace(_UNORDERED_POINTS, _ORDERED_POINTS)


LABEL_REFRESH = f"""
CREATE OR REPLACE FUNCTION annotator_labelsummary_refresh(ids bigint[]) RETURNS void AS $$
BEGIN
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(ids) <= {SMALL} THEN
        {_label_query().replace("unnest($1)", "unnest(ids)")};
        RETURN;
    END IF;
    EXECUTE $q${_label_query()}$q$ USING ids;
END $$ LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan
"""

_GOLD_POINTS_INTO = "\n    INSERT INTO goldsummary_points\n"
_GOLD_UNORDERED = "''::bytea) AS points"
_GOLD_ORDERED = "''::bytea\n                   ORDER BY p.mode_id, p.step, n.id) AS points"


def _gold_queries() -> tuple[str, str]:
    """0021's two queries: the gold evidence points (item, mode, step, agent name) and the summary rows
    from them (reading the temporary table the points went into), both with `$1` for the item ids; the
    summary's points in order of (mode, step, agent), for the reason given for the labels."""
    steps = _gold_summary.REFRESH.split("EXECUTE $q$")
    points = steps[1].split("$q$ USING ids;", 1)[0]
    summary = steps[2].split("$q$ USING ids;", 1)[0]
    assert points.startswith(_GOLD_POINTS_INTO) and "goldsummary_points p" in summary
    assert _GOLD_UNORDERED in summary
    return points.removeprefix(_GOLD_POINTS_INTO), summary.replace(_GOLD_UNORDERED, _GOLD_ORDERED)


def _gold_refresh() -> str:
    """Small lists without the temporary table: the agent names first (a statement of their own, so the
    summary's statement sees names another transaction committed meanwhile, as 0021's does), then the
    summary with the points computed in place."""
    points, summary = _gold_queries()
    inline = f"({points.replace('unnest($1)', 'unnest(ids)')}) AS p (item_id, mode_id, step, agent)"
    small = summary.replace("unnest($1)", "unnest(ids)").replace("goldsummary_points p", inline)
    bulk = _gold_summary.REFRESH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    bulk = bulk.replace(_GOLD_UNORDERED, _GOLD_ORDERED)
    start = "BEGIN\n    -- No row to delete here: an item's row goes with the item (items_deleted).\n"
    assert start in bulk
    return bulk.replace(
        start,
        f"""{start}    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(ids) <= {SMALL} THEN
        INSERT INTO annotator_agentname (name)
        SELECT DISTINCT p.agent FROM {inline}
        ON CONFLICT (name) DO NOTHING;
        {small};
        RETURN;
    END IF;
""",
        1,
    ).replace("END $$ LANGUAGE plpgsql", "END $$ LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan")


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    if forward:
        statements = [LABEL_REFRESH, _gold_refresh()]
    else:
        # Replacing a function replaces its SET clauses too: 0020's and 0021's come back without one.
        statements = [
            summary.REFRESH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
            for summary in (_label_summary, _gold_summary)
        ]
    for statement in statements:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0023_signature_refresh")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
