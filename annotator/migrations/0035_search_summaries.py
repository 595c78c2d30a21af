"""The evidence filters' summary (issue 28), PostgreSQL only: one row per (project, trace, kind, tool) of a
step that a submitted work label points at.

Why: `evidence_kind` / `evidence_tool` joined labels x annotations x assignments, expanded each label's
evidence list and probed the step it names: 3.8-6.4 s at 100,000 traces (docs/benchmarks.md), the join
alone 250 ms. With this table the filter is an index lookup (annotator.search.service).

Kept by the database, as the label summary of migration 0020 is: a statement trigger on
`annotator_labelsummary` (which itself follows every write of a label, an annotation or its assignment,
cascades, COPY and the admin included) recomputes the rows of the (project, trace) pairs the statement
touched, from the tables. `annotator_searchevidence_refresh(projects, traces)` is that recomputation; the
backfill below runs it once for every pair. A step is found by its whole key (trace, index); a step index
out of the integer range names no step (it would have been an error in the filter).

SQLite (the embedded demo) has none of this: its filter reads the label tables (annotator.search.service).
"""

from django.db import migrations

TABLE = """
CREATE TABLE annotator_searchevidence (
    project_id bigint NOT NULL,
    trace_id bigint NOT NULL,
    kind text NOT NULL,
    tool_name text NOT NULL,
    PRIMARY KEY (project_id, trace_id, kind, tool_name)
)
"""

# What a submitted work label's evidence points at, for the given (project, trace) pairs: the same rule as
# the filter's SQLite path (a JSON list of {"step": n}; the step by (trace, index)).
REFRESH = r"""
CREATE FUNCTION annotator_searchevidence_refresh(projects bigint[], traces bigint[]) RETURNS void AS $$
BEGIN
    EXECUTE $q$
    DELETE FROM annotator_searchevidence e
    USING (SELECT DISTINCT p, t FROM unnest($1, $2) AS u(p, t)) c
    WHERE e.project_id = c.p AND e.trace_id = c.t
    $q$ USING projects, traces;
    EXECUTE $q$
    INSERT INTO annotator_searchevidence (project_id, trace_id, kind, tool_name)
    SELECT DISTINCT s.project_id, s.trace_id, st.kind, st.tool_name
    FROM (SELECT DISTINCT p, t FROM unnest($1, $2) AS u(p, t)) c
    JOIN annotator_labelsummary s ON s.project_id = c.p AND s.trace_id = c.t
    JOIN annotator_labelapplication la ON la.annotation_id = s.annotation_id
    CROSS JOIN LATERAL jsonb_array_elements(
        CASE WHEN jsonb_typeof(la.evidence) = 'array' THEN la.evidence ELSE '[]'::jsonb END) ev
    JOIN traces_step st ON st.trace_id = s.trace_id AND st."index" = (
        CASE WHEN jsonb_typeof(ev -> 'step') = 'number'
                  AND abs((ev ->> 'step')::numeric) < 2147483647
             THEN (ev ->> 'step')::numeric::int END)
    WHERE s.purpose = 'work' AND s.status = 'submitted'
    ON CONFLICT DO NOTHING
    $q$ USING projects, traces;
END $$ LANGUAGE plpgsql
"""

FUNCTIONS = {
    "written": """
        PERFORM annotator_searchevidence_refresh(
            ARRAY(SELECT project_id FROM changed_new), ARRAY(SELECT trace_id FROM changed_new))""",
    "changed": """
        PERFORM annotator_searchevidence_refresh(
            ARRAY(SELECT project_id FROM changed_new UNION ALL SELECT project_id FROM changed_old),
            ARRAY(SELECT trace_id FROM changed_new UNION ALL SELECT trace_id FROM changed_old))""",
    "deleted": """
        PERFORM annotator_searchevidence_refresh(
            ARRAY(SELECT project_id FROM changed_old), ARRAY(SELECT trace_id FROM changed_old))""",
}
TRIGGERS = [  # (function, event, transition tables)
    ("written", "INSERT", "NEW TABLE AS changed_new"),
    ("changed", "UPDATE", "NEW TABLE AS changed_new OLD TABLE AS changed_old"),
    ("deleted", "DELETE", "OLD TABLE AS changed_old"),
]


def _forward() -> list[str]:
    statements = [
        TABLE,
        "CREATE INDEX searchevidence_kind ON annotator_searchevidence (project_id, kind, trace_id)",
        "CREATE INDEX searchevidence_tool ON annotator_searchevidence (project_id, tool_name, trace_id) "
        "WHERE tool_name <> ''",
        REFRESH,
    ]
    for name, body in FUNCTIONS.items():
        statements.append(
            f"CREATE FUNCTION annotator_searchevidence_{name}() RETURNS trigger AS $$ "
            f"BEGIN {body}; RETURN NULL; END $$ LANGUAGE plpgsql"
        )
    for function, event, tables in TRIGGERS:
        statements.append(
            f"CREATE TRIGGER searchevidence_{event.lower()} AFTER {event} ON annotator_labelsummary "
            f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION annotator_searchevidence_{function}()"
        )
    statements.append(
        "SELECT annotator_searchevidence_refresh(ARRAY(SELECT project_id FROM annotator_labelsummary), "
        "ARRAY(SELECT trace_id FROM annotator_labelsummary))"
    )
    return statements


def _backward() -> list[str]:
    statements = [
        f"DROP TRIGGER IF EXISTS searchevidence_{event.lower()} ON annotator_labelsummary"
        for _, event, _ in TRIGGERS
    ]
    statements += [f"DROP FUNCTION IF EXISTS annotator_searchevidence_{name}()" for name in FUNCTIONS]
    statements += [
        "DROP FUNCTION IF EXISTS annotator_searchevidence_refresh(bigint[], bigint[])",
        "DROP TABLE IF EXISTS annotator_searchevidence",
    ]
    return statements


def _run(apps, schema_editor, forward: bool) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in _forward() if forward else _backward():
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0036_live_ingest"), ("traces", "0013_trace_search")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
