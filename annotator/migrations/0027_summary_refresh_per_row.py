"""The label and gold summaries' refreshes (migrations 0020, 0021, 0024) linear in the rows a statement wrote,
whatever its size and whatever the planner guesses about it.

Why: 0020's refresh joined the list of annotations with per-annotation aggregates of their labels, and the
planner sized that list, ``SELECT DISTINCT u.id FROM unnest($1)``, at 200 rows whatever it held (a DISTINCT
over a function has no statistics). Past about 20,000 annotations in one statement it joined the two with a
nested loop over that guess: the fixture of bench/bench_agreement_report.py spent 149 s in one refresh at
30,000 traces (58,819 annotations on each side of the loop) and did not finish in 20 minutes at 100,000.
Any statement that writes many labels paid it: a bulk import, a taxonomy migration, a restore. Now:

- each annotation's (adjudication item's) labels and evidence are aggregated in a LATERAL subquery that
  reads that one annotation's labels through the index on ``annotation_id`` (``item_id``). An aggregate in
  a LATERAL subquery cannot be turned into a join, so no plan joins an aggregate against the list: the
  work is one index probe per annotation and per label, whatever the estimates. The remaining joins are of
  the list with tables by their keys, which any plan the planner picks does in linear time;
- a bulk list is de-duplicated before EXECUTE, so ``unnest($1)`` is planned with its true length (hash
  joins for a large list, index probes for a small one), as 0024 meant;
- the gold points are computed in place on both paths, never through 0021's temporary table, which the
  planner saw without statistics below 1,000 items;
- JIT is off in both refreshes: their plans' costs grow with the list (one subquery per row), and past
  about 8,000 rows JIT compiled them (0.45 s at 58,819 rows, a fifth of the refresh; more than the whole
  refresh of 8,000);
- the triggers that compare a statement's new rows with its old ones (an assignment's project, trace,
  annotator or purpose; a trace's batch; an adjudication item's project, trace or status) take
  ``new EXCEPT old`` instead of joining the two transition tables. PL/pgSQL plans a trigger's statements
  once per connection, for the number of rows the first call saw: after one assignment's update (every
  claim and submit), an update of 5,000 assignments reused the one-row plan, a nested loop of the two
  tables (6.5 s; quadratic). A set difference is hashed or sorted, never a nested loop.

The small path (up to SMALL rows) keeps 0024's static statement with a generic plan made once per connection.
The summary rows are byte for byte the ones 0024 wrote (evidence points in order of mode, then step, then
agent: a label's or gold label's mode is unique within its annotation or item).
"""

from importlib import import_module

from django.db import migrations

SMALL = 100

_label_summary = import_module("annotator.migrations.0020_label_summary")
_gold_summary = import_module("annotator.migrations.0021_gold_summary")
_plans = import_module("annotator.migrations.0024_summary_refresh_plans")

# `{ids}` is the relation of annotation (item) ids: de-duplicated in the statement on the small path, before
# it on the bulk path (ON CONFLICT cannot update one row twice).
_SMALL_IDS = "(SELECT DISTINCT u.id FROM unnest(ids) AS u(id))"
_BULK_IDS = "unnest($1)"

