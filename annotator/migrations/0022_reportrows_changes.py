from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("annotator", "0021_gold_summary")]

    operations = [
        migrations.AddField(
            model_name="reportrows",
            name="changes",
            field=models.BinaryField(blank=True, default=b""),
        ),
    ]
