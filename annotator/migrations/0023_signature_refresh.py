"""The incremental refresh of the failure signatures: which traces changed since the stored figures.

- ``annotator_annotationdeletion``: a trigger records the (project, trace) of every submitted annotation
  deleted, whoever deletes it (a deletion leaves no ``updated_at`` behind). On SQLite the trigger names
  ``annotator_assignment``: a later migration that rebuilds that table there must drop and recreate it
  around the rebuild (as 0022 does for 0018's trigger).
- An index on GoldHistory (project, at): the traces whose gold changed since, in one short range.
"""

from django.db import migrations, models

TRIGGERS = {
    "postgresql": (
        [
            """
            CREATE FUNCTION annotator_annotation_deleted_log() RETURNS trigger AS $$
            BEGIN
                INSERT INTO annotator_annotationdeletion (project_id, trace_id, at)
                SELECT s.project_id, s.trace_id, clock_timestamp()
                FROM deleted d LEFT JOIN annotator_assignment s ON s.id = d.assignment_id
                WHERE d.status = 'submitted';
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER annotation_deleted_log AFTER DELETE ON annotator_annotation
            REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT
            EXECUTE FUNCTION annotator_annotation_deleted_log()
            """,
        ],
        [
            "DROP TRIGGER IF EXISTS annotation_deleted_log ON annotator_annotation",
            "DROP FUNCTION IF EXISTS annotator_annotation_deleted_log()",
        ],
    ),
    "sqlite": (
        [
            """
            CREATE TRIGGER annotation_deleted_log AFTER DELETE ON annotator_annotation
            WHEN OLD.status = 'submitted'
            BEGIN
                INSERT INTO annotator_annotationdeletion (project_id, trace_id, at)
                SELECT s.project_id, s.trace_id, strftime('%Y-%m-%d %H:%M:%f', 'now')
                FROM (SELECT 1) LEFT JOIN annotator_assignment s ON s.id = OLD.assignment_id;
            END
            """
        ],
        ["DROP TRIGGER IF EXISTS annotation_deleted_log"],
    ),
}


def _run(apps, schema_editor, forward: bool) -> None:
    create, drop = TRIGGERS.get(schema_editor.connection.vendor, ([], []))
    for statement in create if forward else drop:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0022_reportrows_changes")]

    operations = [
        migrations.CreateModel(
            name="AnnotationDeletion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("project_id", models.BigIntegerField(null=True)),
                ("trace_id", models.BigIntegerField(null=True)),
                ("at", models.DateTimeField()),
            ],
            options={
                "indexes": [models.Index(fields=["project_id", "at"], name="annotation_deletion_at_idx")],
            },
        ),
        migrations.AddIndex(
            model_name="goldhistory",
            index=models.Index(fields=["project", "at"], name="gold_history_at_idx"),
        ),
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
