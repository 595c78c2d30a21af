"""Data: copy traces.ImportJob rows to annotator.ImportJob, the project slug in JSON becoming a foreign key.

Runs before traces drops its table (traces 0002 depends on this migration)."""

from django.db import migrations

FIELDS = [
    "batch_name",
    "format",
    "files",
    "records_done",
    "bytes_done",
    "bytes_total",
    "errors",
    "summary",
    "batch_id",
    "created_by_id",
    "status",
    "finished_at",
]


def copy_jobs(apps, schema_editor):
    Old = apps.get_model("traces", "ImportJob")
    New = apps.get_model("annotator", "ImportJob")
    Project = apps.get_model("annotator", "Project")
    projects = dict(Project.objects.values_list("slug", "pk"))
    for old in Old.objects.order_by("pk").iterator():
        options = dict(old.options or {})
        slug = options.pop("project", None)
        new = New(
            pk=old.pk,
            project_id=projects.get(slug),
            options=options,
            **{name: getattr(old, name) for name in FIELDS},
        )
        if old.status in ("queued", "running"):
            # Its task and its heartbeat belong to the old table: the reconciliation picks it up from here.
            new.heartbeat_at = old.created_at
        new.save()
        New.objects.filter(pk=new.pk).update(created_at=old.created_at)
    if connection_is_postgres(schema_editor) and New.objects.exists():
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(
                "SELECT setval(pg_get_serial_sequence('annotator_importjob', 'id'), "
                "(SELECT MAX(id) FROM annotator_importjob))"
            )


def connection_is_postgres(schema_editor) -> bool:
    return schema_editor.connection.vendor == "postgresql"


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0013_jobs"),
        ("traces", "0006_content_hash_independent_of_format"),
    ]

    operations = [migrations.RunPython(copy_jobs, migrations.RunPython.noop)]
