import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotator", "0035_search_summaries")]

    operations = [
        migrations.CreateModel(
            name="SpanBatch",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("body", models.BinaryField()),
                ("spans", models.PositiveIntegerField()),
                ("trace_ids", models.TextField(blank=True)),
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
        migrations.AddField(
            model_name="pendinglog",
            name="state",
            field=models.CharField(
                choices=[
                    ("pending", "Waiting for its trace to complete"),
                    ("assembled", "Part of a stored trace"),
                    ("held", "Arrived after labelling started: kept, not merged"),
                ],
                default="pending",
                max_length=10,
            ),
        ),
        migrations.AddIndex(
            model_name="pendinglog",
            index=models.Index(fields=["project", "state", "trace_id"], name="live_log_state_idx"),
        ),
    ]
