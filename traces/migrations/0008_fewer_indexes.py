"""Drop the indexes no query needs, which every import maintains: the LIKE-pattern twin of the content_hash
index (PostgreSQL), and the batch_id and traces_step.trace_id indexes that the (batch, external_id) index
and the (trace, index) unique constraint cover. The model state changes as makemigrations would write it;
the database changes are plain DROP INDEX, not the foreign keys dropped and re-validated over whole tables."""

import django.db.models.deletion
from django.db import migrations, models

DROPPED = (
    "traces_trace_batch_id_cfe50cd0",
    "traces_step_trace_id_ba5934e4",
    "traces_trace_content_hash_630274c4",
    "traces_trace_content_hash_630274c4_like",
)


def forward(apps, schema_editor):
    for name in DROPPED:
        schema_editor.execute(f'DROP INDEX IF EXISTS "{name}"')
    schema_editor.execute('CREATE INDEX "trace_content_hash_idx" ON "traces_trace" ("content_hash")')


def backward(apps, schema_editor):
    schema_editor.execute('DROP INDEX IF EXISTS "trace_content_hash_idx"')
    schema_editor.execute('CREATE INDEX "traces_trace_batch_id_cfe50cd0" ON "traces_trace" ("batch_id")')
    schema_editor.execute('CREATE INDEX "traces_step_trace_id_ba5934e4" ON "traces_step" ("trace_id")')
    schema_editor.execute(
        'CREATE INDEX "traces_trace_content_hash_630274c4" ON "traces_trace" ("content_hash")'
    )
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            'CREATE INDEX "traces_trace_content_hash_630274c4_like" ON "traces_trace" '
            '("content_hash" varchar_pattern_ops)'
        )


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0007_import_job_moved"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="step",
                    name="trace",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="traces.trace",
                    ),
                ),
                migrations.AlterField(
                    model_name="trace",
                    name="batch",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="traces",
                        to="traces.batch",
                    ),
                ),
                migrations.AlterField(
                    model_name="trace",
                    name="content_hash",
                    field=models.CharField(max_length=64),
                ),
                migrations.AddIndex(
                    model_name="trace",
                    index=models.Index(fields=["content_hash"], name="trace_content_hash_idx"),
                ),
            ],
            database_operations=[migrations.RunPython(forward, backward)],
        ),
    ]
