"""Data migration: recompute every trace's content hash with the container-independent key
(traces.services.content_hash), so a trace imported before this change is still found as a duplicate."""

from django.db import migrations


def recompute(apps, schema_editor):
    from traces.exports import stored_content_hash

    Trace = apps.get_model("traces", "Trace")
    Step = apps.get_model("traces", "Step")
    for trace in Trace.objects.order_by("pk").iterator(chunk_size=200):
        steps = Step.objects.filter(trace_id=trace.pk).order_by("index")
        Trace.objects.filter(pk=trace.pk).update(content_hash=stored_content_hash(trace, steps))


class Migration(migrations.Migration):
    dependencies = [("traces", "0005_batch_scope_and_content_identity")]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop)]
