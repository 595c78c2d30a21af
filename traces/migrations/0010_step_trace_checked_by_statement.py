"""A step's trace is checked once per statement, not once per row (issue 14).

The foreign key from traces_step to traces_trace checked every step on its own at commit: 100,000 index
probes with row locks, about as long as the COPY of those steps. It is replaced by triggers that keep the same
guarantees with one set-based statement each:

- an INSERT or UPDATE of steps that names a trace that does not exist fails (foreign_key_violation), checked
  once per statement against the distinct trace ids it wrote (PostgreSQL: a statement trigger over its
  transition table; SQLite: a row trigger, its imports being small);
- deleting traces deletes their steps, whoever deletes them (Django's CASCADE already deletes them first).

The check is immediate, not deferred: a trace is written before its steps (the import, bulk_create and the
factories all do). On SQLite the triggers live on their tables: a later migration that rebuilds traces_step
or traces_trace there must drop and recreate them around the rebuild (tests/test_step_integrity.py fails
if one is lost).
"""

import django.db.models.deletion
from django.db import migrations, models

TRIGGERS = {
    "postgresql": (
        [
            """
            CREATE FUNCTION traces_step_trace_exists() RETURNS trigger AS $$
            BEGIN
                IF EXISTS (
                    SELECT FROM (SELECT DISTINCT trace_id FROM written) w
                    WHERE NOT EXISTS (SELECT FROM traces_trace t WHERE t.id = w.trace_id)
                ) THEN
                    RAISE foreign_key_violation USING
                        MESSAGE = 'a step names a trace that does not exist (traces_step.trace_id)';
                END IF;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER step_trace_exists_insert AFTER INSERT ON traces_step
            REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION traces_step_trace_exists()
            """,
            """
            CREATE TRIGGER step_trace_exists_update AFTER UPDATE ON traces_step
            REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION traces_step_trace_exists()
            """,
            """
            CREATE FUNCTION traces_trace_steps_deleted() RETURNS trigger AS $$
            BEGIN
                DELETE FROM traces_step WHERE trace_id IN (SELECT id FROM gone);
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER trace_steps_deleted AFTER DELETE ON traces_trace
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION traces_trace_steps_deleted()
            """,
        ],
        [
            "DROP TRIGGER IF EXISTS step_trace_exists_insert ON traces_step",
            "DROP TRIGGER IF EXISTS step_trace_exists_update ON traces_step",
            "DROP FUNCTION IF EXISTS traces_step_trace_exists()",
            "DROP TRIGGER IF EXISTS trace_steps_deleted ON traces_trace",
            "DROP FUNCTION IF EXISTS traces_trace_steps_deleted()",
        ],
    ),
    "sqlite": (
        [
            """
            CREATE TRIGGER step_trace_exists_insert BEFORE INSERT ON traces_step
            WHEN NOT EXISTS (SELECT 1 FROM traces_trace WHERE id = NEW.trace_id)
            BEGIN
                SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a step names a trace that does not exist');
            END
            """,
            """
            CREATE TRIGGER step_trace_exists_update BEFORE UPDATE OF trace_id ON traces_step
            WHEN NOT EXISTS (SELECT 1 FROM traces_trace WHERE id = NEW.trace_id)
            BEGIN
                SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a step names a trace that does not exist');
            END
            """,
            """
            CREATE TRIGGER trace_steps_deleted AFTER DELETE ON traces_trace
            BEGIN
                DELETE FROM traces_step WHERE trace_id = OLD.id;
            END
            """,
        ],
        [
            "DROP TRIGGER IF EXISTS step_trace_exists_insert",
            "DROP TRIGGER IF EXISTS step_trace_exists_update",
            "DROP TRIGGER IF EXISTS trace_steps_deleted",
        ],
    ),
}


def _run(apps, schema_editor, forward: bool) -> None:
    create, drop = TRIGGERS.get(schema_editor.connection.vendor, ([], []))
    for statement in create if forward else drop:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("traces", "0009_search_index_only_long_traces")]

    operations = [
        migrations.AlterField(
            model_name="step",
            name="trace",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="steps",
                to="traces.trace",
            ),
        ),
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
