"""A search row per trace (issue 28), PostgreSQL only, beside the per-step rows of migration 0012.

`traces_tracesearch (trace_id, vector, tool_args)`, written by the same after-commit indexing task as the
step rows (annotator/search/indexing.py), in the same transaction:

- `vector`: every lexeme of the trace's steps, each with as many positions as the step that has it most
  often. A search for one word filters, counts and ranks on this row alone (one row a trace, not one a
  matching step: `q=rollback` matched 146,000 step rows of 78,000 traces at 100,000 traces), and its
  `ts_rank` (no length normalisation: it counts the word's positions) equals the best step's, so the order
  is the one the step rows gave. Searches of several words ("all of them in one step") keep the step rows;
- `tool_args`: the tool arguments of the trace's steps as JSON text, one per line (JSON text has no raw
  newline, so a text without one matches here exactly when it matches one step's arguments): the
  `tool_args` filter reads 100,000 short rows instead of two million steps.

Deleting traces deletes their rows (the delete trigger of 0012, which this redefines). Rows for the steps
already indexed are built here.
"""

from django.db import migrations

# The trace rows of the given traces (an array parameter), from their step rows and steps. A lexeme in a
# tsvector literal is quoted, with its quotes and backslashes doubled.
FILL = r"""
    INSERT INTO traces_tracesearch (trace_id, vector, tool_args)
    SELECT w.trace_id, COALESCE(w.vector, ''::tsvector), COALESCE(a.tool_args, '')
    FROM (
        SELECT l.trace_id,
               string_agg('''' || replace(replace(l.lexeme, '\', '\\'), '''', '''''') || ''':'
                          || array_to_string(ARRAY(SELECT generate_series(1, l.n)), ','), ' ')::tsvector
                   AS vector
        FROM (
            SELECT ss.trace_id, u.lexeme, max(cardinality(u.positions)) AS n
            FROM traces_stepsearch ss CROSS JOIN LATERAL unnest(ss.vector) u
            WHERE ss.trace_id = ANY(%s)
            GROUP BY ss.trace_id, u.lexeme
        ) l
        GROUP BY l.trace_id
    ) w
    FULL JOIN (
        SELECT trace_id, string_agg(tool_args::text, E'\n' ORDER BY "index") AS tool_args
        FROM traces_step WHERE trace_id = ANY(%s) AND tool_args IS NOT NULL
        GROUP BY trace_id
    ) a USING (trace_id)
"""

DELETED = """
    CREATE OR REPLACE FUNCTION traces_trace_search_deleted() RETURNS trigger AS $$
    BEGIN
        DELETE FROM traces_stepsearch WHERE trace_id IN (SELECT id FROM gone);
        DELETE FROM traces_searchpending WHERE trace_id IN (SELECT id FROM gone);
        {more}
        RETURN NULL;
    END $$ LANGUAGE plpgsql
"""

CREATE = [
    """
    CREATE TABLE traces_tracesearch (
        trace_id bigint PRIMARY KEY,
        vector tsvector NOT NULL,
        tool_args text NOT NULL
    )
    """,
    "CREATE INDEX traces_tracesearch_vector ON traces_tracesearch USING gin (vector)",
    DELETED.format(more="DELETE FROM traces_tracesearch WHERE trace_id IN (SELECT id FROM gone);"),
]
DROP = [DELETED.format(more=""), "DROP TABLE IF EXISTS traces_tracesearch"]


def _forward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in CREATE:
        schema_editor.execute(statement)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT trace_id FROM traces_stepsearch ORDER BY trace_id")
        ids = [row[0] for row in cursor.fetchall()]
        for start in range(0, len(ids), 1000):
            chunk = ids[start : start + 1000]
            cursor.execute(FILL, [chunk, chunk])


def _backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DROP:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("traces", "0012_step_search")]

    operations = [migrations.RunPython(_forward, _backward)]
