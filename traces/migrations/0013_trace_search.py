"""Search rows per trace (issue 28), PostgreSQL only, beside the per-step rows of migration 0012; written by
the same after-commit indexing task as the step rows (annotator/search/indexing.py), in the same
transaction.

- `traces_traceword (lexeme, trace_id, n)`: each word of a trace's steps once, with `n` the most times one
  step has it. A one-word search filters and counts by an index-only range of this table (one entry a
  matching trace: `q=rollback` matched 146,000 step rows of 78,000 traces at 100,000 traces, whose heap
  reads were most of its 1.1 s) and ranks by `n`: `ts_rank` without length normalisation grows with the
  word's positions in a step, so the best step's rank orders traces exactly as `n` does (ties alike).
  Searches of several words ("all of them in one step") keep the step rows.
- `traces_tracesearch (trace_id, tool_args)`: the tool arguments of a trace's steps as JSON text, one per
  line (JSON text has no raw newline, so a text without one matches here exactly when it matches one
  step's arguments): the `tool_args` filter reads 100,000 short rows instead of two million steps.

Deleting traces deletes their rows (the delete trigger of 0012, which this redefines). Rows for the steps
already indexed are built here.
"""

from django.db import migrations

# The rows of the given traces (array parameters), from their step rows and steps.
FILL_WORDS = """
    INSERT INTO traces_traceword (lexeme, trace_id, n)
    SELECT u.lexeme, ss.trace_id, max(cardinality(u.positions))
    FROM traces_stepsearch ss CROSS JOIN LATERAL unnest(ss.vector) u
    WHERE ss.trace_id = ANY(%s)
    GROUP BY ss.trace_id, u.lexeme
"""
FILL_TOOL_ARGS = r"""
    INSERT INTO traces_tracesearch (trace_id, tool_args)
    SELECT trace_id, string_agg(tool_args::text, E'\n' ORDER BY "index")
    FROM traces_step WHERE trace_id = ANY(%s) AND tool_args IS NOT NULL
    GROUP BY trace_id
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
    "CREATE TABLE traces_traceword (lexeme text NOT NULL, trace_id bigint NOT NULL, n smallint NOT NULL)",
    # Filter, count and rank of one word: an index-only range, best first.
    "CREATE INDEX traces_traceword_rank ON traces_traceword (lexeme, n DESC, trace_id)",
    "CREATE INDEX traces_traceword_trace ON traces_traceword (trace_id)",
    "CREATE TABLE traces_tracesearch (trace_id bigint PRIMARY KEY, tool_args text NOT NULL)",
    DELETED.format(
        more="DELETE FROM traces_traceword WHERE trace_id IN (SELECT id FROM gone); "
        "DELETE FROM traces_tracesearch WHERE trace_id IN (SELECT id FROM gone);"
    ),
]
DROP = [
    DELETED.format(more=""),
    "DROP TABLE IF EXISTS traces_traceword",
    "DROP TABLE IF EXISTS traces_tracesearch",
]


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
            cursor.execute(FILL_WORDS, [chunk])
            cursor.execute(FILL_TOOL_ARGS, [chunk])


def _backward(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DROP:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("traces", "0012_step_search")]

    operations = [migrations.RunPython(_forward, _backward)]
