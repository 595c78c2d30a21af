"""A database-only index on Annotation.updated_at (kept out of the model state on purpose).

"Which annotations changed since the report's snapshot" (the incremental agreement refresh) and "is the
stored report current" (the report page) read the newest ``updated_at`` of a project's annotations; with
this index that is a short index range instead of a scan of every annotation.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotator", "0008_report_rows")]

    operations = [
        migrations.RunSQL(
            "CREATE INDEX annotation_updated_at_idx ON annotator_annotation (updated_at)",
            "DROP INDEX annotation_updated_at_idx",
            state_operations=[],
        ),
    ]
