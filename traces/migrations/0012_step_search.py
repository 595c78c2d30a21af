"""Full-text search of step content (issue 28): a GIN index on to_tsvector('simple', content), PostgreSQL only.

An expression index rather than a stored tsvector column: the COPY import writes no extra column, and the
queries of annotator.search.service use the same expression, so the planner uses the index. 'simple' (no
stemming, no stop words) because step content is code, logs and tool output in any language. SQLite (the
embedded demo) has no such index; its search is a LIKE scan (see annotator/search/service.py).

The index's cost on the import is measured by bench/bench_trace_search.py: 1.28x-1.63x (docs/benchmarks.md,
above the issue's 1.2x; a search table filled after the import is the way under it).
"""

from django.db import migrations

INDEX = "traces_step_content_fts"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON traces_step USING gin (to_tsvector('simple', content))"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("traces", "0011_step_keyed_by_place")]

    operations = [migrations.RunPython(create, drop)]