LABEL_QUERY = r"""
    INSERT INTO annotator_labelsummary AS s (
        annotation_id, project_id, batch_id, trace_id, annotator_id, purpose, status, version, updated_at, head,
        body, missing)
    SELECT a.id, g.project_id, t.batch_id, g.trace_id, g.annotator_id, g.purpose, a.status, a.version,
           a.updated_at,
           int8send(a.id) || int8send(g.trace_id) || int8send(g.annotator_id)
               || int8send(lab.n_modes) || int8send(COALESCE(lab.primary_mode, -1)::bigint)
               || int8send(lab.n_points) || int8send(a.version::bigint)
               || int8send(round(extract(epoch FROM a.updated_at) * 1000000)::bigint),
           COALESCE(lab.modes, ''::bytea) || COALESCE(lab.points, ''::bytea),
           CASE WHEN a.provenance ? 'missing_modes' THEN a.provenance -> 'missing_modes' END
    FROM {ids} AS c (id)
    JOIN annotator_annotation a ON a.id = c.id
    JOIN annotator_assignment g ON g.id = a.assignment_id
    JOIN traces_trace t ON t.id = g.trace_id
    CROSS JOIN LATERAL (
        SELECT count(*) AS n_modes,
               string_agg(int8send(l.mode_id::bigint), ''::bytea ORDER BY l.mode_id) AS modes,
               min(l.mode_id) FILTER (WHERE l."primary") AS primary_mode,
               COALESCE(sum(p.n_points), 0)::bigint AS n_points,
               string_agg(p.points, ''::bytea ORDER BY l.mode_id) AS points
        FROM annotator_labelapplication l
        CROSS JOIN LATERAL (
            SELECT count(*) AS n_points,
                   string_agg(int8send(l.mode_id::bigint) || int8send((e.value ->> 'step')::bigint), ''::bytea
                       ORDER BY (e.value ->> 'step')::bigint) AS points
            FROM jsonb_array_elements(
                CASE WHEN jsonb_typeof(l.evidence) = 'array' THEN l.evidence ELSE '[]'::jsonb END) AS e(value)
            WHERE jsonb_typeof(e.value -> 'step') = 'number' AND (e.value ->> 'step') ~ '^-?[0-9]{1,18}$') p
        WHERE l.annotation_id = a.id) lab
    ON CONFLICT (annotation_id) DO UPDATE SET
        project_id = EXCLUDED.project_id, batch_id = EXCLUDED.batch_id, trace_id = EXCLUDED.trace_id,
        annotator_id = EXCLUDED.annotator_id, purpose = EXCLUDED.purpose, status = EXCLUDED.status,
        version = EXCLUDED.version, updated_at = EXCLUDED.updated_at, head = EXCLUDED.head, body = EXCLUDED.body,
        missing = EXCLUDED.missing
"""

# A gold evidence point: its step, and the agent acting at that step of the trace ("" when none).
_GOLD_STEP = r"""CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(g.evidence) = 'array' THEN g.evidence ELSE '[]'::jsonb END) AS e(value)
    CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(e.value -> 'step') = 'number'
                                         AND (e.value ->> 'step') ~ '^-?[0-9]+$'
                                    THEN (e.value ->> 'step')::bigint END AS step) p"""
_GOLD_AGENT = (
    "COALESCE((SELECT st.agent FROM traces_step st WHERE st.trace_id = i.trace_id AND st.index = p.step), '')"
)

GOLD_AGENTS = f"""
    INSERT INTO annotator_agentname (name)
    SELECT DISTINCT {_GOLD_AGENT}
    FROM {{ids}} AS c (id)
    JOIN annotator_goldlabel g ON g.item_id = c.id
    JOIN annotator_adjudicationitem i ON i.id = g.item_id
    {_GOLD_STEP}
    WHERE p.step IS NOT NULL
    ON CONFLICT (name) DO NOTHING
"""

GOLD_QUERY = f"""
    INSERT INTO annotator_goldsummary AS s (item_id, project_id, trace_id, status, head, body)
    SELECT i.id, i.project_id, i.trace_id, i.status,
           int8send(i.id) || int8send(i.trace_id) || int8send(gold.n_modes) || int8send(gold.n_points),
           COALESCE(gold.modes, ''::bytea) || COALESCE(gold.points, ''::bytea)
    FROM {{ids}} AS c (id)
    JOIN annotator_adjudicationitem i ON i.id = c.id
    CROSS JOIN LATERAL (
        SELECT count(*) AS n_modes,
               string_agg(int8send(g.mode_id::bigint), ''::bytea ORDER BY g.mode_id) AS modes,
               COALESCE(sum(q.n_points), 0)::bigint AS n_points,
               string_agg(q.points, ''::bytea ORDER BY g.mode_id) AS points
        FROM annotator_goldlabel g
        CROSS JOIN LATERAL (
            SELECT count(*) AS n_points,
                   string_agg(int8send(g.mode_id::bigint) || int8send(p.step) || int8send(n.id), ''::bytea
                       ORDER BY p.step, n.id) AS points
            FROM (SELECT 1) AS one
            {_GOLD_STEP}
            JOIN annotator_agentname n ON n.name = {_GOLD_AGENT}
            WHERE p.step IS NOT NULL) q
        WHERE g.item_id = i.id) gold
    ON CONFLICT (item_id) DO UPDATE SET
        project_id = EXCLUDED.project_id, trace_id = EXCLUDED.trace_id, status = EXCLUDED.status,
        head = EXCLUDED.head, body = EXCLUDED.body
"""


