"""Data migration: move answer keys already stored in Trace.metadata into Trace.answer_key.

The key list is frozen here (a migration must not change meaning when traces/answer_key.py grows later).
"""

from django.db import migrations

ANSWER_KEY_FIELDS = frozenset(
    {
        "mistake_agent",
        "mistake_step",
        "mistake_reason",
        "mistake_type",
        "labels",
        "failure_modes",
        "mast_annotation",
    }
)


def forwards(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    changed = []
    for trace in Trace.objects.only("id", "metadata", "answer_key").iterator(chunk_size=2000):
        metadata = trace.metadata or {}
        moved = {k: v for k, v in metadata.items() if k in ANSWER_KEY_FIELDS}
        if not moved:
            continue
        trace.metadata = {k: v for k, v in metadata.items() if k not in ANSWER_KEY_FIELDS}
        trace.answer_key = {**(trace.answer_key or {}), **moved}
        changed.append(trace)
        if len(changed) >= 500:
            Trace.objects.bulk_update(changed, ["metadata", "answer_key"])
            changed = []
    if changed:
        Trace.objects.bulk_update(changed, ["metadata", "answer_key"])


def backwards(apps, schema_editor):
    Trace = apps.get_model("traces", "Trace")
    changed = []
    for trace in Trace.objects.only("id", "metadata", "answer_key").iterator(chunk_size=2000):
        if not trace.answer_key:
            continue
        trace.metadata = {**(trace.metadata or {}), **(trace.answer_key or {})}
        trace.answer_key = {}
        changed.append(trace)
    Trace.objects.bulk_update(changed, ["metadata", "answer_key"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [("traces", "0003_trace_answer_key")]

    operations = [migrations.RunPython(forwards, backwards)]
