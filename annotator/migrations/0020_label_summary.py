"""A compact summary of every annotation's labels, kept by the database (PostgreSQL only).

Why: the agreement report of a million-trace project read two million annotations, three million labels
and their evidence lists through three joins and a JSON expansion (55 s). One narrow row per annotation
(``annotator_labelsummary``) is read in one sequential pass instead (see
``annotator.services.reports.data``): besides the columns a query selects on (project, batch, trace,
annotator, the assignment's purpose, status; version and updated_at for the fingerprint) it holds ``head``, 64 bytes of big-endian
int8 (annotation id, trace id, annotator id, number of labels, primary mode id or -1, number of evidence
points, version, updated_at in microseconds since the epoch), and ``body``, the label mode ids (ascending)
then the evidence points as (mode id, step) pairs, all int8; and ``missing``, the missing modes an import
recorded (provenance ``missing_modes``). Reading two packed columns costs no function call per row.

Why triggers rather than the services: the summary must follow *every* write of a label or an annotation
(the annotation service, the label import, taxonomy evolution, cascading deletes, the admin, factories,
COPY), in the same transaction, and statement-level triggers with transition tables do that at one
recomputation per statement whatever its size. Elsewhere (SQLite) there is no summary: the report reads the
label tables as before.

The summary is derived data: ``annotator_labelsummary_refresh(ids)`` recomputes the rows of the given
annotations from the tables, which is what each trigger calls and what the backfill below runs once.
"""

from django.db import migrations

REFRESH = r"""
CREATE FUNCTION annotator_labelsummary_refresh(ids bigint[]) RETURNS void AS $$
BEGIN
    -- No row to delete here: an annotation's row goes with the annotation (annotations_deleted), and
    -- its labels cannot outlive it.
    -- EXECUTE plans with the array at hand, so a bulk statement (a COPY of a million rows) is
    -- planned with hash joins and a single edit with index probes.
    EXECUTE $q$
    INSERT INTO annotator_labelsummary AS s (
        annotation_id, project_id, batch_id, trace_id, annotator_id, purpose, status, version, updated_at, head,
        body, missing)
    WITH c AS (SELECT DISTINCT u.id FROM unnest($1) AS u(id)),
    lab AS (
        SELECT l.annotation_id, count(*) AS n_modes,
               string_agg(int8send(l.mode_id::bigint), ''::bytea ORDER BY l.mode_id) AS modes,
               min(l.mode_id) FILTER (WHERE l."primary") AS primary_mode
        FROM annotator_labelapplication l JOIN c ON c.id = l.annotation_id
        GROUP BY l.annotation_id),
    ev AS (
        SELECT l.annotation_id, count(*) AS n_points,
               string_agg(int8send(l.mode_id::bigint) || int8send((e.value ->> 'step')::bigint), ''::bytea)
                   AS points
        FROM annotator_labelapplication l JOIN c ON c.id = l.annotation_id
        CROSS JOIN LATERAL jsonb_array_elements(
            CASE WHEN jsonb_typeof(l.evidence) = 'array' THEN l.evidence ELSE '[]'::jsonb END) AS e(value)
        WHERE jsonb_typeof(e.value -> 'step') = 'number' AND (e.value ->> 'step') ~ '^-?[0-9]{1,18}$'
        GROUP BY l.annotation_id)
    SELECT a.id, g.project_id, t.batch_id, g.trace_id, g.annotator_id, g.purpose, a.status, a.version,
           a.updated_at,
           int8send(a.id) || int8send(g.trace_id) || int8send(g.annotator_id)
               || int8send(COALESCE(lab.n_modes, 0)) || int8send(COALESCE(lab.primary_mode, -1)::bigint)
               || int8send(COALESCE(ev.n_points, 0)) || int8send(a.version::bigint)
               || int8send(round(extract(epoch FROM a.updated_at) * 1000000)::bigint),
           COALESCE(lab.modes, ''::bytea) || COALESCE(ev.points, ''::bytea),
           CASE WHEN a.provenance ? 'missing_modes' THEN a.provenance -> 'missing_modes' END
    FROM c
    JOIN annotator_annotation a ON a.id = c.id
    JOIN annotator_assignment g ON g.id = a.assignment_id
    JOIN traces_trace t ON t.id = g.trace_id
    LEFT JOIN lab ON lab.annotation_id = a.id
    LEFT JOIN ev ON ev.annotation_id = a.id
    ON CONFLICT (annotation_id) DO UPDATE SET
        project_id = EXCLUDED.project_id, batch_id = EXCLUDED.batch_id, trace_id = EXCLUDED.trace_id,
        annotator_id = EXCLUDED.annotator_id, purpose = EXCLUDED.purpose, status = EXCLUDED.status, version = EXCLUDED.version,
        updated_at = EXCLUDED.updated_at, head = EXCLUDED.head, body = EXCLUDED.body,
        missing = EXCLUDED.missing
    $q$ USING ids;
END $$ LANGUAGE plpgsql
"""

