"""Database-side support for the incremental agreement refresh (kept out of the model state on purpose).

- An index on Annotation.updated_at: "which annotations changed since the stored snapshot" and "is the
  stored report current" read the newest changes without scanning every annotation.
- Uncompressed storage for ReportRows.arrays (PostgreSQL), which every refresh rewrites.
- A trigger that empties every ReportRows.key when a submitted annotation is deleted: a deletion leaves
  no updated_at behind, so the next refresh must start from a full computation (the app never deletes a
  submitted annotation; this covers the admin, a shell or raw SQL).
"""

from django.db import migrations

TRIGGERS = {
    "postgresql": (
        [
            """
            CREATE FUNCTION annotator_report_rows_invalidate() RETURNS trigger AS $$
            BEGIN
                IF EXISTS (SELECT 1 FROM deleted WHERE status = 'submitted') THEN
                    UPDATE annotator_reportrows SET key = '';
                END IF;
                RETURN NULL;
            END $$ LANGUAGE plpgsql
            """,
            """
            CREATE TRIGGER annotation_deleted_report_rows AFTER DELETE ON annotator_annotation
            REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT
            EXECUTE FUNCTION annotator_report_rows_invalidate()
            """,
            # Numpy arrays do not compress well and every refresh rewrites them: no pglz on the way.
            "ALTER TABLE annotator_reportrows ALTER COLUMN arrays SET STORAGE EXTERNAL",
        ],
        [
            "ALTER TABLE annotator_reportrows ALTER COLUMN arrays SET STORAGE EXTENDED",
            "DROP TRIGGER IF EXISTS annotation_deleted_report_rows ON annotator_annotation",
            "DROP FUNCTION IF EXISTS annotator_report_rows_invalidate()",
        ],
    ),
    "sqlite": (
        [
            """
            CREATE TRIGGER annotation_deleted_report_rows AFTER DELETE ON annotator_annotation
            WHEN OLD.status = 'submitted'
            BEGIN UPDATE annotator_reportrows SET key = ''; END
            """
        ],
        ["DROP TRIGGER IF EXISTS annotation_deleted_report_rows"],
    ),
}


def _run(apps, schema_editor, forward: bool) -> None:
    create, drop = TRIGGERS.get(schema_editor.connection.vendor, ([], []))
    for statement in create if forward else drop:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("annotator", "0017_report_rows")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX annotation_updated_at_idx ON annotator_annotation (updated_at)",
            "DROP INDEX annotation_updated_at_idx",
            state_operations=[],
        ),
        migrations.RunPython(
            lambda apps, editor: _run(apps, editor, True), lambda apps, editor: _run(apps, editor, False)
        ),
    ]
