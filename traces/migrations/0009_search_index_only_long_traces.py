"""The viewer's trigram search indexes cover only steps from index 1,000 on, i.e. only long traces.

A trace of up to a thousand steps is searched by reading its rows through the (trace, index) index, a few
milliseconds; only a trace longer than that needs an index to answer in time. Maintaining three trigram
indexes on every step made an import of ordinary traces 2-5x slower than the COPY beneath it (issue 14):
partial indexes (`WHERE "index" >= 1000`) cost nothing for the steps of ordinary traces and still answer a
search inside a 100,000-step one. traces.viewer.SEARCH_INDEXED_FROM must equal the bound here.
"""

from django.db import migrations

EXPRESSIONS = {
    "step_content_trgm": '"content" gin_trgm_ops',
    "step_tool_name_trgm": '"tool_name" gin_trgm_ops',
    "step_tool_args_trgm": '(("tool_args")::text) gin_trgm_ops',
}
INDEXED_FROM = 1000


def partial(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, expression in EXPRESSIONS.items():
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
        schema_editor.execute(
            f'CREATE INDEX {name} ON "traces_step" USING gin ({expression}) WHERE "index" >= {INDEXED_FROM}'
        )


def whole(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, expression in EXPRESSIONS.items():
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")
        schema_editor.execute(f'CREATE INDEX {name} ON "traces_step" USING gin ({expression})')


class Migration(migrations.Migration):
    dependencies = [("traces", "0008_fewer_indexes")]

    operations = [migrations.RunPython(partial, whole)]
