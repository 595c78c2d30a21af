"""The trace list sorted by score, either way, as annotator.search orders it (no score last, id breaks ties),
PostgreSQL only (SQLite's indexes take no NULLS LAST; the demo's lists are small).

Sorting every trace for the first page of `ordering=-score` took 170-310 ms at 100,000 traces
(bench_trace_search); walking one of these indexes reads 50 entries (1 ms).
"""

from django.db import migrations

FORWARD = [
    "CREATE INDEX trace_score_desc_idx ON traces_trace (score DESC NULLS LAST, id)",
    "CREATE INDEX trace_score_asc_idx ON traces_trace (score ASC NULLS LAST, id)",
]
BACKWARD = ["DROP INDEX IF EXISTS trace_score_desc_idx", "DROP INDEX IF EXISTS trace_score_asc_idx"]


def _run(apps, schema_editor, statements: list[str]) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in statements:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("traces", "0014_tool_args_trgm")]

    operations = [
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, FORWARD),
            lambda apps, editor: _run(apps, editor, BACKWARD),
        )
    ]
