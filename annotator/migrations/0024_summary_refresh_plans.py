"""The label summary's refresh (migration 0020) planned once per connection for small writes.

Why: every statement that writes an annotation or its labels refreshes that annotation's summary row, and
the refresh ran its query through EXECUTE, which plans it anew on each call. For the query's one or two
rows that planning was 2 ms of database CPU per statement (the execution 0.3 ms), four to five times per
draft and submit (bench/bench_annotators.py); even a statement that changed nothing the summary copies
(an assignment's status) paid it for an empty list. Now:

- an empty list returns at once (both summaries);
- up to SMALL annotations run the same query as a static statement with a generic plan, which PostgreSQL
  plans once per connection and keeps (index probes, as before); without ``force_generic_plan`` it would
  plan again each time, since the generic plan's row estimates look costlier than a custom plan's;
- larger lists (imports, taxonomy evolution, backfills) still go through EXECUTE, planned with the array at
  hand (hash joins).

The query text is 0020's, taken from it, so both paths run the same query; its evidence points are now
written in order of (mode, step), whichever plan reads them (readers take them as a set).
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

_GOLD_START = "BEGIN\n    -- No row to delete here: an item's row goes with the item (items_deleted)."


def _gold_refresh(early_return: bool) -> str:
    text = _gold_summary.REFRESH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
    assert _GOLD_START in text
    if early_return:
        early = "BEGIN\n    IF cardinality(ids) = 0 THEN\n        RETURN;\n    END IF;\n"
        text = text.replace(_GOLD_START, _GOLD_START.replace("BEGIN\n", early, 1), 1)
    return text


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    if forward:
        statements = [LABEL_REFRESH, _gold_refresh(early_return=True)]
    else:
        # Replacing a function replaces its SET clauses too: 0020's comes back without one.
        label = _label_summary.REFRESH.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
        statements = [label, _gold_refresh(early_return=False)]
    for statement in statements:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0023_signature_refresh")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
