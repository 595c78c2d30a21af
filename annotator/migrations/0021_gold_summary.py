"""A compact summary of every adjudication item's gold labels, kept by the database (PostgreSQL only).

Why: the failure signatures of a million gold traces expanded every gold evidence list and probed the step
table once per evidence point to find the agent acting there (62 s). One row per item
(``annotator_goldsummary``) holds it resolved when the gold is written: ``head`` is 32 bytes of big-endian
int8 (item id, trace id, number of gold modes, number of evidence points) and ``body`` the gold mode ids
(ascending) then one (mode id, step, agent id) triple per evidence point, the agent's name in
``annotator_agentname`` ("" when no step of the trace has that index).

Triggers on the gold labels and the items keep it (see migration 0020 for why triggers); the steps of a
trace are written once, when it is imported, before anyone labels it. A partial index finds the few
labels that carry an imported attribution (Who&When's agent), which gold points take as their
"attributed" agent.
"""

from django.db import migrations

REFRESH = r"""
CREATE FUNCTION annotator_goldsummary_refresh(ids bigint[]) RETURNS void AS $$
BEGIN
    -- No row to delete here: an item's row goes with the item (items_deleted).
    CREATE TEMP TABLE IF NOT EXISTS goldsummary_points (
        item_id bigint, mode_id bigint, step bigint, agent text) ON COMMIT DROP;
    TRUNCATE goldsummary_points;
    EXECUTE $q$
    INSERT INTO goldsummary_points
    SELECT g.item_id, g.mode_id, p.step,
           COALESCE((SELECT st.agent FROM traces_step st WHERE st.trace_id = i.trace_id AND st.index = p.step),
                    '')
    FROM (SELECT DISTINCT u.id FROM unnest($1) AS u(id)) c
    JOIN annotator_goldlabel g ON g.item_id = c.id
    JOIN annotator_adjudicationitem i ON i.id = g.item_id
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(g.evidence) = 'array' THEN g.evidence ELSE '[]'::jsonb END) AS e(value)
    CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(e.value -> 'step') = 'number'
                                         AND (e.value ->> 'step') ~ '^-?[0-9]+$'
                                    THEN (e.value ->> 'step')::bigint END AS step) p
    WHERE p.step IS NOT NULL
    $q$ USING ids;
    IF cardinality(ids) > 1000 THEN
        ANALYZE goldsummary_points;  -- a bulk write: let the planner see how many points there are
    END IF;
    INSERT INTO annotator_agentname (name) SELECT DISTINCT agent FROM goldsummary_points
    ON CONFLICT (name) DO NOTHING;
    -- EXECUTE plans with the array at hand, so a bulk statement (a COPY of a million rows) is
    -- planned with hash joins and a single edit with index probes.
    EXECUTE $q$
    INSERT INTO annotator_goldsummary AS s (item_id, project_id, trace_id, status, head, body)
    WITH c AS (SELECT DISTINCT u.id FROM unnest($1) AS u(id)),
    gold AS (
        SELECT g.item_id, count(*) AS n_modes,
               string_agg(int8send(g.mode_id::bigint), ''::bytea ORDER BY g.mode_id) AS modes
        FROM annotator_goldlabel g JOIN c ON c.id = g.item_id
        GROUP BY g.item_id),
    ev AS (
        SELECT p.item_id, count(*) AS n_points,
               string_agg(int8send(p.mode_id) || int8send(p.step) || int8send(n.id), ''::bytea) AS points
        FROM goldsummary_points p JOIN annotator_agentname n ON n.name = p.agent
        GROUP BY p.item_id)
    SELECT i.id, i.project_id, i.trace_id, i.status,
           int8send(i.id) || int8send(i.trace_id) || int8send(COALESCE(gold.n_modes, 0))
               || int8send(COALESCE(ev.n_points, 0)),
           COALESCE(gold.modes, ''::bytea) || COALESCE(ev.points, ''::bytea)
    FROM c
    JOIN annotator_adjudicationitem i ON i.id = c.id
    LEFT JOIN gold ON gold.item_id = i.id
    LEFT JOIN ev ON ev.item_id = i.id
    ON CONFLICT (item_id) DO UPDATE SET
        project_id = EXCLUDED.project_id, trace_id = EXCLUDED.trace_id, status = EXCLUDED.status,
        head = EXCLUDED.head, body = EXCLUDED.body
    $q$ USING ids;
END $$ LANGUAGE plpgsql
"""

