"""Data migration: recompute every trace's content hash with the container-independent key
(traces.services.content_hash), so a trace imported before this change is still found as a duplicate."""

from django.db import migrations


def recompute(apps, schema_editor):
    from traces.importers.records import StepRecord, TraceRecord
    from traces.services import content_hash

    Trace = apps.get_model("traces", "Trace")
    Step = apps.get_model("traces", "Step")
    for trace in Trace.objects.order_by("pk").iterator(chunk_size=200):
        steps = [
            StepRecord(
                kind=s.kind,
                content=s.content,
                agent=s.agent,
                role=s.role,
                tool_name=s.tool_name,
                tool_args=s.tool_args,
                tool_call_id=s.tool_call_id,
                timestamp=s.timestamp or None,
                parent=s.parent_index,
                tokens=s.tokens,
                duration_ms=s.duration_ms,
            )
            for s in Step.objects.filter(trace_id=trace.pk).order_by("index")
        ]
        record = TraceRecord(
            external_id=trace.external_id,
            steps=steps,
            task=trace.task,
            system=trace.system,
            model=trace.model,
            benchmark=trace.benchmark,
            outcome=trace.outcome,
            score=trace.score,
        )
        Trace.objects.filter(pk=trace.pk).update(content_hash=content_hash(record))


class Migration(migrations.Migration):
    dependencies = [("traces", "0002_batch_scope_and_content_identity")]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop)]
