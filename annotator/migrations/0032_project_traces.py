"""A project holds exactly the traces put into it (issue 28): trace-level membership, ProjectTrace.

Until now a project's traces were its batches' traces, and an import that found traces already imported
attached their whole batch. From here `Trace.objects.in_project` reads ProjectTrace rows. Every existing
project keeps exactly what it held: one INSERT ... SELECT gives it every trace of its batches (reversed, the
table is dropped and the batches say again what a project holds).

`Project.batches` stays, as the whole batches a project follows, kept in step by triggers so that every
writer (the verbs, the COPY import, bulk_create, fixtures) keeps the rule without knowing it:

- a batch attached to a project (a row of annotator_project_batches) adds all its traces to the project;
- a batch detached removes that batch's traces from the project (rows carry no origin);
- traces inserted into a batch join every project that follows it (PostgreSQL: one statement per INSERT or
  COPY over its transition table; SQLite: a row trigger, its imports being small);
- a trace moved to another batch (no verb does; a shell may) leaves the projects following its old batch and
  joins those following the new one (a row trigger that runs only when batch_id changes).

On SQLite the triggers live on their tables: a later migration that rebuilds traces_trace or
annotator_project_batches there must drop and recreate them around the rebuild
(tests/test_project_traces.py fails if one is lost).
"""

import django.db.models.deletion
from django.db import migrations, models

FILL = """
    INSERT INTO annotator_projecttrace (project_id, trace_id)
    SELECT pb.project_id, t.id FROM annotator_project_batches pb JOIN traces_trace t ON t.batch_id = pb.batch_id
"""