FUNCTIONS = {
    "gold_inserted": "PERFORM annotator_goldsummary_refresh(ARRAY(SELECT item_id FROM changed_new))",
    "gold_changed": """
        PERFORM annotator_goldsummary_refresh(ARRAY(
            SELECT item_id FROM changed_new UNION SELECT item_id FROM changed_old))""",
    "gold_deleted": "PERFORM annotator_goldsummary_refresh(ARRAY(SELECT item_id FROM changed_old))",
    "items_inserted": "PERFORM annotator_goldsummary_refresh(ARRAY(SELECT id FROM changed_new))",
    # An item's own row changes often (claims, notes); only what the summary copies refreshes it.
    "items_changed": """
        PERFORM annotator_goldsummary_refresh(ARRAY(
            SELECT n.id FROM changed_new n JOIN changed_old o ON o.id = n.id
            WHERE (n.project_id, n.trace_id, n.status) IS DISTINCT FROM (o.project_id, o.trace_id, o.status)))""",
    "items_deleted": "DELETE FROM annotator_goldsummary s USING changed_old o WHERE s.item_id = o.id",
}

TRIGGERS = [
    ("gold_inserted", "annotator_goldlabel", "INSERT", "NEW TABLE AS changed_new"),
    ("gold_changed", "annotator_goldlabel", "UPDATE", "NEW TABLE AS changed_new OLD TABLE AS changed_old"),
    ("gold_deleted", "annotator_goldlabel", "DELETE", "OLD TABLE AS changed_old"),
    ("items_inserted", "annotator_adjudicationitem", "INSERT", "NEW TABLE AS changed_new"),
    ("items_changed", "annotator_adjudicationitem", "UPDATE", "NEW TABLE AS changed_new OLD TABLE AS changed_old"),
    ("items_deleted", "annotator_adjudicationitem", "DELETE", "OLD TABLE AS changed_old"),
]


def _forward() -> list[str]:
    statements = [
        "CREATE TABLE annotator_agentname (id bigserial PRIMARY KEY, name text NOT NULL UNIQUE)",
        """
        CREATE TABLE annotator_goldsummary (
            item_id bigint PRIMARY KEY,
            project_id bigint NOT NULL,
            trace_id bigint NOT NULL,
            status varchar(20) NOT NULL,
            head bytea NOT NULL,
            body bytea NOT NULL
        )
        """,
        "CREATE INDEX goldsummary_project_idx ON annotator_goldsummary (project_id, status)",
        "CREATE INDEX label_attributed_idx ON annotator_labelapplication (annotation_id) "
        "WHERE attribution ? 'agent'",
        REFRESH,
    ]
    for name, body in FUNCTIONS.items():
        statements.append(
            f"CREATE FUNCTION annotator_goldsummary_{name}() RETURNS trigger AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$ LANGUAGE plpgsql"
        )
    for function, table, event, tables in TRIGGERS:
        statements.append(
            f"CREATE TRIGGER goldsummary_{table}_{event.lower()} AFTER {event} ON {table} "
            f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION annotator_goldsummary_{function}()"
        )
    statements.append("SELECT annotator_goldsummary_refresh(ARRAY(SELECT id FROM annotator_adjudicationitem))")
    return statements


def _backward() -> list[str]:
    statements = [
        f"DROP TRIGGER IF EXISTS goldsummary_{table}_{event.lower()} ON {table}" for _, table, event, _ in TRIGGERS
    ]
    statements += [f"DROP FUNCTION IF EXISTS annotator_goldsummary_{name}()" for name in FUNCTIONS]
    statements += [
        "DROP FUNCTION IF EXISTS annotator_goldsummary_refresh(bigint[])",
        "DROP INDEX IF EXISTS label_attributed_idx",
        "DROP TABLE IF EXISTS annotator_goldsummary",
        "DROP TABLE IF EXISTS annotator_agentname",
    ]
    return statements


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _forward() if forward else _backward():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0020_label_summary")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
