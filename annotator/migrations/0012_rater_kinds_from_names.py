"""Data migration: the rater kind becomes a column. Users named ``llm:<model>`` are LLM raters; inactive
users whose annotations all came in by import are imported raters (their source is unknown: "")."""

from django.db import migrations


def fill(apps, schema_editor):
    User = apps.get_model("auth", "User")
    Rater = apps.get_model("annotator", "Rater")
    LabelHistory = apps.get_model("annotator", "LabelHistory")
    for user in User.objects.filter(username__startswith="llm:"):
        Rater.objects.update_or_create(user=user, defaults={"kind": "llm"})
    for user in User.objects.filter(is_active=False).exclude(username__startswith="llm:"):
        actions = set(
            LabelHistory.objects.filter(annotation__assignment__annotator=user, before=None).values_list(
                "action", flat=True
            )
        )
        if actions == {"imported"}:
            Rater.objects.update_or_create(
                user=user, defaults={"kind": "imported", "source": "", "name": user.username}
            )


class Migration(migrations.Migration):
    dependencies = [("annotator", "0011_rater_kind_and_provenance")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
