"""Trigram indexes for the viewer's search inside a trace (PostgreSQL only; SQLite scans the trace)."""

from django.db import migrations

INDEXES = {
    "step_content_trgm": '"content" gin_trgm_ops',
    "step_tool_name_trgm": '"tool_name" gin_trgm_ops',
    "step_tool_args_trgm": '(("tool_args")::text) gin_trgm_ops',
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, expression in INDEXES.items():
        schema_editor.execute(f'CREATE INDEX IF NOT EXISTS {name} ON "traces_step" USING gin ({expression})')


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("traces", "0001_initial")]

    operations = [migrations.RunPython(create, drop)]
