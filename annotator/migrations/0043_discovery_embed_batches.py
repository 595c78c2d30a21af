# A discovery run's embedding step: a phase of the run (its progress counts batches) and the rows that keep
# each embedded batch's vectors, so a resumed run embeds only what is missing. Choices and help texts only:
# no SQL is run.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0041_dispute_summary"),
    ]

    operations = [
        migrations.AlterField(
            model_name="discoveryanswer",
            name="key",
            field=models.CharField(
                help_text="Trace id, the group's or the embedding batch's number", max_length=100
            ),
        ),
        migrations.AlterField(
            model_name="discoveryanswer",
            name="phase",
            field=models.CharField(
                choices=[
                    ("analyse", "Analysis of a trace"),
                    ("embed", "Vectors of a batch of analyses"),
                    ("name", "Naming of a group"),
                    ("gate", "Gate rater's answer"),
                ],
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="discoveryrun",
            name="phase",
            field=models.CharField(
                choices=[
                    ("analyse", "Analysing traces"),
                    ("embed", "Embedding analyses"),
                    ("name", "Naming candidates"),
                    ("gate", "Gating candidates"),
                    ("done", "Done"),
                ],
                default="analyse",
                max_length=10,
            ),
        ),
        migrations.AlterField(
            model_name="discoveryrun",
            name="total",
            field=models.PositiveIntegerField(
                default=0, help_text="Requests the current phase needs (embedding: batches of analyses)"
            ),
        ),
    ]
