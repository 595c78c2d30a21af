from importlib import import_module

from django.db import migrations, models

# SQLite adds this column by rebuilding annotator_reportrows, and it refuses to rename the rebuilt table
# while a trigger (0018's, on annotator_annotation) names it: the trigger steps aside for the rebuild.
_triggers = import_module("annotator.migrations.0018_report_refresh_support")


def _sqlite_trigger(forward: bool):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            _triggers._run(apps, schema_editor, forward)

    return run


class Migration(migrations.Migration):
    dependencies = [("annotator", "0021_gold_summary")]

    operations = [
        migrations.RunPython(_sqlite_trigger(False), _sqlite_trigger(True)),
        migrations.AddField(
            model_name="reportrows",
            name="changes",
            field=models.BinaryField(blank=True, default=b""),
        ),
        migrations.RunPython(_sqlite_trigger(True), _sqlite_trigger(False)),
    ]