TRIGGERS = {
    "postgresql": (
        [
            """
            CREATE FUNCTION annotator_attached_batch_traces() RETURNS trigger AS $$
            BEGIN
                INSERT INTO annotator_projecttrace (project_id, trace_id)
                SELECT a.project_id, t.id FROM attached a JOIN traces_trace t ON t.batch_id = a.batch_id
                ON CONFLICT DO NOTHING;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER project_batch_attached AFTER INSERT ON annotator_project_batches
            REFERENCING NEW TABLE AS attached FOR EACH STATEMENT
            EXECUTE FUNCTION annotator_attached_batch_traces()
            """,
            """
            CREATE FUNCTION annotator_detached_batch_traces() RETURNS trigger AS $$
            BEGIN
                DELETE FROM annotator_projecttrace pt USING detached d, traces_trace t
                WHERE pt.project_id = d.project_id AND pt.trace_id = t.id AND t.batch_id = d.batch_id;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER project_batch_detached AFTER DELETE ON annotator_project_batches
            REFERENCING OLD TABLE AS detached FOR EACH STATEMENT
            EXECUTE FUNCTION annotator_detached_batch_traces()
            """,
            """
            CREATE FUNCTION annotator_new_traces_follow_batch() RETURNS trigger AS $$
            BEGIN
                INSERT INTO annotator_projecttrace (project_id, trace_id)
                SELECT pb.project_id, n.id FROM added n JOIN annotator_project_batches pb ON pb.batch_id = n.batch_id;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER trace_follows_batch AFTER INSERT ON traces_trace
            REFERENCING NEW TABLE AS added FOR EACH STATEMENT
            EXECUTE FUNCTION annotator_new_traces_follow_batch()
            """,
            """
            CREATE FUNCTION annotator_moved_trace_follows_batch() RETURNS trigger AS $$
            BEGIN
                DELETE FROM annotator_projecttrace pt USING annotator_project_batches pb
                WHERE pb.batch_id = OLD.batch_id AND pt.project_id = pb.project_id AND pt.trace_id = OLD.id;
                INSERT INTO annotator_projecttrace (project_id, trace_id)
                SELECT pb.project_id, NEW.id FROM annotator_project_batches pb WHERE pb.batch_id = NEW.batch_id
                ON CONFLICT DO NOTHING;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER trace_moves_with_batch AFTER UPDATE OF batch_id ON traces_trace
            FOR EACH ROW WHEN (OLD.batch_id IS DISTINCT FROM NEW.batch_id)
            EXECUTE FUNCTION annotator_moved_trace_follows_batch()
            """,
        ],
        [
            "DROP TRIGGER IF EXISTS project_batch_attached ON annotator_project_batches",
            "DROP FUNCTION IF EXISTS annotator_attached_batch_traces()",
            "DROP TRIGGER IF EXISTS project_batch_detached ON annotator_project_batches",
            "DROP FUNCTION IF EXISTS annotator_detached_batch_traces()",
            "DROP TRIGGER IF EXISTS trace_follows_batch ON traces_trace",
            "DROP FUNCTION IF EXISTS annotator_new_traces_follow_batch()",
            "DROP TRIGGER IF EXISTS trace_moves_with_batch ON traces_trace",
            "DROP FUNCTION IF EXISTS annotator_moved_trace_follows_batch()",
        ],
    ),
    "sqlite": (
        [
            """
            CREATE TRIGGER project_batch_attached AFTER INSERT ON annotator_project_batches
            BEGIN
                INSERT OR IGNORE INTO annotator_projecttrace (project_id, trace_id)
                SELECT NEW.project_id, id FROM traces_trace WHERE batch_id = NEW.batch_id;
            END
            """,
            """
            CREATE TRIGGER project_batch_detached AFTER DELETE ON annotator_project_batches
            BEGIN
                DELETE FROM annotator_projecttrace WHERE project_id = OLD.project_id
                AND trace_id IN (SELECT id FROM traces_trace WHERE batch_id = OLD.batch_id);
            END
            """,
            """
            CREATE TRIGGER trace_follows_batch AFTER INSERT ON traces_trace
            BEGIN
                INSERT INTO annotator_projecttrace (project_id, trace_id)
                SELECT project_id, NEW.id FROM annotator_project_batches WHERE batch_id = NEW.batch_id;
            END
            """,
            """
            CREATE TRIGGER trace_moves_with_batch AFTER UPDATE OF batch_id ON traces_trace
            WHEN OLD.batch_id IS NOT NEW.batch_id
            BEGIN
                DELETE FROM annotator_projecttrace WHERE trace_id = OLD.id
                AND project_id IN (SELECT project_id FROM annotator_project_batches WHERE batch_id = OLD.batch_id);
                INSERT OR IGNORE INTO annotator_projecttrace (project_id, trace_id)
                SELECT project_id, NEW.id FROM annotator_project_batches WHERE batch_id = NEW.batch_id;
            END
            """,
        ],
        [
            "DROP TRIGGER IF EXISTS project_batch_attached",
            "DROP TRIGGER IF EXISTS project_batch_detached",
            "DROP TRIGGER IF EXISTS trace_follows_batch",
            "DROP TRIGGER IF EXISTS trace_moves_with_batch",
        ],
    ),
}


def _forward(apps, schema_editor) -> None:
    schema_editor.execute(FILL)
    for statement in TRIGGERS.get(schema_editor.connection.vendor, ([], []))[0]:
        schema_editor.execute(statement)


def _backward(apps, schema_editor) -> None:
    for statement in TRIGGERS.get(schema_editor.connection.vendor, ([], []))[1]:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0031_llm_concurrency"),
        ("traces", "0012_step_search"),
    ]

    operations = [
        migrations.CreateModel(
            name="ProjectTrace",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "project", "trace", blank=True, editable=False, primary_key=True, serialize=False
                    ),
                ),
                (
                    "project",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="trace_rows",
                        to="annotator.project",
                    ),
                ),
                (
                    "trace",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="project_rows",
                        to="traces.trace",
                    ),
                ),
            ],
        ),
        migrations.RunPython(_forward, _backward),
    ]
