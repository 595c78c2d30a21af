import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotator", "0035_search_summaries")]

    operations = [
        migrations.CreateModel(
            name="SpanBatch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("body", models.BinaryField()),
                ("spans", models.PositiveIntegerField()),
                ("received_at", models.DateTimeField()),
                (
                    "project",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="span_batches",
                        to="annotator.project",
                    ),
                ),
            ],
        ),
    ]