# One trigger function per table and event: a transition table is only visible in the function it was
# declared for. Each gathers the annotations the statement touched and refreshes them once.
FUNCTIONS = {
    "labels_changed": """
        PERFORM annotator_labelsummary_refresh(ARRAY(
            SELECT annotation_id FROM changed_new UNION SELECT annotation_id FROM changed_old))""",
    "labels_inserted": "PERFORM annotator_labelsummary_refresh(ARRAY(SELECT annotation_id FROM changed_new))",
    "labels_deleted": "PERFORM annotator_labelsummary_refresh(ARRAY(SELECT annotation_id FROM changed_old))",
    "annotations_written": "PERFORM annotator_labelsummary_refresh(ARRAY(SELECT id FROM changed_new))",
    "annotations_deleted": """
        DELETE FROM annotator_labelsummary s USING changed_old o WHERE s.annotation_id = o.id""",
    # Only a change of what the summary copies (project, trace, annotator, purpose; a trace's batch) refreshes.
    "assignments_changed": """
        PERFORM annotator_labelsummary_refresh(ARRAY(
            SELECT a.id FROM changed_new n JOIN changed_old o ON o.id = n.id
            JOIN annotator_annotation a ON a.assignment_id = n.id
            WHERE (n.project_id, n.trace_id, n.annotator_id, n.purpose) IS DISTINCT FROM
                  (o.project_id, o.trace_id, o.annotator_id, o.purpose)))""",
    "traces_changed": """
        PERFORM annotator_labelsummary_refresh(ARRAY(
            SELECT a.id FROM changed_new n JOIN changed_old o ON o.id = n.id AND o.batch_id <> n.batch_id
            JOIN annotator_assignment g ON g.trace_id = n.id
            JOIN annotator_annotation a ON a.assignment_id = g.id))""",
}

TRIGGERS = [  # (function, table, event, transition tables)
    ("labels_inserted", "annotator_labelapplication", "INSERT", "NEW TABLE AS changed_new"),
    (
        "labels_changed",
        "annotator_labelapplication",
        "UPDATE",
        "NEW TABLE AS changed_new OLD TABLE AS changed_old",
    ),
    ("labels_deleted", "annotator_labelapplication", "DELETE", "OLD TABLE AS changed_old"),
    ("annotations_written", "annotator_annotation", "INSERT", "NEW TABLE AS changed_new"),
    ("annotations_written", "annotator_annotation", "UPDATE", "NEW TABLE AS changed_new"),
    ("annotations_deleted", "annotator_annotation", "DELETE", "OLD TABLE AS changed_old"),
    (
        "assignments_changed",
        "annotator_assignment",
        "UPDATE",
        "NEW TABLE AS changed_new OLD TABLE AS changed_old",
    ),
    ("traces_changed", "traces_trace", "UPDATE", "NEW TABLE AS changed_new OLD TABLE AS changed_old"),
]

TABLE = """
CREATE TABLE annotator_labelsummary (
    annotation_id bigint PRIMARY KEY,
    project_id bigint NOT NULL,
    batch_id bigint NOT NULL,
    trace_id bigint NOT NULL,
    annotator_id bigint NOT NULL,
    purpose varchar(12) NOT NULL,
    status varchar(10) NOT NULL,
    version integer NOT NULL,
    updated_at timestamptz NOT NULL,
    head bytea NOT NULL,
    body bytea NOT NULL,
    missing jsonb
)
"""


def _forward() -> list[str]:
    statements = [
        TABLE,
        "CREATE INDEX labelsummary_project_trace_idx ON annotator_labelsummary (project_id, trace_id)",
        REFRESH,
    ]
    for name, body in FUNCTIONS.items():
        statements.append(
            f"CREATE FUNCTION annotator_labelsummary_{name}() RETURNS trigger AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$ LANGUAGE plpgsql"
        )
    for function, table, event, tables in TRIGGERS:
        statements.append(
            f"CREATE TRIGGER labelsummary_{table}_{event.lower()} AFTER {event} ON {table} "
            f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION annotator_labelsummary_{function}()"
        )
    statements.append("SELECT annotator_labelsummary_refresh(ARRAY(SELECT id FROM annotator_annotation))")
    return statements


def _backward() -> list[str]:
    statements = [
        f"DROP TRIGGER IF EXISTS labelsummary_{table}_{event.lower()} ON {table}"
        for _, table, event, _ in TRIGGERS
    ]
    statements += [f"DROP FUNCTION IF EXISTS annotator_labelsummary_{name}()" for name in FUNCTIONS]
    statements += [
        "DROP FUNCTION IF EXISTS annotator_labelsummary_refresh(bigint[])",
        "DROP TABLE IF EXISTS annotator_labelsummary",
    ]
    return statements


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _forward() if forward else _backward():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0019_gold_calibration")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
