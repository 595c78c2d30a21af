"""The `tool_args` filter's text, folded and trigram-indexed (issue 28), PostgreSQL only.

`traces_tracesearch.tool_args` (migration 0013) was compared as Django's `icontains` compares,
`UPPER(tool_args) LIKE UPPER(pattern)`: upper-casing every row's text on every request was most of the
filter's time (909 ms at 100,000 traces for `prod`, which nearly every trace matches), and a pattern matching
few traces read every row all the same. `tool_args_folded` is that `UPPER(tool_args)`, stored (a generated
column: the indexing task writes `tool_args` as before), so the comparison is a plain LIKE, with the same
answers; a trigram GIN index on it finds the rows of a rare pattern, and its statistics tell the planner how
many rows a pattern matches (a common one: one hashed pass, not a probe per trace).
"""

from django.db import migrations

FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "ALTER TABLE traces_tracesearch ADD COLUMN tool_args_folded text "
    "GENERATED ALWAYS AS (upper(tool_args)) STORED",
    "CREATE INDEX traces_tracesearch_folded_trgm ON traces_tracesearch USING gin (tool_args_folded gin_trgm_ops)",
    "ANALYZE traces_tracesearch",
]
BACKWARD = [
    "DROP INDEX IF EXISTS traces_tracesearch_folded_trgm",
    "ALTER TABLE traces_tracesearch DROP COLUMN IF EXISTS tool_args_folded",
]


def _run(apps, schema_editor, statements: list[str]) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in statements:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("traces", "0013_trace_search")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, FORWARD),
            lambda apps, editor: _run(apps, editor, BACKWARD),
        ),
    ]