def _refresh(name: str, comment: str, queries: list[str]) -> str:
    """A refresh function running `queries` for a list of ids: a static statement (a generic plan made once per
    connection) up to SMALL ids, EXECUTE with the de-duplicated list beyond."""
    small = ";\n".join(q.replace("{ids}", _SMALL_IDS) for q in queries)
    bulk = "\n".join(f"    EXECUTE $q${q.replace('{ids}', _BULK_IDS)}$q$ USING ids;" for q in queries)
    return f"""
CREATE OR REPLACE FUNCTION {name}(ids bigint[]) RETURNS void AS $$
BEGIN
    -- {comment}
    IF cardinality(ids) = 0 THEN
        RETURN;
    END IF;
    IF cardinality(ids) <= {SMALL} THEN
        {small};
        RETURN;
    END IF;
    ids := ARRAY(SELECT DISTINCT u.id FROM unnest(ids) AS u(id) ORDER BY u.id);
{bulk}
END $$ LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET jit = off
"""


LABEL_REFRESH = _refresh(
    "annotator_labelsummary_refresh",
    "No row to delete here: an annotation's row goes with the annotation (annotations_deleted).",
    [LABEL_QUERY],
)
# The agent names first, in a statement of their own, so the summary's statement sees names another
# transaction committed meanwhile (as 0021's did).
GOLD_REFRESH = _refresh(
    "annotator_goldsummary_refresh",
    "No row to delete here: an item's row goes with the item (items_deleted).",
    [GOLD_AGENTS, GOLD_QUERY],
)

# The triggers whose new and old rows were joined (0020's, 0021's): the ids whose copied columns changed.
TRIGGER_FUNCTIONS = {
    "annotator_labelsummary_assignments_changed": """
        PERFORM annotator_labelsummary_refresh(ARRAY(
            SELECT a.id
            FROM (SELECT id, project_id, trace_id, annotator_id, purpose FROM changed_new
                  EXCEPT SELECT id, project_id, trace_id, annotator_id, purpose FROM changed_old) n
            JOIN annotator_annotation a ON a.assignment_id = n.id))""",
    "annotator_labelsummary_traces_changed": """
        PERFORM annotator_labelsummary_refresh(ARRAY(
            SELECT a.id
            FROM (SELECT id, batch_id FROM changed_new EXCEPT SELECT id, batch_id FROM changed_old) n
            JOIN annotator_assignment g ON g.trace_id = n.id
            JOIN annotator_annotation a ON a.assignment_id = g.id))""",
    "annotator_goldsummary_items_changed": """
        PERFORM annotator_goldsummary_refresh(ARRAY(
            SELECT id FROM (SELECT id, project_id, trace_id, status FROM changed_new
                            EXCEPT SELECT id, project_id, trace_id, status FROM changed_old) n))""",
}


def _trigger_function(name: str, body: str) -> str:
    return f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger AS $$ BEGIN {body}; RETURN NULL; END $$ LANGUAGE plpgsql"


def _previous_trigger_functions() -> list[str]:
    """0020's and 0021's versions of the functions TRIGGER_FUNCTIONS replaces."""
    previous = {
        f"annotator_labelsummary_{name}": body
        for name, body in _label_summary.FUNCTIONS.items()
        if name in ("assignments_changed", "traces_changed")
    }
    previous["annotator_goldsummary_items_changed"] = _gold_summary.FUNCTIONS["items_changed"]
    assert previous.keys() == TRIGGER_FUNCTIONS.keys()
    return [_trigger_function(name, body) for name, body in previous.items()]


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    if forward:
        statements = [LABEL_REFRESH, GOLD_REFRESH]
        statements += [_trigger_function(name, body) for name, body in TRIGGER_FUNCTIONS.items()]
    else:
        # Replacing a function replaces its SET clauses too: 0024's come back with theirs.
        statements = [_plans.LABEL_REFRESH, _plans._gold_refresh(), *_previous_trigger_functions()]
    for statement in statements:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0026_drop_empty_imported_annotations")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
